import { describe, expect, it } from "vitest";
import { goldenTree } from "../mocks/golden";
import { alignment, ancestors, counterpart, searchTree, statusCounts, subtreeEnds, visibleRows } from "./tree";

describe("tree helpers", () => {
  // RootWebArea 'Page' / [1] list / [2] listitem 'a', [3] listitem 'b' / [4] button 'Go', focused
  const tree = goldenTree("axtree-list");
  it("computes subtree extents and visible rows under collapsed nodes", () => {
    // 0 document, 1 RootWebArea, 2 list, 3 a, 4 b, 5 button
    expect(Array.from(subtreeEnds(tree))).toEqual([6, 6, 5, 4, 5, 6]);
    expect(visibleRows(tree, new Set())).toEqual([0, 1, 2, 3, 4, 5]);
    expect(visibleRows(tree, new Set([2]))).toEqual([0, 1, 2, 5]);
    expect(visibleRows(tree, new Set([1]))).toEqual([0, 1]);
    expect(ancestors(tree, 4)).toEqual([2, 1, 0]);
  });
  it("searches role, name, key and properties", () => {
    expect(searchTree(tree, "listitem")).toEqual([3, 4]);
    expect(searchTree(tree, "button focused")).toEqual([5]);
    expect(searchTree(tree, "  ")).toEqual([]);
    expect(searchTree(tree, "3")).toEqual([4]);
  });
  it("maps aligned nodes both ways and counts statuses", () => {
    const a = alignment({
      real: [],
      predicted: [],
      pairs: [
        [1, 2],
        [3, 7],
      ],
      real_changes: [],
    });
    expect(counterpart(a, "real", 3)).toBe(7);
    expect(counterpart(a, "predicted", 2)).toBe(1);
    expect(counterpart(a, "real", 9)).toBeUndefined();
    expect(statusCounts(["unchanged", "added", "added", "changed"])).toEqual({ unchanged: 1, changed: 1, moved: 0, added: 2, removed: 0 });
  });
});
