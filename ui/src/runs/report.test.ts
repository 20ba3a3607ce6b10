import { describe, expect, it } from "vitest";
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
