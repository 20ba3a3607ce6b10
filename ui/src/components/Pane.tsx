/**
 * One side of the comparison: `region "Real observation"` or `region
 * "Predicted observation"`, with view tabs (shared by both panes) and the
 * active view.
 */
import type { ReactNode } from "react";
import type { ActionTarget, ComparedView, ObservationMeta, Screenshot, SideWarning } from "../api/types";
import { landedId, landingCaption } from "../model/landing";
import type { SideBySideLines } from "../model/lineDiff";
import { plainLines } from "../model/lineDiff";
import { alignment, statusCounts, type Side } from "../model/tree";
import { HtmlRender } from "../views/HtmlRender";
import { ScreenshotView } from "../views/ScreenshotView";
import { SourceView } from "../views/SourceView";
import type { ViewTab } from "../views/tabs";
import { TreeView } from "../views/TreeView";
import type { Backend } from "../backend/backend";
import type { TreeRef } from "../data/keys";
import { Wireframe } from "../views/Wireframe";
import { useMemo } from "react";

/** Readable names of the parser's warning kinds; unknown kinds show as they are. */
const WARNING_KINDS: Record<string, string> = {
  invalid_utf8: "bytes not UTF-8, replaced",
  forbidden_character: "forbidden character, replaced",
  trailing_text: "text outside the root ignored",
  lenient_fallback: "read leniently (not well-formed XML)",
  malformed: "malformed line or attribute",
  indent_jump: "indentation jump",
  nesting_limit: "nesting too deep",
  truncated: "tree cut off by its dump tool",
  incomplete: "tree incomplete (accessibility probably off)",
};

/**
 * The parse warnings of one side as a small strip: the count, and the list
 * (kind, line, byte offset, detail) behind a disclosure. Nothing when there
 * are none.
 */
export function ParseWarnings({ warnings, what }: { warnings: readonly SideWarning[] | undefined; what: string }) {
  if (!warnings || warnings.length === 0) return null;
  const n = warnings.length;
  return (
    <details className="pane-warnings" role="note" aria-label={`${what} parse warnings`}>
      <summary>
        ⚠ {n} parse warning{n === 1 ? "" : "s"}
      </summary>
      <ul>
        {warnings.map((w, i) => (
          <li key={i} data-kind={w.kind}>
            <span className="pw-where">
              line {w.line}, byte {w.byte}
            </span>{" "}
            <span className="pw-kind">{WARNING_KINDS[w.kind] ?? w.kind}</span>
            {w.message ? <span className="pw-message">: {w.message}</span> : null}
          </li>
        ))}
      </ul>
    </details>
  );
}

/** Props of {@link Pane}. */
export interface PaneProps {
  side: Side;
  title: string;
  tabs: ViewTab[];
  active: ViewTab | undefined;
  onTab: (tab: ViewTab) => void;
  view: ComparedView | undefined;
  lines: SideBySideLines | null;
  meta?: ObservationMeta | null;
  /** Shown in the header (the prediction picker). */
  headerExtra?: ReactNode;
  /** Shown instead of the view (no prediction yet). */
  emptyMessage?: string | null;
  /** A notice above the view (the step's action error, an authored observation). */
  banner?: ReactNode;
  /** Next to the title (the kind badge). */
  titleExtra?: ReactNode;
  /** Between the header and the tabs (the step bar). */
  toolbar?: ReactNode;
  /** Shown instead of the view (a streaming step, uncertainty shading). */
  bodyOverride?: ReactNode;
  /** The back end the tree view reads its rows from. */
  backend: Backend;
  /** The turn as shown and the active view, for tree rows (`null` before a turn loads). */
  turnRef: Omit<TreeRef, "side"> | null;
  /** The element the turn's action names (`TurnDetail.action_target`); where it landed is each side's `landing`. */
  actionTarget?: ActionTarget | null;
  /** The real state's screenshot (`TurnDetail.real_screenshot`), for the `screenshot` tab. */
  screenshot?: Screenshot | null;
}

