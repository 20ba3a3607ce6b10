/**
 * One state predicted by two runs: real | A | B side by side, each
 * prediction's lines that differ from the real observation marked (from the
 * API's line diff of each prediction against the real state; nothing is
 * diffed here). Observations are shown as text, never rendered.
 */
import type { RunPair, TurnDetail } from "../api/types";
import type { Backend } from "../backend/backend";
import { useTurn } from "../data/queries";
import { changedPredictedLines, changedRealLines, formatScore } from "./runsModel";

/** Props of {@link ThreePanes}. */
export interface ThreePanesProps {
  backend: Backend;
  pair: RunPair;
  onClose: () => void;
}

function Lines({ text, marked, label }: { text: string | null; marked: Set<number>; label: string }) {
  if (text === null) return <div className="pane-empty">none</div>;
  return (
    <pre className="three-text" aria-label={label}>
      {text.split("\n").map((line, i) => (
        <div key={i} className={marked.has(i) ? "line changed" : "line"}>
          {line === "" ? "\u00a0" : line}
        </div>
      ))}
    </pre>
  );
}

function view(detail: TurnDetail | undefined) {
  return detail?.views[0] ?? null;
}

export function ThreePanes({ backend, pair, onClose }: ThreePanesProps) {
  const a = useTurn(backend, pair.a.trajectory_id, pair.a.node_id, pair.a.prediction_id, true);
  const b = useTurn(backend, pair.b.trajectory_id, pair.b.node_id, pair.b.prediction_id, true);
  const va = view(a.data);
  const vb = view(b.data);
  const missed = new Set([...changedRealLines(va?.line_diff), ...changedRealLines(vb?.line_diff)]);
  return (
    <section className="three-panes" aria-label="Real, A and B">
      <header>
        <b>{pair.a.trajectory_name}</b> turn {pair.a.turn} · {pair.a.domain} · A {formatScore(pair.a_value)} · B {formatScore(pair.b_value)}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      {a.error || b.error ? <div className="pane-empty">{String(a.error ?? b.error)}</div> : null}
      <div className="three-grid">
        <div>
          <h4>Real</h4>
          <Lines text={va?.real?.text ?? null} marked={missed} label="Real observation" />
        </div>
        <div>
          <h4>A · {pair.a.status}</h4>
          <Lines text={va?.predicted?.text ?? null} marked={changedPredictedLines(va?.line_diff)} label="A's prediction" />
        </div>
        <div>
          <h4>B · {pair.b.status}</h4>
          <Lines text={vb?.predicted?.text ?? null} marked={changedPredictedLines(vb?.line_diff)} label="B's prediction" />
        </div>
      </div>
    </section>
  );
}
