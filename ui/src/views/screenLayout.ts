/**
 * The layout shared by the views that draw a screen's boxes (the wireframes
 * and the screenshot): the pane's measured size, the tree's boxes scaled into
 * it, the shared hover/selection on this side, the box under the pointer and
 * where the turn's action point lands.
 */
import { useMemo } from "react";
import type { DiffStatus, ObservationMeta, UiTree } from "../api/types";
import { pointOnLayout } from "../model/landing";
import type { Alignment, Side } from "../model/tree";
import { boxAt, layoutBoxes, type LayoutBox, type ScreenSizePx } from "../model/wireframe";
import { useSelection } from "../state/selection";
import { resolveOnSide } from "./common";
import { usePaneSize } from "./paneSize";

/** The props every screen view takes. */
export interface ScreenViewProps {
  side: Side;
  align: Alignment;
  meta?: ObservationMeta | null;
  label: string;
  /** The node the turn's action landed on (outlined). */
  landingId?: number | null;
  /** The action's point in screen px (drawn as a crosshair). */
  point?: { x_px: number; y_px: number } | null;
  /** Pane size used before measuring (and in DOMs without layout), px. */
  fallbackSize?: { width: number; height: number };
}

const FALLBACK_SIZE = { width: 640, height: 480 };

/**
 * Lays `tree` out on `screen` (px) inside the measured pane with `padding`
 * px around it, diff-coloured by `statuses` when given. Returns the area's
 * `ref` and `size`, the `layout` and its boxes `byId`, the selection `store`
 * with this side's `hoverId`/`selectedId`, `pick` (the box under a pointer
 * event on the svg), `pt` (the action's point in pane px, or null) and
 * `svgProps`, the drawing's own attributes (an image named `label`, the
 * pane's size, `data-scale`, and leaving it clears the hover).
 */
export function useScreenLayout(
  view: ScreenViewProps,
  tree: UiTree,
  screen: ScreenSizePx,
  statuses: readonly DiffStatus[] | null | undefined,
  padding: number,
) {
  const [state, store] = useSelection();
  const { hoverId, selectedId } = resolveOnSide(state, view.side, view.align);
  const [ref, size] = usePaneSize(view.fallbackSize ?? FALLBACK_SIZE);
  const layout = useMemo(() => layoutBoxes(tree, screen, size.width, size.height, statuses, padding), [tree, screen, size, statuses, padding]);
  const byId = useMemo(() => new Map<number, LayoutBox>(layout.boxes.map((b) => [b.id, b])), [layout]);
  const pick = (e: React.MouseEvent<SVGSVGElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    return boxAt(layout, e.clientX - r.left, e.clientY - r.top);
  };
  const point = view.point ?? null;
  const pt = point ? pointOnLayout(layout, point.x_px, point.y_px) : null;
  const svgProps = {
    role: "img",
    "aria-label": view.label,
    width: size.width,
    height: size.height,
    "data-scale": layout.scale.toFixed(4),
    onMouseLeave: () => store.hover(null),
  } satisfies React.SVGProps<SVGSVGElement> & { "data-scale": string };
  return { ref, layout, byId, store, hoverId, selectedId, pick, pt, svgProps };
}
