/**
 * The Runs view: the runs of the workspace (imported eval outputs), one
 * run's dashboard (scores per domain × judge dimension, metric
 * distributions, status counts), its row table (virtualised, with
 * full-text search, filters and sorting), and two runs compared row by row
 * (outcome filter, A-vs-B scatter, paired deltas). A row opens in the turn
 * view with its own prediction.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useReducer, useRef, useState } from "react";
import type { PairOutcome, RowsExportFormat, RunPair, RunRowSort, RunRowView, RunSummary, SearchIn } from "../api/types";
import type { Backend } from "../backend/backend";
import { VirtualList } from "../components/VirtualList";
import { invalidate, keysTouchedByChange } from "../data/invalidation";
import { keys } from "../data/keys";
import { useCompareRuns, useLabelSet, useRunDashboard, useRunRows, useRuns } from "../data/queries";
import { DriftChart, driftTitle } from "./DriftChart";
import { EChart, chartSvg } from "./EChart";
import { RunJobsPanel } from "./StartRun";
import { buildReport, type PickedRow } from "./report";
import { RowPanel, copyText, currentRowLink } from "./RowPanel";
import { ThreePanes } from "./ThreePanes";
import {
  INITIAL_RUNS,
  chartColors,
  domainScoreOption,
  formatDelta,
  formatMetric,
  formatScore,
  driftOption,
  labelChoices,
  metricHistogramOption,
  metricLabel,
  outcomeLabel,
  rowKeyAction,
  rowsRequest,
  runsReducer,
  scatterOption,
  statusOption,
  type RunsAction,
  type RunsState,
  type RunsTab,
} from "./runsModel";

/** Props of {@link RunsView}. */
export interface RunsViewProps {
  backend: Backend;
  /** What is chosen, kept by the window (so a row opened and the way back keep it); see {@link useRunsState}. */
  runs: [RunsState, (action: RunsAction) => void];
  theme: "light" | "dark";
  /** Opens a row in the turn view. */
  onOpenRow: (row: RunRowView) => void;
}

const ROW_HEIGHT = 30;

function runLabel(r: RunSummary): string {
  return `${r.name} · ${r.engine}`;
}

/** The Runs view's state, held by the window so that it outlives the view. */
export function useRunsState(): [RunsState, (action: RunsAction) => void] {
  return useReducer(runsReducer, INITIAL_RUNS);
}

