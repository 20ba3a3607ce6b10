/**
 * Renders an observation's HTML in a sandboxed frame: `sandbox=""` (no
 * scripts, unique opaque origin, no forms, popups or navigation of the app),
 * a `srcdoc` carrying its own no-load Content-Security-Policy, and diff
 * outlines from `data-wl-diff` attributes (see `model/srcdoc.ts`). The frame
 * cannot be scripted from the app either, so the selected node is marked by
 * rebuilding the srcdoc; so is the element the turn's action landed on
 * (`data-wl-target`).
 */
import { useMemo } from "react";
import type { DiffStatus, UiTree } from "../api/types";
import { buildSrcdoc } from "../model/srcdoc";
import type { Alignment, Side } from "../model/tree";
import { useSelection } from "../state/selection";
import { resolveOnSide } from "./common";

/** Props of {@link HtmlRender}. */
export interface HtmlRenderProps {
  side: Side;
  html: string;
  tree?: UiTree | null;
  statuses?: readonly DiffStatus[] | null;
  align: Alignment;
  label: string;
  /** The node the turn's action landed on (keyed through `tree`). */
  landingId?: number | null;
  /** The action's bid, marked by attribute when the tree is not at hand (large pages). */
  targetBid?: string | null;
}

export function HtmlRender({ side, html, tree, statuses, align, label, landingId = null, targetBid = null }: HtmlRenderProps) {
  const [state] = useSelection();
  const { selectedId } = resolveOnSide(state, side, align);
  const doc = useMemo(() => buildSrcdoc(html, { tree, statuses, selectedId, landingId, targetBid }), [html, tree, statuses, selectedId, landingId, targetBid]);
  // Plain links and form targets are rewritten on every page; only count what tried to run or load.
  const neutralised = Object.entries(doc.neutralised)
    .filter(([kind]) => kind !== "url-attribute")
    .reduce((a, [, n]) => a + n, 0);
  return (
    <div className="html-render">
      {neutralised > 0 ? (
        <div
          className="render-note"
          title={Object.entries(doc.neutralised)
            .map(([k, v]) => `${k}: ${v}`)
            .join("\n")}
        >
          {neutralised} script or loading construct{neutralised === 1 ? "" : "s"} removed (hover for the list)
        </div>
      ) : null}
      <iframe className="render-frame" title={label} sandbox="" referrerPolicy="no-referrer" srcDoc={doc.html} />
    </div>
  );
}
