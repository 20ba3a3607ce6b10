import { describe, expect, it } from "vitest";
import { RUNS } from "../mocks/golden";
import {
  INITIAL_RUNS,
  binLabels,
  chartColors,
  domainScoreOption,
  exportFileName,
  formatDelta,
  formatMetric,
  formatScore,
  changedPredictedLines,
  changedRealLines,
  labelChoices,
  driftOption,
  labelForKey,
  markTerms,
  matchingLines,
  metricHistogramOption,
  outcomeLabel,
  rowKeyAction,
  rowLink,
  rowsRequest,
  runsReducer,
  searchTerms,
  scatterOption,
  statusOption,
} from "./runsModel";

const golden = RUNS!;

describe("runs reducer", () => {
  it("picks the newest two runs and keeps chosen ones while they exist", () => {
    const s = runsReducer(INITIAL_RUNS, { type: "runs_loaded", runIds: ["1", "2", "3"] });
    expect([s.runA, s.runB]).toEqual(["3", "2"]);
    const chosen = runsReducer(runsReducer(s, { type: "run_a", runId: "1" }), { type: "runs_loaded", runIds: ["1", "2", "3", "4"] });
    expect([chosen.runA, chosen.runB]).toEqual(["1", "2"]);
    // Choosing B's run as A swaps them.
    const swapped = runsReducer(s, { type: "run_a", runId: "2" });
    expect([swapped.runA, swapped.runB]).toEqual(["2", "3"]);
    // A run removed (undone) falls back.
    const after = runsReducer(s, { type: "runs_loaded", runIds: ["1"] });
    expect([after.runA, after.runB]).toEqual(["1", null]);
  });

  it("sorts by a column, again reverses it, and searches by relevance", () => {
    let s = runsReducer({ ...INITIAL_RUNS, runA: "7" }, { type: "sort", sort: "score" });
    expect([s.sort, s.descending]).toEqual(["score", true]);
    s = runsReducer(s, { type: "sort", sort: "score" });
    expect(s.descending).toBe(false);
    s = runsReducer(s, { type: "sort", sort: "turn" });
    expect([s.sort, s.descending]).toEqual(["turn", false]);
    expect(rowsRequest(INITIAL_RUNS)).toBeNull();
    const q = rowsRequest(runsReducer({ ...INITIAL_RUNS, runA: "7" }, { type: "query", query: "  evt_41 ", searchIn: "real" }));
    expect(q).toMatchObject({ run_id: "7", query: "evt_41", search_in: "real", sort: "relevance", limit: null });
    const f = rowsRequest(runsReducer({ ...INITIAL_RUNS, runA: "7" }, { type: "filter", domain: "web", status: "error" }));
    expect(f).toMatchObject({ domain: "web", status: "error", query: null, sort: "row" });
  });
});

describe("labels", () => {
  it("offers the workspace's set, then labels on the row the set lost, and filters by label", () => {
    expect(labelChoices(["wrong page", "stale copy"], ["old one", "stale copy"])).toEqual(["wrong page", "stale copy", "old one"]);
    const s = runsReducer({ ...INITIAL_RUNS, runA: "7" }, { type: "filter", label: "wrong page" });
    expect(rowsRequest(s)).toMatchObject({ label: "wrong page", domain: null });
    expect(runsReducer(s, { type: "filter", domain: "web" }).label).toBe("wrong page");
    expect(rowsRequest(runsReducer(s, { type: "filter", label: null }))).toMatchObject({ label: null });
    expect(labelForKey("2", ["a", "b"])).toBe("b");
    expect(labelForKey("3", ["a", "b"])).toBeNull();
    expect(labelForKey("0", ["a"])).toBeNull();
    expect(labelForKey("x", ["a"])).toBeNull();
  });
});

describe("moving through rows with the keyboard", () => {
  it("moves with j/k and the arrows, labels with digits, writes a note with n, copies a link with y", () => {
    const labels = ["missed effect", "wrong page"];
    expect(rowKeyAction({ key: "j" }, labels)).toEqual({ type: "move", by: 1 });
    expect(rowKeyAction({ key: "ArrowDown" }, labels)).toEqual({ type: "move", by: 1 });
    expect(rowKeyAction({ key: "k" }, labels)).toEqual({ type: "move", by: -1 });
    expect(rowKeyAction({ key: "ArrowUp" }, labels)).toEqual({ type: "move", by: -1 });
    expect(rowKeyAction({ key: "2" }, labels)).toEqual({ type: "label", label: "wrong page" });
    expect(rowKeyAction({ key: "3" }, labels)).toBeNull();
    expect(rowKeyAction({ key: "n" }, labels)).toEqual({ type: "note" });
    expect(rowKeyAction({ key: "Enter" }, labels)).toEqual({ type: "open" });
    expect(rowKeyAction({ key: "y" }, labels)).toEqual({ type: "copy_link" });
    // With a modifier the browser's shortcut wins.
    expect(rowKeyAction({ key: "j", ctrlKey: true }, labels)).toBeNull();
    expect(rowKeyAction({ key: "1", metaKey: true }, labels)).toBeNull();
    expect(rowKeyAction({ key: "x" }, labels)).toBeNull();
  });
});

describe("a row's link", () => {
  it("opens the row's turn (0-based index) with its prediction, on this page's address", () => {
    const row = { trajectory_id: "12", turn: 3, prediction_id: 1 };
    expect(rowLink({ origin: "http://127.0.0.1:4180", pathname: "/", search: "" }, row)).toBe("http://127.0.0.1:4180/#t=12&turn=2&p=1");
    expect(rowLink({ origin: "null", pathname: "/index.html", search: "?x=1" }, row)).toBe("/index.html?x=1#t=12&turn=2&p=1");
  });
});

