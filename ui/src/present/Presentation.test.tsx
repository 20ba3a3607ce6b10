import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { App } from "../App";
import { fixturePaths, startServer, type TestServer } from "../testing/server";

let server: TestServer;
beforeAll(async () => {
  server = await startServer(fixturePaths("web-harbor-books"));
});
afterAll(() => server.stop());
afterEach(() => {
  cleanup();
  window.location.hash = "";
});

function key(k: string) {
  act(() => {
    fireEvent.keyDown(window, { key: k });
  });
}

describe("presentation mode and lessons on worldloom serve", () => {
  it("presents the branch shown with its notes as captions; ←/→ step, Esc leaves", async () => {
    const id = await server.trajectoryId("web-harbor-books");
    const branch = await server.backend.call("get_branch", {
      trajectory_id: id,
      branch_id: (await server.backend.call("get_trajectory", { trajectory_id: id })).branches[0]!.id,
    });
    await server.backend.call("set_caption", { trajectory_id: id, node_id: branch.turns[0]!.node_id, text: "The search results appear" });
    window.location.hash = `#t=${id}&turn=0`;
    render(<App backend={server.backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 1 / 3"));

    fireEvent.click(screen.getByRole("button", { name: "Present" }));
    const show = await screen.findByRole("dialog", { name: "Presentation" });
    await waitFor(() => expect(within(show).getByLabelText("Step").textContent).toBe("step 1 / 4"));
    expect(within(show).getByLabelText("Caption").textContent).toBe("");
    // Only the panes, the strip and the caption: no prediction picker, step bar or inspector.
    expect(within(show).getByRole("region", { name: "Real observation" })).toBeTruthy();
    expect(within(show).getByRole("region", { name: "Predicted observation" })).toBeTruthy();
    expect(within(show).queryByRole("combobox", { name: "Prediction shown" })).toBeNull();
    expect(show.querySelector(".side-column")).toBeNull();

    key("ArrowRight");
    await waitFor(() => expect(within(show).getByLabelText("Step").textContent).toBe("step 2 / 4"));
    expect(within(show).getByLabelText("Caption").textContent).toBe("The search results appear");
    expect(within(show).getByLabelText("Current turn").textContent).toBe("turn 1 / 3");
    key("End");
    await waitFor(() => expect(within(show).getByLabelText("Step").textContent).toBe("step 4 / 4"));
    key("ArrowRight");
    expect(within(show).getByLabelText("Step").textContent).toBe("step 4 / 4");
    key("ArrowLeft");
    await waitFor(() => expect(within(show).getByLabelText("Step").textContent).toBe("step 3 / 4"));
    // The studio under it did not move.
    key("Escape");
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Presentation" })).toBeNull());
    expect(screen.getByLabelText("Current turn").textContent).toBe("turn 1 / 3");
    // P enters it again.
    key("p");
    await screen.findByRole("dialog", { name: "Presentation" });
    key("Escape");
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Presentation" })).toBeNull());
  });

  it("writes a caption and adds the branch to a lesson from the lesson dialog, then presents the lesson", async () => {
    const id = await server.trajectoryId("web-harbor-books");
    window.location.hash = `#t=${id}&turn=1`;
    render(<App backend={server.backend} />);
    await waitFor(() => expect(screen.getByLabelText("Current turn").textContent).toBe("turn 2 / 3"));
    fireEvent.click(screen.getByRole("button", { name: "Lesson…" }));
    const dialog = await screen.findByRole("dialog", { name: "Lesson" });
    fireEvent.change(within(dialog).getByLabelText("Caption"), { target: { value: "Now the cart" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Save caption" }));
    await within(dialog).findByText("Caption saved.");
    fireEvent.change(within(dialog).getByLabelText("Lesson name"), { target: { value: "week 1" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add this branch to the lesson" }));
    await within(dialog).findByText("This branch is in lesson “week 1”.");
    const lessons = await server.backend.call("list_lessons", {});
    expect(lessons.lessons).toEqual([{ name: "week 1", branch_count: 1 }]);

    fireEvent.click(within(dialog).getByRole("button", { name: "Present the lesson" }));
    const show = await screen.findByRole("dialog", { name: "Presentation" });
    await waitFor(() => expect(within(show).getByRole("heading", { level: 1 }).textContent).toBe("week 1"));
    key("ArrowRight");
    key("ArrowRight");
    await waitFor(() => expect(within(show).getByLabelText("Step").textContent).toBe("step 3 / 4"));
    expect(within(show).getByLabelText("Caption").textContent).toBe("Now the cart");
    fireEvent.click(within(show).getByRole("button", { name: "Exit" }));
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Presentation" })).toBeNull());
  });
});
