/**
 * Recorded API responses written by the Rust tests
 * (`crates/worldloom-api/tests/golden.rs`, files in `./golden/`): the
 * replies of the real API for the dev fixtures, the runs and the snippets,
 * for the tests that need a fixed reply as input (renderers, chart options).
 * The UI never re-implements the observation parsers, the tree diff or the
 * metrics; it reads what the API answered. Regenerate with
 * `WORLDLOOM_UPDATE_GOLDEN=1 cargo test -p worldloom-api --test golden`.
 * Tests only, never bundled in a production build.
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
