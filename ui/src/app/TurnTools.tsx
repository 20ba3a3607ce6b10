/**
 * The bar above the panes: the turn's action (and its control instruction,
 * its URL), then the turn tools — edit the action, add a turn, roll out,
 * author the observation, and the control instruction's inline form — and
 * the last notice. Mount it keyed by the state shown: the form's draft
 * belongs to one state.
 */
import { useState } from "react";
import type { TurnDetail } from "../api/types";
import type { DialogName } from "./Dialogs";

/** Props of {@link TurnTools}. */
export interface TurnToolsProps {
  detail: TurnDetail | null;
  loading: boolean;
  /** The turn shown is its branch's last. */
  atLeaf: boolean;
  notice: string | null;
  onDialog: (dialog: DialogName) => void;
  /** Saves (or, with `null`, clears) the control instruction; resolves `true` when saved. */
  onPerturbation: (instruction: string | null) => Promise<boolean>;
}

export function TurnTools({ detail, loading, atLeaf, notice, onDialog, onPerturbation }: TurnToolsProps) {
  const [draft, setDraft] = useState<string | null>(null);
  const save = async (instruction: string | null) => {
    if (await onPerturbation(instruction)) setDraft(null);
  };
  return (
    <>
      <div className="action-bar" aria-label="Action">
        <span className="action-label">{detail?.turn ? `Action of turn ${detail.turn}` : "Initial state"}</span>
        {detail?.action ? <code className="action-raw">{detail.action.raw}</code> : null}
        {detail?.action_reasoning ? (
          <span className="action-reasoning" role="note" aria-label="Agent's reasoning" title={detail.action_reasoning}>
            {detail.action_reasoning}
          </span>
        ) : null}
        {detail?.perturbation ? (
          <span className="perturbation-chip" role="note" aria-label="Control instruction" title="added to the world model's prompt for this turn">
            ⚡ {detail.perturbation}
          </span>
        ) : null}
        {detail?.real_meta?.url ? (
          <span className="meta-url" title="URL">
            {detail.real_meta.url}
          </span>
        ) : null}
        {loading ? (
          <span className="loading" aria-live="polite">
            loading…
          </span>
        ) : null}
      </div>
      <div className="turn-tools" role="toolbar" aria-label="Turn tools">
        <button
          type="button"
          disabled={!detail?.edge_id && detail?.edge_id !== 0}
          onClick={() => onDialog("edit")}
          title="Edit this turn's action: a new branch from the previous state"
        >
          Edit action
        </button>
        <button
          type="button"
          disabled={!detail}
          onClick={() => onDialog("append")}
          title={atLeaf ? "Add a turn after this one" : "Add a turn from this state (a new branch)"}
        >
          Add turn
        </button>
        <button
          type="button"
          disabled={!detail}
          onClick={() => onDialog("rollout")}
          aria-label="Roll out N"
          title="Continue this branch for N turns with actions you write"
        >
          Roll out N…
        </button>
        <button type="button" disabled={!detail || detail.turn === 0} onClick={() => onDialog("author")} title="Write this state's observation by hand">
          Author observation
        </button>
        {draft === null ? (
          <button
            type="button"
            disabled={detail?.edge_id == null}
            onClick={() => setDraft(detail?.perturbation ?? "")}
            title="A control instruction added to the world model's prompt for this turn"
          >
            {detail?.perturbation ? "Edit control instruction" : "Add control instruction"}
          </button>
        ) : (
          <form
            className="perturbation-form"
            onSubmit={(e) => {
              e.preventDefault();
              void save(draft.trim() || null);
            }}
          >
            <input
              aria-label="Control instruction"
              autoFocus
              value={draft}
              placeholder="e.g. the server returns an error page"
              onChange={(e) => setDraft(e.target.value)}
            />
            <button type="submit">Save instruction</button>
            {detail?.perturbation ? (
              <button type="button" onClick={() => void save(null)}>
                Clear
              </button>
            ) : null}
            <button type="button" onClick={() => setDraft(null)}>
              Cancel
            </button>
          </form>
        )}
        {notice ? (
          <span className="notice" role="status" aria-label="Notice">
            {notice}
          </span>
        ) : null}
      </div>
    </>
  );
}
