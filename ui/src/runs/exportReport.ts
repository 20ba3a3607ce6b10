/**
 * The Runs view's HTML report: run A's dashboard charts (compared with B
 * when chosen), its drift by turn, its fidelity atlas, and its labelled or noted rows with
 * their texts, read through the query layer (cached replies are reused) and
 * saved as one self-contained file (`report.ts` writes it).
 */
import type { QueryClient } from "@tanstack/react-query";
import type { RunSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { saveFile } from "../components/dom";
import { compareRunsQuery, runAtlasQuery, runDashboardQuery, runDriftQuery, runRowsQuery, turnQuery } from "../data/queries";
import { driftTitle } from "./DriftChart";
import { chartSvg } from "./EChart";
import { buildReport, type PickedRow } from "./report";
import { allRowsRequest, chartColors, domainScoreOption, driftOption, metricHistogramOption, scatterOption, statusOption } from "./runsModel";

/**
 * Builds the report of run A (compared with B when chosen; the labelled or
 * noted rows of A picked, at most 50, with their texts) and saves it as an
 * HTML file.
 */
export async function exportReport(client: QueryClient, backend: Backend, runs: RunSummary[], runA: string, runB: string | null): Promise<void> {
  try {
    const dashboard = await client.fetchQuery(runDashboardQuery(backend, runA));
    const colors = chartColors("light");
    const charts: Array<{ title: string; svg: string }> = [];
    const add = (title: string, option: ReturnType<typeof statusOption> | null, height: number) => {
      if (option) charts.push({ title, svg: chartSvg(option, "light", 760, height) });
    };
    add("Judge scores by domain", domainScoreOption(dashboard, colors), 300);
    add("Metric distributions", metricHistogramOption(dashboard, colors), 280);
    add("Status counts", statusOption(dashboard, colors), Math.max(140, 26 * (dashboard.statuses.length + dashboard.judge.length) + 40));
    const compare = runB === null ? null : await client.fetchQuery(compareRunsQuery(backend, runA, runB, null));
    if (compare) add("A vs B", scatterOption(compare, colors), 360);
    const drift = await client.fetchQuery(runDriftQuery(backend, runA, runB));
    add(
      driftTitle(
        drift.metric,
        drift.series.map((s) => s.run.name),
      ),
      driftOption(drift, colors),
      280,
    );
    const atlas = await client.fetchQuery(runAtlasQuery(backend, runA, runB));
    const all = await client.fetchQuery(runRowsQuery(backend, allRowsRequest(runA)));
    const labelled = all.rows.filter((r) => r.labels.length > 0 || r.note !== null).slice(0, 50);
    const picked: PickedRow[] = await Promise.all(
      labelled.map(async (row) => {
        const t = await client.fetchQuery(turnQuery(backend, row.trajectory_id, row.node_id, row.prediction_id));
        const v = t.views[0];
        return { row, real: v?.real?.text ?? null, predicted: v?.predicted?.text ?? null };
      }),
    );
    const html = buildReport({
      title: compare ? `${compare.run_a.name} vs ${compare.run_b.name}` : dashboard.run.name,
      generatedAt: new Date().toISOString(),
      runs,
      dashboard,
      charts,
      compare,
      picked,
      atlas,
    });
    saveFile(html, `worldloom-report-${dashboard.run.name.replace(/[^A-Za-z0-9_-]+/g, "-")}.html`, "text/html");
  } catch (e) {
    window.alert(`The report could not be made: ${e instanceof Error ? e.message : String(e)}`);
  }
}
