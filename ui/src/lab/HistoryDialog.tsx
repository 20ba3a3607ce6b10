/** The undo log (`history`): newest first, with each change's state. */
import { useEffect, useState } from "react";
import type { ChangeSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { Modal } from "./Modal";

/** Props of {@link HistoryDialog}. */
export interface HistoryDialogProps {
  backend: Backend;
  version: number;
  onClose: () => void;
  onUndo: () => void;
  onRedo: () => void;
}

export function HistoryDialog({ backend, version, onClose, onUndo, onRedo }: HistoryDialogProps) {
  const [changes, setChanges] = useState<ChangeSummary[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    backend
      .call("history", {})
      .then((r) => setChanges(r.changes))
      .catch((e) => setError(e instanceof Error ? e.message : String(e)));
  }, [backend, version]);
  return (
    <Modal
      title="History"
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onUndo}>
            Undo
          </button>
          <button type="button" onClick={onRedo}>
            Redo
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </>
      }
    >
      {error ? <p className="error" role="alert">{error}</p> : null}
      <ol className="history-list" aria-label="Changes">
        {changes.map((c) => (
          <li key={c.id} className={`change change-${c.state}`}>
            <span className="change-kind">{c.kind}</span> <span className="change-summary">{c.summary}</span>{" "}
            <span className="change-state">{c.state}</span> <time className="muted">{c.created_at.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC")}</time>
          </li>
        ))}
        {changes.length === 0 && !error ? <li className="muted">No changes yet.</li> : null}
      </ol>
    </Modal>
  );
}