describe("search marks", () => {
  it("marks every searched word in a line, case-insensitively, and finds the lines that hold one", () => {
    const terms = searchTerms("  Save  TOAST ");
    expect(terms).toEqual(["save", "toast"]);
    expect(markTerms("Saved; a toast: saves", terms)).toEqual([
      { text: "Save", match: true },
      { text: "d; a ", match: false },
      { text: "toast", match: true },
      { text: ": ", match: false },
      { text: "save", match: true },
      { text: "s", match: false },
    ]);
    expect(markTerms("nothing", terms)).toEqual([{ text: "nothing", match: false }]);
    expect(matchingLines("a\nSave it\nb\ntoast", terms)).toEqual([
      { line: 1, text: "Save it" },
      { line: 3, text: "toast" },
    ]);
    expect(matchingLines("save\nsave\nsave", terms, 2).length).toBe(2);
    expect(matchingLines(null, terms)).toEqual([]);
  });
});

describe("three panes", () => {
  it("marks the lines the API's line diff found different", () => {
    const diff = {
      ratio: 0.5,
      ops: [
        { tag: "equal" as const, real_start: 0, real_end: 2, pred_start: 0, pred_end: 2 },
        { tag: "replace" as const, real_start: 2, real_end: 3, pred_start: 2, pred_end: 4 },
        { tag: "delete" as const, real_start: 3, real_end: 5, pred_start: 4, pred_end: 4 },
      ],
    };
    expect([...changedPredictedLines(diff)]).toEqual([2, 3]);
    expect([...changedRealLines(diff)]).toEqual([2, 3, 4]);
    expect(changedPredictedLines(null).size).toBe(0);
  });
});

describe("formatters", () => {
  it("write scores, metrics and deltas", () => {
    expect(formatScore(95)).toBe("95.0");
    expect(formatScore(null)).toBe("—");
    expect(formatMetric(0.5245)).toBe("0.52");
    expect(formatMetric(undefined)).toBe("—");
    expect(formatDelta(12.34)).toBe("+12.3");
    expect(formatDelta(-3)).toBe("−3.0");
    expect(formatDelta(0.01)).toBe("0.0");
    expect(formatDelta(null)).toBe("—");
    expect(binLabels(4)).toEqual(["0.0–0.3", "0.3–0.5", "0.5–0.8", "0.8–1.0"]);
    expect(outcomeLabel("a_better")).toBe("A better");
    expect(outcomeLabel(null)).toBe("All");
    expect(exportFileName("Judge scores by domain — model-b/judged.jsonl", "svg")).toBe("judge-scores-by-domain-model-b-judged-jsonl.svg");
  });
});

describe("chart options from the API's replies", () => {
  const [judged, copy] = golden.runs;
  const c = chartColors("light");

  it("charts the judged run per domain × dimension and leaves an unjudged run without", () => {
    const d = golden.dashboards[judged!.run_id]!;
    const opt = domainScoreOption(d, c)!;
    const series = opt.series as Array<{ name: string; data: Array<number | null> }>;
    expect(series.map((s) => s.name)).toEqual(d.domains.filter((x) => x.valid > 0).map((x) => x.domain));
    expect((opt.xAxis as { data: string[] }).data).toEqual(["Format", "Factuality", "Consistency", "Realism", "Quality", "Total"]);
    for (const s of series) for (const v of s.data) expect(v === null || (v >= 0 && v <= 100)).toBe(true);
    expect(domainScoreOption(golden.dashboards[copy!.run_id]!, c)).toBeNull();
  });

  it("charts metric histograms and status counts as the API counted them", () => {
    const d = golden.dashboards[copy!.run_id]!;
    const h = metricHistogramOption(d, c)!;
    const series = h.series as Array<{ name: string; data: number[] }>;
    const text = d.metrics.find((m) => m.metric === "text_f1")!;
    expect(series[0]!.data).toEqual(text.bins);
    expect(series[0]!.name).toBe(`Text F1 ${formatMetric(text.mean)}`);
    const st = statusOption(d, c);
    const bars = (st.series as Array<{ data: number[] }>)[0]!.data;
    expect(bars.reduce((a, b) => a + b, 0)).toBe(2 * d.run.row_count);
  });

  it("charts fidelity by turn: one line per run, as the API averaged it", () => {
    const opt = driftOption(golden.drift, chartColors("dark"))!;
    expect(opt).not.toBeNull();
    const series = opt.series as Array<{ type: string; name: string; data: unknown[] }>;
    const lines = series.filter((s) => s.type === "line");
    expect(lines.length).toBe(golden.drift.series.length);
    const turns = (opt.xAxis as { data: string[] }).data;
    golden.drift.series.forEach((s, i) => {
      expect(lines[i]!.name).toContain(s.run.name);
      for (const p of s.points) {
        const v = lines[i]!.data[turns.indexOf(String(p.turn))];
        expect(v).toBe(p.mean == null ? null : Math.round(p.mean * 10) / 10);
      }
    });
    const none = {
      ...golden.drift,
      series: golden.drift.series.map((s) => ({ ...s, points: s.points.map((p) => ({ ...p, mean: null, min: null, max: null })) })),
    };
    expect(driftOption(none, chartColors("light"))).toBeNull();
  });

  it("puts every paired value in the scatter", () => {
    const opt = scatterOption(golden.compare, chartColors("dark"));
    const points = (opt.series as Array<{ data: number[][] }>)[0]!.data;
    expect(points.length).toBe(golden.compare.scatter.length);
    expect(points.length).toBe(golden.compare.counts.a_better + golden.compare.counts.b_better + golden.compare.counts.tie);
  });
});
