/**
 * Where the turn's action landed: captions for the action's target and its
 * landing on one side (`TurnDetail.action_target`, `SideDocument.landing`,
 * both resolved by the API; nothing is looked up here), and the point's
 * place on a wireframe.
 */
import type { ActionTarget, Landing } from "../api/types";
import type { Layout } from "./wireframe";

/** A coordinate without a needless `.0`. */
function px(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

/** What the action names: `bid 14`, `(540, 398)`, `"com.app:id/send"`. */
export function targetText(target: ActionTarget): string {
  switch (target.kind) {
    case "bid":
      return `bid ${target.bid}`;
    case "point":
      return `(${px(target.x_px)}, ${px(target.y_px)})`;
    case "element":
      return `“${target.element}”`;
  }
}

/**
 * One line for a pane: `click bid 14 → button "Add to basket"`, or the
 * reason it was not found.
 */
export function landingCaption(target: ActionTarget, landing: Landing): string {
  const what = `${target.verb} ${target.kind === "point" ? "at " : ""}${targetText(target)}`;
  if (landing.node_id != null) return `${what} → ${landing.label ?? `node ${landing.node_id}`}`;
  return `${what}: ${landing.reason ?? "not found"}`;
}

/** The node a side's landing names, or `null`. */
export function landedId(landing: Landing | null | undefined): number | null {
  return landing?.node_id ?? null;
}

/** Where a screen point (px) falls on a laid-out wireframe (pane px), clamped to the screen. */
export function pointOnLayout(layout: Layout, x_px: number, y_px: number): { x: number; y: number } {
  const x = Math.min(Math.max(x_px * layout.scale, 0), layout.screen_width);
  const y = Math.min(Math.max(y_px * layout.scale, 0), layout.screen_height);
  return { x: layout.offset_x + x, y: layout.offset_y + y };
}

/**
 * A source span (UTF-8 byte offsets into `text`, as the API gives them) as
 * string indices `[start, end)` into `text`; `null` when it lies outside.
 */
export function spanChars(text: string, span: { start_byte: number; end_byte: number } | null | undefined): [number, number] | null {
  if (!span) return null;
  const bytes = new TextEncoder().encode(text);
  if (span.start_byte > span.end_byte || span.end_byte > bytes.length) return null;
  const dec = new TextDecoder();
  const start = dec.decode(bytes.subarray(0, span.start_byte)).length;
  const end = start + dec.decode(bytes.subarray(span.start_byte, span.end_byte)).length;
  return [start, end];
}
