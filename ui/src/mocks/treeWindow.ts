/**
 * The mock back end's `get_tree_rows` and `search_tree`: windows of visible
 * rows and search over a whole tree the API already gave (a golden
 * `get_turn`'s small trees, the generated large tree), with the diff marks of
 * that reply. The real answers come from `crates/worldloom-api`
 * (`tree_rows.rs`); this mirrors their shape for dev and tests only.
 */
import type { DiffStatus, PaneSide, SearchTreeResponse, StatusCounts, TreeDiff, TreeRow, TreeWindow, UiTree } from "../api/types";
import { ancestors, searchTree, subtreeEnds } from "../model/tree";

/** Rows in the first window `get_turn` sends (the API's `FIRST_WINDOW_ROWS`). */
export const MOCK_FIRST_WINDOW_ROWS = 200;

const MAX_ROWS = 2000;

function countsOf(statuses: readonly DiffStatus[]): StatusCounts {
  const c: StatusCounts = { unchanged: 0, changed: 0, moved: 0, added: 0, removed: 0 };
  for (const s of statuses) c[s] += 1;
  return c;
}

/** The rows `offset .. offset + limit` of a tree with `collapsed` nodes' descendants hidden (and `reveal`'s ancestors expanded). */
export function windowOf(
  tree: UiTree,
  diff: TreeDiff | null | undefined,
  side: PaneSide,
  offset: number,
  limit: number,
  collapsedIds: readonly number[],
  reveal: number | null = null,
): TreeWindow {
  const n = tree.nodes.length;
  const collapsed = new Set(collapsedIds.filter((c) => c >= 0 && c < n));
  if (reveal !== null) {
    if (reveal < 0 || reveal >= n) throw new Error(`node ${reveal} is not in the ${side} tree (${n} nodes)`);
    for (const a of ancestors(tree, reveal)) collapsed.delete(a);
  }
  const ends = subtreeEnds(tree);
  const statuses = diff ? (side === "real" ? diff.real : diff.predicted) : null;
  const cp = new Map<number, number>();
  for (const [r, p] of diff?.pairs ?? []) cp.set(side === "real" ? r : p, side === "real" ? p : r);
  const max = Math.min(limit, MAX_ROWS);
  const rows: TreeRow[] = [];
  let revealed: number | null = null;
  let row = 0;
  for (let i = 0; i < n;) {
    if (i === reveal) revealed = row;
    if (row >= offset && rows.length < max) {
      const node = tree.nodes[i]!;
      const counterpart = cp.get(i) ?? null;
      const realId = side === "real" ? i : counterpart;
      const changes = statuses && realId !== null ? (diff?.real_changes[realId] ?? []) : [];
      rows.push({
        row,
        node: { ...node, children: [] },
        child_count: node.children.length,
        subtree_end: ends[i]!,
        status: statuses?.[i] ?? null,
        counterpart: statuses ? counterpart : null,
        ...(changes.length ? { changes } : {}),
      });
    }
    row += 1;
    i = collapsed.has(i) ? Math.max(ends[i]!, i + 1) : i + 1;
  }
  return {
    node_count: n,
    visible_count: row,
    offset,
    rows,
    collapsed: [...collapsed].sort((a, b) => a - b),
    revealed_row: revealed,
    status_counts: statuses ? countsOf(statuses) : null,
  };
}

/** `search_tree` over a whole tree: the first `limit` matches and the count. */
export function searchOf(tree: UiTree, query: string, limit: number): SearchTreeResponse {
  const all = searchTree(tree, query);
  return { total: all.length, matches: all.slice(0, limit) };
}
