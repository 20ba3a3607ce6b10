import { describe, expect, it } from "vitest";
import type { UiNode, UiTree } from "../api/types";
import { boxAt, isInvertedBounds, layoutBoxes, outsideRootIds, screenSize } from "./wireframe";

function tree(bounds: Array<[number, number, number, number] | null>): UiTree {
  const nodes: UiNode[] = bounds.map((b, i) => ({
    id: i,
    parent: i === 0 ? null : 0,
    children: i === 0 ? bounds.map((_, j) => j).slice(1) : [],
    depth: i === 0 ? 0 : 1,
    role: i === 0 ? "hierarchy" : "node",
    name: `n${i}`,
    value: null,
    key: null,
    attributes: [],
    states: { checked: null, selected: null, focused: null, enabled: null, expanded: null, editable: null },
    bounds_px: b ? { left: b[0], top: b[1], right: b[2], bottom: b[3], anomalies: b[2] < b[0] ? ["inverted"] : [] } : null,
    span: null,
    synthetic: false,
  }));
  return { representation: "android-xml", nodes };
}

describe("screenSize", () => {
  it("uses the metadata when given, else the extent of the bounds", () => {
    const t = tree([
      [0, 0, 1080, 2400],
      [100, 200, 300, 400],
    ]);
    expect(screenSize(t)).toEqual({ width_px: 1080, height_px: 2400 });
    expect(screenSize(t, { url: null, title: null, focused_bid: null, package: null, screen: { width_px: 1440, height_px: 3120 } })).toEqual({
      width_px: 1440,
      height_px: 3120,
    });
  });
});

describe("layoutBoxes", () => {
  it("scales uniformly, keeps the aspect ratio and centres the screen", () => {
    const t = tree([[0, 0, 1080, 2400], [100, 200, 300, 400], null, [500, 500, 400, 600]]);
    // A pane 556 × 1216 px with 8 px padding leaves 540 × 1200: scale 0.5 both ways.
    const l = layoutBoxes(t, { width_px: 1080, height_px: 2400 }, 556, 1216, null, 8);
    expect(l.scale).toBe(0.5);
    expect(l.boxes.map((b) => b.id)).toEqual([0, 1]); // no bounds and inverted bounds are not drawn
    expect(l.boxes[1]).toMatchObject({ x: 58, y: 108, width: 100, height: 100 });

    // A wide pane: height limits; the screen is centred horizontally.
    const w = layoutBoxes(t, { width_px: 1080, height_px: 2400 }, 1016, 616, null, 8);
    expect(w.scale).toBe(0.25);
    expect(w.offset_x).toBe(8 + (1000 - 270) / 2);
    expect(w.offset_y).toBe(8);
    expect(w.boxes[1]).toMatchObject({ x: w.offset_x + 25, y: 8 + 50, width: 50, height: 50 });
  });

  it("carries diff statuses and finds the smallest box under a point", () => {
    const t = tree([
      [0, 0, 100, 100],
      [10, 10, 60, 60],
      [20, 20, 30, 30],
    ]);
    const l = layoutBoxes(t, { width_px: 100, height_px: 100 }, 100, 100, ["unchanged", "changed", "added"], 0);
    expect(l.boxes.map((b) => b.status)).toEqual(["unchanged", "changed", "added"]);
    expect(boxAt(l, 25, 25)?.id).toBe(2);
    expect(boxAt(l, 50, 50)?.id).toBe(1);
    expect(boxAt(l, 90, 90)?.id).toBe(0);
    expect(boxAt(l, 150, 10)).toBeUndefined();
  });
});

describe("off-screen geometry", () => {
  it("clips boxes to the screen, marks them and flags nodes outside the root", () => {
    const t = tree([
      [0, 0, 1080, 2400],
      [-200, 100, 400, 300], // scrolled partly off to the left
      [900, 2300, 1300, 2600], // past the right and bottom edges
      [100, 100, 500, 500],
      [-500, -300, -100, -50], // wholly off-screen
      [700, 700, 600, 800], // inverted
    ]);
    const l = layoutBoxes(t, { width_px: 1080, height_px: 2400 }, 556, 1216, null, 8);
    expect(l.boxes.map((b) => [b.id, b.offscreen])).toEqual([
      [0, false],
      [1, true],
      [2, true],
      [3, false],
      [4, true],
    ]);
    expect(l.boxes[1]).toMatchObject({ x: 8, y: 58, width: 200, height: 100 });
    expect(l.boxes[2]).toMatchObject({ x: 458, y: 1158, width: 90, height: 50 });
    expect(l.boxes[4]).toMatchObject({ x: 8, y: 8, width: 0, height: 0 });
    expect([...outsideRootIds(t)]).toEqual([1, 2, 4]);
    expect(t.nodes.map(isInvertedBounds)).toEqual([false, false, false, false, false, true]);
  });
});
