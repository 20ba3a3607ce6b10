/** The Runs view's list of runs: one line per run, runs A and B marked. */
import type { RunSummary } from "../api/types";
import { formatMetric, formatScore } from "./runsModel";

/** Props of {@link RunsTable}. */
export interface RunsTableProps {
  runs: RunSummary[];
  chosenA: string | null;
  chosenB: string | null;
}

export function RunsTable({ runs, chosenA, chosenB }: RunsTableProps) {
  return (
    <table className="runs-table">
      <thead>
        <tr>
          <th />
          <th>Run</th>
          <th>Engine</th>
          <th>Mode</th>
          <th className="num">Rows</th>
          <th className="num">Judged</th>
          <th className="num">Score</th>
          <th className="num">Text F1</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.run_id} className={r.run_id === chosenA ? "is-a" : r.run_id === chosenB ? "is-b" : undefined}>
            <td>{r.run_id === chosenA ? "A" : r.run_id === chosenB ? "B" : ""}</td>
            <td title={r.source_path ?? undefined}>{r.name}</td>
            <td>{r.engine}</td>
            <td>{r.mode}</td>
            <td className="num">{r.row_count}</td>
            <td className="num">{r.judged_count}</td>
            <td className="num">{formatScore(r.overall_score)}</td>
            <td className="num">{formatMetric(r.mean_text_f1)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
