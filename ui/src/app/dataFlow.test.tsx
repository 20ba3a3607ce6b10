import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { recording, startServer, type TestServer } from "../testing/server";

// Each test changes the workspace: each gets its own server.
let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  window.location.hash = "";
  await server.stop();
});

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
    const backend = recording(server.backend);
    const id = await server.trajectoryId("web-harbor-books");
    window.location.hash = `#t=${id}&turn=1`;
    render(<App backend={backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() => expect(screen.getByRole("button", { name: "Add control instruction" })).toHaveProperty("disabled", false));
    fireEvent.click(screen.getByRole("button", { name: "Add control instruction" }));
    fireEvent.change(await screen.findByLabelText("Control instruction"), { target: { value: "the cart is empty" } });
    fireEvent.click(screen.getByRole("button", { name: "Save instruction" }));
    await waitFor(() => expect(screen.getByRole("note", { name: "Control instruction" }).textContent).toContain("the cart is empty"));
    // The tree's reply carries the instruction on its edge.
    const tree = await backend.call("get_trajectory", { trajectory_id: id });
    expect(tree.edges.filter((e) => e.perturbation !== null).map((e) => e.perturbation)).toEqual(["the cart is empty"]);

    backend.calls.length = 0;
    fireEvent.click(screen.getByRole("button", { name: "Branch tree" }));
    const region = await screen.findByRole("region", { name: "Branch tree" });
    // The state the instruction leads into carries the mark.
    await waitFor(() =>
      expect(region.querySelector('[data-node-id="2"] .flow-perturbed')?.getAttribute("aria-label")).toBe("control instruction: the cart is empty"),
    );
    expect(region.querySelectorAll(".flow-perturbed").length).toBe(1);
    expect(backend.calls.filter((c) => c.command === "get_branch")).toEqual([]);
  });

  it("refetches only what a change touched: the turn, its branch and tree, the list and the undo state", async () => {
    const backend = recording(server.backend);
    window.location.hash = `#t=${await server.trajectoryId("web-harbor-books")}&turn=1`;
    render(<App backend={backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() =>
      expect(within(screen.getByRole("region", { name: "Predicted observation" })).getByRole("button", { name: "Step" })).toHaveProperty("disabled", false),
    );
    await new Promise((r) => setTimeout(r, 50));
    backend.calls.length = 0;
    fireEvent.click(within(screen.getByRole("region", { name: "Predicted observation" })).getByRole("button", { name: "Step" }));
    await waitFor(() => expect(screen.getByLabelText("Step status").textContent).toMatch(/prompt tokens re-read/), { timeout: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    const asked = new Set(backend.calls.map((c) => c.command));
    expect([...asked].sort()).toEqual(["get_branch", "get_trajectory", "get_turn", "list_trajectories", "step", "workspace_info"]);
    // The engine is not a trajectory's: a step does not ask for it again.
    expect(asked.has("engine_status")).toBe(false);
  });
});
