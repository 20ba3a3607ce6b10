/**
 * Two branches turn by turn, side by side (`compare_branches`): each turn's
 * action, kind and fidelity, and the shown observation text of both.
 */
import type { BranchSummary, TurnSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { useCompare } from "../data/queries";
import { formatScore } from "../components/format";
import { ErrorLine } from "./DialogParts";
import { KindBadge, kindOfTurn } from "./Kinds";

/** Props of {@link CompareView}. */
export interface CompareViewProps {
  backend: Backend;
  trajectoryId: string;
  left: BranchSummary;
  right: BranchSummary;
  onClose: () => void;
}

function Side({ t, text }: { t: TurnSummary | null; text: string | null }) {
  if (!t) return <div className="cmp-cell cmp-none">—</div>;
  const kind = kindOfTurn(t);
  return (
    <div className="cmp-cell">
      <div className="cmp-meta">
        <KindBadge kind={kind} />
        {t.has_real && (t.has_authored || t.prediction_count > 0) ? <KindBadge kind={t.has_authored ? "authored" : "predicted"} /> : null}
        <code className="cmp-action" title={t.action.raw}>
          {t.action.summary}
        </code>
        <span className="cmp-fid">{formatScore(t.fidelity)}</span>
        {t.perturbation ? (
          <span className="perturbation-chip" title="control instruction">
            ⚡ {t.perturbation}
          </span>
        ) : null}
      </div>
      <pre className="cmp-text">{text ?? "(no observation)"}</pre>
    </div>
  );
}

export function CompareView({ backend, trajectoryId, left, right, onClose }: CompareViewProps) {
  const compare = useCompare(backend, trajectoryId, left.id, right.id);
  const rows = compare.data?.rows ?? null;
  const error = compare.error ? compare.error.message : null;
  return (
    <section className="compare-view" role="region" aria-label="Branch comparison">
      <header className="compare-head">
        <h2>Compare branches</h2>
        <span className="cmp-title">{left.name}</span>
        <span className="muted">vs</span>
        <span className="cmp-title">{right.name}</span>
        <button type="button" onClick={onClose}>
          Back to the tree
        </button>
      </header>
      <ErrorLine error={error} />
      <div className="cmp-table" role="table" aria-label="Turns side by side">
        <div className="cmp-row cmp-header" role="row">
          <span role="columnheader">turn</span>
          <span role="columnheader">{left.name}</span>
          <span role="columnheader">{right.name}</span>
        </div>
        {(rows ?? []).map((r) => (
          <div key={r.turn} className={r.same_action ? "cmp-row" : "cmp-row is-diverged"} role="row" aria-label={`Turn ${r.turn}`}>
            <span className="cmp-turn" role="cell">
              {r.turn}
              {!r.same_action ? (
                <span className="cmp-diverge" title="different actions">
                  ≠
                </span>
              ) : null}
            </span>
            <div role="cell">
              <Side t={r.left} text={r.left_text} />
            </div>
            <div role="cell">
              <Side t={r.right} text={r.right_text} />
            </div>
          </div>
        ))}
        {rows && rows.length === 0 ? <p className="muted">Both branches are empty.</p> : null}
      </div>
    </section>
  );
}
