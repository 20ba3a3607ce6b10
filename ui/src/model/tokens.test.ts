import { describe, expect, it } from "vitest";
import { ENTROPY_CEILING_NATS, hasUncertainty, legendFor, shadeLevel, shadeTokens, tokenUncertainty } from "./tokens";

describe("token uncertainty", () => {
  it("maps log-probabilities to 1 − p and entropies to a fraction of the ceiling", () => {
    expect(tokenUncertainty({ text: "a", logprob: 0, entropy: null }, "probability")).toBe(0);
    expect(tokenUncertainty({ text: "a", logprob: Math.log(0.25), entropy: null }, "probability")).toBeCloseTo(0.75, 10);
    // A positive log-probability (rounding) is clamped to p = 1.
    expect(tokenUncertainty({ text: "a", logprob: 1e-7, entropy: null }, "probability")).toBe(0);
    expect(tokenUncertainty({ text: "a", logprob: null, entropy: ENTROPY_CEILING_NATS / 2 }, "entropy")).toBeCloseTo(0.5, 10);
    expect(tokenUncertainty({ text: "a", logprob: null, entropy: 10 }, "entropy")).toBe(1);
    expect(tokenUncertainty({ text: "a", logprob: null, entropy: 1 }, "probability")).toBeNull();
    expect(tokenUncertainty({ text: "a", logprob: -1, entropy: null }, "entropy")).toBeNull();
  });

  it("buckets into five levels, the top one closed", () => {
    expect([0, 0.19, 0.2, 0.5, 0.79, 0.8, 1].map(shadeLevel)).toEqual([0, 0, 1, 2, 3, 4, 4]);
    expect(shadeLevel(null)).toBeNull();
  });

  it("groups runs of equal shade and keeps the text exactly", () => {
    const tokens = [
      { text: "<div", logprob: Math.log(0.99), entropy: 0.01 },
      { text: ">", logprob: Math.log(0.98), entropy: 0.02 },
      { text: "\n  ", logprob: Math.log(0.1), entropy: 3 },
      { text: "Error", logprob: Math.log(0.3), entropy: 2.5 },
      { text: " 500", logprob: Math.log(0.35), entropy: 2.4 },
      { text: "</div>", logprob: null, entropy: null },
    ];
    const spans = shadeTokens(tokens, "probability");
    expect(spans.map((s) => s.text).join("")).toBe(tokens.map((t) => t.text).join(""));
    expect(spans.map((s) => [s.text, s.level])).toEqual([
      ["<div>\n  ", 0],
      ["Error 500", 3],
      ["</div>", null],
    ]);
    expect(spans[1]!.title).toBe("p = 0.300, H = 2.50 nats");
  });

  it("knows when there is anything to shade and labels the legend", () => {
    expect(hasUncertainty([{ text: "x", logprob: null, entropy: null }], "probability")).toBe(false);
    expect(hasUncertainty([{ text: "x", logprob: -0.1, entropy: null }], "probability")).toBe(true);
    expect(hasUncertainty(null, "entropy")).toBe(false);
    expect(legendFor("probability").map((r) => r.label)).toEqual(["p 1.0–0.8", "p 0.8–0.6", "p 0.6–0.4", "p 0.4–0.2", "p 0.2–0.0"]);
    expect(legendFor("entropy")[4]!.label).toBe("H 2.8–∞");
  });
});

describe("observation tokens", () => {
  const tk = (text: string, logprob: number) => ({ text, logprob, entropy: null });
  it("shades the observation tokens as they come: their texts make the observation", () => {
    // The back end sends the observation's own tokens (no tags around them).
    const tokens = [tk("<p>", -0.01), tk("a</p>", -2), tk("\n", -2)];
    const spans = shadeTokens(tokens, "probability");
    expect(spans.map((s) => s.text).join("")).toBe("<p>a</p>\n");
    expect(spans.map((s) => s.level)).toEqual([0, 4]);
  });
});
