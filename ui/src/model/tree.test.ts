import { describe, expect, it } from "vitest";
import { goldenTree } from "../mocks/golden";
import { alignment, attr, counterpart, nodeLabel, statusCounts } from "./tree";

describe("tree helpers", () => {
  it("labels a node by role and name, and reads its attributes", () => {
    // RootWebArea 'Page' / [1] list / [2] listitem 'a', [3] listitem 'b' / [4] button 'Go', focused
    const tree = goldenTree("axtree-list");
    const button = tree.nodes.find((n) => n.role === "button")!;
    expect(nodeLabel(button)).toBe('button "Go"');
    expect(attr(button, "no-such-attribute")).toBeUndefined();
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
