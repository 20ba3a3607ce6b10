/**
 * Authoring a lesson from the studio, minimally: the caption of the state
 * shown (its newest note, `set_caption`), adding the branch shown to a lesson
 * or taking it out (`add_to_lesson`), presenting the lesson or the branch,
 * and saving the lesson as one self-contained HTML file (`export_lesson`,
 * built by the back end).
 */
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import type { Backend } from "../backend/backend";
import { saveFile } from "../components/dom";
import { keys } from "../data/keys";
import { commandQuery } from "../data/queries";
import { DialogFooter, ErrorLine, Field, TextField, useBusyAction } from "../lab/DialogParts";
import { Modal } from "../lab/Modal";
import type { PresentTarget } from "./Presentation";

/** Props of {@link LessonDialog}. */
export interface LessonDialogProps {
  backend: Backend;
  trajectoryId: string;
  branchId: string | null;
  /** The state shown (0: the initial state) and its index among the branch's states (0 the initial state). */
  nodeId: number;
  stateIndex: number;
  onClose: () => void;
  onPresent: (target: PresentTarget) => void;
  /** A caption or a lesson changed (refetch the trajectory's replies). */
  onChanged: () => void;
}

export function LessonDialog({ backend, trajectoryId, branchId, nodeId, stateIndex, onClose, onPresent, onChanged }: LessonDialogProps) {
  const lessons = useQuery(commandQuery(backend, keys.lessons(), "list_lessons", {}));
  const shown = useQuery(
    commandQuery(backend, keys.lesson(null, trajectoryId, branchId), "get_lesson", { lesson: null, trajectory_id: trajectoryId, branch_id: branchId }),
  );
  const saved = shown.data?.branches[0]?.captions[stateIndex] ?? "";
  const [caption, setCaption] = useState<string | null>(null);
  const [name, setName] = useState<string | null>(null);
  const lessonName = name ?? lessons.data?.lessons[0]?.name ?? "";
  const { busy, error, run } = useBusyAction();
  const [notice, setNotice] = useState<string | null>(null);

  const addBranch = (present: boolean) =>
    run(async () => {
      await backend.call("add_to_lesson", { lesson: lessonName, trajectory_id: trajectoryId, branch_id: branchId ?? "", present });
      setNotice(present ? `This branch is in lesson “${lessonName.trim()}”.` : `This branch left lesson “${lessonName.trim()}”.`);
      onChanged();
    }, "lesson");
  const saveCaption = () =>
    run(async () => {
      await backend.call("set_caption", { trajectory_id: trajectoryId, node_id: nodeId, text: caption ?? saved });
      setCaption(null);
      setNotice("Caption saved.");
      onChanged();
    }, "caption");
  const exportHtml = (lesson: string | null) =>
    run(async () => {
      const out = await backend.call("export_lesson", { lesson, trajectory_id: trajectoryId, branch_id: branchId, path: null });
      saveFile(out.content ?? "", out.file_name, "text/html");
      setNotice(`Saved ${out.file_name} (${out.sections} steps).`);
    }, "export");

  const hasName = lessonName.trim() !== "";
  return (
    <Modal
      title="Lesson"
      onClose={onClose}
      footer={
        <DialogFooter
          before={
            <>
              <button type="button" onClick={() => onPresent({ lesson: null, trajectoryId, branchId })}>
                Present this branch
              </button>
              <button type="button" disabled={!!busy} onClick={() => void exportHtml(null)}>
                Export this branch as HTML
              </button>
            </>
          }
          closeLabel="Close"
          onClose={onClose}
        />
      }
    >
      <Field label={`Caption of ${stateIndex === 0 ? "the initial state" : `turn ${stateIndex}`}`} grow>
        <textarea aria-label="Caption" rows={3} value={caption ?? saved} onChange={(e) => setCaption(e.target.value)} />
      </Field>
      <p>
        <button type="button" disabled={!!busy || caption === null || caption === saved} onClick={() => void saveCaption()}>
          Save caption
        </button>{" "}
        <span className="muted">A caption is the state's note; an empty one removes it.</span>
      </p>
      <TextField label="Lesson name" list="lesson-names" value={lessonName} onValue={setName} />
      <datalist id="lesson-names">
        {(lessons.data?.lessons ?? []).map((l) => (
          <option key={l.name} value={l.name}>{`${l.branch_count} ${l.branch_count === 1 ? "branch" : "branches"}`}</option>
        ))}
      </datalist>
      <p>
        <button type="button" disabled={!!busy || !hasName || !branchId} onClick={() => void addBranch(true)}>
          Add this branch to the lesson
        </button>{" "}
        <button type="button" disabled={!!busy || !hasName || !branchId} onClick={() => void addBranch(false)}>
          Take it out
        </button>
      </p>
      <p>
        <button
          type="button"
          className="primary"
          disabled={!hasName}
          onClick={() => onPresent({ lesson: lessonName.trim(), trajectoryId: null, branchId: null })}
        >
          Present the lesson
        </button>{" "}
        <button type="button" disabled={!!busy || !hasName} onClick={() => void exportHtml(lessonName.trim())}>
          Export the lesson as HTML
        </button>
      </p>
      {notice ? (
        <p className="muted" role="status">
          {notice}
        </p>
      ) : null}
      <ErrorLine error={error ?? (lessons.error ? lessons.error.message : null)} />
    </Modal>
  );
}
