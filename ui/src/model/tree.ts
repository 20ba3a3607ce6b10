/**
 * Helpers over the flat pre-order `UiTree` arena (see
 * `crates/worldloom-obs/src/tree.rs`) and the API's tree diff: attributes,
 * labels, the alignment of the two sides. Visible rows under collapsed
 * nodes and tree search are the API's (`get_tree_rows`, `search_tree`).
 */
import type { DiffStatus, TreeDiff, UiNode } from "../api/types";

/** Which pane a node belongs to. */
export type Side = "real" | "predicted";

/** Attribute value by name. */
export function attr(node: UiNode, name: string): string | undefined {
  return node.attributes?.find((a) => a.name === name)?.value;
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
