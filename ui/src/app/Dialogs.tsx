/**
 * The dialog open over the studio (at most one): engine, edit action, add
 * turn, roll out, author observation, curriculum export, history, import
 * (the lesson dialog, which opens presentation mode, is `App`'s) —
 * and the toast listing an import's failures once its dialog is closed.
 */
import type { EngineStatus } from "../api/lab";
import type { BranchSummary, ContextMode, TrajectorySummary, TurnDetail } from "../api/types";
import type { Backend } from "../backend/backend";
import { ActionDialog } from "../lab/ActionDialog";
import { AuthorDialog } from "../lab/AuthorDialog";
import { EngineDialog } from "../lab/EngineDialog";
import { ExportDialog } from "../lab/ExportDialog";
import { HistoryDialog } from "../lab/HistoryDialog";
import { ImportDialog, ImportResult } from "../lab/ImportDialog";
import { RolloutDialog } from "../lab/RolloutDialog";
import type { RolloutState } from "./stepStream";
import type { useImport } from "./useImport";

/** Which dialog is open. */
export type DialogName = "engine" | "edit" | "append" | "rollout" | "author" | "export" | "history" | "import" | "lesson" | null;

/** A placeholder action list for the rollout dialog, in the domain's action language. */
export function rolloutPlaceholder(domain: string | undefined): string {
  switch (domain) {
    case "web":
      return "click('12')\nfill('41', 'hello')\nscroll(0, 300)";
    case "os":
      return "pyautogui.click(640, 360)\npyautogui.write('report.txt')\npyautogui.press('enter')";
    case "android":
      return '{"action_type": "click", "x": 540, "y": 1200}\n{"action_type": "navigate_back"}';
    case "mcp":
    case "swe":
      return '{"name": "list_files", "arguments": {"path": "."}}';
    default:
      return "ls -la\ncat README.md";
  }
}

/** Props of {@link Dialogs}. */
export interface DialogsProps {
  backend: Backend;
  dialog: DialogName;
  onClose: () => void;
  trajectory: TrajectorySummary | null;
  trajectoryId: string | null;
  detail: TurnDetail | null;
  /** What the author dialog opens with: the view shown (its predicted text, else its real one). */
  authorSource: { representation: TurnDetail["views"][number]["representation"]; text: string };
  branches: BranchSummary[];
  /** Branches preselected for export. */
  exportSelection: string[];
  engine: EngineStatus | null;
  onEngineSaved: (status: EngineStatus) => void;
  /** An edited action or an added turn made (or extended) a branch: open it at `turnIndex`. */
  onBranch: (branchId: string, turnIndex: "same" | "next", notice: string | null) => void;
  onAuthored: () => void;
  rollout: RolloutState | null;
  onStartRollout: (actions: string[], context: ContextMode) => Promise<void>;
  onStopRollout: () => void;
  importer: ReturnType<typeof useImport>;
  onUndoRedo: (which: "undo" | "redo") => void;
}

export function Dialogs(props: DialogsProps) {
  const { backend, dialog, onClose, trajectory, trajectoryId, detail, importer } = props;
  return (
    <>
      {dialog === "engine" ? <EngineDialog backend={backend} status={props.engine} onClose={onClose} onSaved={props.onEngineSaved} /> : null}
      {dialog === "edit" && detail?.action && trajectory && detail.edge_id != null ? (
        <ActionDialog
          backend={backend}
          title="Edit action"
          domain={trajectory.domain}
          initialRaw={detail.action.raw}
          saveLabel="Save as new branch"
          onClose={onClose}
          onSave={async (raw) => {
            const r = await backend.call("edit_action", { trajectory_id: trajectory.id, edge_id: detail.edge_id!, raw });
            props.onBranch(r.branch_id, "same", `New branch at turn ${detail.turn}.`);
          }}
        />
      ) : null}
      {dialog === "append" && detail && trajectory ? (
        <ActionDialog
          backend={backend}
          title="Add turn"
          domain={trajectory.domain}
          initialRaw=""
          saveLabel="Add turn"
          onClose={onClose}
          onSave={async (raw) => {
            const r = await backend.call("append_turn", { trajectory_id: trajectory.id, node_id: detail.node_id, raw });
            props.onBranch(r.branch_id, "next", null);
          }}
        />
      ) : null}
      {dialog === "rollout" ? (
        <RolloutDialog
          placeholder={rolloutPlaceholder(trajectory?.domain)}
          progress={props.rollout}
          onStart={props.onStartRollout}
          onStop={props.onStopRollout}
          onClose={onClose}
        />
      ) : null}
      {dialog === "author" && detail && trajectoryId ? (
        <AuthorDialog
          backend={backend}
          trajectoryId={trajectoryId}
          nodeId={detail.node_id}
          representation={props.authorSource.representation}
          initialText={props.authorSource.text}
          basedOnPrediction={detail.prediction_id}
          onClose={onClose}
          onSaved={props.onAuthored}
        />
      ) : null}
      {dialog === "export" && trajectoryId ? (
        <ExportDialog
          backend={backend}
          trajectoryId={trajectoryId}
          trajectoryName={trajectory?.name ?? trajectoryId}
          branches={props.branches}
          initialSelection={props.exportSelection}
          onClose={onClose}
        />
      ) : null}
      {dialog === "history" ? (
        <HistoryDialog backend={backend} onClose={onClose} onUndo={() => props.onUndoRedo("undo")} onRedo={() => props.onUndoRedo("redo")} />
      ) : null}
      {dialog === "import" ? (
        <ImportDialog onUpload={importer.upload} onChooseNative={importer.chooseNative} result={importer.result} onClose={onClose} />
      ) : null}
      {dialog !== "import" && importer.result && importer.result.failed.length > 0 ? (
        <div className="toast" role="alert">
          <ImportResult result={importer.result} />
          <button type="button" onClick={() => importer.setResult(null)}>
            Dismiss
          </button>
        </div>
      ) : null}
    </>
  );
}
