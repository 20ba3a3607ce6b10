/** Which views each representation offers, as pane tabs. */
import type { ComparedView, Representation } from "../api/types";

/** A view of one representation. */
export type ViewKind = "render" | "dom" | "html-source" | "axtree" | "ax-source" | "screen-tree" | "device-tree" | "screen" | "device" | "tree" | "source" | "text";

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

/** The tabs for a turn's compared views, in the views' order. */
export function tabsFor(views: readonly ComparedView[]): ViewTab[] {
  const seen = new Map<Representation, number>();
  for (const v of views) seen.set(v.representation, (seen.get(v.representation) ?? 0) + 1);
  const tabs: ViewTab[] = [];
  views.forEach((v, i) => {
    const suffix = (seen.get(v.representation) ?? 0) > 1 ? ` (${v.name})` : "";
    for (const [kind, label] of KINDS[v.representation] ?? KINDS.text) {
      tabs.push({ id: `${v.representation}:${v.name}:${kind}`, view_index: i, kind, label: label + suffix });
    }
  });
  return tabs;
}

/** Keeps the chosen tab's kind when the turn changes, else the first tab. */
export function pickTab(tabs: readonly ViewTab[], previousId: string | null): ViewTab | undefined {
  return tabs.find((t) => t.id === previousId) ?? tabs.find((t) => previousId?.endsWith(`:${t.kind}`)) ?? tabs[0];
}
