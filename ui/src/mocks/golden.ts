/**
 * Golden API responses written by the Rust tests
 * (`crates/worldloom-api/tests/golden.rs`, files in `./golden/`): every
 * command response the mock back end needs for the dev fixtures, and the
 * trees of the snippets the UI tests use. The UI never re-implements the
 * observation parsers, the tree diff or the metrics; it reads what the API
 * answered. Regenerate with
 * `WORLDLOOM_UPDATE_GOLDEN=1 cargo test -p worldloom-api --test golden`.
 * Dev and tests only, never bundled in a production build.
 */
import type {
  CompareRunsResponse,
  RunDriftResponse,
  GetBranchResponse,
  GetTrajectoryResponse,
  Representation,
  RunDashboard,
  RunRowView,
  RunSummary,
  TurnDetail,
  UiTree,
} from "../api/types";

/** The responses recorded for one fixture. */
export interface FixtureGolden {
  /** The fixture's id (`web-harbor-books`). */
  fixture: string;
  /** `get_trajectory`. */
  trajectory: GetTrajectoryResponse;
  /** `get_branch` of the recorded branch. */
  branch: GetBranchResponse;
  /** `get_turn` per state: `"<node>"` with the default prediction, `"<node>/<prediction>"` with each one. */
  turns: Record<string, TurnDetail>;
}

/** A parsed snippet. */
export interface GoldenTree {
  representation: Representation;
  text: string;
  tree: UiTree;
}

const files = import.meta.glob<unknown>("./golden/*.json", { eager: true, import: "default" });

/** Golden responses by fixture id. */
export const GOLDEN: Record<string, FixtureGolden> = Object.fromEntries(
  Object.entries(files)
    .filter(([path]) => !path.endsWith("/trees.json") && !path.endsWith("/runs.json"))
    .map(([, data]) => {
      const g = data as FixtureGolden;
      return [g.fixture, g];
    }),
);

/** The recorded runs: the AgentWorldBench sample with two runs over it (`runs.json`). */
export interface RunsGolden {
  runs: RunSummary[];
  /** `get_run_dashboard` by run id. */
  dashboards: Record<string, RunDashboard>;
  /** Every row (`list_run_rows` without filters) by run id. */
  rows: Record<string, RunRowView[]>;
  /** `compare_runs` of the first run (A) with the second (B) on text F1, every pair. */
  compare: CompareRunsResponse;
  /** `search_runs` of one word. */
  search: { query: string; hits: RunRowView[] };
  /** `run_drift` of the first run (A) with the second (B). */
  drift: RunDriftResponse;
}

/** The recorded runs, when the golden file is there. */
export const RUNS: RunsGolden | null = (files["./golden/runs.json"] ?? null) as RunsGolden | null;

/** Parsed snippets by name (`axtree-list`, `html-bids`…). */
export const TREES: Record<string, GoldenTree> = (files["./golden/trees.json"] ?? {}) as Record<string, GoldenTree>;

/** The recorded `get_turn` of a fixture state, with its default prediction or the given one. */
export function goldenTurn(fixture: string, node: number, prediction?: number | null): TurnDetail | undefined {
  const g = GOLDEN[fixture];
  if (!g) return undefined;
  return prediction == null ? g.turns[String(node)] : g.turns[`${node}/${prediction}`];
}

/** The parsed tree of a snippet; throws for an unknown name. */
export function goldenTree(name: string): UiTree {
  const t = TREES[name];
  if (!t) throw new Error(`no golden tree \`${name}\``);
  return t.tree;
}

const BY_TEXT = new Map<string, UiTree>();
function remember(representation: Representation, text: string, tree: UiTree | null | undefined): void {
  if (tree) BY_TEXT.set(`${representation}\u0000${text}`, tree);
}
for (const g of Object.values(GOLDEN)) {
  for (const t of Object.values(g.turns)) {
    for (const v of t.views) {
      if (v.real) remember(v.representation, v.real.text, v.real.tree);
      if (v.predicted) remember(v.representation, v.predicted.text, v.predicted.tree);
    }
  }
}
for (const t of Object.values(TREES)) remember(t.representation, t.text, t.tree);

/** Records a tree built elsewhere (the generated large tree) for {@link treeOfText}. */
export function rememberTree(representation: Representation, text: string, tree: UiTree): void {
  remember(representation, text, tree);
}

/** The tree the API gave for this exact text, when any golden response holds it. */
export function treeOfText(representation: Representation, text: string): UiTree | null {
  return BY_TEXT.get(`${representation}\u0000${text}`) ?? null;
}
