import { describe, expect, it } from "vitest";
import { initialNav, navigate, readHash, resolveBranch, resolveTrajectory, type NavState } from "./navigation";

const AT: NavState = { ...initialNav(""), trajectoryId: "a", branchId: "7", current: 2 };

describe("navigation", () => {
  it("reads the place from the hash and waits for the branch's turns to show its turn", () => {
    expect(readHash("#t=web&b=4&turn=-1")).toEqual({ trajectory: "web", branch: "4", turn: -1, prediction: null });
    expect(readHash("#t=web&turn=x&p=y")).toEqual({ trajectory: "web", branch: null, turn: null, prediction: null });
    const start = initialNav("#t=web&b=4&turn=9");
    expect(start).toMatchObject({ trajectoryId: "web", branchId: "4", current: 0, pendingTurn: 9 });
    expect(navigate(start, { type: "turns_loaded", count: 3 })).toMatchObject({ current: 2, pendingTurn: null });
    // A branch that does not exist (undone) gives way to the recorded one; the wanted turn still waits.
    expect(navigate(start, { type: "branch_lost" })).toMatchObject({ branchId: null, pendingTurn: 9 });
  });

  it("opens a run row's link on the row's turn with the row's prediction", () => {
    expect(readHash("#t=3&turn=1&p=2")).toEqual({ trajectory: "3", branch: null, turn: 1, prediction: 2 });
    const start = initialNav("#t=3&turn=1&p=2");
    expect(start).toMatchObject({ trajectoryId: "3", branchId: null, pendingTurn: 1, prediction: 2, mainView: "turn" });
    // The turn arrives with the prediction kept; the next move shows the chosen one again.
    const shown = navigate(start, { type: "turns_loaded", count: 3 });
    expect(shown).toMatchObject({ current: 1, prediction: 2 });
    expect(navigate(shown, { type: "step", by: 1, count: 3 })).toMatchObject({ current: 2, prediction: null });
    // A prediction without a trajectory means nothing.
    expect(initialNav("#p=2").prediction).toBeNull();
  });

  it("keeps the turn within the branch's turns and moves by keys and play", () => {
    expect(navigate(AT, { type: "turns_loaded", count: 2 }).current).toBe(1);
    expect(navigate(AT, { type: "turns_loaded", count: 5 })).toBe(AT);
    expect(navigate(AT, { type: "step", by: 1, count: 3 }).current).toBe(2);
    expect(navigate({ ...AT, current: -1 }, { type: "step", by: -1, count: 3 }).current).toBe(-1);
    expect(navigate({ ...AT, playing: true }, { type: "go", index: 99, count: 3 })).toMatchObject({ current: 2, playing: false });
    expect(navigate({ ...AT, current: 1, playing: true }, { type: "tick", count: 3 })).toMatchObject({ current: 2, playing: true });
    expect(navigate({ ...AT, playing: true }, { type: "tick", count: 3 })).toMatchObject({ current: 2, playing: false });
  });

  it("opens another trajectory from its start, leaving the comparison", () => {
    const comparing: NavState = { ...AT, mainView: "compare", compareSel: ["7", "9"], playing: true };
    expect(navigate(comparing, { type: "select_trajectory", trajectoryId: "a" })).toBe(comparing);
    expect(navigate(comparing, { type: "select_trajectory", trajectoryId: "b" })).toEqual({
      trajectoryId: "b",
      branchId: null,
      current: 0,
      pendingTurn: null,
      mainView: "tree",
      compareSel: [],
      playing: false,
      prediction: null,
    });
  });

  it("jumps within the branch at once, and to another branch once its turns arrive", () => {
    const tree: NavState = { ...AT, mainView: "tree" };
    expect(navigate(tree, { type: "jump", branchId: "7", turnIndex: 0, count: 3, sameBranch: true })).toMatchObject({
      branchId: "7",
      current: 0,
      pendingTurn: null,
      mainView: "turn",
    });
    const other = navigate(tree, { type: "jump", branchId: "9", turnIndex: 4, count: 3, sameBranch: false });
    expect(other).toMatchObject({ branchId: "9", current: 2, pendingTurn: 4, mainView: "turn" });
    expect(navigate(other, { type: "turns_loaded", count: 6 })).toMatchObject({ current: 4, pendingTurn: null });
  });

  it("shows the chosen trajectory and branch when they exist, and falls back once the replies are fresh", () => {
    const list = [{ id: "a" }, { id: "b" }];
    expect(resolveTrajectory("b", list, false)).toBe("b");
    expect(resolveTrajectory("x", undefined, true)).toBe("x");
    expect(resolveTrajectory("x", list, true)).toBe("x");
    expect(resolveTrajectory("x", list, false)).toBe("a");
    expect(resolveTrajectory(null, [], false)).toBeNull();
    // None chosen: the first, also while the list refetches (the place does not blank).
    expect(resolveTrajectory(null, list, true)).toBe("a");
    const branches = [
      { id: "9", recorded: false },
      { id: "3", recorded: true },
    ];
    expect(resolveBranch("9", branches, false)).toBe("9");
    expect(resolveBranch("12", branches, true)).toBe("12");
    expect(resolveBranch("12", branches, false)).toBe("3");
    expect(resolveBranch(null, branches, true)).toBe("3");
    expect(resolveBranch(null, [{ id: "5", recorded: false }], false)).toBe("5");
    expect(resolveBranch("4", undefined, false)).toBe("4");
  });

  it("opens a run's row at its turn with its prediction, and a move shows the chosen one again", () => {
    const opened = navigate({ ...AT, mainView: "runs" }, { type: "open_row", trajectoryId: "b", turnIndex: 1, predictionId: 3 });
    expect(opened).toMatchObject({ trajectoryId: "b", branchId: null, pendingTurn: 1, mainView: "turn", prediction: 3 });
    const loaded = navigate(opened, { type: "turns_loaded", count: 3 });
    expect(loaded).toMatchObject({ current: 1, prediction: 3 });
    expect(navigate(loaded, { type: "step", by: 1, count: 3 }).prediction).toBeNull();
    expect(navigate(loaded, { type: "view", mainView: "runs" }).prediction).toBe(3);
    expect(navigate({ ...AT, mainView: "runs" }, { type: "select_trajectory", trajectoryId: "z" }).mainView).toBe("turn");
  });
});
