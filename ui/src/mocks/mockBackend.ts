/**
 * Dev-only back end fed by the JSON fixtures in `./fixtures/` (open the dev
 * server with `?mock`). It answers the same commands as `worldloom serve`
 * and keeps the workspace's bookkeeping (states, branches, choices, undo) in
 * memory, but computes nothing the API computes: trees, diffs, fidelity,
 * judge scores and action views of the fixtures are the API's own responses
 * (`./golden/`, written by the Rust tests, see `golden.ts`). States made at
 * run time (a stepped, authored or appended one) show the trees the API gave
 * for the same texts, without a diff or scores. Never bundled in a production
 * build (see `createBackend`).
 */
import type {
  RunRowView,
  ActionFormat,
  ActionView,
  ChangeKind,
  ChangeSummary,
  ContextMode,
  ObservationKind,
  OutputStatus,
  TreeEdgeView,
  TreeNodeView,
  BranchSummary,
  CommandName,
  ComparedView,
  RequestOf,
  SideDocument,
  Representation,
  ResponseOf,
  StudioEvent,
  TrajectorySummary,
  TurnDetail,
  TurnSummary,
} from "../api/types";
import type {
  BranchCreated,
  CompareRow,
  CurriculumExport,
  EngineSettings,
  EndpointKeyStatus,
  EngineStatus,
  GenerationParamsView,
  LabCommands,
  ModelDirInfo,
  ParsedActionReply,
  StepStarted,
  TokenView,
  UploadedFile,
  ValidationReport,
} from "../api/lab";
import type { Backend } from "../backend/backend";
import { BackendError } from "../backend/error";
import { rawToForm, syntaxFor } from "../model/actionForm";
import { goldenTurn, GOLDEN, RUNS, rememberTree, treeOfText } from "./golden";
import { largeTree } from "./largeTree";
import { MOCK_FIRST_WINDOW_ROWS, searchOf, windowOf } from "./treeWindow";
import android from "./fixtures/android-settings.json";
import os from "./fixtures/os-calculator.json";
import terminal from "./fixtures/terminal-build.json";
import web from "./fixtures/web-harbor-books.json";
import hostile from "./fixtures/web-hostile.json";

/** A view of an observation in a fixture. */
interface FixtureView {
  name: string;
  representation: string;
  text: string;
}

/** An observation in a fixture. */
interface FixtureObservation {
  views: FixtureView[];
  meta?: Record<string, unknown>;
}

