import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { EngineStatus } from "../api/lab";
import { FIXTURES, MockBackend } from "../mocks/mockBackend";
import { EngineDialog } from "./EngineDialog";

afterEach(cleanup);

function saveOpenai(deadline: string): Promise<EngineStatus> {
  const backend = new MockBackend(FIXTURES);
  return new Promise((resolve) => {
    render(<EngineDialog backend={backend} status={null} onClose={() => {}} onSaved={resolve} />);
    fireEvent.click(screen.getByRole("radio", { name: "OpenAI-compatible endpoint" }));
    fireEvent.change(screen.getByLabelText("Step deadline (s)"), { target: { value: deadline } });
    fireEvent.click(screen.getByRole("button", { name: "Save engine" }));
  });
}

describe("the engine dialog", () => {
  it("sends the step deadline of an endpoint in whole seconds", async () => {
    const status = await saveOpenai("90");
    expect(status.settings).toEqual({
      kind: "openai",
      base_url: "http://127.0.0.1:8000/v1",
      model: "Qwen-AgentWorld-35B-A3B",
      api_key_env: "OPENAI_API_KEY",
      step_deadline_s: 90,
    });
  });

  it("sends no deadline when the field is empty", async () => {
    const status = await saveOpenai("");
    expect(status.settings).toEqual({
      kind: "openai",
      base_url: "http://127.0.0.1:8000/v1",
      model: "Qwen-AgentWorld-35B-A3B",
      api_key_env: "OPENAI_API_KEY",
    });
  });
});
