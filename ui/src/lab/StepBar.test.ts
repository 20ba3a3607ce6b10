import { describe, expect, it } from "vitest";
import type { StepStats } from "../api/lab";
import { statsLine } from "./StepBar";

const PLAIN: StepStats = {
  prompt_tokens: 1200,
  prompt_tokens_computed: 40,
  prompt_tokens_reused: 1160,
  completion_tokens: 120,
  prefill_ms: 12.4,
  decode_ms: 1000,
  decode_tokens_per_sec: 120,
  stop_reason: "end_of_turn",
  decode_forwards: 120,
  drafted_tokens: 0,
  accepted_tokens: 0,
};

describe("the step figures line", () => {
  it("says nothing of drafts when drafting was off", () => {
    expect(statsLine(PLAIN)).toBe("120.0 tokens/s · 120 generated · 40 of 1200 prompt tokens re-read · prefill 12 ms · stop: end_of_turn");
  });

  it("gives the kept share of the drafts and the tokens per forward when the engine drafted", () => {
    const line = statsLine({ ...PLAIN, decode_forwards: 30, drafted_tokens: 110, accepted_tokens: 88 });
    expect(line).toContain("drafts 88 of 110 kept");
    expect(line).toContain("4.0 tokens/forward");
  });
});