/** A prediction in a fixture. */
interface FixturePrediction {
  engine: string;
  seed?: number;
  views: FixtureView[];
  reasoning?: string;
  /** Judge scores (the golden responses carry them as the API reads them). */
  judge?: Record<string, unknown>;
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

/** A generated trajectory with one very large tree (for the virtualised list); its trees are generated with the text (`largeTree.ts`). */
export function bigTreeFixture(nodeCount: number): Fixture {
  const big = largeTree(nodeCount);
  rememberTree("axtree", big.text, big.tree);
  rememberTree("axtree", big.predictedText, big.predictedTree);
  return {
    id: "web-large-tree",
    name: `large tree (${nodeCount} nodes)`,
    domain: "web",
    source_format: "generated",
    goal: "Scroll a very large accessibility tree.",
    initial: { views: [{ name: "axtree_txt", representation: "axtree", text: big.text }] },
    turns: [
      {
        action: "scroll(0, 800)",
        real: { views: [{ name: "axtree_txt", representation: "axtree", text: big.text }] },
        predictions: [{ engine: "copy", seed: 0, views: [{ name: "axtree_txt", representation: "axtree", text: big.predictedText }] }],
      },
    ],
  };
}

export const FIXTURES: Fixture[] = [web, os, android, terminal, hostile] as Fixture[];

/**
 * The views of a state no golden response covers: each text with the tree
 * the API gave for the same text (if any), paired by representation as
 * `get_turn` pairs them; no diff, since the mock computes none.
 */
function compare(real: FixtureObservation | null, predicted: FixtureView[]): ComparedView[] {
  const side = (v: FixtureView): SideDocument => {
    const tree = treeOfText(v.representation as Representation, v.text);
    return { text: v.text, text_bytes: null, tree, rows: tree ? windowOf(tree, null, "real", 0, MOCK_FIRST_WINDOW_ROWS, []) : null, parse_error: null };
  };
  const out: ComparedView[] = [];
  let placed = false;
  for (const r of real?.views ?? []) {
    const p: FixtureView | undefined = !placed ? predicted.find((v) => v.representation === r.representation) : undefined;
    placed ||= p !== undefined;
    out.push({ representation: r.representation as Representation, name: r.name, real: side(r), predicted: p ? side(p) : null, diff: null, line_diff: null });
  }
  const first = predicted[0];
  if (!placed && first)
    out.unshift({ representation: first.representation as Representation, name: "main", real: null, predicted: side(first), diff: null, line_diff: null });
  return out;
}

const ACTION_FORMATS: Record<string, ActionFormat> = {
  web: "browsergym",
  os: "pyautogui",
  android: "android-json",
  mcp: "tool-call",
  swe: "tool-call",
  terminal: "shell",
};

function actionFormat(domain: string): ActionFormat {
  return ACTION_FORMATS[domain] ?? "text";
}

/** An action typed at run time (the fixtures' actions come from the golden responses). */
function actionView(raw: string, domain = "text"): ActionView {
  const syntax = syntaxFor(domain);
  const form = rawToForm(syntax, raw);
  return {
    raw,
    format: actionFormat(domain),
    summary: (raw.split("\n")[0] ?? "").slice(0, 80),
    parsed: form ? (form as unknown as ActionView["parsed"]) : null,
  };
}

/** A stored prediction of the mock. */
interface MockPrediction {
  id: number;
  /** A fixture's prediction, whose `get_turn` is in the golden responses. */
  golden: boolean;
  engine: string;
  seed: string | null;
  context: ContextMode;
  status: OutputStatus;
  views: FixtureView[];
  reasoning: string | null;
  tokens: TokenView[] | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
}

/** A state of the mock's tree. */
interface MockNode {
  id: number;
  /** A fixture's state, whose `get_turn` is in the golden responses. */
  fixture: boolean;
  parent_edge: number | null;
  real: FixtureObservation | null;
  predictions: MockPrediction[];
  chosen: number | null;
  authored: FixtureView | null;
}

/** An action of the mock's tree. */
interface MockEdge {
  id: number;
  /** A fixture's action (its view is in the golden responses). */
  golden: boolean;
  from: number;
  to: number;
  action: string;
  perturbation: string | null;
  edited_from: number | null;
}

/** One trajectory as the mock stores it. */
interface MockTrajectory {
  fixture: Fixture;
  nodes: MockNode[];
  edges: MockEdge[];
  tags: string[];
}

/** The whole mock workspace (cloned for undo). */
interface MockState {
  trajectories: MockTrajectory[];
}

const DEFAULT_PARAMS: GenerationParamsView = {
  temperature: 0.6,
  top_p: 0.95,
  top_k: 20,
  seed: "0",
  max_new_tokens: 4096,
  enable_thinking: true,
  logprobs: true,
  stop_after_observation: true,
};

function fromFixture(f: Fixture): MockTrajectory {
  const nodes: MockNode[] = [{ id: 0, fixture: true, parent_edge: null, real: f.initial, predictions: [], chosen: null, authored: null }];
  const edges: MockEdge[] = [];
  f.turns.forEach((t, i) => {
    edges.push({ id: i, golden: true, from: i, to: i + 1, action: t.action, perturbation: null, edited_from: null });
    nodes.push({
      id: i + 1,
      fixture: true,
      parent_edge: i,
      real: t.real,
      predictions: t.predictions.map((p, k) => ({
        id: k,
        golden: true,
        engine: p.engine,
        seed: p.seed !== undefined ? String(p.seed) : null,
        context: "teacher-forced",
        status: "ok",
        views: p.views,
        reasoning: p.reasoning ?? null,
        tokens: null,
        prompt_tokens: null,
        completion_tokens: null,
      })),
      chosen: null,
      authored: null,
    });
  });
  return { fixture: f, nodes, edges, tags: [] };
}

/** Pseudo log-probabilities for the mock's streamed tokens: deterministic, varied. */
function pseudoToken(text: string, i: number): TokenView {
  const h = (i * 2654435761) % 1000;
  const p = 0.35 + (h / 1000) * 0.65;
  return { text, logprob: Math.log(p), entropy: (1 - p) * 3 };
}

/** The dev-only mock back end. */
export class MockBackend implements Backend {
  readonly kind = "mock";
  private state: MockState;
  private readonly undoStack: Array<{ state: MockState; change: ChangeSummary }> = [];
  private readonly redoStack: Array<{ state: MockState; change: ChangeSummary }> = [];
  private readonly changes: ChangeSummary[] = [];
  private readonly listeners = new Set<(event: StudioEvent) => void>();
  private engine: { settings: EngineSettings; params: GenerationParamsView } = { settings: { kind: "baseline", name: "copy" }, params: DEFAULT_PARAMS };
  /** Endpoint API keys by keyring account (the OS keyring of the real back end); never sent back. */
  private readonly keyring = new Map<string, string>();
  private readonly jobs = new Map<string, { timer: number | null; cancelled: boolean }>();
  private nextJob = 1;
  private nextChange = 1;
  /** Milliseconds between streamed chunks (the mock's "slow" endpoint uses 300). */
  chunkDelayMs = 40;

  constructor(fixtures: Fixture[] = [...FIXTURES, bigTreeFixture(20000)]) {
    this.state = { trajectories: fixtures.map(fromFixture) };
  }

  private emit(event: StudioEvent): void {
    for (const l of this.listeners) l(event);
  }

  private find(id: string): MockTrajectory {
    const t = this.state.trajectories.find((x) => x.fixture.id === id);
    if (!t) throw new BackendError("not_found", `no trajectory \`${id}\``);
    return t;
  }

  private node(t: MockTrajectory, id: number): MockNode {
    const n = t.nodes.find((x) => x.id === id);
    if (!n) throw new BackendError("not_found", `trajectory \`${t.fixture.id}\` has no node ${id}`);
    return n;
  }

  private edge(t: MockTrajectory, id: number): MockEdge {
    const e = t.edges.find((x) => x.id === id);
    if (!e) throw new BackendError("not_found", `trajectory \`${t.fixture.id}\` has no edge ${id}`);
    return e;
  }

