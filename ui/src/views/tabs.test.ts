import { describe, expect, it } from "vitest";
import type { ComparedView, Representation } from "../api/types";
import { pickTab, tabsFor } from "./tabs";

const v = (representation: Representation, name: string): ComparedView => ({ representation, name, real: null, predicted: null, diff: null, line_diff: null });

describe("tabsFor", () => {
  it("offers each representation's views and keeps labels unique", () => {
    const tabs = tabsFor([v("os-xml", "main"), v("os-table", "step_03.tsv")]);
    expect(tabs.map((t) => t.label)).toEqual([
      "Screen + tree",
      "Screen",
      "Tree",
      "XML source",
      "Screen + tree (table)",
      "Screen (table)",
      "Tree (table)",
      "Table source",
    ]);
    const web = tabsFor([v("axtree", "main"), v("html", "pruned_html"), v("html", "dom_txt")]);
    expect(web.map((t) => t.label)).toEqual([
      "AX tree",
      "AX source",
      "Render",
      "DOM tree",
      "HTML source",
      "Render (dom_txt)",
      "DOM tree (dom_txt)",
      "HTML source (dom_txt)",
    ]);
    expect(tabsFor([v("text", "main")]).map((t) => t.kind)).toEqual(["text"]);
  });
  it("adds a last Screenshot tab over the first bounded view when the real state has a screenshot", () => {
    const views = [v("axtree", "main"), v("os-table", "step_01.tsv"), v("os-xml", "main")];
    expect(tabsFor(views).some((t) => t.kind === "screenshot")).toBe(false);
    const tabs = tabsFor(views, true);
    expect(tabs.at(-1)).toEqual({ id: "screenshot", view_index: 2, kind: "screenshot", label: "Screenshot" });
    expect(tabsFor([v("axtree", "main")], true).at(-1)?.view_index).toBe(0);
    // Not the opening tab: the first view both sides have still is.
    expect(pickTab(tabsFor([v("android-xml", "main")], true), null)?.kind).toBe("device-tree");
    // A turn without a screenshot falls back from it.
    expect(pickTab(tabsFor([v("android-xml", "main")]), "screenshot")?.kind).toBe("device-tree");
  });
  it("keeps the chosen view kind across turns", () => {
    const a = tabsFor([v("android-xml", "dump_01.xml")]);
    const b = tabsFor([v("android-xml", "dump_02.xml")]);
    expect(pickTab(b, a[2]!.id)?.kind).toBe("tree");
    expect(pickTab(b, null)?.kind).toBe("device-tree");
  });
  it("opens, with no choice yet, on the first view that both sides have", () => {
    const views = [
      { ...v("os-xml", "main"), real: { text: "<desktop-frame/>", tree: null, statuses: [] } as unknown as ComparedView["real"] },
      {
        ...v("os-table", "step_01.tsv"),
        real: { text: "t" } as unknown as ComparedView["real"],
        predicted: { text: "t" } as unknown as ComparedView["predicted"],
      },
    ];
    const tabs = tabsFor(views);
    expect(pickTab(tabs, null, views)?.label).toBe("Screen + tree (table)");
    // A tab the user chose stays chosen.
    expect(pickTab(tabs, tabs[3]!.id, views)?.label).toBe("XML source");
    // Nothing on both sides: the first tab.
    expect(pickTab(tabs, null, [views[0]!])?.label).toBe("Screen + tree");
  });
});
