/**
 * "Roll out N": the user writes the next actions (one per line, or blocks
 * separated by `---` lines); the back end appends each as a turn and steps
 * it free-running (`rollout`), reporting `RolloutProgress`; Stop cancels.
 */
import { useState } from "react";
import type { ContextMode } from "../api/types";
import { splitActionList } from "../model/actionList";
import { DialogFooter, ErrorLine, Field, RadioSeg, useBusyAction } from "./DialogParts";
import { Modal } from "./Modal";

/** Props of {@link RolloutDialog}. */
export interface RolloutDialogProps {
  placeholder: string;
  progress: { done: number; total: number; running: boolean; status: string | null } | null;
  onStart: (actions: string[], context: ContextMode) => Promise<void>;
  onStop: () => void;
  onClose: () => void;
}

export function RolloutDialog({ placeholder, progress, onStart, onStop, onClose }: RolloutDialogProps) {
  const [text, setText] = useState("");
  const [context, setContext] = useState<ContextMode>("free-running");
  const { error, run } = useBusyAction();
  const actions = splitActionList(text);
  const running = !!progress?.running;
  return (
    <Modal
      title="Roll out"
      onClose={onClose}
      footer={
        <DialogFooter
          before={
            <button type="button" onClick={onStop} disabled={!running} className={running ? "danger" : undefined}>
              Stop
            </button>
          }
          closeLabel="Close"
          onClose={onClose}
          primary={{ label: `Roll out ${actions.length}`, disabled: actions.length === 0 || running, onClick: () => void run(() => onStart(actions, context)) }}
        />
      }
    >
      <Field label="Actions, one per line (or separated by lines of ---)">
        <textarea aria-label="Rollout actions" className="mono" rows={8} value={text} placeholder={placeholder} onChange={(e) => setText(e.target.value)} />
      </Field>
      <RadioSeg<ContextMode> label="Rollout context" options={["free-running", "teacher-forced"]} value={context} onChange={setContext} />
      {progress ? (
        <div className="rollout-progress" role="status" aria-label="Rollout progress">
          <progress max={progress.total} value={progress.done} /> {progress.done} of {progress.total} turns
          {progress.running ? " — running" : progress.status ? ` — ${progress.status}` : ""}
        </div>
      ) : null}
      <ErrorLine error={error} />
    </Modal>
  );
}