  /** Records an undoable change: `mutate` runs on the live state after a snapshot is kept. */
  private change(kind: ChangeKind, trajectoryId: string | null, summary: string, mutate: () => void): ChangeSummary {
    const before = structuredClone(this.state);
    mutate();
    const change: ChangeSummary = {
      id: String(this.nextChange++),
      kind,
      trajectory_id: trajectoryId,
      summary,
      state: "applied",
      created_at: new Date().toISOString(),
    };
    this.undoStack.push({ state: before, change });
    this.redoStack.length = 0;
    this.changes.unshift(change);
    this.emit({ type: "workspace_changed", trajectory_id: trajectoryId, kind });
    return change;
  }

  private shown(
    n: MockNode,
    predictionId: number | null | undefined,
  ): { kind: "predicted" | "authored" | null; prediction: MockPrediction | null; views: FixtureView[] } {
    if (predictionId != null) {
      const p = n.predictions.find((q) => q.id === predictionId);
      if (p) return { kind: "predicted", prediction: p, views: p.views };
    }
    if (n.chosen != null) {
      const p = n.predictions.find((q) => q.id === n.chosen);
      if (p) return { kind: "predicted", prediction: p, views: p.views };
    }
    if (n.authored) return { kind: "authored", prediction: null, views: [n.authored] };
    const p = n.predictions[n.predictions.length - 1];
    return p ? { kind: "predicted", prediction: p, views: p.views } : { kind: null, prediction: null, views: [] };
  }

  /**
   * The golden `get_turn` of what a fixture state shows: the state and the
   * shown prediction must both come from the fixture (nothing authored over
   * it); `undefined` otherwise.
   */
  private golden(t: MockTrajectory, n: MockNode, shown: ReturnType<MockBackend["shown"]>): TurnDetail | undefined {
    if (!n.fixture || shown.kind === "authored") return undefined;
    if (shown.prediction && !shown.prediction.golden) return undefined;
    return goldenTurn(t.fixture.id, n.id, shown.prediction?.id ?? null);
  }

  /** The overall fidelity the API gave for what a state shows (`null` for what it never scored). */
  private fidelity(t: MockTrajectory, n: MockNode, shown: ReturnType<MockBackend["shown"]>): number | null {
    if (!n.real || shown.views.length === 0) return null;
    return this.golden(t, n, shown)?.fidelity?.overall ?? null;
  }

  /** The API's view of a fixture action, else one typed at run time. */
  private action(t: MockTrajectory, e: MockEdge): ActionView {
    const golden = e.golden ? GOLDEN[t.fixture.id]?.trajectory.edges.find((x) => x.edge_id === e.id) : undefined;
    return golden?.action ?? actionView(e.action, t.fixture.domain);
  }

  private kindOf(n: MockNode): ObservationKind | null {
    if (n.real) return "real";
    if (n.authored) return "authored";
    return n.predictions.length ? "predicted" : null;
  }

  private leaves(t: MockTrajectory): number[] {
    const from = new Set(t.edges.map((e) => e.from));
    return t.nodes.filter((n) => !from.has(n.id)).map((n) => n.id);
  }

  private pathTo(t: MockTrajectory, leaf: number): MockEdge[] {
    const out: MockEdge[] = [];
    let n = this.node(t, leaf);
    while (n.parent_edge !== null) {
      const e = this.edge(t, n.parent_edge);
      out.push(e);
      n = this.node(t, e.from);
    }
    return out.reverse();
  }

  private branches(t: MockTrajectory): BranchSummary[] {
    const out = this.leaves(t).map((leaf) => {
      const path = this.pathTo(t, leaf);
      const recorded = path.every((e) => this.node(t, e.to).real !== null);
      let forks: number | null = null;
      path.forEach((e, i) => {
        if (e.edited_from !== null || this.node(t, e.to).real === null) forks ??= i + 1;
      });
      const last = path[forks !== null ? forks - 1 : 0];
      const name = recorded ? "recorded" : `branch at turn ${forks ?? 1}: ${last ? this.action(t, last).summary : ""}`;
      return { id: String(leaf), name, leaf_node: leaf, turn_count: path.length, recorded, forks_at_turn: recorded ? null : forks };
    });
    return out.sort((a, b) => Number(b.recorded) - Number(a.recorded) || a.leaf_node - b.leaf_node);
  }

  private summary(t: MockTrajectory): TrajectorySummary {
    const f = t.fixture;
    const fids = t.nodes.map((n) => this.fidelity(t, n, this.shown(n, null))).filter((x): x is number => x !== null);
    return {
      id: f.id,
      name: f.name,
      domain: f.domain as TrajectorySummary["domain"],
      source_format: f.source_format,
      source_path: `${f.id}.json`,
      goal: f.goal ?? null,
      turn_count: f.turns.length,
      branch_count: this.leaves(t).length,
      prediction_count: t.nodes.reduce((k, n) => k + n.predictions.length, 0),
      lowest_fidelity: fids.length ? Math.min(...fids) : null,
      tags: t.tags,
      imported_at: "2026-01-01T00:00:00Z",
    };
  }

