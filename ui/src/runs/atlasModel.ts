/**
 * The Atlas tab's pure helpers: names of error kinds, tables and action
 * types, an atlas table laid out as a grid (groups × kinds), the heat map's
 * colour of a rate, and which lines of a turn a cell's findings point at.
 * Every figure comes from the API (`run_atlas`, `atlas_rows`); nothing is
 * counted here.
 */
import type { ActionKind, Atlas, AtlasCell, AtlasDelta, AtlasTable, ErrorKind, Finding } from "../api/types";

/** How each error kind is named (column heads, captions). */
export const KIND_LABELS: Record<ErrorKind, string> = {
  invented: "Invented",
  forgotten: "Forgotten",
  attribute: "Attribute",
  text: "Text",
  moved: "Moved",
  stale: "Stale",
  over_change: "Over-change",
  diverged: "Diverged",
  anchor: "Anchor missed",
};

/** What each error kind means, for the column heads' titles (`docs/metrics.md` has the rules). */
export const KIND_TITLES: Record<ErrorKind, string> = {
  invented: "In the prediction only (nodes or lines)",
  forgotten: "In the real state only (nodes or lines)",
  attribute: "An aligned node with a field other than its text wrong (state, bounds, attributes)",
  text: "An aligned node with its name or value wrong (or a replaced line)",
  moved: "An aligned node in another place",
  stale: "The real state changed; the prediction kept the previous one",
  over_change: "The real state stayed; the prediction changed it",
  diverged: "Both changed, differently",
  anchor: "A domain anchor (URL, focus, dialogs, checked states, keyboard…) missed",
};

/** How each table is named on its tab. */
export const TABLE_LABELS: Record<AtlasTable, string> = {
  overall: "Overall",
  domain: "By domain",
  role: "By role / class",
  attribute: "By attribute",
  action: "By action",
  turn: "By turn",
};

/** How each action type is named. */
export const ACTION_LABELS: Record<ActionKind, string> = {
  click: "click",
  type: "type",
  scroll: "scroll",
  navigate: "navigate",
  key: "key",
  tool_call: "tool call",
  other: "other",
};

/** One atlas table as a grid: its groups in the atlas's order and a cell lookup. */
export interface AtlasGridData {
  groups: string[];
  cell: (group: string, kind: ErrorKind) => AtlasCell | undefined;
}

function cellKey(group: string, kind: ErrorKind): string {
  return `${group}\u0000${kind}`;
}

/** The grid of one table of `atlas` (groups in the order the API sorted them). */
export function atlasGrid(atlas: Atlas, table: AtlasTable): AtlasGridData {
  const groups: string[] = [];
  const cells = new Map<string, AtlasCell>();
  for (const c of atlas.cells) {
    if (c.table !== table) continue;
    if (!groups.includes(c.group)) groups.push(c.group);
    cells.set(cellKey(c.group, c.kind), c);
  }
  return { groups, cell: (group, kind) => cells.get(cellKey(group, kind)) };
}

/** The comparison of one cell of two atlases, if either has it. */
export function deltaOf(compare: AtlasDelta[], table: AtlasTable, group: string, kind: ErrorKind): AtlasDelta | undefined {
  return compare.find((d) => d.table === table && d.group === group && d.kind === kind);
}

/** A rate in `[0, 1]` as a percentage with one decimal. */
export function formatRate(rate: number | null | undefined): string {
  return rate == null || !Number.isFinite(rate) ? "—" : `${(rate * 100).toFixed(1)}%`;
}

/** A difference of rates as signed percentage points. */
export function formatRateDelta(delta: number): string {
  const pts = delta * 100;
  return `${pts > 0 ? "+" : pts < 0 ? "−" : "±"}${Math.abs(pts).toFixed(1)}`;
}

/** The heat map's background for a rate: white at 0, deep red at 1 (alpha grows with the rate). */
export function heatColor(rate: number): string {
  const r = Math.max(0, Math.min(1, rate));
  return r === 0 ? "transparent" : `rgba(200, 40, 40, ${(0.12 + 0.78 * r).toFixed(3)})`;
}

/** Whether text on {@link heatColor}'s background should be light. */
export function heatIsDark(rate: number): boolean {
  return rate >= 0.55;
}

/** The 0-based lines the findings point at on one side (`real` or `pred`). */
export function markedLines(findings: Finding[], side: "real" | "pred"): Set<number> {
  const out = new Set<number>();
  for (const f of findings) for (const l of side === "real" ? f.real_lines : f.pred_lines) out.add(l - 1);
  return out;
}

/** A row's findings in a line: `button ×2 (lines 5, 7) · state:checked ×1`. */
export function findingsSummary(findings: Finding[]): string {
  return findings
    .map((f) => {
      const what = [f.role, f.detail].filter((s) => s !== "").join(" ") || KIND_LABELS[f.kind];
      const lines = [...new Set([...f.real_lines, ...f.pred_lines])].sort((a, b) => a - b);
      return `${what} ×${f.count}${lines.length ? ` (line${lines.length > 1 ? "s" : ""} ${lines.join(", ")})` : ""}`;
    })
    .join(" · ");
}
