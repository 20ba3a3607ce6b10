/**
 * The Runs view's logic, without React: what is chosen (a reducer), how
 * numbers are written, and the chart options built from the API's replies
 * (`get_run_dashboard`, `compare_runs`). Every number comes from the API;
 * nothing here re-computes a score or a metric.
 */
import type {
  CompareRunsResponse,
  LineDiff,
  ListRunRowsRequest,
  PairOutcome,
  RunDashboard,
  RunDriftResponse,
  RunRowSort,
  RunRowView,
  SearchIn,
} from "../api/types";

/** The Runs view's tabs. */
export type RunsTab = "dashboard" | "rows" | "compare" | "atlas";

/** What the Runs view shows. */
export interface RunsState {
  tab: RunsTab;
  /** The run shown (A). */
  runA: string | null;
  /** The run compared with it (B). */
  runB: string | null;
  /** The row table's full-text search. */
  query: string;
  searchIn: SearchIn;
  domain: string | null;
  status: string | null;
  /** Only rows carrying this label. */
  label: string | null;
  sort: RunRowSort;
  descending: boolean;
  /** The comparison's outcome filter (`null`: all pairs). */
  outcome: PairOutcome | null;
}

/** What can change in the Runs view. */
export type RunsAction =
  | { type: "tab"; tab: RunsTab }
  | { type: "runs_loaded"; runIds: string[] }
  | { type: "run_a"; runId: string }
  | { type: "run_b"; runId: string | null }
  | { type: "query"; query: string; searchIn?: SearchIn }
  | { type: "filter"; domain?: string | null; status?: string | null; label?: string | null }
  | { type: "sort"; sort: RunRowSort }
  | { type: "outcome"; outcome: PairOutcome | null };

/** The Runs view's first state. */
export const INITIAL_RUNS: RunsState = {
  tab: "dashboard",
  runA: null,
  runB: null,
  query: "",
  searchIn: "all",
  domain: null,
  status: null,
  label: null,
  sort: "row",
  descending: false,
  outcome: null,
};

/** The Runs view's reducer (pure). */
export function runsReducer(state: RunsState, action: RunsAction): RunsState {
  switch (action.type) {
    case "tab":
      return { ...state, tab: action.tab };
    case "runs_loaded": {
      // Keep the chosen runs while they exist; else the newest two.
      const ids = action.runIds;
      const a = state.runA !== null && ids.includes(state.runA) ? state.runA : (ids[ids.length - 1] ?? null);
      const rest = ids.filter((id) => id !== a);
      const b = state.runB !== null && rest.includes(state.runB) ? state.runB : (rest[rest.length - 1] ?? null);
      return a === state.runA && b === state.runB ? state : { ...state, runA: a, runB: b };
    }
    case "run_a":
      return { ...state, runA: action.runId, runB: state.runB === action.runId ? state.runA : state.runB, domain: null, status: null };
    case "run_b":
      return { ...state, runB: action.runId === state.runA ? state.runB : action.runId };
    case "query":
      return { ...state, query: action.query, searchIn: action.searchIn ?? state.searchIn };
    case "filter":
      return {
        ...state,
        domain: action.domain === undefined ? state.domain : action.domain,
        status: action.status === undefined ? state.status : action.status,
        label: action.label === undefined ? state.label : action.label,
      };
    case "sort":
      // The same column again reverses it; scores start best first.
      if (action.sort === state.sort) return { ...state, descending: !state.descending };
      return { ...state, sort: action.sort, descending: action.sort === "score" || action.sort.endsWith("_f1") };
    case "outcome":
      return { ...state, outcome: action.outcome };
  }
}

