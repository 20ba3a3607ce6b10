import { describe, expect, it } from "vitest";
import type { Atlas, AtlasCell, AtlasTable, ErrorKind, RunAtlasResponse } from "../api/types";
import { RUNS } from "../mocks/golden";
import { chartSvg } from "./EChart";
import { buildReport, escapeHtml, inlineSvg } from "./report";
import { chartColors, domainScoreOption, driftOption, scatterOption } from "./runsModel";

const golden = RUNS!;

describe("the HTML report", () => {
  const [judged] = golden.runs;
  const dashboard = golden.dashboards[judged!.run_id]!;
  const hostile = golden.rows[judged!.run_id]![1]!;
  const html = buildReport({
    title: "A <b>vs</b> B",
    generatedAt: "2026-01-01T00:00:00Z",
    runs: golden.runs,
    dashboard,
    charts: [
      { title: "Judge scores by domain", svg: chartSvg(domainScoreOption(dashboard, chartColors("light"))!, "light", 700, 300) },
      { title: "A vs B", svg: chartSvg(scatterOption(golden.compare, chartColors("light")), "light", 500, 360) },
      { title: "Fidelity by turn", svg: chartSvg(driftOption(golden.drift, chartColors("light"))!, "light", 700, 280) },
      {
        title: "crafted",
        svg: '<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("https://x.example/")</script><a href="https://x.example/"><text onclick="alert(1)">t</text></a><image href="http://x.example/i.png"/></svg>',
      },
    ],
    compare: golden.compare,
    picked: [
      {
        row: { ...hostile, labels: ["hallucinated element"], note: 'invents a <a href="https://x.example/">Save</a> button' },
        real: '<img src="https://x.example/p.png">',
        predicted: "<script>alert(1)</script>",
      },
    ],
  });

  it("holds no script and reaches nothing outside the file", () => {
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/<(link|iframe|object|embed)\b/i);
    expect(html).not.toMatch(/(src|href)\s*=\s*["']?(https?:)?\/\//i);
    // `url(#…)`: the charts' own clip paths, inside the document.
    expect(html).not.toMatch(/url\((?!["']?#)/i);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`);
    // The only absolute URLs in attributes are SVG namespace names (those in
    // observations are escaped text).
    const inAttributes = [...html.matchAll(/=\s*["'](https?:\/\/[^"']+)/g)].map((m) => m[1]);
    expect(inAttributes.length).toBeGreaterThan(0);
    for (const u of inAttributes) expect(u).toMatch(/^http:\/\/www\.w3\.org\//);
  });

  it("shows observations as text, with the runs, charts, comparison and picked rows", () => {
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;img src=&quot;https://x.example/p.png&quot;&gt;");
    expect(html).toContain("<title>A &lt;b&gt;vs&lt;/b&gt; B</title>");
    expect(html.match(/<svg/g)?.length).toBe(4);
    expect(html).toContain("<h3>Fidelity by turn</h3>");
    expect(html).toContain('<p class="note">invents a &lt;a href=&quot;https://x.example/&quot;&gt;Save&lt;/a&gt; button</p>');
    for (const r of golden.runs) expect(html).toContain(escapeHtml(r.name));
    const k = golden.compare.counts;
    expect(html).toContain(`A better ${k.a_better}, B better ${k.b_better}, tie ${k.tie}`);
    expect(html).toContain('<span class="label">hallucinated element</span>');
    expect(html).toContain(`<b>${hostile.trajectory_name}</b> turn ${hostile.turn}`);
  });

  it("keeps an SVG's own references and drops the rest", () => {
    expect(inlineSvg('<?xml version="1.0"?><svg><use href="#a"/><a xlink:href="http://e.example/">x</a></svg>')).toBe('<svg><use href="#a"/><a>x</a></svg>');
  });
});

describe("the report's atlas", () => {
  const [judged] = golden.runs;
  const dashboard = golden.dashboards[judged!.run_id]!;
  const cell = (table: AtlasTable, group: string, kind: ErrorKind, count: number, rows: number, scored: number): AtlasCell => ({
    table,
    group,
    kind,
    count,
    rows,
    scored_rows: scored,
    rate: rows / scored,
  });
  const a: Atlas = {
    rows: 12,
    scored: 10,
    missing: 2,
    skipped: 0,
    cells: [
      cell("overall", "all", "stale", 4, 4, 10),
      cell("action", "click", "invented", 6, 3, 5),
      cell("role", "<img src=x onerror=alert(1)>", "invented", 6, 3, 10),
    ],
  };
  const b: Atlas = { rows: 12, scored: 12, missing: 0, skipped: 0, cells: [cell("overall", "all", "stale", 1, 1, 12)] };
  const atlas: RunAtlasResponse = {
    a,
    b,
    compare: [
      { table: "overall", group: "all", kind: "stale", rate_a: 0.4, rate_b: 1 / 12, delta: 0.4 - 1 / 12, count_a: 4, count_b: 1 },
      { table: "action", group: "click", kind: "invented", rate_a: 0.6, rate_b: 0, delta: 0.6, count_a: 6, count_b: 0 },
    ],
    kinds: ["invented", "forgotten", "attribute", "text", "moved", "stale", "over_change", "diverged", "anchor"],
    actions: ["click", "type", "scroll", "navigate", "key", "tool_call", "other"],
    computed_rows: 0,
  };
  const html = buildReport({ title: "atlas", generatedAt: "now", runs: golden.runs, dashboard, charts: [], compare: null, picked: [], atlas });

  it("holds the heat map and tables with both runs' rates, names escaped", () => {
    expect(html).toContain("<h2>Fidelity atlas</h2>");
    expect(html).toContain("A: 12 rows, 10 scored, 2 without a prediction, 0 not scorable");
    expect(html).toContain("<h3>Action type × error kind</h3>");
    // click × invented: 3 of 5 scored click rows, 6 nodes; B never.
    expect(html).toMatch(/60\.0% <small>\(6\)<\/small><br><small>B 0\.0% · \+60\.0<\/small>/);
    expect(html).toMatch(/40\.0% <small>\(4\)<\/small><br><small>B 8\.3% · \+31\.7<\/small>/);
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(html).not.toMatch(/<img/i);
  });
});
