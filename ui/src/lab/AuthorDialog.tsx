/**
 * Authored observations: the predicted (or real) observation opened in a code
 * editor, checked with `validate_observation` (problems with line and
 * column), saved with `author_observation`. Saving with problems asks first.
 */
import { useRef, useState } from "react";
import type { ValidationReport } from "../api/lab";
import type { Representation } from "../api/types";
import type { Backend } from "../backend/backend";
import { CodeEditor, type CodeEditorHandle } from "./CodeEditor";
import { DialogFooter, ErrorLine, Field, errorMessage, useBusyAction } from "./DialogParts";
import { Modal } from "./Modal";

const REPRESENTATIONS: Representation[] = ["html", "axtree", "os-xml", "os-table", "android-xml", "json", "text"];

/** Props of {@link AuthorDialog}. */
export interface AuthorDialogProps {
  backend: Backend;
  trajectoryId: string;
  nodeId: number;
  representation: Representation;
  initialText: string;
  basedOnPrediction: number | null;
  onClose: () => void;
  onSaved: () => void | Promise<void>;
}

export function AuthorDialog({ backend, trajectoryId, nodeId, representation: rep0, initialText, basedOnPrediction, onClose, onSaved }: AuthorDialogProps) {
  const [representation, setRepresentation] = useState<Representation>(rep0);
  const [text, setText] = useState(initialText);
  const [note, setNote] = useState("");
  const [report, setReport] = useState<ValidationReport | null>(null);
  const [checkedText, setCheckedText] = useState<string | null>(null);
  const [confirm, setConfirm] = useState(false);
  const { busy, error, setError, run } = useBusyAction();
  const editor = useRef<CodeEditorHandle>(null);
  const textRef = useRef(text);

  const validate = async (): Promise<ValidationReport | null> => {
    const current = textRef.current;
    try {
      const r = await backend.call("validate_observation", { representation, text: current });
      setReport(r);
      setCheckedText(current);
      return r;
    } catch (e) {
      setError(errorMessage(e));
      return null;
    }
  };

  const save = (force: boolean) =>
    run(async () => {
      const r = checkedText === textRef.current && report ? report : await validate();
      if (!r) return;
      if (!r.ok && !force) {
        setConfirm(true);
        return;
      }
      await backend.call("author_observation", {
        trajectory_id: trajectoryId,
        node_id: nodeId,
        representation,
        text: textRef.current,
        based_on_prediction: basedOnPrediction,
        note: note.trim() || null,
      });
      await onSaved();
    });

  return (
    <Modal
      title="Author observation"
      onClose={onClose}
      wide
      footer={
        <DialogFooter
          before={
            <button type="button" onClick={() => void validate()} disabled={!!busy}>
              Validate
            </button>
          }
          closeLabel="Cancel"
          onClose={onClose}
          primary={
            confirm
              ? { label: "Save with problems", tone: "danger", disabled: !!busy, onClick: () => void save(true) }
              : { label: "Save authored observation", disabled: !!busy, onClick: () => void save(false) }
          }
        />
      }
    >
      <div className="row">
        <Field label="Representation">
          <select
            aria-label="Representation"
            value={representation}
            onChange={(e) => {
              setRepresentation(e.target.value as Representation);
              setReport(null);
            }}
          >
            {REPRESENTATIONS.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Note (why this state)" grow>
          <input aria-label="Note" value={note} onChange={(e) => setNote(e.target.value)} placeholder="e.g. the cart is empty after a timeout" />
        </Field>
      </div>
      <CodeEditor
        ref={editor}
        value={text}
        representation={representation}
        label="Observation text"
        onChange={(t) => {
          textRef.current = t;
          setText(t);
          setConfirm(false);
        }}
      />
      <div className="validation" role="region" aria-label="Validation">
        {report ? (
          report.ok && checkedText === text ? (
            <p className="ok">✓ parses{report.node_count != null ? ` (${report.node_count} nodes)` : ""}</p>
          ) : (
            <>
              {checkedText !== text ? <p className="muted">Edited since the last check.</p> : null}
              <ul className="problems" aria-label="Problems">
                {report.problems.map((p, i) => (
                  <li key={i}>
                    <button type="button" className="link" onClick={() => p.line != null && editor.current?.goTo(p.line, p.column ?? 1)}>
                      {p.line != null ? `line ${p.line}${p.column != null ? `, column ${p.column}` : ""}` : "document"}
                    </button>{" "}
                    <span className={p.severity === "warning" ? "warn" : "c-removed"}>{p.severity || "error"}</span>: {p.message}
                  </li>
                ))}
              </ul>
              {confirm ? (
                <p className="warn" role="alert">
                  The observation has problems. It can still be saved as authored; the parsers will report them.
                </p>
              ) : null}
            </>
          )
        ) : (
          <p className="muted">Validate to run the observation parser.</p>
        )}
      </div>
      <ErrorLine error={error} />
    </Modal>
  );
}
