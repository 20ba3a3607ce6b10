/**
 * A run's (or two runs') report as one self-contained HTML file: the charts
 * as inline SVG (drawn by ECharts' SVG renderer), the runs table, the
 * comparison's counts and largest differences, and the rows a user picked
 * (labelled or noted rows) with their notes and their real and predicted
 * observations. No script, no
 * external resource: a Content-Security-Policy of `default-src 'none'` (inline
 * styles and `data:` images only) and every text escaped, so observations
 * (hostile HTML included) are shown as text, never rendered.
 */
import type { AtlasTable, CompareRunsResponse, RunAtlasResponse, RunDashboard, RunRowView, RunSummary } from "../api/types";
import { ACTION_LABELS, KIND_LABELS, TABLE_LABELS, atlasGrid, deltaOf, formatRate, formatRateDelta, heatColor, heatIsDark } from "./atlasModel";
import { formatDelta, formatMetric, formatScore, metricLabel, outcomeLabel } from "./runsModel";

/** A picked row with the texts of its state. */
export interface PickedRow {
  row: RunRowView;
  /** The real observation's text (`null`: none). */
  real: string | null;
  /** The row's predicted observation (`null`: none). */
  predicted: string | null;
}

/** What a report holds. */
export interface ReportInput {
  title: string;
  /** When it was made (shown as given). */
  generatedAt: string;
  runs: RunSummary[];
  /** The dashboard of run A. */
  dashboard: RunDashboard;
  /** Charts as SVG documents, with their titles. */
  charts: Array<{ title: string; svg: string }>;
  /** Run A compared with run B, when chosen. */
  compare: CompareRunsResponse | null;
  picked: PickedRow[];
  /** Run A's fidelity atlas (with B's when chosen); absent: no atlas section. */
  atlas?: RunAtlasResponse | null;
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/**
 * An SVG document made safe to inline: the XML prolog dropped, and anything
 * that could run or fetch removed (script and foreignObject elements, event
 * attributes, links and references outside the document).
 */
export function inlineSvg(svg: string): string {
  return svg
    .replace(/<\?xml[^>]*\?>/g, "")
    .replace(/<!DOCTYPE[^>]*>/gi, "")
    .replace(/<script[\s\S]*?<\/script\s*>/gi, "")
    .replace(/<foreignObject[\s\S]*?<\/foreignObject\s*>/gi, "")
    .replace(/\son[a-z]+\s*=\s*("[^"]*"|'[^']*')/gi, "")
    .replace(/\s(?:xlink:)?href\s*=\s*("(?!#)[^"]*"|'(?!#)[^']*')/gi, "");
}

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2433;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.muted{color:#667085}table{border-collapse:collapse;margin:8px 0}
th,td{border-bottom:1px solid #d9dde3;padding:3px 8px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #d9dde3;border-radius:6px;padding:6px}
.chart h3{font-size:13px;margin:0 0 4px}.label{background:#e7effc;color:#2f6fde;border-radius:8px;padding:0 6px;margin-right:4px;font-size:12px}
.row{border:1px solid #d9dde3;border-radius:6px;margin:12px 0;padding:8px}
.note{margin:6px 0;padding:4px 8px;border-left:3px solid #2f6fde;background:#f6f7f9;white-space:pre-wrap}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:8px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f7f9;border:1px solid #d9dde3;border-radius:4px;padding:6px;max-height:360px;overflow:auto;font-size:12px;margin:4px 0}
`;

function runsTable(runs: RunSummary[], a: string, b: string | null): string {
  const rows = runs
    .map((r) => {
      const tag = r.run_id === a ? "A" : r.run_id === b ? "B" : "";
      return `<tr><td>${tag}</td><td>${escapeHtml(r.name)}</td><td>${escapeHtml(r.engine)}</td><td>${escapeHtml(r.mode)}</td><td class="num">${r.row_count}</td><td class="num">${r.judged_count}</td><td class="num">${formatScore(r.overall_score)}</td><td class="num">${formatMetric(r.mean_text_f1)}</td></tr>`;
    })
    .join("");
  return `<table><thead><tr><th></th><th>Run</th><th>Engine</th><th>Mode</th><th class="num">Rows</th><th class="num">Judged</th><th class="num">Score</th><th class="num">Text F1</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function domainTable(d: RunDashboard): string {
  const head = d.dimensions.map((x) => `<th class="num">${escapeHtml(x)}</th>`).join("");
  const line = (name: string, rows: number, valid: number, scores: Array<number | null>) =>
    `<tr><td>${escapeHtml(name)}</td><td class="num">${rows}</td><td class="num">${valid}</td>${scores.map((s) => `<td class="num">${formatScore(s)}</td>`).join("")}</tr>`;
  const body =
    d.domains.map((s) => line(s.domain ?? "all", s.rows, s.valid, s.scores)).join("") + line("overall", d.overall.rows, d.overall.valid, d.overall.scores);
  return `<table><thead><tr><th>Domain</th><th class="num">Rows</th><th class="num">Valid</th>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function compareSection(c: CompareRunsResponse): string {
  const k = c.counts;
  const pairs = c.pairs
    .slice(0, 50)
    .map(
      (p) =>
        `<tr><td>${escapeHtml(p.a.trajectory_name)}</td><td class="num">${p.a.turn}</td><td>${escapeHtml(p.a.domain)}</td><td class="num">${formatScore(p.a_value)}</td><td class="num">${formatScore(p.b_value)}</td><td class="num">${formatDelta(p.delta)}</td><td>${escapeHtml(outcomeLabel(p.outcome))}</td></tr>`,
    )
    .join("");
  return `<h2>A: ${escapeHtml(c.run_a.name)} vs B: ${escapeHtml(c.run_b.name)}</h2>
<p>On ${escapeHtml(c.metric === "score" ? "the judge score" : metricLabel(c.metric))} (0–100), ties within ${c.tie_margin}: ${k.paired} pairs — A better ${k.a_better}, B better ${k.b_better}, tie ${k.tie}, unscored ${k.unscored}; ${k.only_a} rows only in A, ${k.only_b} only in B.</p>
<table><thead><tr><th>Trajectory</th><th class="num">Turn</th><th>Domain</th><th class="num">A</th><th class="num">B</th><th class="num">A − B</th><th>Outcome</th></tr></thead><tbody>${pairs}</tbody></table>`;
}

/** Most groups of one atlas table in the report (the most frequent first). */
const ATLAS_REPORT_GROUPS = 15;

function atlasTable(data: RunAtlasResponse, table: AtlasTable): string {
  const grid = atlasGrid(data.a, table);
  const groups = (table === "action" ? data.actions.filter((a) => grid.groups.includes(a)) : grid.groups).slice(0, ATLAS_REPORT_GROUPS);
  if (groups.length === 0) return "";
  const head = data.kinds.map((k) => `<th class="num">${escapeHtml(KIND_LABELS[k])}</th>`).join("");
  const body = groups
    .map((g) => {
      const name = table === "action" ? (ACTION_LABELS[g as keyof typeof ACTION_LABELS] ?? g) : table === "turn" ? `turn ${g}` : g;
      const cells = data.kinds
        .map((k) => {
          const c = grid.cell(g, k);
          const d = data.b ? deltaOf(data.compare, table, g, k) : undefined;
          if (!c && !d) return '<td class="num">·</td>';
          const rate = c?.rate ?? 0;
          const color = heatIsDark(rate) ? ";color:#fff" : "";
          const extra = d ? `<br><small>B ${formatRate(d.rate_b)} · ${formatRateDelta(d.delta)}</small>` : "";
          return `<td class="num" style="background:${heatColor(rate)}${color}">${formatRate(rate)}${c ? ` <small>(${c.count})</small>` : ""}${extra}</td>`;
        })
        .join("");
      return `<tr><td>${escapeHtml(name)}</td>${cells}</tr>`;
    })
    .join("");
  return `<h3>${escapeHtml(table === "action" ? "Action type × error kind" : TABLE_LABELS[table])}</h3><table><thead><tr><th></th>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function atlasSection(data: RunAtlasResponse): string {
  const line = (name: string, x: RunAtlasResponse["a"]) =>
    `${name}: ${x.rows} rows, ${x.scored} scored, ${x.missing} without a prediction, ${x.skipped} not scorable`;
  const tables = (["action", "overall", "domain", "role", "attribute", "turn"] as AtlasTable[]).map((t) => atlasTable(data, t)).join("\n");
  return `<h2>Fidelity atlas</h2>
<p class="muted">${escapeHtml(line(data.b ? "A" : "Run", data.a))}${data.b ? ` · ${escapeHtml(line("B", data.b))}` : ""}. Each cell: the share of scored rows where the error happened (its count)${data.b ? ", B's share and A − B in points" : ""}; rules in docs/metrics.md.</p>
${tables}`;
}

function pickedSection(picked: PickedRow[]): string {
  if (picked.length === 0) return '<p class="muted">No row picked (label rows or write notes in the studio to add them here).</p>';
  return picked
    .map(({ row, real, predicted }) => {
      const labels = row.labels.map((l) => `<span class="label">${escapeHtml(l)}</span>`).join("");
      const note = row.note === null ? "" : `<p class="note">${escapeHtml(row.note)}</p>`;
      return `<div class="row"><div><b>${escapeHtml(row.trajectory_name)}</b> turn ${row.turn} · ${escapeHtml(row.domain)} · ${escapeHtml(row.status)} · score ${formatScore(row.score)} · text F1 ${formatMetric(row.text_f1)} ${labels}</div>${note}
<div class="sides"><div><div class="muted">Real</div><pre>${escapeHtml(real ?? "(none)")}</pre></div><div><div class="muted">Predicted</div><pre>${escapeHtml(predicted ?? "(none)")}</pre></div></div></div>`;
    })
    .join("\n");
}

/** The report's HTML (one file, nothing outside it). */
export function buildReport(input: ReportInput): string {
  const a = input.dashboard.run;
  const b = input.compare?.run_b.run_id ?? null;
  const charts = input.charts.map((c) => `<div class="chart"><h3>${escapeHtml(c.title)}</h3>${inlineSvg(c.svg)}</div>`).join("");
  const statuses = [...input.dashboard.statuses, ...input.dashboard.judge, ...input.dashboard.labels]
    .map((s) => `<tr><td>${escapeHtml(s.status)}</td><td class="num">${s.count}</td></tr>`)
    .join("");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(input.title)}</title><style>${STYLE}</style></head>
<body>
<h1>${escapeHtml(input.title)}</h1>
<p class="muted">Worldloom report · ${escapeHtml(input.generatedAt)} · run A: ${escapeHtml(a.name)} (${escapeHtml(a.engine)})</p>
<h2>Runs</h2>${runsTable(input.runs, a.run_id, b)}
<h2>Charts</h2><div class="charts">${charts}</div>
<h2>Judge scores by domain — ${escapeHtml(a.name)}</h2>${input.dashboard.overall.valid > 0 ? domainTable(input.dashboard) : '<p class="muted">Not judged.</p>'}
<h2>Counts</h2><table><tbody>${statuses}</tbody></table>
${input.compare ? compareSection(input.compare) : ""}
${input.atlas ? atlasSection(input.atlas) : ""}
<h2>Picked rows</h2>
${pickedSection(input.picked)}
</body></html>
`;
}