/** The `list_run_rows` request of the row table (every row: the table is virtualised). */
export function rowsRequest(state: RunsState): ListRunRowsRequest | null {
  if (state.runA === null) return null;
  const query = state.query.trim();
  return {
    ...allRowsRequest(state.runA),
    query: query === "" ? null : query,
    search_in: state.searchIn,
    domain: (state.domain as ListRunRowsRequest["domain"]) ?? null,
    status: state.status,
    label: state.label,
    sort: query !== "" && state.sort === "row" ? "relevance" : state.sort,
    descending: state.descending,
  };
}

/** The `list_run_rows` request of every row of run `runId`, unfiltered, in row order. */
export function allRowsRequest(runId: string): ListRunRowsRequest {
  return {
    run_id: runId,
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
  };
}

/**
 * The labels a row's picker offers: the workspace's set, then labels already
 * on the row that the set no longer has (so they can be cleared).
 */
export function labelChoices(labelSet: readonly string[], onRow: readonly string[]): string[] {
  return [...labelSet, ...onRow.filter((l) => !labelSet.includes(l))];
}

/** A 0–100 score with one decimal; `—` when absent. */
export function formatScore(value: number | null | undefined): string {
  return value == null || !Number.isFinite(value) ? "—" : value.toFixed(1);
}

/** A `[0, 1]` metric with two decimals; `—` when absent. */
export function formatMetric(value: number | null | undefined): string {
  return value == null || !Number.isFinite(value) ? "—" : value.toFixed(2);
}

/** A signed difference (`+12.5`, `−3.0`, `0.0`); `—` when absent. */
export function formatDelta(value: number | null | undefined): string {
  if (value == null || !Number.isFinite(value)) return "—";
  if (Math.abs(value) < 0.05) return "0.0";
  return `${value > 0 ? "+" : "−"}${Math.abs(value).toFixed(1)}`;
}

/** The labels of `bins` equal-width bins over `[0, 1]` (`0.0–0.1`, …). */
export function binLabels(bins: number): string[] {
  return Array.from({ length: bins }, (_, i) => `${(i / bins).toFixed(1)}–${((i + 1) / bins).toFixed(1)}`);
}

/** A metric or dimension name as a reader writes it. */
export function metricLabel(name: string): string {
  const known: Record<string, string> = {
    text_f1: "Text F1",
    node_f1: "Node F1",
    attribute_accuracy: "Attribute accuracy",
    transition_f1: "Transition F1",
    total: "Total",
    score: "Judge score",
  };
  return known[name] ?? name.charAt(0).toUpperCase() + name.slice(1).replace(/_/g, " ");
}

/** How an outcome is named in the filter and the table. */
export function outcomeLabel(outcome: PairOutcome | null): string {
  switch (outcome) {
    case null:
      return "All";
    case "a_better":
      return "A better";
    case "b_better":
      return "B better";
    case "tie":
      return "Tie";
    case "unscored":
      return "Unscored";
  }
}

/** The chart theme's colours, from the studio's theme. */
export interface ChartColors {
  text: string;
  muted: string;
  grid: string;
  a: string;
  b: string;
}

/** Chart colours for the light and dark themes. */
export function chartColors(theme: "light" | "dark"): ChartColors {
  return theme === "dark"
    ? { text: "#e6e9ef", muted: "#8b95a7", grid: "#2e3440", a: "#6ea2ff", b: "#f0a35e" }
    : { text: "#1d2433", muted: "#667085", grid: "#d9dde3", a: "#2f6fde", b: "#d9822b" };
}

/** A chart option, as ECharts takes it (kept loose: the view passes it through). */
export type ChartOption = Record<string, unknown>;

function axisStyle(c: ChartColors) {
  return {
    axisLine: { lineStyle: { color: c.grid } },
    axisLabel: { color: c.muted },
    splitLine: { lineStyle: { color: c.grid } },
    nameTextStyle: { color: c.muted },
  };
}

/**
 * The paper's bar chart: per judge dimension (x) one bar per domain, on
 * `(mean − 1) / 4 × 100`; domains without valid rows are left out. `null`
 * when the run was not judged.
 */
