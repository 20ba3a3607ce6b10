import { describe, expect, it } from "vitest";
import { plainLines, sideBySideLines } from "./lineDiff";

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
