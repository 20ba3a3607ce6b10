/**
 * Dev-only back end fed by the JSON fixtures in `./fixtures/` (open the dev
 * server with `?mock`). It answers the same commands as `worldloom serve`,
 * parsing and diffing with the stand-ins in `mockTrees.ts`. Never bundled in
 * a production build (see `createBackend`).
 */
import type {
  ActionView,
  Anchor,
  BranchSummary,
  CommandName,
  ComparedView,
  Fidelity,
  JudgeScores,
  ObservationMetaView,
  RequestOf,
  Representation,
  ResponseOf,
  StudioEvent,
  TrajectorySummary,
  TurnDetail,
  TurnSummary,
  UiTree,
} from "../api/types";
import { BackendError, type Backend } from "../backend/backend";
import { statusCounts } from "../model/tree";
import { mockDiff, mockParse } from "./mockTrees";
import android from "./fixtures/android-settings.json";
import os from "./fixtures/os-calculator.json";
import terminal from "./fixtures/terminal-build.json";
import web from "./fixtures/web-harbor-books.json";
import hostile from "./fixtures/web-hostile.json";

const NO_JUDGE: JudgeScores = { format: null, factuality: null, consistency: null, realism: null, quality: null, rationale: null, judge: null };

const NO_META: ObservationMetaView = { url: null, title: null, focused_bid: null, screen: null, package: null };

/** A view of an observation in a fixture. */
interface FixtureView {
  name: string;
  representation: string;
  text: string;
}

/** An observation in a fixture. */
interface FixtureObservation {
  views: FixtureView[];
  meta?: Partial<ObservationMetaView>;
}

/** A prediction in a fixture. */
interface FixturePrediction {
  engine: string;
  seed?: number;
  views: FixtureView[];
  reasoning?: string;
  judge?: Partial<JudgeScores>;
}

/** A trajectory fixture: an initial observation and a list of turns. */
export interface Fixture {
  id: string;
  name: string;
  domain: string;
  source_format: string;
  goal?: string;
  initial: FixtureObservation;
  turns: Array<{ action: string; real: FixtureObservation; predictions: FixturePrediction[] }>;
}

/** A generated trajectory with one very large tree (for the virtualised list). */
export function bigTreeFixture(nodeCount: number): Fixture {
  const lines: string[] = ["RootWebArea 'Large inventory table', focused"];
  let bid = 1;
  while (lines.length < nodeCount) {
    lines.push(`\t[${bid++}] row 'Row ${lines.length}', visible`);
    for (let c = 0; c < 4 && lines.length < nodeCount; c++) lines.push(`\t\t[${bid++}] cell 'r${lines.length} c${c}', visible`);
  }
  const real = lines.join("\n");
  const predicted = lines.map((l, i) => (i % 997 === 5 ? l.replace("visible", "visible, focused") : l)).join("\n");
  return {
    id: "web-large-tree",
    name: `large tree (${nodeCount} nodes)`,
    domain: "web",
    source_format: "generated",
    goal: "Scroll a very large accessibility tree.",
    initial: { views: [{ name: "axtree_txt", representation: "axtree", text: real }] },
    turns: [
      {
        action: "scroll(0, 800)",
        real: { views: [{ name: "axtree_txt", representation: "axtree", text: real }] },
        predictions: [{ engine: "copy", seed: 0, views: [{ name: "axtree_txt", representation: "axtree", text: predicted }] }],
      },
    ],
  };
}

export const FIXTURES: Fixture[] = [web, os, android, terminal, hostile] as Fixture[];

const TREE_CACHE = new Map<string, UiTree | null>();
function parseCached(text: string, representation: Representation): UiTree | null {
  const key = `${representation}\u0000${text}`;
  if (!TREE_CACHE.has(key)) TREE_CACHE.set(key, mockParse(text, representation));
  return TREE_CACHE.get(key) ?? null;
}

