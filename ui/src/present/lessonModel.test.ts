import { describe, expect, it } from "vitest";
import type { LessonView, TurnSummary } from "../api/types";
import { clampStep, lessonSteps, stepOfTurn } from "./lessonModel";

function turn(n: number, node: number): TurnSummary {
  return {
    turn: n,
    node_id: node,
    edge_id: node - 1,
    action: { raw: `click('${n}')`, format: "browsergym", summary: `click('${n}')`, parsed: null },
    has_real: true,
    prediction_count: 0,
    has_authored: false,
    fidelity: null,
    perturbation: null,
  };
}

function branch(id: string, turns: TurnSummary[], captions: Array<string | null>): LessonView["branches"][number] {
  return {
    trajectory_id: id,
    trajectory_name: `t${id}`,
    goal: null,
    domain: "web",
    branch: {
      id: String(turns.at(-1)?.node_id ?? 0),
      name: "recorded",
      leaf_node: turns.at(-1)?.node_id ?? 0,
      turn_count: turns.length,
      recorded: true,
      forks_at_turn: null,
    },
    turns,
    captions,
  };
}

describe("lesson steps", () => {
  const view: LessonView = {
    title: "intro",
    lesson: "intro",
    branches: [branch("1", [turn(1, 1), turn(2, 2)], ["Start", null, "End"]), branch("2", [turn(1, 5)], [null, "Only"])],
  };

  it("walks each branch's initial state then its turns, branch after branch", () => {
    const steps = lessonSteps(view);
    expect(steps.map((s) => [s.branch, s.turnIndex, s.trajectoryId, s.nodeId, s.caption])).toEqual([
      [0, -1, "1", 0, "Start"],
      [0, 0, "1", 1, null],
      [0, 1, "1", 2, "End"],
      [1, -1, "2", 0, null],
      [1, 0, "2", 5, "Only"],
    ]);
    expect(lessonSteps(undefined)).toEqual([]);
  });

  it("maps the turn strip's clicks and keeps steps in range", () => {
    const steps = lessonSteps(view);
    expect(stepOfTurn(steps, 4, -1)).toBe(3);
    expect(stepOfTurn(steps, 1, 1)).toBe(2);
    expect(stepOfTurn(steps, 1, 7)).toBe(1);
    expect(clampStep(4, 1, 5)).toBe(4);
    expect(clampStep(0, -1, 5)).toBe(0);
    expect(clampStep(2, 1, 5)).toBe(3);
  });
});
