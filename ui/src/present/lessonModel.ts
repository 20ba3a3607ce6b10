/**
 * A lesson (`get_lesson`) as the steps presentation mode walks through: each
 * branch's initial state, then every turn, branch after branch. Pure; the
 * back end owns what a lesson is (the tag `lesson:NAME`, captions = notes).
 */
import type { LessonBranch, LessonView } from "../api/types";

/** One state shown in presentation mode. */
export interface LessonStep {
  /** Index into `LessonView.branches`. */
  branch: number;
  /** Index into the branch's `turns`, -1 for its initial state (the timeline's `current`). */
  turnIndex: number;
  trajectoryId: string;
  /** The state shown: 0 for the initial state, else the turn's node. */
  nodeId: number;
  /** The state's caption (its newest note), `null` without one. */
  caption: string | null;
}

/** Every step of `view`, in order. */
export function lessonSteps(view: LessonView | undefined): LessonStep[] {
  if (!view) return [];
  return view.branches.flatMap((b: LessonBranch, branch) => [
    { branch, turnIndex: -1, trajectoryId: b.trajectory_id, nodeId: 0, caption: b.captions[0] ?? null },
    ...b.turns.map((t, i) => ({ branch, turnIndex: i, trajectoryId: b.trajectory_id, nodeId: t.node_id, caption: b.captions[i + 1] ?? null })),
  ]);
}

/** The step index of `turnIndex` on the branch of step `at` (the turn strip's clicks). */
export function stepOfTurn(steps: readonly LessonStep[], at: number, turnIndex: number): number {
  const branch = steps[at]?.branch;
  const i = steps.findIndex((s) => s.branch === branch && s.turnIndex === turnIndex);
  return i < 0 ? at : i;
}

/** `index` moved by `by` and kept inside `[0, count)`. */
export function clampStep(index: number, by: number, count: number): number {
  return Math.max(0, Math.min(count - 1, index + by));
}
