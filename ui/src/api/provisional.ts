/**
 * Provisional TypeScript shapes of the studio API, written by hand until the
 * types generated from `crates/worldloom-api` (ts-rs, in `src/bindings/`)
 * cover them. Field names follow the Rust serde names (snake_case).
 *
 * Tree shapes mirror `crates/worldloom-obs/src/tree.rs` (`UiTree`, `UiNode`,
 * `BoundsPx`, `SourceSpan`, `NodeStates`): the tree is a flat pre-order arena,
 * `nodes[i].id === i`, `nodes[0]` is the root.
 *
 * Transport: `POST /api/<command>` with a JSON body, JSON reply; errors are
 * `{"error": {"code", "message"}}` (see `backend/http.ts`).
 */

/** The seven domains (`worldloom-core::domain::Domain`, lowercase). */
export type Domain = "mcp" | "search" | "terminal" | "swe" | "web" | "os" | "android";

/** How an observation's text is read (`Representation`, kebab-case). */
export type Representation =
  | "html"
  | "axtree"
  | "os-xml"
  | "os-table"
  | "android-xml"
  | "json"
  | "text";

/** `BoundsPx`: screen rectangle, px; right and bottom exclusive. */
export interface BoundsPx {
  left: number;
  top: number;
  right: number;
  bottom: number;
  /** `negative`, `empty`, `inverted`. */
  anomalies: string[];
}

/** `SourceSpan`: byte offsets into the original text, 1-based line. */
export interface SourceSpan {
  start_byte: number;
  end_byte: number;
  line: number;
}

/** `NodeStates`: normalised interaction states; absent = not stated. */
export interface NodeStates {
  checked: boolean | null;
  selected: boolean | null;
  focused: boolean | null;
  enabled: boolean | null;
  expanded: boolean | null;
  editable: boolean | null;
}

/** `Attribute`: one attribute in source order. */
export interface Attribute {
  name: string;
  value: string;
}

/** `UiNode`: one node of a UI tree. */
export interface UiNode {
  id: number;
  parent: number | null;
  children: number[];
  depth: number;
  role: string;
  name: string;
  value: string | null;
  key: string | null;
  attributes: Attribute[];
  states: NodeStates;
  bounds_px: BoundsPx | null;
  span: SourceSpan | null;
  synthetic: boolean;
}

/** `UiTree`: a parsed observation. */
export interface UiTree {
  representation: Representation;
  nodes: UiNode[];
}

/**
 * Per-node diff status (`worldloom-obs::diff::NodeStatus` names). `removed`:
 * in the real tree with no counterpart in the predicted one; `added`: in the
 * predicted tree only; `changed`: aligned but name, value, attributes, states
 * or bounds differ; `moved`: aligned by stable key but under another parent
 * or reordered.
 */
export type DiffStatus = "unchanged" | "changed" | "moved" | "added" | "removed";

/** The alignment and per-node statuses of a real/predicted tree pair. */
export interface TreeDiff {
  /** Status of every real node, indexed by node id. */
  real: DiffStatus[];
  /** Status of every predicted node, indexed by node id. */
  predicted: DiffStatus[];
  /** Aligned pairs `[real node id, predicted node id]`. */
  pairs: Array<[number, number]>;
  /** Field changes per real node id (empty for unchanged nodes). */
  real_changes: FieldChange[][];
}

/** One differing field of an aligned node pair. */
export interface FieldChange {
  /** `role`, `name`, `value`, `key`, `bounds`, `state:<name>`, `attr:<name>`. */
  field: string;
  real: string | null;
  predicted: string | null;
}

/** One run of a line diff (0-based line indices, end exclusive). */
export interface LineOp {
  tag: string;
  real_start: number;
  real_end: number;
  predicted_start: number;
  predicted_end: number;
}

/** A line diff of the exact texts. */
export interface LineDiff {
  ops: LineOp[];
  ratio: number;
}

/** One side of a compared representation. */
export interface SideDocument {
  /** The exact text of this view. */
  text: string;
  /** The parsed tree, for tree representations that parsed. */
  tree: UiTree | null;
  /** Why the text did not parse (`ParseError` display), if it did not. */
  parse_error: string | null;
}

/** One representation of a turn, real and predicted side by side. */
export interface ComparedView {
  representation: Representation;
  /** The source's name for this view (`axtree_txt`, `pruned_html`, `main`). */
  name: string;
  real: SideDocument | null;
  predicted: SideDocument | null;
  /** Present when both sides parsed into trees. */
  diff: TreeDiff | null;
  /** Present when both sides exist. */
  line_diff: LineDiff | null;
}

/** One fidelity metric (see docs/metrics.md). */
export interface Metric {
  /** Machine name (`node_f1`, `text_similarity`, `attribute_accuracy`…). */
  name: string;
  /** Value in [0, 1] unless `unit` says otherwise. */
  value: number | null;
  unit: string | null;
  description: string | null;
}

/** A domain anchor: a fact that must carry over (focused bid, URL, package…). */
export interface Anchor {
  kind: string;
  key: string;
  status: "matched" | "mismatched" | "absent";
  real: string | null;
  predicted: string | null;
}

/** LLM-judge scores, 1–5 each (AgentWorldBench rubric). */
export interface JudgeScores {
  format: number | null;
  factuality: number | null;
  consistency: number | null;
  realism: number | null;
  quality: number | null;
  rationale: string | null;
  judge: string | null;
}

/** The fidelity of one prediction against the real observation. */
export interface Fidelity {
  /** The headline score in [0, 1] (drives sparklines and list sorting). */
  overall: number | null;
  metrics: Metric[];
  anchors: Anchor[];
  judge: JudgeScores | null;
  /** Why the turn was not scored, or a note on a prediction that did not parse. */
  note: string | null;
}

