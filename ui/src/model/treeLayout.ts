/**
 * Layout of a trajectory's branch tree for the tree view: turns run left to
 * right (x = turn × column width), every leaf gets its own row, and an inner
 * state sits on the row of its first child so the recorded path (edge ids in
 * import order) stays a straight line with branches below it.
 */

/** A node as the layout needs it (`TreeNodeView`). */
export interface LayoutNodeIn {
  node_id: number;
  parent_edge: number | null;
}

/** An edge as the layout needs it (`TreeEdgeView`). */
export interface LayoutEdgeIn {
  edge_id: number;
  from: number;
  to: number;
}

/** A placed node: its column (turn) and row, and pixel position. */
export interface PlacedNode {
  node_id: number;
  depth: number;
  row: number;
  x_px: number;
  y_px: number;
}

/** Sizes of the layout grid. */
export interface LayoutGrid {
  column_px: number;
  row_px: number;
}

/** Child edges of each node, ordered by edge id. */
export function childrenOf(edges: ReadonlyArray<LayoutEdgeIn>): Map<number, LayoutEdgeIn[]> {
  const out = new Map<number, LayoutEdgeIn[]>();
  for (const e of edges) {
    const list = out.get(e.from) ?? [];
    list.push(e);
    out.set(e.from, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.edge_id - b.edge_id);
  return out;
}

/**
 * Places every node reachable from the roots (nodes without a parent edge,
 * in id order). Iterative, so deep trajectories do not overflow the stack.
 * Nodes not reachable (a dangling parent edge) are placed in rows of their
 * own after the tree.
 */
export function layoutTree(nodes: ReadonlyArray<LayoutNodeIn>, edges: ReadonlyArray<LayoutEdgeIn>, grid: LayoutGrid): Map<number, PlacedNode> {
  const kids = childrenOf(edges);
  const placed = new Map<number, PlacedNode>();
  const edgeIds = new Set(edges.map((e) => e.edge_id));
  const roots = nodes
    .filter((n) => n.parent_edge === null || !edgeIds.has(n.parent_edge))
    .map((n) => n.node_id)
    .sort((a, b) => a - b);
  let nextRow = 0;
  for (const root of roots) {
    // Pre-order walk: a node takes the current row when it is the first child
    // of its parent (or a root), otherwise a fresh row below everything so far.
    const stack: Array<{ node: number; depth: number; row: number | null }> = [{ node: root, depth: 0, row: null }];
    while (stack.length > 0) {
      const { node, depth, row } = stack.pop()!;
      if (placed.has(node)) continue;
      const r = row ?? nextRow++;
      placed.set(node, { node_id: node, depth, row: r, x_px: depth * grid.column_px, y_px: r * grid.row_px });
      const children = kids.get(node) ?? [];
      // Push in reverse so the first child is visited first.
      for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!.to, depth: depth + 1, row: i === 0 ? r : null });
    }
  }
  for (const n of nodes) {
    if (!placed.has(n.node_id)) {
      const r = nextRow++;
      placed.set(n.node_id, { node_id: n.node_id, depth: 0, row: r, x_px: 0, y_px: r * grid.row_px });
    }
  }
  return placed;
}

/** The nodes from the root to `nodeId`, root first (follows parent edges). */
export function pathToRoot(nodeId: number, nodes: ReadonlyArray<LayoutNodeIn>, edges: ReadonlyArray<LayoutEdgeIn>): number[] {
  const parentEdge = new Map(nodes.map((n) => [n.node_id, n.parent_edge]));
  const from = new Map(edges.map((e) => [e.edge_id, e.from]));
  const path = [nodeId];
  const seen = new Set(path);
  let cur = nodeId;
  for (;;) {
    const pe = parentEdge.get(cur);
    if (pe == null) break;
    const p = from.get(pe);
    if (p === undefined || seen.has(p)) break;
    path.push(p);
    seen.add(p);
    cur = p;
  }
  return path.reverse();
}

/**
 * The branch (leaf node id as a string) to show for a clicked node: the
 * `preferred` branch when its path holds the node, else the first branch
 * (in the order given) whose path holds it; also the node's turn index in that
 * branch (0-based index into its turns; −1 for the initial state).
 */
export function branchForNode(
  nodeId: number,
  branches: ReadonlyArray<{ id: string; leaf_node: number }>,
  nodes: ReadonlyArray<LayoutNodeIn>,
  edges: ReadonlyArray<LayoutEdgeIn>,
  preferred: string | null,
): { branch_id: string; turn_index: number } | null {
  const ordered = [...branches].sort((a, b) => (a.id === preferred ? -1 : b.id === preferred ? 1 : 0));
  for (const b of ordered) {
    const path = pathToRoot(b.leaf_node, nodes, edges);
    const i = path.indexOf(nodeId);
    if (i >= 0) return { branch_id: b.id, turn_index: i - 1 };
  }
  return null;
}
