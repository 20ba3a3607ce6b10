import { act, cleanup, fireEvent, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { goldenTurn } from "../mocks/golden";
import { largeTree } from "../mocks/largeTree";
import { alignment } from "../model/tree";
import { SelectionContext, SelectionStore } from "../state/selection";
import type { UiNode, UiTree } from "../api/types";
import { TreeView } from "./TreeView";

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

afterEach(cleanup);

describe("TreeView", () => {
  it("keeps a 20,000-node tree to a window of rows", () => {
    const tree = largeTree(20000).tree;
    expect(tree.nodes.length).toBe(20001); // the synthetic document root + 20,000 lines
    const { container } = render(<TreeView side="real" tree={tree} align={alignment(null)} label="Real accessibility tree" />);
    const rows = container.querySelectorAll("[role=treeitem]");
    // 600 px fallback viewport / 20 px rows + 8 overscan below.
    expect(rows.length).toBe(38);
    const list = container.querySelector("[role=tree]") as HTMLElement;
    expect((list.firstElementChild as HTMLElement).style.height).toBe(`${20001 * 20}px`);
  });

  it("colours rows by diff status, searches and collapses", () => {
    // The second turn of the web fixture as `get_turn` shows it.
    const view = goldenTurn("web-harbor-books", 2)!.views[0]!;
    const predicted = view.predicted!.tree!;
    const diff = view.diff!;
    const store = new SelectionStore();
    const { container, getByLabelText } = render(
      <SelectionContext.Provider value={store}>
        <TreeView side="predicted" tree={predicted} statuses={diff.predicted} align={alignment(diff)} label="Predicted accessibility tree" />
      </SelectionContext.Provider>,
    );
    const added = Array.from(container.querySelectorAll('[role=treeitem][data-diff="added"]')).map((r) => r.querySelector(".tkey")?.textContent);
    expect(added).toEqual(["[21]", "[22]", "[24]"]);

    fireEvent.change(getByLabelText("Search Predicted accessibility tree"), { target: { value: "add to basket" } });
    expect(container.querySelector(".tree-count")!.textContent).toBe("0/3");
    fireEvent.click(getByLabelText("Next match"));
    expect(container.querySelector(".tree-count")!.textContent).toBe("1/3");
    fireEvent.click(getByLabelText("Next match"));
    expect(container.querySelector(".tree-count")!.textContent).toBe("2/3");
    const sel = store.getSnapshot().selected!;
    expect(predicted.nodes[sel.id]!.key).toBe("17");
    expect(container.querySelector('[aria-selected="true"]')!.getAttribute("data-node-id")).toBe(String(sel.id));

    // Collapse the list: its 9 descendants disappear.
    const before = container.querySelectorAll("[role=treeitem]").length;
    const list = container.querySelector('[role=treeitem][data-node-id="' + predicted.nodes.find((n) => n.key === "11")!.id + '"] .twisty')!;
    fireEvent.click(list);
    expect(container.querySelectorAll("[role=treeitem]").length).toBe(before - 9);
  });

  it("highlights the aligned node when the other pane hovers", () => {
    // The second turn of the web fixture as `get_turn` shows it.
    const view = goldenTurn("web-harbor-books", 2)!.views[0]!;
    const real = view.real!.tree!;
    const predicted = view.predicted!.tree!;
    const diff = view.diff!;
    const store = new SelectionStore();
    const { container } = render(
      <SelectionContext.Provider value={store}>
        <TreeView side="predicted" tree={predicted} statuses={diff.predicted} align={alignment(diff)} label="Predicted accessibility tree" />
      </SelectionContext.Provider>,
    );
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
    const { container } = render(<TreeView side="real" tree={tree} align={alignment(null)} label="Real accessibility tree" />);
    const keys = Array.from(container.querySelectorAll("[role=treeitem]")).map((r) => r.querySelector(".tkey")?.textContent ?? null);
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
    const { container } = render(<TreeView side="real" tree={tree} align={alignment(null)} label="Real accessibility tree" />);
    const badges = Array.from(container.querySelectorAll("[role=treeitem]")).map((r) => Array.from(r.querySelectorAll(".tgeom")).map((b) => b.textContent));
    expect(badges).toEqual([[], ["outside root bounds"], [], ["invalid"], ["outside root bounds"]]);
  });
});
