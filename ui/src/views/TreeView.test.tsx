import { QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, fireEvent, render, waitFor } from "@testing-library/react";
import type { ReactElement } from "react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { PaneSide, TreeDiff, TreeWindow, UiNode, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import type { TreeRef } from "../data/keys";
import { createQueryClient } from "../data/queries";
import { alignment } from "../model/tree";
import { SelectionContext, SelectionStore } from "../state/selection";
import { fixturePaths, noBackend, recording, startServer, type TestServer } from "../testing/server";
import { TreeView } from "./TreeView";

// The dev fixtures and the 20,000-line tree, on one server: these tests only read.
let server: TestServer;
beforeAll(async () => {
  server = await startServer(fixturePaths("web-harbor-books", "large-tree"));
});
afterAll(() => server.stop());

/** A flat tree: node 0 is the root, the others its children. */
function flatTree(representation: UiTree["representation"], rows: Array<[string, string | null, [number, number, number, number] | null]>): UiTree {
  const nodes: UiNode[] = rows.map(([role, key, b], i) => ({
    id: i,
    parent: i === 0 ? null : 0,
    children: i === 0 ? rows.map((_, j) => j).slice(1) : [],
    depth: i === 0 ? 0 : 1,
    role,
    name: `n${i}`,
    value: null,
    key,
    attributes: [],
    states: { checked: null, selected: null, focused: null, enabled: null, expanded: null, editable: null },
    bounds_px: b ? { left: b[0], top: b[1], right: b[2], bottom: b[3], anomalies: b[2] < b[0] || b[3] < b[1] ? ["inverted"] : [] } : null,
    span: null,
    synthetic: false,
  }));
  return { representation, nodes };
}

/**
 * The whole of a flat tree as the one window `get_turn` would send (every
 * row, no diff): a fixed reply for the renderer, nothing asked of a server.
 */
function wholeWindow(tree: UiTree): TreeWindow {
  return {
    node_count: tree.nodes.length,
    visible_count: tree.nodes.length,
    offset: 0,
    rows: tree.nodes.map((node, row) => ({
      row,
      node: { ...node, children: [] },
      child_count: node.children.length,
      subtree_end: row === 0 ? tree.nodes.length : row + 1,
      status: null,
      counterpart: null,
    })),
    collapsed: [],
    revealed_row: null,
    status_counts: null,
  };
}

afterEach(cleanup);

/** Renders the tree view of one side: its first window and the back end that serves the rest. */
function renderTree(
  side: PaneSide,
  first: TreeWindow,
  treeRef: TreeRef,
  backend: Backend,
  representation: UiTree["representation"] = "axtree",
  diff: TreeDiff | null = null,
  store = new SelectionStore(),
) {
  const label = `${side === "real" ? "Real" : "Predicted"} accessibility tree`;
  const wrap = (el: ReactElement) => (
    <QueryClientProvider client={createQueryClient()}>
      <SelectionContext.Provider value={store}>{el}</SelectionContext.Provider>
    </QueryClientProvider>
  );
  const view = render(
    wrap(<TreeView side={side} backend={backend} treeRef={treeRef} first={first} representation={representation} align={alignment(diff)} label={label} />),
  );
  return { ...view, store, label };
}

/** A turn of a served trajectory: the first view, its sides' references and a back end that records what the view asks. */
async function served(name: string, nodeId: number) {
  const { detail, ref } = await server.turn(name, nodeId);
  return { view: detail.views[0]!, ref, backend: recording(server.backend) };
}

/** The reference of a flat tree given whole: never asked for. */
const FLAT_REF: TreeRef = { trajectory_id: "flat", node_id: 0, prediction_id: null, view_index: 0, side: "real" };

const rowsOf = (c: HTMLElement) => c.querySelectorAll("[role=treeitem]");

