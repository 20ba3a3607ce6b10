import { cleanup, render, screen, waitFor } from "@testing-library/react";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { App } from "../App";
import { startServer, type TestServer } from "../testing/server";

// An AgentLab sample whose steps record the agent's `think`.
const sample = join(inject("repoDir"), "samples", "web", "agentlab_larkmail-reply_6steps.json");

let server: TestServer;
beforeAll(async () => {
  server = await startServer([sample]);
});
afterAll(async () => {
  cleanup();
  window.location.hash = "";
  await server.stop();
});

describe("the action bar", () => {
  it("shows the agent's reasoning beside the action", async () => {
    const id = await server.trajectoryId("agentlab_larkmail-reply_6steps");
    const { detail } = await server.turn("agentlab_larkmail-reply_6steps", 2);
    expect(detail.action_reasoning).toBe("The message offers Thursday or Friday. I click Reply to answer.");
    // The hash counts turns from 0: `turn=1` shows turn 2 (node 2).
    window.location.hash = `#t=${id}&turn=1`;
    render(<App backend={server.backend} />);
    const note = await screen.findByRole("note", { name: "Agent's reasoning" }, { timeout: 5000 });
    expect(note.textContent).toBe(detail.action_reasoning);
    await waitFor(() => expect(document.querySelector(".action-raw")!.textContent).toBe(detail.action!.raw));
  });
});
