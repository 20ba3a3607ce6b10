import { describe, expect, it } from "vitest";
import type { LineOp } from "../api/types";
import { goldenTurn } from "../mocks/golden";
import { plainLines, sideBySide } from "./lineDiff";

describe("sideBySide", () => {
  it("numbers each side, marks removed and added lines and pads runs to face each other", () => {
    const ops: LineOp[] = [
      { tag: "equal", real_start: 0, real_end: 1, pred_start: 0, pred_end: 1 },
      { tag: "replace", real_start: 1, real_end: 2, pred_start: 1, pred_end: 3 },
      { tag: "equal", real_start: 2, real_end: 3, pred_start: 3, pred_end: 4 },
      { tag: "delete", real_start: 3, real_end: 4, pred_start: 4, pred_end: 4 },
    ];
    const out = sideBySide("a\nb\nc\nd\n", "a\nB\nB2\nc\n", { ops, ratio: 0.5 })!;
    expect(out.real.map((l) => [l.number, l.status, l.text])).toEqual([
      [1, "same", "a"],
      [2, "removed", "b"],
      [0, "filler", ""],
      [3, "same", "c"],
      [4, "removed", "d"],
    ]);
    expect(out.predicted.map((l) => [l.number, l.status, l.text])).toEqual([
      [1, "same", "a"],
      [2, "added", "B"],
      [3, "added", "B2"],
      [4, "same", "c"],
      [0, "filler", ""],
    ]);
    expect(out.removed).toBe(2);
    expect(out.added).toBe(2);
    expect(out.real[3]!.other).toBe(4);
  });

  it("lays out the API's line diff of a terminal turn row for row", () => {
    const view = goldenTurn("terminal-build", 2)!.views[0]!;
    const out = sideBySide(view.real!.text, view.predicted!.text, view.line_diff!)!;
    expect(out.real.length).toBe(out.predicted.length);
    // Every line of each side appears once, in order.
    expect(out.real.filter((l) => l.status !== "filler").map((l) => l.number)).toEqual(plainLines(view.real!.text).map((l) => l.number));
    expect(out.predicted.filter((l) => l.status !== "filler").map((l) => l.number)).toEqual(plainLines(view.predicted!.text).map((l) => l.number));
    // The second line (the build time) differs; the first is the same on both sides.
    expect([out.real[0]!.status, out.real[1]!.status, out.predicted[1]!.status]).toEqual(["same", "removed", "added"]);
    const changed = view.line_diff!.ops.filter((o) => o.tag !== "equal");
    expect(out.removed).toBe(changed.reduce((n, o) => n + o.real_end - o.real_start, 0));
    expect(out.added).toBe(changed.reduce((n, o) => n + o.pred_end - o.pred_start, 0));
  });

  it("gives no rows for a diff of other texts, and plain lines for one side", () => {
    expect(sideBySide("x\ny", "x\nz", { ops: [{ tag: "equal", real_start: 0, real_end: 1, pred_start: 0, pred_end: 1 }], ratio: 1 })).toBeNull();
    expect(sideBySide("", "", { ops: [], ratio: 1 })).toEqual({ real: [], predicted: [], removed: 0, added: 0 });
    expect(plainLines("p\nq\n").map((l) => l.number)).toEqual([1, 2]);
  });
});