function compare(real: FixtureObservation, predicted: FixturePrediction | undefined): ComparedView[] {
  const out: ComparedView[] = [];
  const names = new Set<string>();
  for (const v of real.views) names.add(`${v.representation}|${v.name}`);
  for (const v of predicted?.views ?? []) {
    const onReal = real.views.some((r) => r.representation === v.representation);
    if (!onReal) names.add(`${v.representation}|${v.name}`);
  }
  for (const key of names) {
    const [rep, name] = key.split("|") as [Representation, string];
    const r = real.views.find((v) => v.representation === rep && v.name === name);
    const p = predicted?.views.find((v) => v.representation === rep);
    const rt = r ? parseCached(r.text, rep) : null;
    const pt = p ? parseCached(p.text, rep) : null;
    out.push({
      representation: rep,
      name,
      real: r ? { text: r.text, tree: rt, parse_error: null } : null,
      predicted: p ? { text: p.text, tree: pt, parse_error: null } : null,
      diff: rt && pt ? mockDiff(rt, pt) : null,
      line_diff: null,
    });
  }
  return out;
}

function judgeOverall(j: Partial<JudgeScores> | undefined): number | null {
  if (!j) return null;
  const xs = [j.format, j.factuality, j.consistency, j.realism, j.quality].filter((x): x is number => typeof x === "number");
  return xs.length ? (xs.reduce((a, b) => a + b, 0) / xs.length - 1) / 4 : null;
}

function fidelityOf(views: ComparedView[], real: FixtureObservation, p: FixturePrediction | undefined): Fidelity | null {
  if (!p) return null;
  const metrics: Fidelity["metrics"] = [];
  const main = views[0];
  if (main?.diff) {
    const r = statusCounts(main.diff.real);
    const q = statusCounts(main.diff.predicted);
    const matched = main.diff.pairs.length;
    const precision = matched / Math.max(1, main.diff.predicted.length);
    const recall = matched / Math.max(1, main.diff.real.length);
    metrics.push({ name: "node_f1", value: precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0, unit: null, description: "F1 of aligned nodes" });
    metrics.push({ name: "unchanged_fraction", value: r.unchanged / Math.max(1, main.diff.real.length), unit: null, description: "aligned nodes with nothing changed, over real nodes" });
    metrics.push({ name: "changed_nodes", value: r.changed, unit: "nodes", description: null });
    metrics.push({ name: "removed_nodes", value: r.removed, unit: "nodes", description: null });
    metrics.push({ name: "added_nodes", value: q.added, unit: "nodes", description: null });
  } else if (main?.real && main.predicted) {
    const a = main.real.text.split("\n");
    const b = new Set(main.predicted.text.split("\n"));
    metrics.push({ name: "line_overlap", value: a.filter((l) => b.has(l)).length / Math.max(1, a.length), unit: null, description: "real lines found in the prediction" });
  }
  const anchors: Anchor[] = [];
  if (real.meta?.url) anchors.push({ kind: "url", key: "url", status: "matched", real: real.meta.url, predicted: real.meta.url });
  if (real.meta?.focused_bid) {
    const focusedKey = (t: UiTree | null | undefined) => t?.nodes.find((n) => n.states?.focused && n.key)?.key ?? null;
    const r = focusedKey(main?.real?.tree);
    const q = focusedKey(main?.predicted?.tree);
    anchors.push({ kind: "focused", key: "focused element", status: q === null ? "absent" : r === q ? "matched" : "mismatched", real: r, predicted: q });
  }
  if (real.meta?.package) anchors.push({ kind: "package", key: "package", status: "matched", real: real.meta.package, predicted: real.meta.package });
  anchors.push({ kind: "title", key: "window title", status: "absent", real: real.meta?.title ?? null, predicted: null });
  const first = metrics.find((m) => m.unit == null && m.value !== null);
  return { overall: judgeOverall(p.judge) ?? first?.value ?? null, metrics, anchors, judge: p.judge ? { ...NO_JUDGE, ...p.judge } : null, note: null };
}

function actionView(raw: string): ActionView {
  return { raw, format: "text", summary: raw.split("\n")[0] ?? "", parsed: null };
}

function meta(o: FixtureObservation): ObservationMetaView | null {
  return o.meta ? { ...NO_META, ...o.meta } : null;
}

/** The dev-only mock back end. */
export class MockBackend implements Backend {
  readonly kind = "mock";
  private readonly fixtures: Fixture[];

  constructor(fixtures: Fixture[] = [...FIXTURES, bigTreeFixture(20000)]) {
    this.fixtures = fixtures;
  }

  private find(id: string): Fixture {
    const f = this.fixtures.find((x) => x.id === id);
    if (!f) throw new BackendError("not_found", `no trajectory \`${id}\``);
    return f;
  }

