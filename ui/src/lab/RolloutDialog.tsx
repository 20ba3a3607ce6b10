/**
 * "Roll out N": the user writes the next actions (one per line, or blocks
 * separated by `---` lines); the back end appends each as a turn and steps
 * it free-running (`rollout`), reporting `RolloutProgress`; Stop cancels.
 */
import { useState } from "react";
import type { ContextMode } from "../api/types";
import { splitActionList } from "../model/actionForm";
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
  const [error, setError] = useState<string | null>(null);
  const actions = splitActionList(text);
  const running = !!progress?.running;
  return (
    <Modal
      title="Roll out"
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onStop} disabled={!running} className={running ? "danger" : undefined}>
            Stop
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button
            type="button"
            className="primary"
            disabled={actions.length === 0 || running}
            onClick={() => {
              setError(null);
              onStart(actions, context).catch((e) => setError(e instanceof Error ? e.message : String(e)));
            }}
          >
            Roll out {actions.length}
          </button>
        </>
      }
    >
      <label className="field">
        <span>Actions, one per line (or separated by lines of ---)</span>
        <textarea aria-label="Rollout actions" className="mono" rows={8} value={text} placeholder={placeholder} onChange={(e) => setText(e.target.value)} />
      </label>
      <div className="seg" role="radiogroup" aria-label="Rollout context">
        {(["free-running", "teacher-forced"] as ContextMode[]).map((c) => (
          <button key={c} type="button" role="radio" aria-checked={context === c} onClick={() => setContext(c)}>
            {c}
          </button>
        ))}
      </div>
      {progress ? (
        <div className="rollout-progress" role="status" aria-label="Rollout progress">
          <progress max={progress.total} value={progress.done} /> {progress.done} of {progress.total} turns
          {progress.running ? " — running" : progress.status ? ` — ${progress.status}` : ""}
        </div>
      ) : null}
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </Modal>
  );
}
