import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { App } from "../App";
import { recording, startServer, type TestServer } from "../testing/server";

// Each test changes the workspace: each gets its own server (whose engine is
// the default, the `copy` baseline).
let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(async () => {
  cleanup();
  window.location.hash = "";
  await server.stop();
});

/** The studio on the web fixture's second turn; resolves with the trajectory's id. */
async function setup(): Promise<string> {
  const id = await server.trajectoryId("web-harbor-books");
  window.location.hash = `#t=${id}&turn=1`;
  render(<App backend={server.backend} />);
  return id;
}

describe("the laboratory on worldloom serve", () => {
  it("steps a turn: streams, stores the prediction as chosen and shows the figures", async () => {
    await setup();
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    const predicted = screen.getByRole("region", { name: "Predicted observation" });
    await waitFor(() => expect(within(predicted).getByRole("button", { name: "Step" })).toHaveProperty("disabled", false));
    const before = within(predicted).getByRole("combobox", { name: "Prediction shown" }).querySelectorAll("option").length;
    fireEvent.click(within(predicted).getByRole("button", { name: "Step" }));
    // The copy baseline reads no tokens.
    await waitFor(() => expect(screen.getByLabelText("Step status").textContent).toMatch(/0 generated · 0 of 0 prompt tokens re-read/), { timeout: 5000 });
    await waitFor(() => {
      const picker = within(predicted).getByRole("combobox", { name: "Prediction shown" }) as HTMLSelectElement;
      expect(picker.querySelectorAll("option").length).toBe(before + 1);
      expect(picker.selectedOptions[0]!.textContent).toMatch(/copy .*chosen/);
    });
  });

  it("edits an action into a new branch, and Ctrl+Z takes it back", async () => {
    await setup();
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    // The button is enabled once the turn's detail has loaded (slow on a busy machine).
    await waitFor(() => expect(screen.getByRole("button", { name: "Edit action" })).toHaveProperty("disabled", false), { timeout: 5000 });
    await waitFor(() => expect(document.querySelector(".action-raw")).not.toBeNull(), { timeout: 5000 });
    fireEvent.click(screen.getByRole("button", { name: "Edit action" }));
    const dialog = await screen.findByRole("dialog", { name: "Edit action" }, { timeout: 5000 });
    // The back end reads the action into the BrowserGym form and writes the edited one.
    await waitFor(() => expect((within(dialog).getByLabelText("Action name") as HTMLSelectElement).value).toBe("click"));
    fireEvent.change(within(dialog).getByLabelText("bid"), { target: { value: "77" } });
    await waitFor(() => expect(within(dialog).getByLabelText("Raw action preview").textContent).toBe("click('77')"));
    fireEvent.click(within(dialog).getByRole("button", { name: "Save as new branch" }));
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Edit action" })).toBeNull());
    const branchSelect = screen.getByRole("combobox", { name: "Branch" }) as HTMLSelectElement;
    await waitFor(() => expect(branchSelect.querySelectorAll("option").length).toBe(2));
    await waitFor(() => expect(branchSelect.selectedOptions[0]!.textContent).toMatch(/branch at turn 2: click\('77'\)/));
    await waitFor(() => expect(document.querySelector(".action-raw")!.textContent).toBe("click('77')"));

    act(() => {
      fireEvent.keyDown(window, { key: "z", ctrlKey: true });
    });
    await waitFor(() => expect(branchSelect.querySelectorAll("option").length).toBe(1));
    await waitFor(() => expect(screen.getByLabelText("Notice").textContent).toBe("Undid: branch at edge 1: click('77')"));
  });

  it("sets a control instruction on a turn and the prediction picker persists the choice", async () => {
    const id = await setup();
    const backend = server.backend;
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() => expect(screen.getByRole("button", { name: "Add control instruction" })).toHaveProperty("disabled", false));
    fireEvent.click(screen.getByRole("button", { name: "Add control instruction" }));
    fireEvent.change(await screen.findByLabelText("Control instruction"), { target: { value: "the login session has expired" } });
    fireEvent.click(screen.getByRole("button", { name: "Save instruction" }));
    await waitFor(() => expect(screen.getByRole("note", { name: "Control instruction" }).textContent).toContain("the login session has expired"));

    const picker = screen.getByRole("combobox", { name: "Prediction shown" }) as HTMLSelectElement;
    const first = picker.querySelectorAll("option")[0]!.getAttribute("value")!;
    fireEvent.change(picker, { target: { value: first } });
    await waitFor(async () => {
      const turn = await backend.call("get_turn", { trajectory_id: id, node_id: 2, prediction_id: null });
      expect(turn.chosen_prediction_id).toBe(Number(first));
    });
    const history = await backend.call("history", {});
    // Newest first; the imports that made the workspace come before.
    expect(history.changes.slice(0, 2).map((c) => c.kind)).toEqual(["choose_prediction", "set_perturbation"]);
  });
});

describe("import", () => {
  it("uses the desktop app's native dialog and import_files when the backend has one", async () => {
    // The desktop app's back end: the server's commands, plus a native dialog.
    const backend = recording(server.backend, {
      chooseImportPaths: async (options) => (options?.folders ? ["/data/run-7/thunar_rename"] : ["/data/run-7/larkmail.json"]),
    });
    const calls = backend.calls;
    window.location.hash = `#t=${await server.trajectoryId("web-harbor-books")}&turn=1`;
    render(<App backend={backend} />);
    fireEvent.click(await screen.findByRole("button", { name: "Import…" }));
    const dialog = await screen.findByRole("dialog", { name: "Import" });
    // No browser file inputs in the desktop app: its own dialog gives real paths.
    expect(within(dialog).queryByLabelText("Choose files")).toBeNull();
    fireEvent.click(within(dialog).getByRole("button", { name: "Choose folders…" }));
    await waitFor(() => expect(calls.find((c) => c.command === "import_files")?.request).toEqual({ paths: ["/data/run-7/thunar_rename"] }));
    await waitFor(() => expect(within(dialog).getByLabelText("Import result").textContent).toContain("/data/run-7/thunar_rename: "));
  });
});

describe("engine parameters", () => {
  it("shows 32-bit floats from the back end as typed", async () => {
    const { roundParams, MODEL_CARD_PARAMS } = await import("./EngineDialog");
    expect(roundParams({ ...MODEL_CARD_PARAMS, top_p: 0.949999988079071, temperature: 0.6000000238418579 })).toMatchObject({ top_p: 0.95, temperature: 0.6 });
  });
});
