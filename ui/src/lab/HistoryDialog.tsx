/** The undo log (`history`): newest first, with each change's state. */
import type { Backend } from "../backend/backend";
import { useHistory } from "../data/queries";
import { DialogFooter, ErrorLine } from "./DialogParts";
import { Modal } from "./Modal";

/** Props of {@link HistoryDialog}. */
export interface HistoryDialogProps {
  backend: Backend;
  onClose: () => void;
  onUndo: () => void;
  onRedo: () => void;
}

export function HistoryDialog({ backend, onClose, onUndo, onRedo }: HistoryDialogProps) {
  const history = useHistory(backend);
  const changes = history.data?.changes ?? [];
  const error = history.error ? history.error.message : null;
  return (
    <Modal
      title="History"
      onClose={onClose}
      footer={
        <DialogFooter
          before={
            <>
              <button type="button" onClick={onUndo}>
                Undo
              </button>
              <button type="button" onClick={onRedo}>
                Redo
              </button>
            </>
          }
          closeLabel="Close"
          onClose={onClose}
        />
      }
    >
      <ErrorLine error={error} />
      <ol className="history-list" aria-label="Changes">
        {changes.map((c) => (
          <li key={c.id} className={`change change-${c.state}`}>
            <span className="change-kind">{c.kind}</span> <span className="change-summary">{c.summary}</span> <span className="change-state">{c.state}</span>{" "}
            <time className="muted">{c.created_at.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC")}</time>
          </li>
        ))}
        {changes.length === 0 && !error ? <li className="muted">No changes yet.</li> : null}
      </ol>
    </Modal>
  );
}
