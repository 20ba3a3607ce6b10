import { describe, expect, it } from "vitest";
import { branchForNode, layoutTree, pathToRoot } from "./treeLayout";

// 0 ─e0→ 1 ─e1→ 2 ─e2→ 3        (recorded)
//        1 ─e3→ 4 ─e5→ 5        (edited at turn 2)
//        1 ─e4→ 6               (another edit at turn 2)
//                 4 ─e6→ 7      (branch of the branch)
const nodes = [
  { node_id: 0, parent_edge: null },
  { node_id: 1, parent_edge: 0 },
  { node_id: 2, parent_edge: 1 },
  { node_id: 3, parent_edge: 2 },
  { node_id: 4, parent_edge: 3 },
  { node_id: 5, parent_edge: 5 },
  { node_id: 6, parent_edge: 4 },
  { node_id: 7, parent_edge: 6 },
];
const edges = [
  { edge_id: 0, from: 0, to: 1 },
  { edge_id: 1, from: 1, to: 2 },
  { edge_id: 2, from: 2, to: 3 },
  { edge_id: 3, from: 1, to: 4 },
  { edge_id: 4, from: 1, to: 6 },
  { edge_id: 5, from: 4, to: 5 },
  { edge_id: 6, from: 4, to: 7 },
];

describe("branch tree layout", () => {
  it("puts turns in columns, the recorded path on row 0 and each further leaf on its own row", () => {
    const placed = layoutTree(nodes, edges, { column_px: 100, row_px: 50 });
    const rc = (id: number) => [placed.get(id)!.depth, placed.get(id)!.row];
    expect([0, 1, 2, 3].map(rc)).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    expect(rc(4)).toEqual([2, 1]);
    expect(rc(5)).toEqual([3, 1]);
    expect(rc(7)).toEqual([3, 2]);
    expect(rc(6)).toEqual([2, 3]);
    expect(placed.get(7)).toMatchObject({ x_px: 300, y_px: 100 });
    // No two nodes share a cell.
    const cells = new Set([...placed.values()].map((p) => `${p.depth},${p.row}`));
    expect(cells.size).toBe(nodes.length);
  });

  it("lays out a 5,000-turn path without recursion", () => {
    const n = 5000;
    const ns = Array.from({ length: n }, (_, i) => ({ node_id: i, parent_edge: i === 0 ? null : i - 1 }));
    const es = Array.from({ length: n - 1 }, (_, i) => ({ edge_id: i, from: i, to: i + 1 }));
    const placed = layoutTree(ns, es, { column_px: 10, row_px: 10 });
    expect(placed.get(n - 1)).toMatchObject({ depth: n - 1, row: 0 });
  });

  it("places a node whose parent edge is missing on a row of its own", () => {
    const placed = layoutTree([...nodes, { node_id: 9, parent_edge: 99 }], edges, { column_px: 1, row_px: 1 });
    expect(placed.get(9)).toMatchObject({ depth: 0, row: 4 });
  });

  it("finds paths and the branch to open for a clicked node", () => {
    expect(pathToRoot(7, nodes, edges)).toEqual([0, 1, 4, 7]);
    const branches = [
      { id: "3", leaf_node: 3 },
      { id: "5", leaf_node: 5 },
      { id: "7", leaf_node: 7 },
      { id: "6", leaf_node: 6 },
    ];
    // A shared state opens in the current branch when that branch holds it.
    expect(branchForNode(1, branches, nodes, edges, "7")).toEqual({ branch_id: "7", turn_index: 0 });
    expect(branchForNode(4, branches, nodes, edges, "3")).toEqual({ branch_id: "5", turn_index: 1 });
    expect(branchForNode(0, branches, nodes, edges, null)).toEqual({ branch_id: "3", turn_index: -1 });
    expect(branchForNode(42, branches, nodes, edges, null)).toBeNull();
  });
});
