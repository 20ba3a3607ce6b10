import { describe, expect, it } from "vitest";
import android from "../mocks/fixtures/android-settings.json";
import { mockParse } from "../mocks/mockTrees";
import { propsOf, shortKey } from "../views/TreeView";
import { compareNodes, rowOfField } from "./NodeInspector";

describe("compareNodes", () => {
  it("lists the fields of both sides and marks the ones that differ", () => {
    const real = mockParse(android.turns[0]!.real.views[0]!.text, "android-xml")!;
    const predicted = mockParse(android.turns[0]!.predictions[0]!.views[0]!.text, "android-xml")!;
    const key = "com.android.settings:id/switch_1";
    const r = real.nodes.find((n) => n.key === key)!;
    const p = predicted.nodes.find((n) => n.key === key)!;
    const rows = compareNodes(r, p);
    const differing = rows.filter((x) => x.differs).map((x) => [x.field, x.real, x.predicted]);
    expect(differing).toEqual([
      ["states", "checked=false focused=false", "checked=true focused=false"],
      ["@checked", "false", "true"],
    ]);
    expect(rows.find((x) => x.field === "bounds")).toMatchObject({ real: "[900,620][1032,700]", differs: false });
    // A node only on one side: the other column is empty.
    expect(compareNodes(r, undefined).every((x) => x.predicted === null && x.differs)).toBe(true);
  });
});

describe("compareNodes with the back end's changes", () => {
  it("marks exactly the fields the diff reports", () => {
    const real = mockParse(android.turns[0]!.real.views[0]!.text, "android-xml")!;
    const predicted = mockParse(android.turns[0]!.predictions[0]!.views[0]!.text, "android-xml")!;
    const r = real.nodes.find((n) => n.key === "com.android.settings:id/switch_1")!;
    const p = predicted.nodes.find((n) => n.key === "com.android.settings:id/switch_1")!;
    const rows = compareNodes(r, p, [{ field: "state:checked", real: "false", predicted: "true" }]);
    expect(rows.filter((x) => x.differs).map((x) => x.field)).toEqual(["states"]);
    expect(rowOfField("attr:resource-id")).toBe("@resource-id");
  });
});

describe("propsOf", () => {
  it("shows BrowserGym properties, HTML attributes and true Android flags", () => {
    const ax = mockParse("RootWebArea 'P'\n\t[5] link 'Home', clickable, visible, url='https://x.example/'", "axtree")!;
    expect(propsOf(ax.nodes[2]!, "axtree")).toEqual(["clickable", "visible", "url=https://x.example/"]);
    const html = mockParse('<html><body><a bid="3" id="home" href="/h" hidden>x</a></body></html>', "html")!;
    expect(
      propsOf(
        html.nodes.find((n) => n.role === "a")!,
        "html",
      ),
    ).toEqual(["id=home", "href=/h", "hidden"]);
    const real = mockParse(android.turns[0]!.real.views[0]!.text, "android-xml")!;
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
