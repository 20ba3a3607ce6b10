import { describe, expect, it } from "vitest";
import { normalizeDiff, normalizeFidelity, type ObsEvaluation, type ObsTreeDiff } from "./normalize";

describe("normalizeDiff", () => {
  it("flattens worldloom-obs NodeStatus objects into statuses and aligned pairs", () => {
    const obs: ObsTreeDiff = {
      real: [
        { status: "unchanged", counterpart: 0 },
        { status: "changed", counterpart: 2, changes: [{ field: "name", real: "Off", pred: "On" }] },
        { status: "removed" },
      ],
      pred: [{ status: "unchanged", counterpart: 0 }, { status: "added" }, { status: "changed", counterpart: 1 }],
      summary: { unchanged: 1, changed: 1, moved: 0, added: 1, removed: 1 },
    };
    expect(normalizeDiff(obs)).toEqual({
      real: ["unchanged", "changed", "removed"],
      predicted: ["unchanged", "added", "changed"],
      pairs: [
        [0, 0],
        [1, 2],
      ],
      real_changes: [[], [{ field: "name", real: "Off", predicted: "On" }], []],
    });
  });
  it("passes flat diffs and nulls through", () => {
    const flat = { real: ["unchanged" as const], predicted: ["unchanged" as const], pairs: [[0, 0]] as Array<[number, number]>, real_changes: [[]] };
    expect(normalizeDiff(flat)).toBe(flat);
    expect(normalizeDiff(null)).toBeNull();
  });
});

describe("normalizeFidelity", () => {
  it("lists an Evaluation's metrics and anchors, headline node F1", () => {
    const e: ObsEvaluation = {
      status: "scored",
      exact: false,
      text_f1: 0.8,
      node_f1: 0.9,
      node_precision: 0.95,
      node_recall: 0.85,
      attribute_accuracy: null,
      transition_f1: 0.5,
      anchors: [{ anchor: "url", status: "mismatched", real: "https://a.example/", pred: "https://b.example/" }],
      line_diff: { ratio: 0.7 },
    };
    const f = normalizeFidelity(e)!;
    expect(f.overall).toBe(0.9);
    expect(f.metrics.map((m) => [m.name, m.value])).toEqual([
      ["node_f1", 0.9],
      ["node_precision", 0.95],
      ["node_recall", 0.85],
      ["text_f1", 0.8],
      ["transition_f1", 0.5],
      ["line_ratio", 0.7],
      ["exact", 0],
    ]);
    expect(f.anchors).toEqual([{ kind: "url", key: "url", status: "mismatched", real: "https://a.example/", predicted: "https://b.example/" }]);
  });
  it("gives no headline for skipped or missing evaluations and says why", () => {
    const f = normalizeFidelity({ status: "skipped", reason: "failed capture: ERROR: could not get idle state." })!;
    expect(f.overall).toBeNull();
    expect(f.note).toBe("failed capture: ERROR: could not get idle state.");
    expect(normalizeFidelity({ status: "missing" })!.note).toBe("missing");
  });
});
