/**
 * Screen geometry for the OS wireframe and the Android device frame: which
 * nodes have drawable bounds, the screen size, and the scale that fits the
 * screen into a pane while keeping its aspect ratio.
 */
import type { DiffStatus, ObservationMeta, UiNode, UiTree } from "../api/types";

/** A screen size in px. */
export interface ScreenSizePx {
  width_px: number;
  height_px: number;
}

/** One drawn box, in pane pixels. */
export interface LayoutBox {
  id: number;
  x: number;
  y: number;
  width: number;
  height: number;
  depth: number;
  status: DiffStatus;
  /**
   * The node's bounds reach past the screen (negative bounds, children laid
   * out beyond the root): the box is clipped to the screen and marked.
   */
  offscreen: boolean;
}

/** A layout: scale factor (pane px per screen px), the drawn screen rectangle and the boxes. */
export interface Layout {
  scale: number;
  offset_x: number;
  offset_y: number;
  screen_width: number;
  screen_height: number;
  boxes: LayoutBox[];
}

/** Whether a node's bounds can be drawn (present, not inverted). Empty boxes are drawn as hairlines. */
export function hasDrawableBounds(node: UiNode): boolean {
  const b = node.bounds_px;
  return !!b && b.right >= b.left && b.bottom >= b.top && !(b.anomalies ?? []).includes("inverted");
}

/**
 * The screen size: the observation's metadata when it states one, else the
 * extent of all drawable bounds (Android dumps' root node spans the screen).
 */
export function screenSize(tree: UiTree, meta?: ObservationMeta | null): ScreenSizePx {
  if (meta?.screen && meta.screen.width_px > 0 && meta.screen.height_px > 0) return meta.screen;
  let width = 0;
  let height = 0;
  for (const n of tree.nodes) {
    if (!hasDrawableBounds(n)) continue;
    const b = n.bounds_px!;
    width = Math.max(width, b.right);
    height = Math.max(height, b.bottom);
  }
  return { width_px: Math.max(1, width), height_px: Math.max(1, height) };
}

/**
 * Lays out every drawable node of `tree` in a pane of `pane_width` ×
 * `pane_height` px with `padding` px around: one uniform scale (the screen's
 * aspect ratio is kept), the screen centred.
 */
export function layoutBoxes(
  tree: UiTree,
  screen: ScreenSizePx,
  pane_width: number,
  pane_height: number,
  statuses?: readonly DiffStatus[] | null,
  padding = 8,
): Layout {
  const availW = Math.max(1, pane_width - 2 * padding);
  const availH = Math.max(1, pane_height - 2 * padding);
  const scale = Math.min(availW / screen.width_px, availH / screen.height_px);
  const offset_x = padding + (availW - screen.width_px * scale) / 2;
  const offset_y = padding + (availH - screen.height_px * scale) / 2;
  const boxes: LayoutBox[] = [];
  for (const n of tree.nodes) {
    if (!hasDrawableBounds(n)) continue;
    const b = n.bounds_px!;
    // Clip to the screen so nothing is drawn over the bezel; a box wholly
    // off-screen becomes a hairline on the nearest edge.
    const left = clamp(b.left, 0, screen.width_px);
    const top = clamp(b.top, 0, screen.height_px);
    const right = clamp(b.right, left, screen.width_px);
    const bottom = clamp(b.bottom, top, screen.height_px);
    boxes.push({
      id: n.id,
      x: offset_x + left * scale,
      y: offset_y + top * scale,
      width: (right - left) * scale,
      height: (bottom - top) * scale,
      depth: n.depth,
      status: statuses?.[n.id] ?? "unchanged",
      offscreen: b.left < 0 || b.top < 0 || b.right > screen.width_px || b.bottom > screen.height_px,
    });
  }
  return { scale, offset_x, offset_y, screen_width: screen.width_px * scale, screen_height: screen.height_px * scale, boxes };
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), Math.max(lo, hi));
}

/**
 * Ids of the nodes whose drawable bounds reach outside the root's bounds (the
 * first node with drawable bounds, the window or screen of an Android dump).
 * The root itself and nodes without drawable bounds are never in the set.
 */
export function outsideRootIds(tree: UiTree): Set<number> {
  const out = new Set<number>();
  const root = screenRoot(tree.nodes);
  for (const n of tree.nodes) if (isOutsideRoot(root, n)) out.add(n.id);
  return out;
}

/** The node whose bounds are the screen: the first (pre-order) with drawable bounds. */
export function screenRoot(nodes: readonly UiNode[]): UiNode | undefined {
  return nodes.find(hasDrawableBounds);
}

/** Whether `node`'s bounds reach outside `root`'s (see {@link outsideRootIds}). */
export function isOutsideRoot(root: UiNode | undefined, node: UiNode): boolean {
  if (!root || node.id === root.id || !hasDrawableBounds(node)) return false;
  const r = root.bounds_px!;
  const b = node.bounds_px!;
  return b.left < r.left || b.top < r.top || b.right > r.right || b.bottom > r.bottom;
}

/** Whether a node's bounds are an inverted rectangle (`right < left` or `bottom < top`). */
export function isInvertedBounds(node: UiNode): boolean {
  const b = node.bounds_px;
  return !!b && (b.right < b.left || b.bottom < b.top || (b.anomalies ?? []).includes("inverted"));
}

/**
 * The deepest (last in pre-order) box containing the pane point, for hover
 * on the wireframe. Boxes are in pre-order, so later boxes are deeper or later siblings.
 */
export function boxAt(layout: Layout, x: number, y: number): LayoutBox | undefined {
  let hit: LayoutBox | undefined;
  let hitArea = Infinity;
  for (const b of layout.boxes) {
    if (x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height) {
      const area = b.width * b.height;
      // Prefer the smallest box; ties go to the later (deeper) one.
      if (area <= hitArea) {
        hit = b;
        hitArea = area;
      }
    }
  }
  return hit;
}
