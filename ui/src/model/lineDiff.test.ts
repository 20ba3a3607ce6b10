import { describe, expect, it } from "vitest";
import type { LineOp } from "../api/types";
import { plainLines, sideBySideFromOps, sideBySideLines } from "./lineDiff";

describe("sideBySideLines", () => {
  it("numbers each side, marks removed and added lines and pads runs to face each other", () => {
    const out = sideBySideLines("a\nb\nc\nd\n", "a\nB\nB2\nc\n");
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

  it("handles an empty side", () => {
    const out = sideBySideLines("", "x\ny");
    expect(out.real.every((l) => l.status === "filler")).toBe(true);
    expect(out.predicted.map((l) => l.status)).toEqual(["added", "added"]);
    expect(plainLines("p\nq\n").map((l) => l.number)).toEqual([1, 2]);
  });
});

describe("sideBySideFromOps", () => {
  it("lays out the back end's ops like the local diff", () => {
    const real = "a\nb\nc\nd\n";
    const predicted = "a\nB\nB2\nc\n";
    const ops: LineOp[] = [
      { tag: "equal", real_start: 0, real_end: 1, pred_start: 0, pred_end: 1 },
      { tag: "replace", real_start: 1, real_end: 2, pred_start: 1, pred_end: 3 },
      { tag: "equal", real_start: 2, real_end: 3, pred_start: 3, pred_end: 4 },
      { tag: "delete", real_start: 3, real_end: 4, pred_start: 4, pred_end: 4 },
    ];
    expect(sideBySideFromOps(real, predicted, ops)).toEqual(sideBySideLines(real, predicted));
  });
  it("falls back to the local diff when the ops do not cover the texts", () => {
    const out = sideBySideFromOps("x\ny", "x\nz", [{ tag: "equal", real_start: 0, real_end: 1, pred_start: 0, pred_end: 1 }]);
    expect(out.real.map((l) => l.status)).toEqual(["same", "removed"]);
    expect(out.predicted.map((l) => l.status)).toEqual(["same", "added"]);
  });
});
