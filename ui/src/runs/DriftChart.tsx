/**
 * Fidelity by turn index (drift) of run A, and of run B when chosen: one
 * line per run over the turns, from the API's per-turn aggregates
 * (`run_drift`). A teacher-forced and a free-running run of one model show
 * whether free-running drifts after a few turns.
 */
import { useMemo } from "react";
import type { Backend } from "../backend/backend";
import { useRunDrift } from "../data/queries";
import { EChart } from "./EChart";
import { chartColors, driftOption, metricLabel } from "./runsModel";

/** Props of {@link DriftChart}. */
export interface DriftChartProps {
  backend: Backend;
  runA: string | null;
  runB: string | null;
  theme: "light" | "dark";
  /** Spans the whole row of the dashboard's grid. */
  wide?: boolean;
}

/** The chart's title for a reply: the value charted and the runs. */
export function driftTitle(metric: string, names: string[]): string {
  return `Fidelity by turn (${metric === "score" ? "judge score" : metricLabel(metric)}) — ${names.join(" vs ")}`;
}

export function DriftChart({ backend, runA, runB, theme, wide = false }: DriftChartProps) {
  const drift = useRunDrift(backend, runA, runB);
  const d = drift.data;
  const option = useMemo(() => (d ? driftOption(d, chartColors(theme)) : null), [d, theme]);
  if (drift.error) return <p className="chart-note">{String(drift.error)}</p>;
  if (!d) return null;
  if (!option) return <p className="chart-note">No turn has a value to chart by turn index.</p>;
  return (
    <EChart
      title={driftTitle(
        d.metric,
        d.series.map((s) => s.run.name),
      )}
      option={option}
      theme={theme}
      height={280}
      wide={wide}
    />
  );
}
