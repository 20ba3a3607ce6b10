import { QueryClientProvider } from "@tanstack/react-query";
import { cleanup, render, waitFor } from "@testing-library/react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ActionTarget, Landing } from "../api/types";
import { createQueryClient } from "../data/queries";
import { goldenTurn } from "../mocks/golden";
import { landingCaption, pointOnLayout, spanChars, targetText } from "../model/landing";
import { buildSrcdoc } from "../model/srcdoc";
import { alignment } from "../model/tree";
import { SelectionContext, SelectionStore } from "../state/selection";
import { fixturePaths, startServer, type TestServer } from "../testing/server";
import { HtmlRender } from "./HtmlRender";
import { TreeView } from "./TreeView";
import { Wireframe } from "./Wireframe";

afterEach(cleanup);

const found = (node_id: number, label: string): Landing => ({ node_id, path: [], line: null, span: null, label, reason: null });

describe("where the action landed: captions", () => {
  it("names the target and the node, or why it was not found", () => {
    const bid: ActionTarget = { kind: "bid", verb: "click", bid: "14" };
    const point: ActionTarget = { kind: "point", verb: "pyautogui.click", x_px: 420, y_px: 324.5 };
    const element: ActionTarget = { kind: "element", verb: "type", element: "com.app:id/msg" };
    expect(targetText(bid)).toBe("bid 14");
    expect(targetText(point)).toBe("(420, 324.5)");
    expect(targetText(element)).toBe("“com.app:id/msg”");
    expect(landingCaption(bid, found(13, 'button "Add to basket"'))).toBe('click bid 14 → button "Add to basket"');
    expect(landingCaption(point, found(9, 'push-button "7"'))).toBe('pyautogui.click at (420, 324.5) → push-button "7"');
    expect(landingCaption(bid, { node_id: null, path: [], line: null, span: null, label: null, reason: "bid 14 not in the predicted tree" })).toBe(
      "click bid 14: bid 14 not in the predicted tree",
    );
  });

  it("turns the API's byte spans into string indices", () => {
    // "é" is two UTF-8 bytes and one UTF-16 unit; "语" three bytes and one unit.
    const text = 'é<node text="语言"/>';
    expect(spanChars(text, { start_byte: 2, end_byte: 23 })).toEqual([1, text.length]);
    expect(text.slice(...spanChars(text, { start_byte: 2, end_byte: 8 })!)).toBe("<node ");
    expect(spanChars(text, { start_byte: 2, end_byte: 999 })).toBeNull();
    expect(spanChars(text, null)).toBeNull();
  });

  it("places a screen point on the laid-out screen, clamped to it", () => {
    const layout = { scale: 0.5, offset_x: 10, offset_y: 20, screen_width: 540, screen_height: 1200, boxes: [] };
    expect(pointOnLayout(layout, 966, 820)).toEqual({ x: 10 + 483, y: 20 + 410 });
    expect(pointOnLayout(layout, 5000, -3)).toEqual({ x: 10 + 540, y: 20 });
  });
});

describe("where the action landed: wireframe", () => {
  it("outlines the tapped element and draws the point (Android, from get_turn)", () => {
    const turn = goldenTurn("android-settings", 1)!;
    const target = turn.action_target!;
    expect(target).toEqual({ kind: "point", verb: "click", x_px: 966, y_px: 820 });
    const view = turn.views[0]!;
    const landing = view.real!.landing!;
    const tree = view.real!.tree!;
    // The API resolved the tap to the Dark theme switch, the topmost element there.
    expect(tree.nodes[landing.node_id!]!.key).toBe("com.android.settings:id/switch_2");
    const { container } = render(
      <Wireframe
        side="real"
        tree={tree}
        statuses={view.diff!.real}
        align={alignment(view.diff)}
        variant="device"
        label="Real device wireframe"
        landingId={landing.node_id}
        point={target.kind === "point" ? target : null}
        fallbackSize={{ width: 600, height: 1200 }}
      />,
    );
    const mark = container.querySelector("rect.wtarget")!;
    expect(mark.getAttribute("data-landing")).toBe(String(landing.node_id));
    const box = container.querySelector(`rect.wbox[data-node-id="${landing.node_id}"]`)!;
    expect(Number(mark.getAttribute("x"))).toBeCloseTo(Number(box.getAttribute("x")) - 2, 6);
    // 1080 × 2400 in 600 × 1200 with 24 px padding: scale 0.48.
    const screen = container.querySelector("rect.screen-bg")!;
    const dot = container.querySelector(".wpoint .wpoint-dot")!;
    expect(Number(dot.getAttribute("cx"))).toBeCloseTo(Number(screen.getAttribute("x")) + 966 * 0.48, 6);
    expect(Number(dot.getAttribute("cy"))).toBeCloseTo(Number(screen.getAttribute("y")) + 820 * 0.48, 6);
    // The point lies inside the outlined box.
    const x = Number(dot.getAttribute("cx"));
    expect(x).toBeGreaterThanOrEqual(Number(box.getAttribute("x")));
    expect(x).toBeLessThanOrEqual(Number(box.getAttribute("x")) + Number(box.getAttribute("width")));
  });

  it("draws nothing without a landing", () => {
    const view = goldenTurn("android-settings", 1)!.views[0]!;
    const { container } = render(
      <Wireframe
        side="real"
        tree={view.real!.tree!}
        align={alignment(null)}
        variant="device"
        label="Real device wireframe"
        fallbackSize={{ width: 600, height: 1200 }}
      />,
    );
    expect(container.querySelector(".wtarget")).toBeNull();
    expect(container.querySelector(".wpoint")).toBeNull();
  });
});