/** Which kind of record an observation is. */
export type ObservationKind = "real" | "predicted" | "authored";

/** Which history a prediction's prompt used. */
export type ContextMode = "teacher-forced" | "free-running";

/** A prediction's provenance, for the picker. */
export interface PredictionSummary {
  id: number;
  engine: string;
  /** Sampler seed as a decimal string (seeds are 64-bit). */
  seed: string | null;
  context: ContextMode;
  /** Extraction status (`ok`, `truncated`, `no_observation`, `empty`). */
  status: string;
  params: unknown;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_ms: number | null;
  created_at: string | null;
  overall: number | null;
}

/** An action as shown in lists (`worldloom-core::action::Action`). */
export interface ActionView {
  raw: string;
  format: string;
  summary: string;
  parsed: unknown;
}

/** One trajectory in the sidebar list. */
export interface TrajectorySummary {
  /** Workspace id (decimal string). */
  id: string;
  name: string;
  domain: Domain;
  source_format: string;
  source_path: string | null;
  goal: string | null;
  turn_count: number;
  branch_count: number;
  prediction_count: number;
  /** Lowest per-turn overall fidelity, [0, 1]. */
  lowest_fidelity: number | null;
  tags: string[];
  imported_at: string;
}

/** A root-to-leaf path of the trajectory tree. */
export interface BranchSummary {
  /** The leaf node id as a decimal string. */
  id: string;
  name: string;
  leaf_node: number;
  turn_count: number;
  /** Whether this is the recorded path. */
  recorded: boolean;
  /** Turn where it leaves its parent branch; null for the recorded path. */
  forks_at_turn: number | null;
}

/** A node of the branch tree. */
export interface TreeNodeView {
  node_id: number;
  parent_edge: number | null;
  turn: number;
  kind: ObservationKind | null;
  has_real: boolean;
  prediction_count: number;
  has_authored: boolean;
  fidelity: number | null;
}

/** An edge (action) of the branch tree. */
export interface TreeEdgeView {
  edge_id: number;
  from: number;
  to: number;
  action: ActionView;
  edited_from: number | null;
}

/** One turn of a branch on the timeline. */
export interface TurnSummary {
  /** 1-based turn number (AgentWorldBench counting). */
  turn: number;
  /** Node the turn leads into. */
  node_id: number;
  edge_id: number;
  action: ActionView;
  has_real: boolean;
  prediction_count: number;
  has_authored: boolean;
  /** Overall fidelity of the shown prediction, [0, 1]. */
  fidelity: number | null;
}

/** A screen size in px. */
export interface ScreenSize {
  width_px: number;
  height_px: number;
}

/** Observation facts beside the text (`ObservationMeta`). */
export interface ObservationMetaView {
  url: string | null;
  title: string | null;
  focused_bid: string | null;
  screen: ScreenSize | null;
  package: string | null;
}

/** Everything the panes show for one turn. */
export interface TurnDetail {
  trajectory_id: string;
  /** 1-based turn number, 0 for the initial state. */
  turn: number;
  node_id: number;
  edge_id: number | null;
  action: ActionView | null;
  real_meta: ObservationMetaView | null;
  real_error: string | null;
  predictions: PredictionSummary[];
  /** The prediction the right pane shows. */
  prediction_id: number | null;
  chosen_prediction_id: number | null;
  predicted_kind: ObservationKind | null;
  views: ComparedView[];
  fidelity: Fidelity | null;
  /** Reasoning of the shown prediction, if any. */
  reasoning: string | null;
  raw_output: string | null;
}

// ---- commands ------------------------------------------------------------

export interface ListTrajectoriesRequest {
  query?: string | null;
  domain?: Domain | null;
  has_branches?: boolean | null;
  max_fidelity?: number | null;
  sort?: string | null;
}
export interface ListTrajectoriesResponse {
  trajectories: TrajectorySummary[];
}

export interface GetTrajectoryRequest {
  trajectory_id: string;
}
export interface GetTrajectoryResponse {
  trajectory: TrajectorySummary;
  branches: BranchSummary[];
  nodes: TreeNodeView[];
  edges: TreeEdgeView[];
}

export interface GetBranchRequest {
  trajectory_id: string;
  branch_id: string;
}
export interface GetBranchResponse {
  branch: BranchSummary;
  turns: TurnSummary[];
}

export interface GetTurnRequest {
  trajectory_id: string;
  node_id: number;
  prediction_id: number | null;
}
export type GetTurnResponse = TurnDetail;

/** Events pushed by the back end (SSE `data:` lines / Tauri channel). */
export type StudioEvent =
  | { type: "workspace_changed"; trajectory_id: string | null; kind: string }
  | { type: "prediction_added"; trajectory_id: string; node_id: number; prediction_id: number }
  | { type: "hello"; version: string };

/** The command table: name → request and response types. */
export interface Commands {
  list_trajectories: [ListTrajectoriesRequest, ListTrajectoriesResponse];
  get_trajectory: [GetTrajectoryRequest, GetTrajectoryResponse];
  get_branch: [GetBranchRequest, GetBranchResponse];
  get_turn: [GetTurnRequest, GetTurnResponse];
  choose_prediction: [{ trajectory_id: string; node_id: number; prediction_id: number | null }, { change: unknown }];
}

export type CommandName = keyof Commands;
export type RequestOf<C extends CommandName> = Commands[C][0];
export type ResponseOf<C extends CommandName> = Commands[C][1];
