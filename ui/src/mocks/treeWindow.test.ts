import { describe, expect, it } from "vitest";
import { pagesFor } from "../data/queries";
import { GOLDEN } from "./golden";
import { MOCK_FIRST_WINDOW_ROWS, searchOf, windowOf } from "./treeWindow";

describe("the mock's tree windows", () => {
  it("equal the API's first windows of every golden turn, change marks included", () => {
    let compared = 0;
    for (const g of Object.values(GOLDEN)) {
      for (const t of Object.values(g.turns)) {
        for (const v of t.views) {
          for (const side of ["real", "predicted"] as const) {
            const doc = v[side];
            if (!doc?.tree || !doc.rows) continue;
            expect(windowOf(doc.tree, v.diff, side, 0, MOCK_FIRST_WINDOW_ROWS, [])).toEqual(doc.rows);
            compared += 1;
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(10);
  });

  it("hide collapsed subtrees, reveal a node's ancestors and count search matches past the limit", () => {
    const v = GOLDEN["web-harbor-books"]!.turns["2"]!.views[0]!;
    const tree = v.predicted!.tree!;
    const list = tree.nodes.find((n) => n.key === "11")!.id;
    const w = windowOf(tree, v.diff, "predicted", 0, 1000, [list]);
    expect(w.visible_count).toBe(tree.nodes.length - 9);
    expect(w.rows.find((r) => r.node.id === list)!.child_count).toBeGreaterThan(0);
    const r = windowOf(tree, v.diff, "predicted", 0, 0, [list, 0], list + 1);
    expect(r.collapsed).toEqual([]);
    expect(r.revealed_row).toBe(list + 1);
    expect(r.rows).toEqual([]);
    const s = searchOf(tree, "add to basket", 2);
    expect(s.total).toBe(3);
    expect(s.matches.length).toBe(2);
  });

  it("asks for the pages covering a range", () => {
    expect(pagesFor(0, 38)).toEqual([0]);
    expect(pagesFor(190, 230)).toEqual([0, 1]);
    expect(pagesFor(10_000, 10_040)).toEqual([50]);
    expect(pagesFor(0, 0)).toEqual([0]);
  });
});