  private turnSummary(t: MockTrajectory, e: MockEdge, turn: number): TurnSummary {
    const n = this.node(t, e.to);
    return {
      turn,
      node_id: n.id,
      edge_id: e.id,
      action: this.action(t, e),
      has_real: n.real !== null,
      prediction_count: n.predictions.length,
      has_authored: n.authored !== null,
      fidelity: this.fidelity(t, n, this.shown(n, null)),
      perturbation: e.perturbation,
    };
  }

  private turnOf(t: MockTrajectory, nodeId: number): number {
    let k = 0;
    let n = this.node(t, nodeId);
    while (n.parent_edge !== null) {
      k++;
      n = this.node(t, this.edge(t, n.parent_edge).from);
    }
    return k;
  }

  private detail(t: MockTrajectory, nodeId: number, predictionId: number | null | undefined): TurnDetail {
    const n = this.node(t, nodeId);
    const e = n.parent_edge !== null ? this.edge(t, n.parent_edge) : null;
    const shown = nodeId === 0 ? { kind: null, prediction: null, views: [] } : this.shown(n, predictionId);
    // What the API answered for this state and what it shows, else (a state
    // or prediction made at run time) the texts with their known trees.
    const golden = this.golden(t, n, shown);
    const state = n.fixture ? goldenTurn(t.fixture.id, n.id) : undefined;
    return {
      trajectory_id: t.fixture.id,
      turn: this.turnOf(t, nodeId),
      node_id: nodeId,
      edge_id: e?.id ?? null,
      action: e ? this.action(t, e) : null,
      real_meta: state?.real_meta ?? null,
      real_error: state?.real_error ?? null,
      predictions: n.predictions.map((q) => ({
        id: q.id,
        engine: q.engine,
        seed: q.seed,
        context: q.context,
        status: q.status,
        params: {},
        prompt_tokens: q.prompt_tokens,
        completion_tokens: q.completion_tokens,
        total_ms: null,
        created_at: null,
        overall: this.fidelity(t, n, { kind: "predicted", prediction: q, views: q.views }),
      })),
      prediction_id: shown.prediction?.id ?? null,
      chosen_prediction_id: n.chosen,
      predicted_kind: shown.kind,
      views: golden?.views ?? compare(n.real, shown.views),
      fidelity: golden?.fidelity ?? null,
      reasoning: golden?.reasoning ?? shown.prediction?.reasoning ?? null,
      raw_output: golden?.raw_output ?? null,
      tokens: shown.prediction?.tokens ?? null,
      perturbation: e?.perturbation ?? null,
    };
  }

  /** The observation the copy baseline repeats: the previous state's, real (teacher-forced) or shown (free-running). */
  private previousViews(t: MockTrajectory, nodeId: number, context: ContextMode): FixtureView[] {
    const n = this.node(t, nodeId);
    if (n.parent_edge === null) return n.real?.views ?? [];
    const prev = this.node(t, this.edge(t, n.parent_edge).from);
    if (context === "teacher-forced" && prev.real) return prev.real.views;
    const s = this.shown(prev, null);
    if (prev.parent_edge !== null && s.views.length) return s.views;
    return prev.real?.views ?? [];
  }

  private startStep(t: MockTrajectory, nodeId: number, context: ContextMode, jobId: string, done: (ok: boolean) => void): void {
    const source = this.previousViews(t, nodeId, context)[0];
    const text = source?.text ?? "";
    const pieces = text.match(/[\s\S]{1,24}/g) ?? [];
    const reasoning = ["The action ", "changes nothing I can predict, ", "so the copy baseline repeats ", "the previous observation."];
    const slow = this.engine.settings.kind === "openai" && /slow/.test(this.engine.settings.model);
    const delay = slow ? 300 : this.chunkDelayMs;
    const job = { timer: null as number | null, cancelled: false };
    this.jobs.set(jobId, job);
    const tokens: TokenView[] = [];
    let i = 0;
    const total = reasoning.length + pieces.length;
    const tick = () => {
      if (job.cancelled) return;
      if (i < total) {
        const r = i < reasoning.length ? reasoning[i]! : "";
        const o = i >= reasoning.length ? pieces[i - reasoning.length]! : "";
        const tk = o ? [pseudoToken(o, i)] : [];
        tokens.push(...tk);
        this.emit({ type: "step_delta", job_id: jobId, trajectory_id: t.fixture.id, node_id: nodeId, reasoning: r, observation: o, tokens: tk });
        i++;
        job.timer = window.setTimeout(tick, delay);
        return;
      }
      this.jobs.delete(jobId);
      const n = this.node(t, nodeId);
      const id = n.predictions.reduce((m, p) => Math.max(m, p.id + 1), 0);
      const name =
        this.engine.settings.kind === "baseline" ? this.engine.settings.name : this.engine.settings.kind === "openai" ? this.engine.settings.model : "local";
      this.change("add_prediction", t.fixture.id, `${name} predicted node ${nodeId}`, () => {
        const live = this.node(this.find(t.fixture.id), nodeId);
        live.predictions.push({
          id,
          golden: false,
          engine: name,
          seed: this.engine.params.seed,
          context,
          status: "ok",
          views: source ? [{ ...source }] : [{ name: "main", representation: "text", text: "" }],
          reasoning: reasoning.join(""),
          tokens,
          prompt_tokens: 1200,
          completion_tokens: tokens.length,
        });
        live.chosen = id;
      });
      this.emit({
        type: "step_finished",
        job_id: jobId,
        trajectory_id: t.fixture.id,
        node_id: nodeId,
        prediction_id: id,
        status: "ok",
        error: null,
        stats: {
          prompt_tokens: 1200,
          prompt_tokens_computed: 180,
          prompt_tokens_reused: 1020,
          completion_tokens: tokens.length,
          prefill_ms: 35,
          decode_ms: total * delay,
          decode_tokens_per_sec: tokens.length / Math.max(0.001, (total * delay) / 1000),
          stop_reason: "end_of_turn",
        },
      });
      this.emit({ type: "prediction_added", trajectory_id: t.fixture.id, node_id: nodeId, prediction_id: id });
      done(true);
    };
    job.timer = window.setTimeout(tick, delay);
    this.cancelHooks.set(jobId, () => {
      job.cancelled = true;
      if (job.timer !== null) window.clearTimeout(job.timer);
      this.jobs.delete(jobId);
      this.emit({
        type: "step_finished",
        job_id: jobId,
        trajectory_id: t.fixture.id,
        node_id: nodeId,
        prediction_id: null,
        status: "cancelled",
        error: null,
        stats: null,
      });
      done(false);
    });
  }

