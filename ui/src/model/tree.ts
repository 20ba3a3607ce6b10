/**
 * Helpers over the flat pre-order `UiTree` arena (see
 * `crates/worldloom-obs/src/tree.rs`): subtree extents, visible rows under
 * collapsed nodes, search, labels. Nothing here recurses, so a tree of any
 * depth is safe.
 */
import type { DiffStatus, TreeDiff, UiNode, UiTree } from "../api/types";

/** Which pane a node belongs to. */
export type Side = "real" | "predicted";

/**
 * For every node, one past the index of its last descendant. Because nodes
 * are in pre-order, a node's subtree is exactly `nodes[i .. end[i])`.
 */
export function subtreeEnds(tree: UiTree): Int32Array {
  const n = tree.nodes.length;
  const end = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    const node = tree.nodes[i]!;
    const last = node.children.length > 0 ? node.children[node.children.length - 1]! : -1;
    end[i] = last >= 0 && last < n ? Math.max(end[last]!, i + 1) : i + 1;
  }
  return end;
}

/** Node ids shown when the nodes in `collapsed` hide their descendants. */
export function visibleRows(tree: UiTree, collapsed: ReadonlySet<number>, ends: Int32Array = subtreeEnds(tree)): number[] {
  const rows: number[] = [];
  let i = 0;
  const n = tree.nodes.length;
  while (i < n) {
    rows.push(i);
    i = collapsed.has(i) ? ends[i]! : i + 1;
  }
  return rows;
}

/** Ancestors of a node, nearest first (the root last). */
export function ancestors(tree: UiTree, id: number): number[] {
  const out: number[] = [];
  let p = tree.nodes[id]?.parent ?? null;
  let guard = 0;
  while (p !== null && p !== undefined && guard++ < tree.nodes.length) {
    out.push(p);
    p = tree.nodes[p]?.parent ?? null;
  }
  return out;
}

/** Attribute value by name. */
export function attr(node: UiNode, name: string): string | undefined {
  return node.attributes?.find((a) => a.name === name)?.value;
}

/** The text a tree search looks at: role, name, value, key and attribute values. */
export function searchText(node: UiNode): string {
  const parts = [node.role, node.name, node.value ?? "", node.key ?? ""];
  for (const a of node.attributes ?? []) parts.push(`${a.name}=${a.value}`);
  return parts.join(" ").toLowerCase();
}

/** Ids of nodes whose search text contains every whitespace-separated word of `query` (case-insensitive). */
export function searchTree(tree: UiTree, query: string): number[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [];
  const out: number[] = [];
  for (const node of tree.nodes) {
    const text = searchText(node);
    if (words.every((w) => text.includes(w))) out.push(node.id);
  }
  return out;
}

/** Short one-line label: `role "name"`. */
export function nodeLabel(node: UiNode, maxChars = 60): string {
  const name = node.name.length > maxChars ? `${node.name.slice(0, maxChars - 1)}…` : node.name;
  return name ? `${node.role} "${name}"` : node.role;
}

/** Both directions of a diff's alignment. */
export interface Alignment {
  realToPredicted: Map<number, number>;
  predictedToReal: Map<number, number>;
}

/** Builds lookup maps from a diff's aligned pairs. */
export function alignment(diff: TreeDiff | null | undefined): Alignment {
  const realToPredicted = new Map<number, number>();
  const predictedToReal = new Map<number, number>();
  for (const [r, p] of diff?.pairs ?? []) {
    realToPredicted.set(r, p);
    predictedToReal.set(p, r);
  }
  return { realToPredicted, predictedToReal };
}

/** The aligned node on the other side, if any. */
export function counterpart(align: Alignment, side: Side, id: number): number | undefined {
  return side === "real" ? align.realToPredicted.get(id) : align.predictedToReal.get(id);
}

/** Counts of each status on one side. */
export function statusCounts(statuses: readonly DiffStatus[] | undefined): Record<DiffStatus, number> {
  const counts: Record<DiffStatus, number> = { unchanged: 0, changed: 0, moved: 0, added: 0, removed: 0 };
  for (const s of statuses ?? []) counts[s] += 1;
  return counts;
}