export function domainScoreOption(d: RunDashboard, c: ChartColors): ChartOption | null {
  const judged = d.domains.filter((s) => s.valid > 0);
  if (judged.length === 0) return null;
  return {
    backgroundColor: "transparent",
    textStyle: { color: c.text },
    tooltip: { trigger: "axis", valueFormatter: (v: unknown) => (typeof v === "number" ? v.toFixed(1) : "—") },
    legend: { top: 0, type: "scroll", textStyle: { color: c.text } },
    grid: { left: 48, right: 16, top: 52, bottom: 32 },
    xAxis: { type: "category", data: d.dimensions.map(metricLabel), ...axisStyle(c), axisLabel: { color: c.muted, interval: 0 } },
    yAxis: { type: "value", min: 0, max: 100, name: "score", ...axisStyle(c) },
    series: judged.map((s) => ({
      type: "bar",
      name: s.domain ?? "all",
      data: s.scores.map((v) => (v == null ? null : Math.round(v * 10) / 10)),
    })),
  };
}

/** The metric distributions: one bar series per metric over the bins. */
export function metricHistogramOption(d: RunDashboard, c: ChartColors): ChartOption | null {
  const computed = d.metrics.filter((m) => m.count > 0);
  if (computed.length === 0) return null;
  return {
    backgroundColor: "transparent",
    textStyle: { color: c.text },
    tooltip: { trigger: "axis" },
    legend: { top: 0, type: "scroll", textStyle: { color: c.text } },
    grid: { left: 40, right: 16, top: 52, bottom: 44 },
    xAxis: { type: "category", data: binLabels(d.bins), ...axisStyle(c), axisLabel: { color: c.muted, interval: 0, fontSize: 10, rotate: 35 } },
    yAxis: { type: "value", name: "rows", minInterval: 1, ...axisStyle(c) },
    series: computed.map((m) => ({ type: "bar", name: `${metricLabel(m.metric)} ${formatMetric(m.mean)}`, data: m.bins })),
  };
}

/** Status counts (prediction status and judge outcome) as horizontal bars. */
export function statusOption(d: RunDashboard, c: ChartColors): ChartOption {
  const items = [...d.statuses.map((s) => [s.status, s.count] as const), ...d.judge.map((s) => [s.status, s.count] as const)];
  return {
    backgroundColor: "transparent",
    textStyle: { color: c.text },
    tooltip: { trigger: "axis" },
    grid: { left: 110, right: 24, top: 8, bottom: 24 },
    xAxis: { type: "value", minInterval: 1, ...axisStyle(c) },
    yAxis: { type: "category", inverse: true, data: items.map(([s]) => s), ...axisStyle(c) },
    series: [
      {
        type: "bar",
        name: "rows",
        data: items.map(([, n]) => n),
        itemStyle: { color: c.a },
        label: { show: true, position: "right", color: c.text },
      },
    ],
  };
}

/** The A-vs-B scatter with the diagonal (A = B). */
export function scatterOption(cmp: CompareRunsResponse, c: ChartColors): ChartOption {
  const metric = metricLabel(cmp.metric === "score" ? "score" : cmp.metric);
  return {
    backgroundColor: "transparent",
    textStyle: { color: c.text },
    tooltip: { trigger: "item", formatter: (p: { value: [number, number] }) => `A ${p.value[0].toFixed(1)} · B ${p.value[1].toFixed(1)}` },
    grid: { left: 56, right: 24, top: 24, bottom: 48 },
    xAxis: { type: "value", min: 0, max: 100, name: `A: ${cmp.run_a.name} (${metric})`, nameLocation: "middle", nameGap: 28, ...axisStyle(c) },
    yAxis: { type: "value", min: 0, max: 100, name: `B: ${cmp.run_b.name}`, nameLocation: "middle", nameGap: 36, ...axisStyle(c) },
    series: [
      {
        type: "scatter",
        name: "pairs",
        symbolSize: 9,
        itemStyle: { color: c.a, opacity: 0.75 },
        data: cmp.scatter.map((p) => [p.a, p.b]),
      },
      {
        type: "line",
        name: "A = B",
        data: [
          [0, 0],
          [100, 100],
        ],
        symbol: "none",
        lineStyle: { color: c.muted, type: "dashed", width: 1 },
        silent: true,
      },
    ],
  };
}

