/**
 * Two runs compared row by row: the outcome filter with its counts, the
 * A-vs-B scatter, the paired rows with their deltas (each opens real | A | B
 * or a side in the turn view), and fidelity by turn of both.
 */
import { useMemo, useState } from "react";
import type { PairOutcome, RunPair, RunRowView } from "../api/types";
import type { Backend } from "../backend/backend";
import { VirtualList } from "../components/VirtualList";
import { useCompareRuns } from "../data/queries";
import { DriftChart } from "./DriftChart";
import { EChart } from "./EChart";
import { ThreePanes } from "./ThreePanes";
import { RUN_ROW_HEIGHT_PX, chartColors, formatDelta, formatScore, metricLabel, outcomeLabel, scatterOption, type RunsAction } from "./runsModel";

const OUTCOMES: Array<PairOutcome | null> = [null, "a_better", "b_better", "tie", "unscored"];

/** Props of {@link CompareTab}. */
export interface CompareTabProps {
  backend: Backend;
  runA: string;
  runB: string;
  outcome: PairOutcome | null;
  dispatch: (a: RunsAction) => void;
  theme: "light" | "dark";
  onOpenRow: (row: RunRowView) => void;
}

export function CompareTab({ backend, runA, runB, outcome, dispatch, theme, onOpenRow }: CompareTabProps) {
  const cmp = useCompareRuns(backend, runA, runB, outcome);
  const c = cmp.data;
  const [open, setOpen] = useState<RunPair | null>(null);
  const option = useMemo(() => (c ? scatterOption(c, chartColors(theme)) : null), [c, theme]);
  if (cmp.error) return <div className="pane-empty">{String(cmp.error)}</div>;
  if (!c || !option) return <div className="pane-empty">Loading…</div>;
  const count = (o: PairOutcome | null) =>
    o === null ? c.counts.paired : o === "a_better" ? c.counts.a_better : o === "b_better" ? c.counts.b_better : o === "tie" ? c.counts.tie : c.counts.unscored;
  return (
    <div className="run-compare">
      <div className="run-filters">
        <div className="seg" role="radiogroup" aria-label="Outcome">
          {OUTCOMES.map((o) => (
            <button key={o ?? "all"} type="button" role="radio" aria-checked={outcome === o} onClick={() => dispatch({ type: "outcome", outcome: o })}>
              {outcomeLabel(o)} ({count(o)})
            </button>
          ))}
        </div>
        <span className="muted">
          on {c.metric === "score" ? "the judge score" : metricLabel(c.metric)} (0–100), ties within {c.tie_margin}, a failed prediction counts 0;{" "}
          {c.counts.only_a} rows only in A, {c.counts.only_b} only in B
        </span>
      </div>
      <div className="compare-body">
        <EChart title={`A vs B — ${c.run_a.name} vs ${c.run_b.name}`} option={option} theme={theme} height={320} />
        <div className="pair-list">
          <div className="pair-row run-head" role="row">
            <span>Trajectory</span>
            <span>Turn</span>
            <span>Domain</span>
            <span className="num">A</span>
            <span className="num">B</span>
            <span className="num">A − B</span>
            <span>Open</span>
          </div>
          <VirtualList
            className="run-table"
            role="table"
            aria-label="Paired rows"
            count={c.pairs.length}
            rowHeight={RUN_ROW_HEIGHT_PX}
            fallbackHeight={320}
            renderRow={(i) => {
              const p = c.pairs[i];
              return p ? <PairLine pair={p} onOpenRow={onOpenRow} onShow={() => setOpen(p)} /> : null;
            }}
          />
        </div>
      </div>
      {open ? <ThreePanes key={`${open.a.row_id}/${open.b.row_id}`} backend={backend} pair={open} onClose={() => setOpen(null)} /> : null}
      <DriftChart backend={backend} runA={runA} runB={runB} theme={theme} />
    </div>
  );
}

function PairLine({ pair, onOpenRow, onShow }: { pair: RunPair; onOpenRow: (row: RunRowView) => void; onShow: () => void }) {
  return (
    <div
      className={`pair-row outcome-${pair.outcome}`}
      data-b-status={pair.b.status}
      role="row"
      tabIndex={0}
      title="Show real | A | B"
      onClick={onShow}
      onKeyDown={(e) => {
        if (e.key === "Enter") onShow();
      }}
    >
      <span>{pair.a.trajectory_name}</span>
      <span>{pair.a.turn}</span>
      <span>{pair.a.domain}</span>
      <span className="num">{formatScore(pair.a_value)}</span>
      <span className="num">{formatScore(pair.b_value)}</span>
      <span className="num delta">{formatDelta(pair.delta)}</span>
      <span className="pair-open" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.stopPropagation()}>
        <button type="button" onClick={() => onOpenRow(pair.a)} title="Open A's prediction in the turn view">
          A
        </button>
        <button type="button" onClick={() => onOpenRow(pair.b)} title="Open B's prediction in the turn view">
          B
        </button>
      </span>
    </div>
  );
}
