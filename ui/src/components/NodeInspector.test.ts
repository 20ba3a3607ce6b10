import { describe, expect, it } from "vitest";
import { goldenTree, goldenTurn } from "../mocks/golden";
import { propsOf, shortKey } from "../views/TreeView";
import type { UiNode, UiTree } from "../api/types";
import { compareNodes, geometryNote, rowOfField } from "./NodeInspector";

describe("compareNodes", () => {
  // The first turn of the Android fixture as `get_turn` shows it.
  const view = goldenTurn("android-settings", 1)!.views[0]!;
  const real = view.real!.tree!;
  const predicted = view.predicted!.tree!;

  it("lists the fields of both sides and marks the ones that differ", () => {
    const key = "com.android.settings:id/switch_1";
    const r = real.nodes.find((n) => n.key === key)!;
    const p = predicted.nodes.find((n) => n.key === key)!;
    const rows = compareNodes(r, p);
    const differing = rows.filter((x) => x.differs).map((x) => [x.field, x.real, x.predicted]);
    expect(differing).toEqual([
      ["states", "checked=false focused=false enabled=true", "checked=true focused=false enabled=true"],
      ["@checked", "false", "true"],
    ]);
    expect(rows.find((x) => x.field === "bounds")).toMatchObject({ real: "[900,620][1032,700]", differs: false });
    // A node only on one side: the other column is empty.
    expect(compareNodes(r, undefined).every((x) => x.predicted === null && x.differs)).toBe(true);
  });
});

describe("compareNodes with the back end's changes", () => {
  it("marks exactly the fields the diff reports", () => {
    const view = goldenTurn("android-settings", 1)!.views[0]!;
    const real = view.real!.tree!;
    const predicted = view.predicted!.tree!;
    const r = real.nodes.find((n) => n.key === "com.android.settings:id/switch_1")!;
    const p = predicted.nodes.find((n) => n.key === "com.android.settings:id/switch_1")!;
    const rows = compareNodes(r, p, [{ field: "state:checked", real: "false", pred: "true" }]);
    expect(rows.filter((x) => x.differs).map((x) => x.field)).toEqual(["states"]);
    expect(rowOfField("attr:resource-id")).toBe("@resource-id");
  });
});

describe("propsOf", () => {
  it("shows BrowserGym properties, HTML attributes and true Android flags", () => {
    // RootWebArea 'P' / [5] link 'Home', clickable, visible, url='https://x.example/'
    const ax = goldenTree("axtree-link");
    expect(propsOf(ax.nodes[2]!, "axtree")).toEqual(["clickable", "visible", "url=https://x.example/"]);
    // <html><body><a bid="3" id="home" href="/h" hidden>x</a></body></html>
    const html = goldenTree("html-link");
    expect(
      propsOf(
        html.nodes.find((n) => n.role === "a")!,
        "html",
      ),
    ).toEqual(["id=home", "href=/h", "hidden"]);
    const real = goldenTurn("android-settings", 1)!.views[0]!.real!.tree!;
    const row = real.nodes.find((n) => n.role === "android.widget.LinearLayout" && n.attributes?.some((a) => a.name === "clickable" && a.value === "true"))!;
    expect(propsOf(row, "android-xml")).toEqual(["clickable"]);
  });
});

describe("shortKey", () => {
  it("keeps the informative end of long keys", () => {
    expect(shortKey("/desktop-frame:main/application:Calculator/frame:Calculator/push-button:7", "os-xml")).toBe("push-button:7");
    expect(shortKey("com.android.settings:id/switch_1", "android-xml")).toBe("switch_1");
    expect(shortKey("android:id/title", "android-xml")).toBe("title");
    expect(shortKey("42", "axtree")).toBe("42");
  });
});

describe("geometryNote", () => {
  it("names inverted rectangles and Android nodes outside the root", () => {
    const box = (id: number, l: number, t: number, r: number, b: number): UiNode => ({
      id,
      parent: id === 0 ? null : 0,
      children: id === 0 ? [1, 2, 3] : [],
      depth: id === 0 ? 0 : 1,
      role: "android.view.View",
      name: "",
      value: null,
      key: null,
      attributes: [],
      states: {},
      bounds_px: { left: l, top: t, right: r, bottom: b, anomalies: r < l ? ["inverted"] : [] },
      span: null,
      synthetic: false,
    });
    const tree: UiTree = {
      representation: "android-xml",
      nodes: [box(0, 0, 0, 1080, 2400), box(1, -40, 0, 200, 100), box(2, 10, 10, 20, 20), box(3, 50, 50, 40, 60)],
    };
    expect(tree.nodes.map((n) => geometryNote(tree, n))).toEqual(["", "outside root bounds", "", "invalid (inverted)"]);
    // Outside the root is an Android notion; an OS tree's root is not the screen.
    expect(geometryNote({ ...tree, representation: "os-xml" }, tree.nodes[1])).toBe("");
  });
});