export function Pane({
  side,
  title,
  tabs,
  active,
  onTab,
  view,
  lines,
  meta,
  headerExtra,
  emptyMessage,
  banner,
  titleExtra,
  toolbar,
  bodyOverride,
  backend,
  turnRef,
  actionTarget = null,
  screenshot = null,
}: PaneProps) {
  const doc = side === "real" ? view?.real : view?.predicted;
  const diff = view?.diff ?? null;
  const align = useMemo(() => alignment(diff), [diff]);
  const statuses = diff ? diff[side] : null;
  // Counts come with the rows (the whole diff list is sent for small trees only).
  const rowCounts = doc?.rows?.status_counts ?? null;
  const counts = rowCounts ?? statusCounts(statuses ?? []);
  const hasDiff = diff !== null || rowCounts !== null;
  const treeRef = useMemo(() => (turnRef ? { ...turnRef, side } : null), [turnRef, side]);
  const what = side === "real" ? "Real" : "Predicted";
  const landing = actionTarget ? (doc?.landing ?? null) : null;
  const landingId = landedId(landing);
  const point = actionTarget?.kind === "point" ? actionTarget : null;
  const targetBid = actionTarget?.kind === "bid" && landingId != null ? actionTarget.bid : null;

  let body: ReactNode;
  if (bodyOverride) body = bodyOverride;
  else if (emptyMessage) body = <div className="pane-empty">{emptyMessage}</div>;
  else if (active?.kind === "screenshot")
    body =
      side === "real" && screenshot ? (
        <ScreenshotView
          side={side}
          shot={screenshot}
          tree={doc?.tree}
          meta={meta}
          align={align}
          backend={backend}
          label={`${what} screenshot`}
          landingId={landingId}
          point={point}
        />
      ) : (
        <div className="pane-empty">
          {side === "real" ? "No screenshot of this state." : "A prediction is text: the real state's screenshot is in the other pane."}
        </div>
      );
  else if (!view || !active) body = <div className="pane-empty">No observation.</div>;
  else if (!doc) body = <div className="pane-empty">No {view.representation} view on this side.</div>;
  else {
    const noTree = <div className="pane-empty">Did not parse: {doc.parse_error ?? "no tree"}</div>;
    const treeOrError = (label: string, showBounds = false) =>
      doc.rows && treeRef ? (
        <TreeView
          side={side}
          backend={backend}
          treeRef={treeRef}
          first={doc.rows}
          representation={view.representation}
          align={align}
          label={label}
          showBounds={showBounds}
          landingId={landingId}
        />
      ) : (
        noTree
      );
    // Views that draw every node get the whole tree only when it is small.
    const tooLarge =
      !doc.tree && doc.rows ? <div className="pane-empty">{doc.rows.node_count} nodes: too many to draw here; the tree tab lists them.</div> : null;
    // What the drawn views (page render, wireframes) mark alike: diff colours, alignment, the action's landing.
    const marks = { side, statuses, align, landingId };
    const wireframe = (variant: "screen" | "device") =>
      doc.tree ? <Wireframe {...marks} tree={doc.tree} meta={meta} variant={variant} point={point} label={`${what} ${variant} wireframe`} /> : null;
    const source = (label: string) => (
      <SourceView side={side} lines={lines ? lines[side] : plainLines(doc.text)} text={doc.text} tree={doc.tree} align={align} label={label} />
    );
    switch (active.kind) {
      case "render":
        body = <HtmlRender {...marks} html={doc.text} tree={doc.tree} label={`${what} page render`} targetBid={targetBid} />;
        break;
      case "dom":
        body = treeOrError(`${what} DOM tree`);
        break;
      case "axtree":
        body = treeOrError(`${what} accessibility tree`);
        break;
      case "tree":
        body = treeOrError(`${what} accessibility tree`, true);
        break;
      case "screen":
      case "device":
        body = tooLarge ?? wireframe(active.kind) ?? noTree;
        break;
      case "screen-tree":
      case "device-tree": {
        const variant = active.kind === "device-tree" ? "device" : "screen";
        const drawn = tooLarge ?? wireframe(variant);
        body = drawn ? (
          <div className={`split split-${variant}`}>
            {drawn}
            {treeOrError(`${what} accessibility tree`, true)}
          </div>
        ) : (
          noTree
        );
        break;
      }
      case "html-source":
      case "ax-source":
      case "source":
        body = source(`${what} source`);
        break;
      case "text":
        body = source(`${what} text`);
        break;
    }
  }

  return (
    <section className={`pane pane-${side}`} role="region" aria-label={title}>
      <header className="pane-head">
        <h2>{title}</h2>
        {titleExtra}
        {headerExtra}
        <span className="pane-counts" aria-label={`${what} diff counts`}>
          {hasDiff ? (
            <>
              {side === "real" ? (
                <span className="c-removed" title="nodes only in the real observation">
                  −{counts.removed}
                </span>
              ) : (
                <span className="c-added" title="nodes only in the prediction">
                  +{counts.added}
                </span>
              )}
              <span className="c-changed" title="aligned nodes that differ">
                ~{counts.changed}
              </span>
              {counts.moved ? (
                <span className="c-moved" title="aligned by key, in another place">
                  ↕{counts.moved}
                </span>
              ) : null}
            </>
          ) : lines ? (
            side === "real" ? (
              <span className="c-removed" title="lines only in the real observation">
                −{lines.removed} lines
              </span>
            ) : (
              <span className="c-added" title="lines only in the prediction">
                +{lines.added} lines
              </span>
            )
          ) : null}
        </span>
      </header>
      {toolbar}
      <div className="tabs" role="tablist" aria-label={`${what} observation views`}>
        {tabs.map((t) => (
          <button
            key={t.id}
            type="button"
            role="tab"
            aria-selected={t.id === active?.id}
            className={t.id === active?.id ? "tab is-active" : "tab"}
            onClick={() => onTab(t)}
          >
            {t.label}
          </button>
        ))}
      </div>
      {banner ? (
        <div className="pane-banner" role="note">
          {banner}
        </div>
      ) : null}
      {!bodyOverride && !emptyMessage ? <ParseWarnings warnings={doc?.warnings} what={what} /> : null}
      {!bodyOverride && !emptyMessage && actionTarget && landing ? (
        <div className={landingId != null ? "pane-landing" : "pane-landing is-missing"} role="status" aria-label={`${what} action target`}>
          <span aria-hidden="true">◎ </span>
          {landingCaption(actionTarget, landing)}
        </div>
      ) : null}
      {!bodyOverride && !emptyMessage && doc?.text_bytes != null ? (
        <div className="pane-note" role="note" aria-label={`${what} text cut`}>
          Text: the first {doc.text.length.toLocaleString("en")} of {doc.text_bytes.toLocaleString("en")} characters are shown.
        </div>
      ) : null}
      <div className="pane-body" role="tabpanel" aria-label={active ? `${what}: ${active.label}` : what}>
        {body}
      </div>
    </section>
  );
}
