import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { FIXTURES, MockBackend } from "../mocks/mockBackend";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  window.location.hash = "";
});

/** The mock back end, recording every command it is asked. */
function recording() {
  const backend = new MockBackend(FIXTURES);
  backend.chunkDelayMs = 1;
  const calls: string[] = [];
  const call = backend.call.bind(backend);
  backend.call = (async (command: string, request: unknown) => {
    calls.push(command);
    return call(command as never, request as never);
  }) as typeof backend.call;
  return { backend, calls };
}

describe("the data flow", () => {
  it("draws the branch tree from get_trajectory alone, control instructions included", async () => {
    // React Flow measures its host; jsdom has no ResizeObserver.
    vi.stubGlobal(
      "ResizeObserver",
      class {
        observe() {}
        unobserve() {}
        disconnect() {}
      },
    );
    const { backend, calls } = recording();
    window.location.hash = "#t=web-harbor-books&turn=1";
    render(<App backend={backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() => expect(screen.getByRole("button", { name: "Add control instruction" })).toHaveProperty("disabled", false));
    fireEvent.click(screen.getByRole("button", { name: "Add control instruction" }));
    fireEvent.change(await screen.findByLabelText("Control instruction"), { target: { value: "the cart is empty" } });
    fireEvent.click(screen.getByRole("button", { name: "Save instruction" }));
    await waitFor(() => expect(screen.getByRole("note", { name: "Control instruction" }).textContent).toContain("the cart is empty"));
    // The tree's reply carries the instruction on its edge.
    const tree = await backend.call("get_trajectory", { trajectory_id: "web-harbor-books" });
    expect(tree.edges.filter((e) => e.perturbation !== null).map((e) => e.perturbation)).toEqual(["the cart is empty"]);

    calls.length = 0;
    fireEvent.click(screen.getByRole("button", { name: "Branch tree" }));
    const region = await screen.findByRole("region", { name: "Branch tree" });
    // The state the instruction leads into carries the mark.
    await waitFor(() =>
      expect(region.querySelector('[data-node-id="2"] .flow-perturbed')?.getAttribute("aria-label")).toBe("control instruction: the cart is empty"),
    );
    expect(region.querySelectorAll(".flow-perturbed").length).toBe(1);
    expect(calls.filter((c) => c === "get_branch")).toEqual([]);
  });

  it("refetches only what a change touched: the turn, its branch and tree, the list and the undo state", async () => {
    const { backend, calls } = recording();
    window.location.hash = "#t=web-harbor-books&turn=1";
    render(<App backend={backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() =>
      expect(within(screen.getByRole("region", { name: "Predicted observation" })).getByRole("button", { name: "Step" })).toHaveProperty("disabled", false),
    );
    await new Promise((r) => setTimeout(r, 50));
    calls.length = 0;
    fireEvent.click(within(screen.getByRole("region", { name: "Predicted observation" })).getByRole("button", { name: "Step" }));
    await waitFor(() => expect(screen.getByLabelText("Step status").textContent).toMatch(/prompt tokens re-read/), { timeout: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    const asked = new Set(calls);
    expect([...asked].sort()).toEqual(["get_branch", "get_trajectory", "get_turn", "list_trajectories", "step", "workspace_info"]);
    // The engine is not a trajectory's: a step does not ask for it again.
    expect(asked.has("engine_status")).toBe(false);
  });
});
