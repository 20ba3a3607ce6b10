import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { App } from "./App";
import { startServer, type TestServer } from "./testing/server";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.stop());
afterEach(() => {
  cleanup();
  window.location.hash = "";
});

describe("App on worldloom serve", () => {
  it("shows both panes, moves between turns with the keyboard and switches views", async () => {
    window.location.hash = `#t=${await server.trajectoryId("web-harbor-books")}&turn=0`;
    render(<App backend={server.backend} />);
    const real = await screen.findByRole("region", { name: "Real observation" });
    const predicted = screen.getByRole("region", { name: "Predicted observation" });
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 1 / 3"));
    await waitFor(() => expect(real.querySelectorAll("[role=treeitem]").length).toBeGreaterThan(10));
    expect(predicted.querySelectorAll("[role=treeitem]").length).toBeGreaterThan(10);

    act(() => {
      fireEvent.keyDown(window, { key: "ArrowRight" });
    });
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    await waitFor(() => expect(predicted.querySelectorAll('[role=treeitem][data-diff="added"]').length).toBe(3));
    act(() => {
      fireEvent.keyDown(window, { key: "j" });
    });
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 3 / 3"));
    act(() => {
      fireEvent.keyDown(window, { key: "Home" });
    });
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("initial / 3"));
    act(() => {
      fireEvent.keyDown(window, { key: "End" });
    });
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 3 / 3"));
    fireEvent.click(screen.getByRole("button", { name: "Previous turn" }));
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));

    // The Render tab shows the sandboxed frame of the real page; the stored
    // prediction has one text (the accessibility tree), so the API gives the
    // predicted side no HTML view.
    fireEvent.click(real.querySelectorAll("[role=tab]")[2]!);
    await waitFor(() => expect(document.querySelectorAll("iframe[sandbox='']").length).toBe(1));
    expect(real.querySelectorAll("iframe[sandbox='']").length).toBe(1);
    expect(screen.getByRole("button", { name: "Next turn" })).toBeTruthy();
    expect(screen.getByRole("button", { name: "Play" })).toBeTruthy();
    expect(screen.getByRole("combobox", { name: "Prediction shown" })).toBeTruthy();
  });
});
