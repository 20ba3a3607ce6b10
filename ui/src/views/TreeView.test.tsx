import { act, cleanup, fireEvent, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { goldenTurn } from "../mocks/golden";
import { largeTree } from "../mocks/largeTree";
import { alignment } from "../model/tree";
import { SelectionContext, SelectionStore } from "../state/selection";
import { TreeView } from "./TreeView";

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
});