  private readonly cancelHooks = new Map<string, () => void>();

  private appendTurn(t: MockTrajectory, nodeId: number, raw: string, editedFrom: number | null): BranchCreated {
    if (raw.trim() === "") throw new BackendError("bad_request", "raw: the action is empty");
    this.node(t, nodeId);
    const edgeId = t.edges.reduce((m, e) => Math.max(m, e.id + 1), 0);
    const newNode = t.nodes.reduce((m, x) => Math.max(m, x.id + 1), 0);
    this.change(
      editedFrom !== null ? "add_branch" : "add_turn",
      t.fixture.id,
      `${editedFrom !== null ? "edited" : "added"} action ${actionView(raw).summary}`,
      () => {
        const live = this.find(t.fixture.id);
        live.nodes.push({ id: newNode, fixture: false, parent_edge: edgeId, real: null, predictions: [], chosen: null, authored: null });
        live.edges.push({ id: edgeId, golden: false, from: nodeId, to: newNode, action: raw, perturbation: null, edited_from: editedFrom });
      },
    );
    return { trajectory_id: t.fixture.id, edge_id: edgeId, node_id: newNode, branch_id: String(newNode), change: this.changes[0] ?? null };
  }

  /**
   * The mock has no observation parser: JSON goes through the platform's
   * JSON parser (as the API uses a JSON parser for it), a text the API parsed
   * before (in the golden responses) reports its node count, anything else is
   * accepted unchecked.
   */
  private validate(representation: Representation, text: string): ValidationReport {
    if (representation === "json") {
      try {
        JSON.parse(text);
      } catch (e) {
        return {
          ok: false,
          node_count: null,
          problems: [{ line: null, column: null, severity: "error", message: e instanceof Error ? e.message : String(e) }],
        };
      }
      return { ok: true, node_count: null, problems: [] };
    }
    const tree = treeOfText(representation, text);
    return { ok: true, node_count: tree ? tree.nodes.length : null, problems: [] };
  }

  private curriculum(req: LabCommands["export_curriculum"][0]): CurriculumExport {
    const picks: Array<{ t: MockTrajectory; leaf: number }> = [];
    if (req.tag) for (const t of this.state.trajectories) if (t.tags.includes(req.tag)) for (const b of this.branches(t)) picks.push({ t, leaf: b.leaf_node });
    for (const s of req.selection) picks.push({ t: this.find(s.trajectory_id), leaf: Number(s.branch_id) });
    const rows: string[] = [];
    let skipped = 0;
    for (const { t, leaf } of picks) {
      const path = this.pathTo(t, leaf);
      const prompt: string[] = [];
      path.forEach((e, i) => {
        const n = this.node(t, e.to);
        const target = n.authored?.text ?? n.real?.views[0]?.text ?? this.shown(n, null).views[0]?.text ?? null;
        prompt.push(`### Turn ${i + 1}\n**Action:**\n${e.action}`);
        if (target === null) {
          skipped++;
          return;
        }
        // The bare observation: the real export wraps it in the observation block (worldloom-core's output module, the one home of those tags).
        const obs = target;
        rows.push(
          req.format === "sft"
            ? JSON.stringify({
                messages: [
                  { role: "system", content: `world model for ${t.fixture.domain}` },
                  { role: "user", content: prompt.join("\n\n") },
                  { role: "assistant", content: obs },
                ],
              })
            : JSON.stringify({
                task: `agentworld/${t.fixture.domain}`,
                id: `${t.fixture.id}-${leaf}-${i + 1}`,
                prompt: [...prompt],
                response: [obs],
                turn_idx: i + 1,
              }),
        );
      });
    }
    const bytes = rows.reduce((k, r) => k + new TextEncoder().encode(r).length + 1, 0);
    const content = rows.map((r) => `${r}\n`).join("");
    return {
      rows_total: rows.length,
      preview: rows.slice(0, req.preview_limit),
      path: req.path,
      bytes,
      skipped,
      content,
      file_name: `curriculum-${req.format}.jsonl`,
    };
  }