describe("where the action landed: page render", () => {
  it("marks the element with the bid in the sandboxed copy, without a script", () => {
    const turn = goldenTurn("web-harbor-books", 2)!;
    expect(turn.action_target).toEqual({ kind: "bid", verb: "click", bid: "14" });
    const html = turn.views.find((v) => v.representation === "html")!;
    const landing = html.real!.landing!;
    const { container } = render(
      <HtmlRender
        side="real"
        html={html.real!.text}
        tree={html.real!.tree}
        align={alignment(html.diff)}
        label="Real page render"
        landingId={landing.node_id}
        targetBid="14"
      />,
    );
    const srcdoc = container.querySelector("iframe")!.getAttribute("srcdoc")!;
    const doc = new DOMParser().parseFromString(srcdoc, "text/html");
    const marked = doc.querySelectorAll("[data-wl-target]");
    expect(marked.length).toBe(1);
    expect(marked[0]!.getAttribute("bid")).toBe("14");
    expect(marked[0]!.getAttribute("data-wl-node")).toBe(String(landing.node_id));
    expect(srcdoc).toContain("[data-wl-target]{outline:3px solid #d6336c");
    expect(srcdoc).not.toMatch(/<script/i);
  });

  it("marks by bid when the tree is not at hand, and ignores the page's own marks", () => {
    const page = '<p bid="3" data-wl-target>fake</p><button bid="7">Go</button><button bid="70">No</button>';
    const doc = new DOMParser().parseFromString(buildSrcdoc(page, { targetBid: "7" }).html, "text/html");
    const marked = doc.querySelectorAll("[data-wl-target]");
    expect(marked.length).toBe(1);
    expect(marked[0]!.textContent).toBe("Go");
    const none = new DOMParser().parseFromString(buildSrcdoc(page, {}).html, "text/html");
    expect(none.querySelectorAll("[data-wl-target]").length).toBe(0);
  });
});

describe("where the action landed: tree", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(fixturePaths("large-tree"));
  });
  afterAll(() => server.stop());

  it("reveals and marks the landed row of a 20,000-node tree", async () => {
    const { detail, ref } = await server.turn("large-tree", 1);
    const backend = server.backend;
    const target = 15_004;
    const { container } = render(
      <QueryClientProvider client={createQueryClient()}>
        <SelectionContext.Provider value={new SelectionStore()}>
          <TreeView
            side="real"
            backend={backend}
            treeRef={ref("real")}
            first={detail.views[0]!.real!.rows!}
            representation="axtree"
            align={alignment(null)}
            label="Real accessibility tree"
            landingId={target}
          />
        </SelectionContext.Provider>
      </QueryClientProvider>,
    );
    // The row is far below the first window: the list scrolls to it and it is marked.
    await waitFor(() => expect(container.querySelector(`[role=treeitem][data-node-id="${target}"]`)).not.toBeNull(), { timeout: 10_000 });
    const row = container.querySelector(`[role=treeitem][data-node-id="${target}"]`)!;
    expect(row.classList.contains("is-landed")).toBe(true);
    expect(row.querySelector(".tlanded")!.textContent).toBe("◎");
    expect(container.querySelectorAll("[data-landed]").length).toBe(1);
  });
});
