/**
 * Adapters from the shapes the back end sends to the shapes the views use.
 *
 * The observation crate (`crates/worldloom-obs`) reports a tree diff as one
 * `NodeStatus` object per node on each side (`{"status": "changed",
 * "counterpart": 7, "changes": […]}`, `{"status": "added"}`…; see
 * `diff.rs`) and fidelity as an `Evaluation` (`metrics.rs`: `node_f1`,
 * `text_f1`, `attribute_accuracy`, `anchors: [{anchor, status, real, pred}]`…).
 * The views want flat status arrays plus aligned pairs, and a list of named
 * metrics. Both the crate's shapes and the flat ones are accepted, so a reply
 * of either kind renders.
 */
import type { Anchor, ComparedView, DiffStatus, Fidelity, Metric, TreeDiff, TurnDetail } from "./types";

/** `worldloom-obs::diff::NodeStatus` as JSON. */
export interface ObsNodeStatus {
  status: "unchanged" | "changed" | "moved" | "added" | "removed";
  counterpart?: number;
  changes?: Array<{ field: string; real: string | null; pred: string | null }>;
}

/** `worldloom-obs::diff::TreeDiff` as JSON. */
export interface ObsTreeDiff {
  real: ObsNodeStatus[];
  pred: ObsNodeStatus[];
  summary?: Record<string, number>;
}

/** `worldloom-obs::metrics::Anchor` as JSON. */
export interface ObsAnchor {
  anchor: string;
  status: "matched" | "mismatched" | "absent";
  real: string | null;
  pred: string | null;
}

/** The parts of `worldloom-obs::metrics::Evaluation` the fidelity panel shows. */
export interface ObsEvaluation {
  status: "scored" | "skipped" | "missing";
  reason?: string | null;
  exact?: boolean | null;
  text_f1?: number | null;
  node_f1?: number | null;
  node_precision?: number | null;
  node_recall?: number | null;
  attribute_accuracy?: number | null;
  transition_f1?: number | null;
  anchors?: ObsAnchor[];
  nodes?: ObsTreeDiff | null;
  line_diff?: { ratio: number } | null;
}

function isObsDiff(d: unknown): d is ObsTreeDiff {
  return !!d && typeof d === "object" && Array.isArray((d as ObsTreeDiff).pred) && !("pairs" in (d as object));
}

/** Flattens an obs `TreeDiff` (or passes a flat one through). */
export function normalizeDiff(d: TreeDiff | ObsTreeDiff | null | undefined): TreeDiff | null {
  if (!d) return null;
  if (!isObsDiff(d)) return d as TreeDiff;
  const pairs: Array<[number, number]> = [];
  d.real.forEach((s, i) => {
    if (s.counterpart !== undefined && s.counterpart !== null) pairs.push([i, s.counterpart]);
  });
  return {
    real: d.real.map((s) => s.status as DiffStatus),
    predicted: d.pred.map((s) => s.status as DiffStatus),
    pairs,
    real_changes: d.real.map((s) => (s.changes ?? []).map((c) => ({ field: c.field, real: c.real, predicted: c.pred }))),
  };
}

const METRIC_DESCRIPTIONS: Record<string, string> = {
  node_f1: "F1 of aligned nodes (precision over predicted nodes, recall over real nodes)",
  node_precision: "aligned nodes / predicted nodes",
  node_recall: "aligned nodes / real nodes",
  text_f1: "token F1 of the visible text",
  attribute_accuracy: "agreement of checked, selected, focused, enabled, value and text over aligned nodes",
  transition_f1: "F1 of the changes previous → real against previous → predicted",
  line_ratio: "2 × matching lines / (real lines + predicted lines)",
};

function isEvaluation(f: unknown): f is ObsEvaluation {
  return !!f && typeof f === "object" && "status" in (f as object) && !("metrics" in (f as object));
}

/** Turns an obs `Evaluation` into the panel's metrics (or passes a `Fidelity` through). */
export function normalizeFidelity(f: Fidelity | ObsEvaluation | null | undefined): Fidelity | null {
  if (!f) return null;
  if (!isEvaluation(f)) return f as Fidelity;
  const metrics: Metric[] = [];
  const push = (name: string, value: number | null | undefined) => {
    if (value !== undefined && value !== null) metrics.push({ name, value, unit: null, description: METRIC_DESCRIPTIONS[name] ?? null });
  };
  push("node_f1", f.node_f1);
  push("node_precision", f.node_precision);
  push("node_recall", f.node_recall);
  push("text_f1", f.text_f1);
  push("attribute_accuracy", f.attribute_accuracy);
  push("transition_f1", f.transition_f1);
  push("line_ratio", f.line_diff?.ratio);
  if (f.exact !== undefined && f.exact !== null)
    metrics.push({ name: "exact", value: f.exact ? 1 : 0, unit: f.exact ? "(identical)" : "(differs)", description: "identical after normalisation" });
  const anchors: Anchor[] = (f.anchors ?? []).map((a) => ({ kind: a.anchor, key: a.anchor, status: a.status, real: a.real, predicted: a.pred }));
  const overall = f.status === "scored" ? (f.node_f1 ?? f.text_f1 ?? f.line_diff?.ratio ?? null) : null;
  return { overall, metrics, anchors, judge: null, note: f.status === "scored" ? (f.reason ?? null) : (f.reason ?? f.status) };
}

/** Normalises every view's diff and the fidelity of a turn. */
export function normalizeTurn(t: TurnDetail): TurnDetail {
  const views: ComparedView[] = t.views.map((v) => ({ ...v, diff: normalizeDiff(v.diff as TreeDiff | ObsTreeDiff | null | undefined) }));
  return { ...t, views, fidelity: normalizeFidelity(t.fidelity as Fidelity | ObsEvaluation | null | undefined) };
}