  async call<C extends CommandName>(command: C, request: RequestOf<C>): Promise<ResponseOf<C>> {
    return (await this.callAny(command as string, request as Record<string, unknown>)) as ResponseOf<C>;
  }

  private async callAny(command: string, req: Record<string, unknown>): Promise<unknown> {
    switch (command) {
      case "list_trajectories":
        return { trajectories: this.state.trajectories.map((t) => this.summary(t)) };
      case "get_trajectory": {
        const t = this.find(String(req.trajectory_id));
        const nodes: TreeNodeView[] = t.nodes.map((n) => ({
          node_id: n.id,
          parent_edge: n.parent_edge,
          turn: this.turnOf(t, n.id),
          kind: this.kindOf(n),
          has_real: n.real !== null,
          prediction_count: n.predictions.length,
          has_authored: n.authored !== null,
          fidelity: this.fidelity(t, n, this.shown(n, null)),
        }));
        const edges: TreeEdgeView[] = t.edges.map((e) => ({
          edge_id: e.id,
          from: e.from,
          to: e.to,
          action: this.action(t, e),
          perturbation: e.perturbation,
          edited_from: e.edited_from,
        }));
        return { trajectory: this.summary(t), branches: this.branches(t), nodes, edges };
      }
      case "get_branch": {
        const t = this.find(String(req.trajectory_id));
        const leaf = Number(req.branch_id);
        const branch = this.branches(t).find((b) => b.leaf_node === leaf);
        if (!branch) throw new BackendError("not_found", `no branch ${String(req.branch_id)}`);
        return { branch, turns: this.pathTo(t, leaf).map((e, i) => this.turnSummary(t, e, i + 1)) };
      }
      case "get_turn":
        return this.detail(this.find(String(req.trajectory_id)), Number(req.node_id), req.prediction_id as number | null | undefined);
      case "get_tree_rows":
      case "search_tree": {
        const d = this.detail(this.find(String(req.trajectory_id)), Number(req.node_id), req.prediction_id as number | null | undefined);
        const view = d.views[Number(req.view_index)];
        const side = req.side === "predicted" ? "predicted" : "real";
        const tree = (side === "real" ? view?.real : view?.predicted)?.tree;
        if (!view || !tree) throw new BackendError("not_found", `view ${String(req.view_index)} of node ${d.node_id} has no parsed ${side} tree`);
        if (command === "search_tree") return searchOf(tree, String(req.query), Number(req.limit));
        try {
          const collapsed = (req.collapsed as number[] | undefined) ?? [];
          return windowOf(tree, view.diff, side, Number(req.offset), Number(req.limit), collapsed, (req.reveal as number | null | undefined) ?? null);
        } catch (e) {
          throw new BackendError("bad_request", String((e as Error).message));
        }
      }
      case "choose_prediction": {
        const t = this.find(String(req.trajectory_id));
        const n = this.node(t, Number(req.node_id));
        const change = this.change("choose_prediction", t.fixture.id, `chose prediction ${String(req.prediction_id)} for node ${n.id}`, () => {
          this.node(this.find(t.fixture.id), n.id).chosen = req.prediction_id as number | null;
        });
        return { change };
      }
      case "undo":
      case "redo": {
        const from = command === "undo" ? this.undoStack : this.redoStack;
        const to = command === "undo" ? this.redoStack : this.undoStack;
        const entry = from.pop();
        if (!entry) return { change: null };
        to.push({ state: structuredClone(this.state), change: entry.change });
        this.state = entry.state;
        entry.change.state = command === "undo" ? "undone" : "applied";
        this.emit({ type: "workspace_changed", trajectory_id: entry.change.trajectory_id, kind: command === "undo" ? "undo" : "redo" });
        return { change: entry.change };
      }
      case "history":
        return { changes: this.changes.slice(0, 200) };
      case "workspace_info":
        return {
          path: "mock",
          schema_version: 1,
          trajectory_count: this.state.trajectories.length,
          can_undo: this.undoStack.length > 0,
          can_redo: this.redoStack.length > 0,
          version: "mock",
        };
      case "set_tag": {
        const t = this.find(String(req.trajectory_id));
        return {
          change: this.change("set_tag", t.fixture.id, `${req.present ? "tagged" : "untagged"} ${String(req.tag)}`, () => {
            const live = this.find(t.fixture.id);
            live.tags = live.tags.filter((x) => x !== req.tag);
            if (req.present) live.tags.push(String(req.tag));
          }),
        };
      }
      case "engine_status":
      case "set_engine": {
        if (command === "set_engine") this.engine = { settings: req.settings as EngineSettings, params: req.params as GenerationParamsView };
        const s = this.engine.settings;
        const name = s.kind === "baseline" ? s.name : s.kind === "openai" ? s.model : "local";
        const description =
          s.kind === "baseline"
            ? `${s.name} baseline`
            : s.kind === "openai"
              ? `${s.model} at ${s.base_url}`
              : `model at ${s.model_dir} on ${s.device}, ${s.dtype}`;
        // As the real back end: a keyring key must be stored before the engine is ready.
        const account = s.kind === "openai" && s.key_source === "keyring" ? s.keyring_account?.trim() || s.base_url.trim() : null;
        const keyMissing = account !== null && !this.keyring.get(account);
        return {
          settings: s,
          params: this.engine.params,
          ready: !keyMissing,
          name,
          description,
          error: keyMissing ? `no API key in the OS keyring for account \`${account}\` (service \`worldloom\`): store one with set_endpoint_key` : null,
          memory_estimate_bytes: s.kind === "local" ? 4 * 2 ** 20 : null,
        } satisfies EngineStatus;
      }
      case "set_endpoint_key":
      case "endpoint_key_status": {
        const account = String(req.account ?? "").trim();
        if (!account) throw new BackendError("bad_request", "account: empty");
        if (command === "set_endpoint_key") {
          const key = String(req.key ?? "");
          if (key) this.keyring.set(account, key);
          else this.keyring.delete(account);
        }
        return { account, stored: Boolean(this.keyring.get(account)) } satisfies EndpointKeyStatus;
      }
      case "inspect_model_dir": {
        const path = String(req.path ?? "");
        if (!path.trim()) throw new BackendError("bad_request", "path: empty");
        const params = 1_048_576;
        return {
          path,
          architecture: "qwen3_5_moe",
          total_params: params,
          active_params: params / 4,
          memory: [
            { dtype: "f32" as const, bytes: params * 4 },
            { dtype: "bf16", bytes: params * 2 },
            { dtype: "f16", bytes: params * 2 },
          ],
          context_tokens: 32768,
          available_memory_bytes: 16 * 2 ** 30,
          has_tokenizer: true,
          has_chat_template: true,
          devices: ["cpu"],
        } satisfies ModelDirInfo;
      }
      case "step": {
        const t = this.find(String(req.trajectory_id));
        const nodeId = Number(req.node_id);
        this.node(t, nodeId);
        const jobId = `job-${this.nextJob++}`;
        this.startStep(t, nodeId, req.context as ContextMode, jobId, () => this.cancelHooks.delete(jobId));
        return { job_id: jobId, trajectory_id: t.fixture.id, node_id: nodeId } satisfies StepStarted;
      }
      case "cancel_step": {
        const hook = this.cancelHooks.get(String(req.job_id));
        if (!hook) return { cancelled: false };
        this.cancelHooks.delete(String(req.job_id));
        hook();
        return { cancelled: true };
      }
      case "preview_prompt": {
        const t = this.find(String(req.trajectory_id));
        return {
          messages: [
            { role: "system", content: `You are a world model for ${t.fixture.domain}.` },
            { role: "user", content: `node ${String(req.node_id)}, ${String(req.context)}` },
          ],
        };
      }
      case "edit_action": {
        const t = this.find(String(req.trajectory_id));
        const e = this.edge(t, Number(req.edge_id));
        return this.appendTurn(t, e.from, String(req.raw ?? ""), e.id);
      }
      case "append_turn": {
        const t = this.find(String(req.trajectory_id));
        return this.appendTurn(t, Number(req.node_id), String(req.raw ?? ""), null);
      }
      case "parse_action": {
        const raw = String(req.raw ?? "");
        const syntax = syntaxFor(String(req.domain));
        const form = rawToForm(syntax, raw);
        const error = raw.trim() === "" ? "the action is empty" : syntax !== "text" && !form && syntax !== "pyautogui" ? `not a ${syntax} action` : null;
        return {
          format: actionFormat(String(req.domain)),
          parsed: form as unknown as ParsedActionReply["parsed"],
          error,
          summary: (raw.split("\n")[0] ?? "").slice(0, 80),
        } satisfies ParsedActionReply;
      }
      case "validate_observation":
        return this.validate(req.representation as Representation, String(req.text ?? ""));
      case "author_observation": {
        const t = this.find(String(req.trajectory_id));
        const n = this.node(t, Number(req.node_id));
        const validation = this.validate(req.representation as Representation, String(req.text ?? ""));
        const change = this.change("set_authored", t.fixture.id, `authored node ${n.id}`, () => {
          const live = this.node(this.find(t.fixture.id), n.id);
          live.authored = { name: "authored", representation: String(req.representation), text: String(req.text ?? "") };
          live.chosen = null;
        });
        return { change, validation };
      }
      case "set_perturbation": {
        const t = this.find(String(req.trajectory_id));
        const e = this.edge(t, Number(req.edge_id));
        const instruction = (req.instruction as string | null) || null;
        return {
          change: this.change(
            "set_perturbation",
            t.fixture.id,
            instruction ? `perturbation on edge ${e.id}: ${instruction}` : `cleared perturbation on edge ${e.id}`,
            () => {
              this.edge(this.find(t.fixture.id), e.id).perturbation = instruction;
            },
          ),
        };
      }
      case "rollout": {
        const t = this.find(String(req.trajectory_id));
        const actions = (req.actions as string[]) ?? [];
        if (actions.length === 0) throw new BackendError("bad_request", "actions: none given");
        const jobId = `job-${this.nextJob++}`;
        let at = Number(req.node_id);
        let done = 0;
        const next = () => {
          if (done >= actions.length) return;
          const created = this.appendTurn(this.find(t.fixture.id), at, actions[done]!, null);
          at = created.node_id;
          this.startStep(this.find(t.fixture.id), at, (req.context as ContextMode) ?? "free-running", jobId, (ok) => {
            if (!ok) return;
            done++;
            this.emit({ type: "rollout_progress", job_id: jobId, trajectory_id: t.fixture.id, done, total: actions.length, node_id: at });
            if (done < actions.length) next();
            else this.cancelHooks.delete(jobId);
          });
        };
        window.setTimeout(next, 0);
        return { job_id: jobId };
      }
      case "compare_branches": {
        const t = this.find(String(req.trajectory_id));
        const left = this.pathTo(t, Number(req.left));
        const right = this.pathTo(t, Number(req.right));
        const rows: CompareRow[] = [];
        const text = (e: MockEdge | undefined) => {
          if (!e) return null;
          const n = this.node(t, e.to);
          return n.authored?.text ?? this.shown(n, null).views[0]?.text ?? n.real?.views[0]?.text ?? null;
        };
        for (let i = 0; i < Math.max(left.length, right.length); i++) {
          const l = left[i];
          const r = right[i];
          rows.push({
            turn: i + 1,
            left: l ? this.turnSummary(t, l, i + 1) : null,
            right: r ? this.turnSummary(t, r, i + 1) : null,
            same_action: !!l && !!r && l.action === r.action,
            left_text: text(l),
            right_text: text(r),
          });
        }
        return { rows };
      }
      case "export_curriculum":
        return this.curriculum(req as unknown as LabCommands["export_curriculum"][0]);
      case "import_uploaded":
      case "import_files": {
        const files = (req.files as UploadedFile[] | undefined)?.map((f) => f.relative_path) ?? (req.paths as string[]);
        return { imported: [], runs: [], failed: files.map((path) => ({ path, message: "the mock back end does not import files" })), warnings: [] };
      }
      case "list_runs":
      case "get_run_dashboard":
      case "list_run_rows":
      case "compare_runs":
      case "search_runs":
      case "label_set":
      case "set_label_set":
      case "set_row_label":
      case "set_row_note":
      case "run_drift":
      case "export_run_rows":
        return mockRuns(command, req);
      default:
        throw new BackendError("unknown_command", `unknown command \`${command}\``);
    }
  }