describe("TreeView", () => {
  it("keeps a 20,000-node tree to a window of rows, fetched page by page", async () => {
    const { view, ref, backend } = await served("large-tree", 1);
    const first = view.real!.rows!;
    // The tree is not sent whole, only its first window.
    expect(view.real!.tree).toBeNull();
    expect(first.node_count).toBe(20001); // the synthetic document root + 20,000 lines
    expect(first.rows.length).toBe(200);
    const { container } = renderTree("real", first, ref("real"), backend);
    // 600 px fallback viewport / 20 px rows + 8 overscan below.
    expect(rowsOf(container).length).toBe(38);
    const list = container.querySelector("[role=tree]") as HTMLElement;
    expect((list.firstElementChild as HTMLElement).style.height).toBe(`${20001 * 20}px`);
    // The first page came with the turn: nothing was fetched.
    expect(backend.calls).toEqual([]);
    expect(container.querySelector(".tree-count")!.textContent).toBe("20001 nodes");
    // Scrolling far fetches the page holding those rows only.
    list.scrollTop = 10_000 * 20;
    fireEvent.scroll(list);
    await waitFor(() => expect(container.querySelector('[role=treeitem][data-node-id="10000"]')).not.toBeNull());
    const asked = backend.calls
      .filter((c) => c.command === "get_tree_rows")
      .map((c) => [(c.request as { offset: number }).offset, (c.request as { limit: number }).limit]);
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every(([o, l]) => l === 200 && Number(o) >= 9800 && Number(o) <= 10_200)).toBe(true);
  });

  it("colours rows by diff status, searches on the server and collapses", async () => {
    // The second turn of the web fixture as `get_turn` shows it.
    const { view, ref, backend } = await served("web-harbor-books", 2);
    const predicted = view.predicted!.tree!;
    const diff = view.diff!;
    const { container, getByLabelText, store } = renderTree("predicted", view.predicted!.rows!, ref("predicted"), backend, "axtree", diff);
    const added = Array.from(container.querySelectorAll('[role=treeitem][data-diff="added"]')).map((r) => r.querySelector(".tkey")?.textContent);
    expect(added).toEqual(["[21]", "[22]", "[24]"]);
    // The same rows and marks as the API's first window.
    expect(view.predicted!.rows!.rows.filter((r) => r.status === "added").map((r) => r.node.key)).toEqual(["21", "22", "24"]);

    fireEvent.change(getByLabelText("Search Predicted accessibility tree"), { target: { value: "add to basket" } });
    await waitFor(() => expect(container.querySelector(".tree-count")!.textContent).toBe("0/3"));
    expect(backend.calls.some((c) => c.command === "search_tree" && (c.request as { query: string }).query === "add to basket")).toBe(true);
    fireEvent.click(getByLabelText("Next match"));
    expect(container.querySelector(".tree-count")!.textContent).toBe("1/3");
    fireEvent.click(getByLabelText("Next match"));
    expect(container.querySelector(".tree-count")!.textContent).toBe("2/3");
    const sel = store.getSnapshot().selected!;
    expect(predicted.nodes[sel.id]!.key).toBe("17");
    expect(container.querySelector('[aria-selected="true"]')!.getAttribute("data-node-id")).toBe(String(sel.id));

    // Collapse the list: its 9 descendants disappear, and the count says so.
    fireEvent.change(getByLabelText("Search Predicted accessibility tree"), { target: { value: "" } });
    const before = rowsOf(container).length;
    const listId = predicted.nodes.find((n) => n.key === "11")!.id;
    fireEvent.click(container.querySelector(`[role=treeitem][data-node-id="${listId}"] .twisty`)!);
    await waitFor(() => expect(rowsOf(container).length).toBe(before - 9));
    expect(container.querySelector(".tree-count")!.textContent).toBe(`${predicted.nodes.length} nodes, showing ${predicted.nodes.length - 9}`);
    expect(backend.calls.some((c) => c.command === "get_tree_rows" && (c.request as { collapsed: number[] }).collapsed.includes(listId))).toBe(true);

    // Selecting a hidden node reveals it: the server expands its ancestors.
    const hidden = predicted.nodes[listId + 1]!.id;
    act(() => store.select({ side: "predicted", id: hidden }));
    await waitFor(() => expect(rowsOf(container).length).toBe(before));
    expect(container.querySelector('[aria-selected="true"]')!.getAttribute("data-node-id")).toBe(String(hidden));
  });

  it.each([
    { what: "highlights the aligned node when the other pane hovers", wholeDiff: true },
    { what: "aligns the panes from the rows' counterparts when the whole diff is not sent", wholeDiff: false },
  ])("$what", async ({ wholeDiff }) => {
    // The second turn of the web fixture as `get_turn` shows it.
    const { view, ref, backend } = await served("web-harbor-books", 2);
    const real = view.real!.tree!;
    const predicted = view.predicted!.tree!;
    const diff = wholeDiff ? view.diff! : null;
    const { container, store } = renderTree("predicted", view.predicted!.rows!, ref("predicted"), backend, "axtree", diff);
    const realBasket = real.nodes.find((n) => n.key === "8")!;
    const predBasket = predicted.nodes.find((n) => n.key === "8")!;
    act(() => store.hover({ side: "real", id: realBasket.id }));
    const hovered = container.querySelectorAll(".trow.is-hover");
    expect(hovered.length).toBe(1);
    expect(hovered[0]!.getAttribute("data-node-id")).toBe(String(predBasket.id));
  });

  it("shows a frame without a bid as (no bid)", () => {
    const tree = flatTree("axtree", [
      ["RootWebArea", "1", null],
      ["iframe", null, null],
      ["iframe", "7", null],
      ["StaticText", null, null],
    ]);
    const { container } = renderTree("real", wholeWindow(tree), FLAT_REF, noBackend);
    const keys = Array.from(rowsOf(container)).map((r) => r.querySelector(".tkey")?.textContent ?? null);
    expect(keys).toEqual(["[1]", "(no bid)", "[7]", null]);
  });

  it("flags Android nodes outside the root's bounds and inverted rectangles", () => {
    const tree = flatTree("android-xml", [
      ["android.widget.FrameLayout", null, [0, 0, 1080, 2400]],
      ["android.widget.TextView", null, [-200, 100, 400, 300]],
      ["android.widget.TextView", null, [100, 100, 500, 500]],
      ["android.widget.TextView", null, [700, 700, 600, 800]],
      ["android.widget.TextView", null, [900, 2300, 1300, 2600]],
    ]);
    const { container } = renderTree("real", wholeWindow(tree), FLAT_REF, noBackend, "android-xml");
    const badges = Array.from(rowsOf(container)).map((r) => Array.from(r.querySelectorAll(".tgeom")).map((b) => b.textContent));
    expect(badges).toEqual([[], ["outside root bounds"], [], ["invalid"], ["outside root bounds"]]);
  });
});