  private summary(f: Fixture): TrajectorySummary {
    const fids = f.turns.flatMap((t) => t.predictions.map((p) => fidelityOf(compare(t.real, p), t.real, p)?.overall ?? null));
    const known = fids.filter((x): x is number => x !== null);
    return {
      id: f.id,
      name: f.name,
      domain: f.domain as TrajectorySummary["domain"],
      source_format: f.source_format,
      source_path: `${f.id}.json`,
      goal: f.goal ?? null,
      turn_count: f.turns.length,
      branch_count: f.id === "web-harbor-books" ? 2 : 1,
      prediction_count: f.turns.reduce((n, t) => n + t.predictions.length, 0),
      lowest_fidelity: known.length ? Math.min(...known) : null,
      tags: [],
      imported_at: "2026-01-01T00:00:00Z",
    };
  }

  private branch(f: Fixture): BranchSummary {
    return { id: String(f.turns.length), name: "recorded", leaf_node: f.turns.length, turn_count: f.turns.length, recorded: true, forks_at_turn: null };
  }

  private turn(f: Fixture, nodeId: number, predictionId: number | null | undefined): TurnDetail {
    if (nodeId === 0) {
      const views = compare(f.initial, undefined);
      return {
        trajectory_id: f.id,
        turn: 0,
        node_id: 0,
        edge_id: null,
        action: null,
        real_meta: meta(f.initial),
        real_error: null,
        predictions: [],
        prediction_id: null,
        chosen_prediction_id: null,
        predicted_kind: null,
        views,
        fidelity: null,
        reasoning: null,
        raw_output: null,
      };
    }
    const t = f.turns[nodeId - 1];
    if (!t) throw new BackendError("not_found", `trajectory \`${f.id}\` has no node ${nodeId}`);
    const pid = predictionId ?? t.predictions.length - 1;
    const p = t.predictions[pid];
    const views = compare(t.real, p);
    return {
      trajectory_id: f.id,
      turn: nodeId,
      node_id: nodeId,
      edge_id: nodeId - 1,
      action: actionView(t.action),
      real_meta: meta(t.real),
      real_error: null,
      predictions: t.predictions.map((q, i) => ({
        id: i,
        engine: q.engine,
        seed: q.seed !== undefined ? String(q.seed) : null,
        context: "teacher-forced" as const,
        status: "ok",
        params: {},
        prompt_tokens: null,
        completion_tokens: null,
        total_ms: null,
        created_at: null,
        overall: fidelityOf(compare(t.real, q), t.real, q)?.overall ?? null,
      })),
      prediction_id: p ? pid : null,
      chosen_prediction_id: null,
      predicted_kind: p ? "predicted" : null,
      views,
      fidelity: fidelityOf(views, t.real, p),
      reasoning: p?.reasoning ?? null,
      raw_output: null,
    };
  }

  async call<C extends CommandName>(command: C, request: RequestOf<C>): Promise<ResponseOf<C>> {
    const req = request as Record<string, unknown>;
    switch (command) {
      case "list_trajectories":
        return { trajectories: this.fixtures.map((f) => this.summary(f)) } as ResponseOf<C>;
      case "get_trajectory": {
        const f = this.find(String(req.trajectory_id));
        return { trajectory: this.summary(f), branches: [this.branch(f)], nodes: [], edges: [] } as ResponseOf<C>;
      }
      case "get_branch": {
        const f = this.find(String(req.trajectory_id));
        const turns: TurnSummary[] = f.turns.map((t, i) => {
          const p = t.predictions[t.predictions.length - 1];
          return {
            turn: i + 1,
            node_id: i + 1,
            edge_id: i,
            action: actionView(t.action),
            has_real: true,
            prediction_count: t.predictions.length,
            has_authored: false,
            fidelity: fidelityOf(compare(t.real, p), t.real, p)?.overall ?? null,
          };
        });
        return { branch: this.branch(f), turns } as ResponseOf<C>;
      }
      case "get_turn": {
        const f = this.find(String(req.trajectory_id));
        return this.turn(f, Number(req.node_id), req.prediction_id as number | null | undefined) as ResponseOf<C>;
      }
      default:
        throw new BackendError("unknown_command", `unknown command \`${String(command)}\``);
    }
  }

  subscribe(_listener: (event: StudioEvent) => void): () => void {
    return () => {};
  }
}