  subscribe(listener: (event: StudioEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}

/**
 * The run commands, answered from the recorded runs (`golden/runs.json`):
 * the list, dashboards and comparison as recorded; rows filtered by domain
 * and status and sorted by file order or score; a full-text query matches
 * the recorded search's rows only for its word (the mock has no index);
 * outcome filters select from the recorded pairs.
 */
function mockRuns(command: string, req: Record<string, unknown>): unknown {
  const runs = RUNS;
  if (!runs) throw new BackendError("not_found", "no recorded runs");
  const run = (id: unknown) => {
    const r = runs.runs.find((x) => x.run_id === String(id));
    if (!r) throw new BackendError("not_found", `no run ${String(id)} in this workspace`);
    return r;
  };
  const matches = (query: unknown, rows: RunRowView[]) => {
    const q = typeof query === "string" ? query.trim().toLowerCase() : "";
    if (q === "") return rows;
    const hits = q === runs.search.query ? new Set(runs.search.hits.map((h) => h.row_id)) : new Set<string>();
    return rows.filter((r) => hits.has(r.row_id));
  };
  switch (command) {
    case "list_runs":
      return { runs: runs.runs };
    case "get_run_dashboard":
      return runs.dashboards[run(req.run_id).run_id];
    case "list_run_rows": {
      let rows = matches(req.query, runs.rows[run(req.run_id).run_id] ?? []);
      rows = rows.filter(
        (r) =>
          (req.domain == null || r.domain === req.domain) &&
          (req.status == null || r.status === req.status) &&
          (req.label == null || r.labels.includes(String(req.label))),
      );
      if (req.sort === "score") rows = [...rows].sort((a, b) => (b.score ?? -1) - (a.score ?? -1));
      if (req.descending === true && req.sort !== "score") rows = [...rows].reverse();
      return { rows, total: rows.length, offset: 0 };
    }
    case "compare_runs": {
      const c = runs.compare;
      if (String(req.run_a) !== c.run_a.run_id || String(req.run_b) !== c.run_b.run_id) {
        throw new BackendError("unsupported", "the mock back end has one recorded comparison: the first run (A) with the second (B)");
      }
      const pairs = req.outcome == null ? c.pairs : c.pairs.filter((p) => p.outcome === req.outcome);
      return { ...c, pairs, total: pairs.length };
    }
    case "search_runs": {
      const all = Object.values(runs.rows).flat();
      return { hits: matches(req.query, all), took_ms: 0 };
    }
    case "label_set":
      return { labels: ["missed effect", "hallucinated element", "wrong page", "stale copy", "format error", "truncated"] };
    case "run_drift": {
      const d = runs.drift;
      const a = d.series[0]?.run.run_id;
      const b = d.series[1]?.run.run_id;
      if (String(req.run_a) === a && req.run_b != null && String(req.run_b) === b) return d;
      throw new BackendError("unsupported", "the mock back end has one recorded drift: the first run (A) with the second (B)");
    }
    case "set_label_set":
    case "set_row_label":
    case "set_row_note":
      throw new BackendError("unsupported", "the mock back end does not store labels or notes");
    case "export_run_rows":
      throw new BackendError("unsupported", "the mock back end does not export rows");
    default:
      throw new BackendError("unknown_command", `unknown command \`${command}\``);
  }
}
