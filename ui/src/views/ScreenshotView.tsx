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
import type { Screenshot, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import { useScreenshotUrl } from "../data/screenshot";
import { nodeLabel } from "../model/tree";
import { screenSize, type LayoutBox } from "../model/wireframe";
import { PointMark } from "./PointMark";
import { useScreenLayout, type ScreenViewProps } from "./screenLayout";

/** Props of {@link ScreenshotView}. */
export interface ScreenshotViewProps extends ScreenViewProps {
  shot: Screenshot;
  /** The state's tree, when it has one; its bounds place the boxes. */
  tree: UiTree | null | undefined;
  backend: Backend;
}

const PADDING_PX = 8;
const NO_TREE: UiTree = { representation: "android-xml", nodes: [] };

/** Whether any node of `tree` has bounds to draw. */
function hasBounds(tree: UiTree | null | undefined): tree is UiTree {
  return !!tree && tree.nodes.some((n) => !!n.bounds_px);
}

export function ScreenshotView(props: ScreenshotViewProps) {
  const { side, shot, tree, meta, backend, landingId = null, point = null } = props;
  const { url, error } = useScreenshotUrl(backend, shot);
  const bounded = hasBounds(tree) ? tree : null;
  // The tree's screen when it has bounds (the image is stretched onto it), else the image's own size.
  const screen = useMemo(
    () => (bounded ? screenSize(bounded, meta) : { width_px: shot.width_px, height_px: shot.height_px }),
    [bounded, meta, shot.width_px, shot.height_px],
  );
  const { ref, layout, byId, store, hoverId, selectedId, pick, pt, svgProps } = useScreenLayout(props, bounded ?? NO_TREE, screen, null, PADDING_PX);

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
          {...svgProps}
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
