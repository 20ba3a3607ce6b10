/** Which views each representation offers, as pane tabs. */
import type { ComparedView, Representation } from "../api/types";

/** A view of one representation. */
export type ViewKind =
  "render" | "dom" | "html-source" | "axtree" | "ax-source" | "screen-tree" | "device-tree" | "screen" | "device" | "tree" | "source" | "text" | "screenshot";

/** One tab: a view kind of the `view_index`-th compared view. */
export interface ViewTab {
  id: string;
  view_index: number;
  kind: ViewKind;
  label: string;
}

const KINDS: Record<Representation, Array<[ViewKind, string]>> = {
  html: [
    ["render", "Render"],
    ["dom", "DOM tree"],
    ["html-source", "HTML source"],
  ],
  axtree: [
    ["axtree", "AX tree"],
    ["ax-source", "AX source"],
  ],
  "os-xml": [
    ["screen-tree", "Screen + tree"],
    ["screen", "Screen"],
    ["tree", "Tree"],
    ["source", "XML source"],
  ],
  "os-table": [
    ["screen-tree", "Screen + tree"],
    ["screen", "Screen"],
    ["tree", "Tree"],
    ["source", "Table source"],
  ],
  "android-xml": [
    ["device-tree", "Device + tree"],
    ["device", "Device"],
    ["tree", "Tree"],
    ["source", "XML source"],
  ],
  json: [["text", "Text diff"]],
  text: [["text", "Text diff"]],
};

const SHORT: Record<Representation, string> = {
  html: "HTML",
  axtree: "AX",
  "os-xml": "XML",
  "os-table": "table",
  "android-xml": "XML",
  json: "JSON",
  text: "text",
};

/**
 * The tabs for a turn's compared views, in the views' order. A label that
 * an earlier view already uses gets the representation (or, for a second
 * view of the same representation, the view's name) appended: `Screen` for the AT-SPI XML, `Screen (table)`
 * for the linearized table of the same state. With `screenshot` (the real
 * state has one), a last `Screenshot` tab over the first view whose tree has
 * bounds.
 */
export function tabsFor(views: readonly ComparedView[], screenshot = false): ViewTab[] {
  const tabs: ViewTab[] = [];
  const used = new Set<string>();
  views.forEach((v, i) => {
    // A second view of the same representation is told apart by its name.
    const sameRepresentationBefore = views.slice(0, i).some((w) => w.representation === v.representation);
    const suffix = sameRepresentationBefore ? v.name : (SHORT[v.representation] ?? v.representation);
    for (const [kind, label] of KINDS[v.representation] ?? KINDS.text) {
      let text = label;
      if (used.has(text)) text = `${label} (${suffix})`;
      if (used.has(text)) text = `${label} (${v.name} ${i})`;
      used.add(text);
      tabs.push({ id: `${v.representation}:${v.name}:${kind}`, view_index: i, kind, label: text });
    }
  });
  if (screenshot) {
    // Over the first view whose tree has bounds (its boxes are drawn on the image), else the first view.
    const bounded = views.findIndex((v) => v.representation === "android-xml" || v.representation === "os-xml");
    tabs.push({ id: "screenshot", view_index: Math.max(0, bounded), kind: "screenshot", label: "Screenshot" });
  }
  return tabs;
}

/**
 * Keeps the chosen tab's kind when the turn changes. With no choice yet, the
 * first tab whose view has both a real and a predicted side (so a prediction
 * given only as, say, the OS table opens on the table's tabs), else the
 * first tab.
 */
export function pickTab(tabs: readonly ViewTab[], previousId: string | null, views: readonly ComparedView[] = []): ViewTab | undefined {
  const chosen = tabs.find((t) => t.id === previousId) ?? tabs.find((t) => previousId?.endsWith(`:${t.kind}`));
  if (chosen) return chosen;
  const both = (t: ViewTab) => {
    const view = views[t.view_index];
    return !!view?.real && !!view.predicted;
  };
  return tabs.find(both) ?? tabs[0];
}
