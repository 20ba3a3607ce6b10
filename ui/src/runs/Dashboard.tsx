/**
 * One run's dashboard: judge scores by domain × dimension, metric
 * distributions, status counts, and fidelity by turn, charted from
 * `get_run_dashboard` and `run_drift` as the API counted them.
 */
import { useMemo } from "react";
import type { Backend } from "../backend/backend";
import { useRunDashboard } from "../data/queries";
import { DriftChart } from "./DriftChart";
import { EChart } from "./EChart";
import { chartColors, domainScoreOption, metricHistogramOption, statusOption } from "./runsModel";

/** Props of {@link Dashboard}. */
export interface DashboardProps {
  backend: Backend;
  runId: string | null;
  runB: string | null;
  theme: "light" | "dark";
}

export function Dashboard({ backend, runId, runB, theme }: DashboardProps) {
  const dash = useRunDashboard(backend, runId);
  const colors = chartColors(theme);
  const d = dash.data;
  const options = useMemo(
    () => (d ? { domains: domainScoreOption(d, colors), metrics: metricHistogramOption(d, colors), status: statusOption(d, colors) } : null),
    // `colors` follows `theme`.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [d, theme],
  );
  if (dash.error) return <div className="pane-empty">{String(dash.error)}</div>;
  if (!d || !options) return <div className="pane-empty">Loading…</div>;
  return (
    <div className="dashboard" aria-label="Run dashboard">
      {options.domains ? (
        <EChart title={`Judge scores by domain — ${d.run.name}`} option={options.domains} theme={theme} height={300} wide />
      ) : (
        <p className="chart-note wide">Not judged: run `worldloom judge` on this file (or import the official judged.jsonl) for the judge&apos;s scores.</p>
      )}
      {options.metrics ? <EChart title={`Metric distributions — ${d.run.name}`} option={options.metrics} theme={theme} height={260} /> : null}
      <EChart
        title={`Status counts — ${d.run.name}`}
        option={options.status}
        theme={theme}
        height={Math.max(140, 26 * (d.statuses.length + d.judge.length) + 40)}
      />
      <DriftChart backend={backend} runA={runId} runB={runB} theme={theme} wide />
    </div>
  );
}
