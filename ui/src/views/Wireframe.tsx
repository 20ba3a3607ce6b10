/**
 * Screen views of GUI trees: the OS screen wireframe (every node with bounds
 * as a box at its screen position and size) and the Android device frame (the
 * same, inside a phone bezel at the dump's aspect ratio, with clickable,
 * focused and checked states drawn). One uniform scale fits the screen into
 * the pane; diff colours and the shared hover/selection are drawn on top,
 * then where the turn's action landed (the target's box and the tap or
 * click point).
 */
import { useMemo } from "react";
import type { DiffStatus, UiNode, UiTree } from "../api/types";
import { attr, nodeLabel } from "../model/tree";
import { classNames } from "../components/dom";
import { screenSize, type LayoutBox } from "../model/wireframe";
import { PointMark } from "./PointMark";
import { useScreenLayout, type ScreenViewProps } from "./screenLayout";

/** Props of {@link Wireframe}. */
export interface WireframeProps extends ScreenViewProps {
  tree: UiTree;
  statuses?: readonly DiffStatus[] | null;
  /** `screen`: OS desktop; `device`: Android phone frame. */
  variant: "screen" | "device";
}

const BEZEL_PX = 14;

function isClickable(n: UiNode): boolean {
  return attr(n, "clickable") === "true";
}

function hasBoundedChildren(tree: UiTree, n: UiNode): boolean {
  return n.children.some((c) => !!tree.nodes[c]?.bounds_px);
}

function truncate(text: string, widthPx: number, fontPx: number): string {
  const max = Math.floor(widthPx / (fontPx * 0.56));
  if (max <= 1) return "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function Wireframe(props: WireframeProps) {
  const { side, tree, statuses, meta, variant, landingId = null, point = null } = props;
  const screen = useMemo(() => screenSize(tree, meta), [tree, meta]);
  const padding = variant === "device" ? BEZEL_PX + 10 : 8;
  const { ref, layout, byId, store, hoverId, selectedId, pick, pt, svgProps } = useScreenLayout(props, tree, screen, statuses, padding);

  const boxes = useMemo(
    () =>
      layout.boxes.map((b) => {
        const n = tree.nodes[b.id]!;
        const clickable = variant === "device" && isClickable(n);
        const focused = n.states?.focused === true;
        const checked = n.states?.checked;
        const leafish = !hasBoundedChildren(tree, n);
        const text = n.name && n.value && n.value !== n.name ? `${n.name}: ${n.value}` : n.name || (n.value ?? "");
        const font = Math.max(8, Math.min(12, b.height * 0.55));
        const showText = text && leafish && b.width > 18 && b.height > 9;
        const cls = classNames(
          "wbox",
          `diff-${b.status}`,
          clickable && "is-clickable",
          focused && "is-focused",
          leafish && "is-leaf",
          b.offscreen && "is-offscreen",
        );
        return (
          <g key={b.id} data-node-id={b.id}>
            <rect className={cls} data-node-id={b.id} data-diff={b.status} x={b.x} y={b.y} width={Math.max(0.5, b.width)} height={Math.max(0.5, b.height)}>
              <title>{`${nodeLabel(n, 120)}${n.key ? ` [${n.key}]` : ""}${b.offscreen ? " (partly off-screen, clipped)" : ""}`}</title>
            </rect>
            {b.offscreen ? (
              <text className="woffscreen" data-offscreen={b.id} x={b.x + 1} y={b.y + 9} fontSize={9}>
                ⇱
              </text>
            ) : null}
            {showText ? (
              <text className="wlabel" x={b.x + 3} y={b.y + Math.min(b.height - 2, font + 2)} fontSize={font}>
                {truncate(text, b.width - (checked != null ? 16 : 6), font)}
              </text>
            ) : null}
            {checked != null && b.width > 10 && b.height > 10 ? (
              <text className={`wcheck ${checked ? "on" : "off"}`} x={b.x + b.width - 13} y={b.y + Math.min(b.height - 2, 14)} fontSize={12}>
                {checked ? "☑" : "☐"}
              </text>
            ) : null}
          </g>
        );
      }),
    [layout, tree, variant],
  );

  const overlay = (id: number | null, cls: string) => {
    if (id == null) return null;
    const b: LayoutBox | undefined = byId.get(id);
    if (!b) return null;
    return <rect className={cls} x={b.x - 1} y={b.y - 1} width={b.width + 2} height={b.height + 2} pointerEvents="none" />;
  };
  const landingBox = landingId != null ? byId.get(landingId) : undefined;

  return (
    <div className={`wireframe wireframe-${variant}`}>
      <div className="wire-caption">
        {screen.width_px}×{screen.height_px} px · ×{layout.scale.toFixed(3)} · {layout.boxes.length} boxes
      </div>
      <div ref={ref} className="wire-area">
        <svg
          {...svgProps}
          onMouseMove={(e) => {
            const b = pick(e);
            store.hover(b ? { side, id: b.id } : null);
          }}
          onClick={(e) => {
            const b = pick(e);
            if (b) store.select({ side, id: b.id });
          }}
        >
          {variant === "device" ? (
            <rect
              className="device-bezel"
              x={layout.offset_x - BEZEL_PX}
              y={layout.offset_y - BEZEL_PX}
              width={layout.screen_width + 2 * BEZEL_PX}
              height={layout.screen_height + 2 * BEZEL_PX}
              rx={BEZEL_PX * 1.6}
            />
          ) : null}
          <rect className="screen-bg" x={layout.offset_x} y={layout.offset_y} width={layout.screen_width} height={layout.screen_height} />
          {boxes}
          {overlay(hoverId, "whover")}
          {overlay(selectedId, "wselected")}
          {landingBox ? (
            <rect
              className="wtarget"
              data-landing={landingBox.id}
              x={landingBox.x - 2}
              y={landingBox.y - 2}
              width={landingBox.width + 4}
              height={landingBox.height + 4}
              pointerEvents="none"
            >
              <title>{`Action landed here: ${nodeLabel(tree.nodes[landingBox.id]!, 120)}`}</title>
            </rect>
          ) : null}
          {pt && point ? <PointMark point={point} at={pt} /> : null}
        </svg>
      </div>
    </div>
  );
}