export function RunsView({ backend, runs: [state, dispatch], theme, onOpenRow }: RunsViewProps) {
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
        <button type="button" disabled={!runA} onClick={() => runA && void exportReport(backend, list, runA.run_id, runB?.run_id ?? null)}>
          Export report…
        </button>
        <div className="seg" role="tablist" aria-label="Runs view">
          {(
            [
              ["dashboard", "Dashboard"],
              ["rows", "Rows"],
              ["compare", "Compare A | B"],
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
    </section>
  );
}

/**
 * Builds the report of run A (compared with B when chosen; the labelled or
 * noted rows of A picked, at most 50, with their texts) and saves it as an
 * HTML file.
 */
async function exportReport(backend: Backend, runs: RunSummary[], runA: string, runB: string | null): Promise<void> {
  try {
    const dashboard = await backend.call("get_run_dashboard", { run_id: runA });
    const colors = chartColors("light");
    const charts: Array<{ title: string; svg: string }> = [];
    const add = (title: string, option: ReturnType<typeof statusOption> | null, height: number) => {
      if (option) charts.push({ title, svg: chartSvg(option, "light", 760, height) });
    };
    add("Judge scores by domain", domainScoreOption(dashboard, colors), 300);
    add("Metric distributions", metricHistogramOption(dashboard, colors), 280);
    add("Status counts", statusOption(dashboard, colors), Math.max(140, 26 * (dashboard.statuses.length + dashboard.judge.length) + 40));
    const compare =
      runB === null
        ? null
        : await backend.call("compare_runs", { run_a: runA, run_b: runB, metric: null, outcome: null, tie_margin: null, domain: null, offset: 0, limit: null });
    if (compare) add("A vs B", scatterOption(compare, colors), 360);
    const drift = await backend.call("run_drift", { run_a: runA, run_b: runB, metric: null });
    add(
      driftTitle(
        drift.metric,
        drift.series.map((s) => s.run.name),
      ),
      driftOption(drift, colors),
      280,
    );
    const all = await backend.call("list_run_rows", {
      run_id: runA,
      query: null,
      search_in: null,
      domain: null,
      status: null,
      label: null,
      min_score: null,
      max_score: null,
      sort: null,
      descending: false,
      offset: 0,
      limit: null,
    });
    const labelled = all.rows.filter((r) => r.labels.length > 0 || r.note !== null).slice(0, 50);
    const picked: PickedRow[] = await Promise.all(
      labelled.map(async (row) => {
        const t = await backend.call("get_turn", { trajectory_id: row.trajectory_id, node_id: row.node_id, prediction_id: row.prediction_id });
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
    });
    const url = URL.createObjectURL(new Blob([html], { type: "text/html" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = `worldloom-report-${dashboard.run.name.replace(/[^A-Za-z0-9_-]+/g, "-")}.html`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } catch (e) {
    window.alert(`The report could not be made: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function RunsTable({ runs, chosenA, chosenB }: { runs: RunSummary[]; chosenA: string | null; chosenB: string | null }) {
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

function Dashboard({ backend, runId, runB, theme }: { backend: Backend; runId: string | null; runB: string | null; theme: "light" | "dark" }) {
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

const SORTS: Array<[RunRowSort, string]> = [
  ["row", "#"],
  ["trajectory", "Trajectory"],
  ["turn", "Turn"],
  ["domain", "Domain"],
  ["status", "Status"],
  ["score", "Score"],
  ["text_f1", "Text F1"],
  ["node_f1", "Node F1"],
  ["transition_f1", "Trans. F1"],
];
/** The header of the labels column (not sortable). */
const LABELS_HEAD = "Labels";

/** Saves a text file the browser made. */
function saveText(text: string, fileName: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Exports run `runId`'s labelled or noted rows through the API (`export_run_rows`) and saves the file. */
function exportRows(backend: Backend, runId: string, format: RowsExportFormat): void {
  void backend
    .call("export_run_rows", { run_id: runId, format, annotated_only: true, path: null })
    .then((r) => saveText(r.content ?? "", r.file_name, format === "csv" ? "text/csv" : "application/x-ndjson"))
    .catch((e: unknown) => window.alert(`The rows could not be exported: ${e instanceof Error ? e.message : String(e)}`));
}

function RowsTab({
  backend,
  run,
  state,
  dispatch,
  onOpenRow,
}: {
  backend: Backend;
  run: RunSummary;
  state: ReturnType<typeof runsReducer>;
  dispatch: (a: Parameters<typeof runsReducer>[1]) => void;
  onOpenRow: (row: RunRowView) => void;
}) {
  const client = useQueryClient();
  const dash = useRunDashboard(backend, state.runA);
  const rows = useRunRows(backend, rowsRequest(state));
  const labelSet = useLabelSet(backend).data?.labels ?? [];
  // The active row (the panel's): an index into the rows shown; the first
  // search hit when a search is typed.
  const activeKey = `${state.runA ?? ""}\u0000${state.query}`;
  const [chosen, setChosen] = useState<{ key: string; index: number } | null>(null);
  const tableRef = useRef<HTMLDivElement>(null);
  const noteRef = useRef<HTMLTextAreaElement>(null);
  const data = rows.data;
  const searching = state.query.trim() !== "";
  const active = chosen !== null && chosen.key === activeKey ? chosen.index : searching ? 0 : null;
  const setActive = (index: number) => setChosen({ key: activeKey, index });
  const toggleLabel = (row: RunRowView, label: string) => {
    const present = !row.labels.includes(label);
    void backend
      .call("set_row_label", { row_id: row.row_id, label, present })
      .then(() => invalidate(client, keysTouchedByChange(null)))
      .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)));
  };
  const count = data?.rows.length ?? 0;
  const activeIndex = active === null || count === 0 ? null : Math.min(active, count - 1);
  const activeRow = activeIndex === null ? null : (data?.rows[activeIndex] ?? null);
  const focusRow = (i: number) => {
    setActive(i);
    // A row out of view exists once the list has scrolled to it.
    const row = () => tableRef.current?.querySelector<HTMLElement>(`.run-row[data-index="${i}"]`);
    const now = row();
    if (now) now.focus();
    else requestAnimationFrame(() => row()?.focus());
  };
  const onRowKey = (e: React.KeyboardEvent<HTMLDivElement>, i: number, row: RunRowView) => {
    const action = rowKeyAction(e, labelChoices(labelSet, row.labels));
    if (action === null) return;
    e.preventDefault();
    switch (action.type) {
      case "move":
        focusRow(Math.max(0, Math.min(count - 1, i + action.by)));
        break;
      case "label":
        toggleLabel(row, action.label);
        break;
      case "note":
        setActive(i);
        requestAnimationFrame(() => noteRef.current?.focus());
        break;
      case "open":
        onOpenRow(row);
        break;
      case "copy_link":
        void copyText(currentRowLink(row));
        break;
    }
  };
  const domains = dash.data?.domains.map((d) => d.domain).filter((d): d is NonNullable<typeof d> => d !== null) ?? [];
  const statuses = dash.data?.statuses.map((s) => s.status) ?? [];
  const annotated = data?.rows.some((r) => r.labels.length > 0 || r.note !== null) ?? false;
  return (
    <div className="run-rows">
      <div className="run-filters">
        <input
          type="search"
          aria-label="Search observations and actions"
          placeholder="Search real and predicted observations, actions…"
          value={state.query}
          onChange={(e) => dispatch({ type: "query", query: e.target.value })}
          onKeyDown={(e) => {
            // Enter opens the best hit; ↓ goes to the rows.
            const first = data?.rows[0];
            if (e.key === "Enter" && searching && first) onOpenRow(first);
            if (e.key === "ArrowDown" && count > 0) {
              e.preventDefault();
              focusRow(0);
            }
          }}
        />
        <select
          aria-label="Search in"
          value={state.searchIn}
          onChange={(e) => dispatch({ type: "query", query: state.query, searchIn: e.target.value as SearchIn })}
        >
          <option value="all">everywhere</option>
          <option value="real">real observation</option>
          <option value="predicted">predicted observation</option>
          <option value="action">action</option>
        </select>
        <select aria-label="Domain" value={state.domain ?? ""} onChange={(e) => dispatch({ type: "filter", domain: e.target.value || null })}>
          <option value="">all domains</option>
          {domains.map((d) => (
            <option key={d} value={d}>
              {d}
            </option>
          ))}
        </select>
        <select aria-label="Status" value={state.status ?? ""} onChange={(e) => dispatch({ type: "filter", status: e.target.value || null })}>
          <option value="">all statuses</option>
          {statuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select aria-label="Label" value={state.label ?? ""} onChange={(e) => dispatch({ type: "filter", label: e.target.value || null })}>
          <option value="">any label</option>
          {labelSet.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
        <LabelSetEditor backend={backend} labels={labelSet} />
        <span className="export-rows" title="Save the run's labelled or noted rows (labels, notes, scores and the ids that open each row)">
          Export labelled rows:{" "}
          <button type="button" disabled={!annotated} onClick={() => exportRows(backend, run.run_id, "csv")}>
            CSV
          </button>
          <button type="button" disabled={!annotated} onClick={() => exportRows(backend, run.run_id, "jsonl")}>
            JSONL
          </button>
        </span>
        <span className="muted" role="status">
          {data
            ? `${data.total} ${data.total === 1 ? "row" : "rows"}${searching ? " match (full-text index; Enter opens the best)" : ""}`
            : rows.isFetching
              ? "…"
              : ""}
        </span>
      </div>
      <div className="run-row run-head" role="row">
        {SORTS.map(([sort, text]) => (
          <button
            key={sort}
            type="button"
            className={`col col-${sort}`}
            onClick={() => dispatch({ type: "sort", sort })}
            aria-sort={state.sort === sort ? (state.descending ? "descending" : "ascending") : undefined}
          >
            {text}
            {state.sort === sort ? (state.descending ? " ▾" : " ▴") : ""}
          </button>
        ))}
        <span className="col col-labels">{LABELS_HEAD}</span>
        <span className="col col-note">Note</span>
      </div>
      <div ref={tableRef}>
        <VirtualList
          className="run-table"
          role="table"
          aria-label="Run rows"
          count={count}
          rowHeight={ROW_HEIGHT}
          fallbackHeight={480}
          scrollToIndex={activeIndex}
          renderRow={(i) => {
            const r = data?.rows[i];
            return r ? (
              <RowLine
                row={r}
                index={i}
                active={i === activeIndex}
                hit={searching}
                labels={labelChoices(labelSet, r.labels)}
                onOpen={() => onOpenRow(r)}
                onFocus={() => setActive(i)}
                onKey={(e) => onRowKey(e, i, r)}
                onLabel={(l) => toggleLabel(r, l)}
              />
            ) : null;
          }}
        />
      </div>
      {activeRow ? (
        <RowPanel
          key={activeRow.row_id}
          backend={backend}
          row={activeRow}
          query={state.query}
          noteRef={noteRef}
          onDone={() => activeIndex !== null && focusRow(activeIndex)}
          onOpen={() => onOpenRow(activeRow)}
        />
      ) : (
        <p className="chart-note">
          Focus a row (Tab, or ↓ from the search) to see its note and link: j/k move, 1–9 toggle labels, n writes a note, y copies a link, Enter opens.
        </p>
      )}
    </div>
  );
}

/** Edits the workspace's label set: one label per line (a setting, not an undoable change). */
function LabelSetEditor({ backend, labels }: { backend: Backend; labels: string[] }) {
  const client = useQueryClient();
  const [text, setText] = useState<string | null>(null);
  return (
    <details className="label-set" onToggle={(e) => setText((e.currentTarget as HTMLDetailsElement).open ? labels.join("\n") : null)}>
      <summary>Labels…</summary>
      <textarea aria-label="Label set, one per line" rows={7} value={text ?? ""} onChange={(e) => setText(e.target.value)} />
      <button
        type="button"
        onClick={() =>
          void backend
            .call("set_label_set", { labels: (text ?? "").split("\n") })
            .then((r) => {
              client.setQueryData(keys.labelSet(), r);
              setText(r.labels.join("\n"));
            })
            .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)))
        }
      >
        Save labels
      </button>
    </details>
  );
}

function RowLine({
  row,
  index,
  active,
  hit,
  labels,
  onOpen,
  onFocus,
  onKey,
  onLabel,
}: {
  row: RunRowView;
  index: number;
  active: boolean;
  /** A search hit (the table shows only hits while a search is typed). */
  hit: boolean;
  labels: string[];
  onOpen: () => void;
  onFocus: () => void;
  onKey: (e: React.KeyboardEvent<HTMLDivElement>) => void;
  onLabel: (label: string) => void;
}) {
  return (
    <div
      className={`run-row${active ? " is-active" : ""}${hit ? " search-hit" : ""}`}
      role="row"
      tabIndex={0}
      data-index={index}
      aria-selected={active}
      onClick={onOpen}
      onFocus={onFocus}
      onKeyDown={(e) => {
        if (e.target !== e.currentTarget) return;
        onKey(e);
      }}
      title={row.error ?? `Open ${row.trajectory_name} turn ${row.turn} (Enter); j/k move, 1–9 toggle labels, n note, y copy link`}
    >
      <span className="col col-row">{row.row_index + 1}</span>
      <span className="col col-trajectory">{row.trajectory_name}</span>
      <span className="col col-turn">{row.turn}</span>
      <span className="col col-domain">{row.domain}</span>
      <span className={`col col-status status-${row.status}`}>{row.judge_failed ? `${row.status} · judge failed` : row.status}</span>
      <span className="col col-score num">{formatScore(row.score)}</span>
      <span className="col col-text_f1 num">{formatMetric(row.text_f1)}</span>
      <span className="col col-node_f1 num">{formatMetric(row.node_f1)}</span>
      <span className="col col-transition_f1 num">{formatMetric(row.transition_f1)}</span>
      <span className="col col-labels" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.stopPropagation()}>
        {row.labels.map((l) => (
          <span key={l} className="label-chip">
            {l}
          </span>
        ))}
        <select
          aria-label={`Label row ${row.row_index + 1}`}
          value=""
          onChange={(e) => {
            if (e.target.value) onLabel(e.target.value);
          }}
        >
          <option value="">+ label</option>
          {labels.map((l) => (
            <option key={l} value={l}>
              {row.labels.includes(l) ? `✓ ${l}` : l}
            </option>
          ))}
        </select>
      </span>
      <span className="col col-note" title={row.note ?? undefined}>
        {row.note ?? ""}
      </span>
    </div>
  );
}

const OUTCOMES: Array<PairOutcome | null> = [null, "a_better", "b_better", "tie", "unscored"];

function CompareTab({
  backend,
  runA,
  runB,
  outcome,
  dispatch,
  theme,
  onOpenRow,
}: {
  backend: Backend;
  runA: string;
  runB: string;
  outcome: PairOutcome | null;
  dispatch: (a: Parameters<typeof runsReducer>[1]) => void;
  theme: "light" | "dark";
  onOpenRow: (row: RunRowView) => void;
}) {
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
            rowHeight={ROW_HEIGHT}
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