/** A file name for an exported chart: letters, digits, `-` and `_` only. */
export function exportFileName(title: string, ext: "png" | "svg"): string {
  const stem = title
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return `${stem || "chart"}.${ext}`;
}

/** The predicted side's lines (0-based) that differ from the real observation, from the API's line diff. */
export function changedPredictedLines(diff: LineDiff | null | undefined): Set<number> {
  const out = new Set<number>();
  for (const op of diff?.ops ?? []) {
    if (op.tag === "equal") continue;
    for (let i = op.pred_start; i < op.pred_end; i++) out.add(i);
  }
  return out;
}

/** The real side's lines (0-based) that a prediction missed or changed, from the API's line diff. */
export function changedRealLines(diff: LineDiff | null | undefined): Set<number> {
  const out = new Set<number>();
  for (const op of diff?.ops ?? []) {
    if (op.tag === "equal") continue;
    for (let i = op.real_start; i < op.real_end; i++) out.add(i);
  }
  return out;
}

/** The label a digit key toggles on a focused row: `1` the first of `labels`, … `9` the ninth; `null` for any other key. */
export function labelForKey(key: string, labels: readonly string[]): string | null {
  if (!/^[1-9]$/.test(key)) return null;
  return labels[Number(key) - 1] ?? null;
}

/**
 * Fidelity by turn index (drift): one line per run over the turns, the mean
 * of the metric on 0–100 (a gap where a turn has no value), with the
 * min–max of each turn as a faint band of points. `null` when no turn of any
 * run has a value.
 */
export function driftOption(d: RunDriftResponse, c: ChartColors): ChartOption | null {
  if (!d.series.some((s) => s.points.some((p) => p.mean != null))) return null;
  const turns = [...new Set(d.series.flatMap((s) => s.points.map((p) => p.turn)))].sort((x, y) => x - y);
  const colors = [c.a, c.b];
  const tag = (i: number) => (d.series.length > 1 ? `${i === 0 ? "A" : "B"}: ` : "");
  const round = (v: number | null | undefined) => (v == null ? null : Math.round(v * 10) / 10);
  return {
    backgroundColor: "transparent",
    textStyle: { color: c.text },
    tooltip: { trigger: "axis", valueFormatter: (v: unknown) => (typeof v === "number" ? v.toFixed(1) : "—") },
    legend: { top: 0, type: "scroll", textStyle: { color: c.text } },
    grid: { left: 48, right: 24, top: 40, bottom: 44 },
    xAxis: { type: "category", name: "turn", nameLocation: "middle", nameGap: 26, data: turns.map(String), ...axisStyle(c) },
    yAxis: { type: "value", min: 0, max: 100, name: d.metric === "score" ? "judge score" : `${metricLabel(d.metric)} × 100`, ...axisStyle(c) },
    series: d.series.flatMap((s, i) => {
      const at = new Map(s.points.map((p) => [p.turn, p]));
      const color = colors[i % colors.length];
      return [
        {
          type: "line",
          name: `${tag(i)}${s.run.name} (${s.run.mode})`,
          data: turns.map((t) => round(at.get(t)?.mean)),
          connectNulls: false,
          symbolSize: 7,
          itemStyle: { color },
          lineStyle: { color, width: 2 },
        },
        {
          type: "scatter",
          name: `${tag(i)}min–max`,
          data: turns.flatMap((t) => {
            const p = at.get(t);
            return p?.min != null && p.max != null
              ? [
                  [String(t), round(p.min)],
                  [String(t), round(p.max)],
                ]
              : [];
          }),
          symbol: "rect",
          symbolSize: [10, 2],
          itemStyle: { color, opacity: 0.55 },
          silent: true,
        },
      ];
    }),
  };
}

