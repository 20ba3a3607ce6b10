/**
 * The Runs view: the runs of the workspace (imported eval outputs, or made
 * here: `StartRun.tsx`), runs A and B chosen, and one screen of three: one
 * run's dashboard (`Dashboard.tsx`), its row table (`RowsTab.tsx`), or two
 * runs compared row by row (`CompareTab.tsx`), or what A's predictions get
 * wrong, counted by error kind (`AtlasTab.tsx`, beside B's when chosen);
 * the report (`exportReport.ts`).
 * A row opens in the turn view with its own prediction.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useReducer } from "react";
import type { RunRowView, RunSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { useRuns } from "../data/queries";
import { AtlasTab } from "./AtlasTab";
import { CompareTab } from "./CompareTab";
import { Dashboard } from "./Dashboard";
import { exportReport } from "./exportReport";
import { RowsTab } from "./RowsTab";
import { RunsTable } from "./RunsTable";
import { RunJobsPanel } from "./StartRun";
import { INITIAL_RUNS, runsReducer, type RunsAction, type RunsState, type RunsTab } from "./runsModel";

/** Props of {@link RunsView}. */
export interface RunsViewProps {
  backend: Backend;
  /** What is chosen, kept by the window (so a row opened and the way back keep it); see {@link useRunsState}. */
  runs: [RunsState, (action: RunsAction) => void];
  theme: "light" | "dark";
  /** Opens a row in the turn view. */
  onOpenRow: (row: RunRowView) => void;
}

function runLabel(r: RunSummary): string {
  return `${r.name} · ${r.engine}`;
}

/** The Runs view's state, held by the window so that it outlives the view. */
export function useRunsState(): [RunsState, (action: RunsAction) => void] {
  return useReducer(runsReducer, INITIAL_RUNS);
}

export function RunsView({ backend, runs: [state, dispatch], theme, onOpenRow }: RunsViewProps) {
  const client = useQueryClient();
  const runsQuery = useRuns(backend);
  const list = useMemo(() => runsQuery.data?.runs ?? [], [runsQuery.data]);
  const ids = useMemo(() => list.map((r) => r.run_id), [list]);
  useEffect(() => dispatch({ type: "runs_loaded", runIds: ids }), [ids, dispatch]);

  if (runsQuery.isSuccess && list.length === 0) {
    return (
      <section className="runs" aria-label="Runs">
        <div className="pane-empty runs-empty" role="status">
          No run yet. A run is a file of predictions over a dataset: import what <code>worldloom eval</code> writes (judged or not) or the official{" "}
          <code>predictions.jsonl</code> / <code>judged.jsonl</code> with Import… or by dropping it here, or start one below.
        </div>
        <RunJobsPanel backend={backend} runs={list} />
      </section>
    );
  }
  const runA = list.find((r) => r.run_id === state.runA) ?? null;
  const runB = list.find((r) => r.run_id === state.runB) ?? null;
  return (
    <section className="runs" aria-label="Runs">
      <div className="runs-bar">
        <label>
          Run A{" "}
          <select aria-label="Run A" value={state.runA ?? ""} onChange={(e) => dispatch({ type: "run_a", runId: e.target.value })}>
            {list.map((r) => (
              <option key={r.run_id} value={r.run_id}>
                {runLabel(r)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Run B{" "}
          <select aria-label="Run B" value={state.runB ?? ""} onChange={(e) => dispatch({ type: "run_b", runId: e.target.value || null })}>
            <option value="">(none)</option>
            {list
              .filter((r) => r.run_id !== state.runA)
              .map((r) => (
                <option key={r.run_id} value={r.run_id}>
                  {runLabel(r)}
                </option>
              ))}
          </select>
        </label>
        <button type="button" disabled={!runA} onClick={() => runA && void exportReport(client, backend, list, runA.run_id, runB?.run_id ?? null)}>
          Export report…
        </button>
        <div className="seg" role="tablist" aria-label="Runs view">
          {(
            [
              ["dashboard", "Dashboard"],
              ["rows", "Rows"],
              ["compare", "Compare A | B"],
              ["atlas", "Atlas"],
            ] as Array<[RunsTab, string]>
          ).map(([tab, text]) => (
            <button
              key={tab}
              type="button"
              role="tab"
              aria-selected={state.tab === tab}
              disabled={tab === "compare" && !runB}
              onClick={() => dispatch({ type: "tab", tab })}
            >
              {text}
            </button>
          ))}
        </div>
      </div>
      <RunJobsPanel backend={backend} runs={list} defaultRunId={state.runA} />
      <RunsTable runs={list} chosenA={state.runA} chosenB={state.runB} />
      {state.tab === "dashboard" ? <Dashboard backend={backend} runId={state.runA} runB={state.runB} theme={theme} /> : null}
      {state.tab === "rows" && runA ? <RowsTab backend={backend} run={runA} state={state} dispatch={dispatch} onOpenRow={onOpenRow} /> : null}
      {state.tab === "compare" && runA && runB ? (
        <CompareTab backend={backend} runA={runA.run_id} runB={runB.run_id} outcome={state.outcome} dispatch={dispatch} theme={theme} onOpenRow={onOpenRow} />
      ) : null}
      {state.tab === "atlas" && runA ? <AtlasTab backend={backend} runA={runA.run_id} runB={runB?.run_id ?? null} state={state} onOpenRow={onOpenRow} /> : null}
    </section>
  );
}
