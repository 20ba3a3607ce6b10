/**
 * The real state's screenshot, with its tree on top when the tree has
 * bounds (Android, OS): the image is laid over the tree's screen (its size
 * from the observation's metadata, else the bounds' extent) with one
 * uniform scale, so a node's box drawn from its bounds lands on its pixels
 * whatever the image's own size. The selected and hovered nodes (shared
 * with the tree, the inspector and the other views) are outlined; moving
 * the pointer over the image selects the topmost node under it (leaving
 * keeps it); where the turn's action landed (its node, its point) is drawn
 * as on the wireframes.
 */
import { useMemo } from "react";
import type { ObservationMeta, Screenshot, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import { useScreenshotUrl } from "../data/screenshot";
import { pointOnLayout } from "../model/landing";
import { nodeLabel, type Alignment, type Side } from "../model/tree";
import { boxAt, layoutBoxes, screenSize, type LayoutBox } from "../model/wireframe";
import { useSelection } from "../state/selection";
import { resolveOnSide } from "./common";
import { usePaneSize } from "./paneSize";
import { PointMark } from "./PointMark";

/** Props of {@link ScreenshotView}. */
export interface ScreenshotViewProps {
  side: Side;
  shot: Screenshot;
  /** The state's tree, when it has one; its bounds place the boxes. */
  tree: UiTree | null | undefined;
  meta?: ObservationMeta | null;
  align: Alignment;
  backend: Backend;
  label: string;
  /** The node the turn's action landed on (outlined). */
  landingId?: number | null;
  /** The action's point in screen px (drawn as a crosshair). */
  point?: { x_px: number; y_px: number } | null;
  /** Pane size used before measuring (and in DOMs without layout), px. */
  fallbackSize?: { width: number; height: number };
}

const PADDING_PX = 8;

/** Whether any node of `tree` has bounds to draw. */
function hasBounds(tree: UiTree | null | undefined): tree is UiTree {
  return !!tree && tree.nodes.some((n) => !!n.bounds_px);
}

export function ScreenshotView({
  side,
  shot,
  tree,
  meta,
  align,
  backend,
  label,
  landingId = null,
  point = null,
  fallbackSize = { width: 640, height: 480 },
}: ScreenshotViewProps) {
  const { url, error } = useScreenshotUrl(backend, shot);
  const [state, store] = useSelection();
  const { hoverId, selectedId } = resolveOnSide(state, side, align);
  const [ref, size] = usePaneSize(fallbackSize);
  const bounded = hasBounds(tree) ? tree : null;
  // The tree's screen when it has bounds (the image is stretched onto it), else the image's own size.
  const screen = useMemo(
    () => (bounded ? screenSize(bounded, meta) : { width_px: shot.width_px, height_px: shot.height_px }),
    [bounded, meta, shot.width_px, shot.height_px],
  );
  const layout = useMemo(
    () => layoutBoxes(bounded ?? { representation: "android-xml", nodes: [] }, screen, size.width, size.height, null, PADDING_PX),
    [bounded, screen, size],
  );
  const byId = useMemo(() => new Map(layout.boxes.map((b) => [b.id, b])), [layout]);

  const outline = (id: number | null, cls: string, attr: string, pad: number) => {
    if (id == null) return null;
    const b: LayoutBox | undefined = byId.get(id);
    if (!b) return null;
    const node = bounded?.nodes[id];
    return (
      <rect className={cls} {...{ [attr]: id }} x={b.x - pad} y={b.y - pad} width={b.width + 2 * pad} height={b.height + 2 * pad} pointerEvents="none">
        {node ? <title>{nodeLabel(node, 120)}</title> : null}
      </rect>
    );
  };
  const pick = (e: React.MouseEvent<SVGSVGElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    return boxAt(layout, e.clientX - r.left, e.clientY - r.top);
  };
  const pt = point ? pointOnLayout(layout, point.x_px, point.y_px) : null;
  const stretched = bounded && (screen.width_px !== shot.width_px || screen.height_px !== shot.height_px);

  return (
    <div className="wireframe screenshot-view">
      <div className="wire-caption">
        {shot.width_px}×{shot.height_px} px {shot.media_type === "image/png" ? "PNG" : "JPEG"} · {(shot.byte_length / 1024).toFixed(1)} KiB
        {stretched ? ` · drawn at ${screen.width_px}×${screen.height_px} px, the tree's screen` : ""}
        {bounded ? ` · ${layout.boxes.length} boxes` : " · no bounds to outline"}
      </div>
      <div ref={ref} className="wire-area">
        {error ? <div className="pane-empty">The screenshot could not be loaded: {error}</div> : null}
        <svg
          role="img"
          aria-label={label}
          width={size.width}
          height={size.height}
          data-scale={layout.scale.toFixed(4)}
          data-screen={`${layout.offset_x.toFixed(2)},${layout.offset_y.toFixed(2)},${layout.screen_width.toFixed(2)},${layout.screen_height.toFixed(2)}`}
          data-loaded={url ? "true" : "false"}
          onMouseMove={(e) => {
            if (!bounded) return;
            // Hovering the image selects the topmost node under the pointer
            // (the tree and the inspector follow); leaving keeps it selected.
            const b = pick(e);
            store.hover(b ? { side, id: b.id } : null);
            if (b) store.select({ side, id: b.id });
          }}
          onMouseLeave={() => store.hover(null)}
        >
          <rect className="screen-bg" x={layout.offset_x} y={layout.offset_y} width={layout.screen_width} height={layout.screen_height} />
          {url ? (
            <image
              className="shot-image"
              href={url}
              x={layout.offset_x}
              y={layout.offset_y}
              width={layout.screen_width}
              height={layout.screen_height}
              preserveAspectRatio="none"
            />
          ) : null}
          {outline(landingId, "shot-target", "data-landing", 3)}
          {outline(hoverId, "shot-hover", "data-hover", 1)}
          {outline(selectedId, "shot-selected", "data-selected", 0)}
          {pt && point ? <PointMark point={point} at={pt} /> : null}
        </svg>
      </div>
    </div>
  );
}