/**
 * The studio URL that opens a row's turn: this page's address (the access
 * token is never in it: `backend/http.ts` takes it out at start-up) with the
 * hash `#t=<trajectory>&turn=<turn index>&p=<prediction>` that the
 * navigation reads (`app/navigation.ts`; the recorded branch, the row's
 * prediction shown).
 */
export function rowLink(
  location: { origin: string; pathname: string; search: string },
  row: Pick<RunRowView, "trajectory_id" | "turn" | "prediction_id">,
): string {
  const hash = new URLSearchParams({ t: row.trajectory_id, turn: String(row.turn - 1), p: String(row.prediction_id) });
  const origin = location.origin === "null" ? "" : location.origin;
  return `${origin}${location.pathname}${location.search}#${hash.toString()}`;
}

/** What a key does on the row table: move, toggle a label, edit the note, open the row, copy its link. */
export type RowKeyAction = { type: "move"; by: 1 | -1 } | { type: "label"; label: string } | { type: "note" } | { type: "open" } | { type: "copy_link" };

/**
 * The row table's keyboard: `j`/`↓` next row, `k`/`↑` previous, `1`–`9`
 * toggle the n-th label of `labels`, `n` edit the note, `Enter` open the
 * row, `y` copy its link; `null` for any other key (or with a modifier).
 */
export function rowKeyAction(e: { key: string; ctrlKey?: boolean; metaKey?: boolean; altKey?: boolean }, labels: readonly string[]): RowKeyAction | null {
  if (e.ctrlKey || e.metaKey || e.altKey) return null;
  switch (e.key) {
    case "j":
    case "ArrowDown":
      return { type: "move", by: 1 };
    case "k":
    case "ArrowUp":
      return { type: "move", by: -1 };
    case "n":
      return { type: "note" };
    case "Enter":
      return { type: "open" };
    case "y":
      return { type: "copy_link" };
  }
  const label = labelForKey(e.key, labels);
  return label === null ? null : { type: "label", label };
}

/** The words of a search as the index takes them (split on whitespace, lower case; quotes are plain characters). */
export function searchTerms(query: string): string[] {
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter((t) => t !== "");
}

/**
 * A line cut into plain and matched pieces: every occurrence of a term
 * (case-insensitive) is a `match` piece. Overlapping terms take the longest
 * match first.
 */
export function markTerms(line: string, terms: readonly string[]): Array<{ text: string; match: boolean }> {
  const lower = line.toLowerCase();
  const sorted = [...terms].filter((t) => t !== "").sort((a, b) => b.length - a.length);
  const out: Array<{ text: string; match: boolean }> = [];
  let plain = "";
  let i = 0;
  while (i < line.length) {
    const hit = sorted.find((t) => lower.startsWith(t, i));
    if (hit) {
      if (plain) out.push({ text: plain, match: false });
      plain = "";
      out.push({ text: line.slice(i, i + hit.length), match: true });
      i += hit.length;
    } else {
      plain += line[i];
      i += 1;
    }
  }
  if (plain) out.push({ text: plain, match: false });
  return out;
}

/** The lines of `text` that hold a term (0-based index and text), at most `limit`. */
export function matchingLines(text: string | null | undefined, terms: readonly string[], limit = 5): Array<{ line: number; text: string }> {
  if (!text || terms.length === 0) return [];
  const out: Array<{ line: number; text: string }> = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length && out.length < limit; i++) {
    const l = lines[i]!.toLowerCase();
    if (terms.some((t) => l.includes(t))) out.push({ line: i, text: lines[i]! });
  }
  return out;
}

/** Height of one line of the row and pair tables, in pixels (the virtualised lists need it fixed). */
export const RUN_ROW_HEIGHT_PX = 30;
