//! Request, response and view types of every command. These are the contract
//! with the user interface: TypeScript declarations are generated from them
//! (see [`crate::bindings`]) into `ui/src/bindings/api.ts`.
//!
//! The domain types travel as they are: domains, representations, context
//! modes, chat messages, observation facts and action formats are the
//! `worldloom-core` types, UI trees, field changes, line diffs and anchors
//! the `worldloom-obs` ones (both crates derive `ts_rs::TS` behind their
//! `ts` feature, which this crate turns on); they are re-exported here. A
//! type is defined here only for a request, a response, or a view whose
//! shape differs from the domain type, and its doc says why.
//!
//! Conventions: field names are snake_case; ids of trajectories and branches
//! are strings (decimal workspace keys), node, edge and prediction ids are
//! numbers (the `worldloom-core` ids); fractions are in `[0, 1]`; times carry
//! their unit in the name. Optional values of the API's own types are
//! `null`, never absent; the domain types leave out empty optional fields
//! (their TypeScript field is then `name?: T | null`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use worldloom_core::action::{
    ActionFormat, AndroidAction, AndroidTarget, ParsedAction, PythonCall,
};
pub use worldloom_core::domain::{ChatMessage, ChatRole, Domain, Representation};
pub use worldloom_core::observation::{ObservationMeta, ScreenSize};
pub use worldloom_core::output::{OutputStatus, StopReason};
pub use worldloom_core::trajectory::ContextMode;
pub use worldloom_obs::diff::{FieldChange, LineDiff, LineOp, LineTag};
pub use worldloom_obs::metrics::{Anchor, AnchorStatus};
pub use worldloom_obs::tree::{
    Attribute, BoundsAnomaly, BoundsPx, NodeId, NodeStates, SourceSpan, Truncation,
    TruncationReason, UiNode, UiTree,
};

// ---------------------------------------------------------------------------
// Tree diffs.

/// Per-node diff status (`worldloom-obs` `NodeStatus` names): `removed` is in
/// the real tree only, `added` in the predicted tree only, `changed` aligned
/// with differing fields, `moved` aligned by stable key at another place.
/// A view: `NodeStatus` is one tagged object per node carrying its
/// counterpart and changes, which [`TreeDiff`] splits into flat arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DiffStatus {
    /// Aligned and equal.
    Unchanged,
    /// Aligned, fields differ.
    Changed,
    /// Aligned by key, different place.
    Moved,
    /// Predicted only.
    Added,
    /// Real only.
    Removed,
}

/// The alignment and statuses of a real / predicted tree pair. A view of
/// `worldloom-obs` `TreeDiff` (`{real, pred, summary}` with one `NodeStatus`
/// object per node): the panes index a status by node id on either side and
/// walk aligned pairs, so the statuses, the pairs and the real side's field
/// changes travel as three flat lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TreeDiff {
    /// Status of every real node, indexed by node id.
    pub real: Vec<DiffStatus>,
    /// Status of every predicted node, indexed by node id.
    pub predicted: Vec<DiffStatus>,
    /// Aligned pairs `[real node id, predicted node id]`.
    pub pairs: Vec<(u32, u32)>,
    /// Field changes per real node id (empty lists for unchanged nodes).
    pub real_changes: Vec<Vec<FieldChange>>,
}

// ---------------------------------------------------------------------------
// Turn views.

/// One side (real or predicted) of a compared representation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SideDocument {
    /// The exact text of this view, or its first
    /// [`crate::commands::TEXT_MAX_BYTES`] bytes (cut at a character
    /// boundary) when `text_bytes` is set.
    pub text: String,
    /// The whole text's length in bytes when `text` holds a cut prefix of
    /// it; `null` when `text` is whole.
    #[serde(default)]
    #[ts(type = "number | null")]
    pub text_bytes: Option<u64>,
    /// The parsed tree, for tree representations that parsed, when it has at
    /// most [`crate::commands::WHOLE_TREE_MAX_NODES`] nodes (views that need
    /// every node: wireframe, render, source spans, the node inspector).
    /// Larger trees travel only as `rows`.
    pub tree: Option<UiTree>,
    /// The first window of the tree's visible rows (nothing collapsed), with
    /// the node count; further windows come from `get_tree_rows`. Present
    /// whenever `tree` parsed, large or small: the tree panes read their rows
    /// only through windows.
    pub rows: Option<TreeWindow>,
    /// Why the text did not parse, if it did not.
    pub parse_error: Option<String>,
    /// Repairs and oddities met while parsing (replaced bytes, text after the
    /// root, the lenient XML fallback…), in input order. Absent when there
    /// are none, so documents without warnings keep their shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<SideWarning>,
}

/// A non-fatal problem met while parsing one side. A view of `worldloom-obs`
/// `ParseWarning`, which has no TypeScript declaration: the kind travels as
/// its snake_case name (`invalid_utf8`, `trailing_text`, `lenient_fallback`,
/// `forbidden_character`, `malformed`, `indent_jump`, `nesting_limit`…), so a
/// kind added to the parser needs no change here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SideWarning {
    /// What happened, as the parser's snake_case kind name.
    pub kind: String,
    /// 1-based line in the side's text.
    pub line: u32,
    /// Byte offset in the side's text (UTF-8 bytes from the start).
    #[ts(type = "number")]
    pub byte: usize,
    /// Human-readable detail.
    pub message: String,
}

/// One representation of a turn, real and predicted side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ComparedView {
    /// The representation.
    pub representation: Representation,
    /// The source's name for it (`main`, `pruned_html`, `step_03.tsv`).
    pub name: String,
    /// The real side, when the state was recorded in this representation.
    pub real: Option<SideDocument>,
    /// The predicted (or authored) side, when it is in this representation.
    pub predicted: Option<SideDocument>,
    /// Present when both sides parsed into trees.
    pub diff: Option<TreeDiff>,
    /// Present when both sides exist.
    pub line_diff: Option<LineDiff>,
}

/// Which side of a compared view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PaneSide {
    /// The real (recorded) observation.
    Real,
    /// The predicted or authored observation.
    Predicted,
}

/// How many nodes of one side have each diff status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StatusCounts {
    /// Aligned and equal.
    pub unchanged: u32,
    /// Aligned, fields differ.
    pub changed: u32,
    /// Aligned by key at another place.
    pub moved: u32,
    /// Predicted only.
    pub added: u32,
    /// Real only.
    pub removed: u32,
}

/// One visible row of a tree window: the node (its `children` list left
/// empty; `child_count` says how many it has) with its diff marks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TreeRow {
    /// 0-based index among the visible rows.
    pub row: u32,
    /// The node; `node.id` is its index in the whole tree, `node.children`
    /// is empty.
    pub node: UiNode,
    /// How many children the node has.
    pub child_count: u32,
    /// Index one past the node's last descendant (pre-order), so that the
    /// subtree is `node.id .. subtree_end`.
    pub subtree_end: u32,
    /// Its diff status, when the view has a diff.
    pub status: Option<DiffStatus>,
    /// The aligned node on the other side, when aligned.
    pub counterpart: Option<u32>,
    /// Field changes against the counterpart (empty when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<FieldChange>,
}

/// A window of a tree's visible rows (pre-order, skipping the descendants
/// of collapsed nodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TreeWindow {
    /// Nodes in the whole tree.
    pub node_count: u32,
    /// Visible rows with the collapsed set applied.
    pub visible_count: u32,
    /// Index of the first row in `rows`.
    pub offset: u32,
    /// The rows `offset .. offset + rows.len()`.
    pub rows: Vec<TreeRow>,
    /// The collapsed nodes in effect (the request's, less the ancestors of a
    /// revealed node), ascending.
    pub collapsed: Vec<u32>,
    /// The row of the revealed node, when one was asked for.
    pub revealed_row: Option<u32>,
    /// Diff status counts over the whole side, when the view has a diff.
    pub status_counts: Option<StatusCounts>,
}

/// `get_tree_rows` request: a window of one side's tree of a turn as
/// `get_turn` showed it (same trajectory and node; `prediction_id` is the
/// reply's `TurnDetail.prediction_id`, the prediction shown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetTreeRowsRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node (state).
    pub node_id: u32,
    /// The prediction shown (`TurnDetail.prediction_id`; `null` when an
    /// authored observation or nothing is shown).
    #[serde(default)]
    pub prediction_id: Option<u32>,
    /// Index into `TurnDetail.views`.
    pub view_index: u32,
    /// Which side.
    pub side: PaneSide,
    /// First visible row wanted.
    pub offset: u32,
    /// Rows wanted (at most [`crate::commands::TREE_WINDOW_MAX_ROWS`]).
    pub limit: u32,
    /// Collapsed node ids (their descendants are hidden).
    #[serde(default)]
    pub collapsed: Vec<u32>,
    /// A node to reveal: its collapsed ancestors are expanded and its row
    /// returned in `revealed_row`.
    #[serde(default)]
    pub reveal: Option<u32>,
}

/// `search_tree` request: nodes of one side's tree whose role, name, value,
/// key and attributes (`name=value`) contain every whitespace-separated word
/// of `query`, case-insensitively.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchTreeRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node (state).
    pub node_id: u32,
    /// The prediction shown (`TurnDetail.prediction_id`; `null` when an
    /// authored observation or nothing is shown).
    #[serde(default)]
    pub prediction_id: Option<u32>,
    /// Index into `TurnDetail.views`.
    pub view_index: u32,
    /// Which side.
    pub side: PaneSide,
    /// The words to find.
    pub query: String,
    /// Most matches returned (at most [`crate::commands::SEARCH_MAX_MATCHES`]).
    pub limit: u32,
}

/// `search_tree` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchTreeResponse {
    /// Every match in the tree.
    pub total: u32,
    /// The first `limit` matching node ids, in document order.
    pub matches: Vec<u32>,
}

/// One fidelity metric (`docs/metrics.md`), with its description from the
/// server so the interface never restates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Metric {
    /// Machine name (`node_f1`, `text_f1`, `attribute_accuracy`…).
    pub name: String,
    /// Value, in `[0, 1]` unless `unit` says otherwise.
    pub value: Option<f64>,
    /// Unit, when not a fraction.
    pub unit: Option<String>,
    /// What it measures.
    pub description: Option<String>,
}

/// LLM-judge scores, 1–5 each (AgentWorldBench rubric). Read from a judged
/// row (`worldloom judge` output), which has no type of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct JudgeScores {
    /// Format.
    pub format: Option<f64>,
    /// Factuality.
    pub factuality: Option<f64>,
    /// Consistency.
    pub consistency: Option<f64>,
    /// Realism.
    pub realism: Option<f64>,
    /// Quality.
    pub quality: Option<f64>,
    /// The mean of the dimensions present on AgentWorldBench's scale,
    /// `(mean − 1) / 4 × 100`, in `[0, 100]` (`worldloom-eval` `score`).
    pub score: Option<f64>,
    /// The judge's rationale.
    pub rationale: Option<String>,
    /// The judge model.
    pub judge: Option<String>,
}

/// The fidelity of the shown prediction against the real observation. A view
/// of `worldloom-obs` `Evaluation`: the metrics as a named list with
/// descriptions, the headline score chosen here (node F1, else text F1,
/// else the line ratio), and the judge's scores, which the evaluation does
/// not hold; per-node diffs travel in [`ComparedView::diff`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Fidelity {
    /// Headline score in `[0, 1]`: node F1 for trees, else text F1, else
    /// the line ratio; `null` when not scored.
    pub overall: Option<f64>,
    /// Every metric computed.
    pub metrics: Vec<Metric>,
    /// Domain anchors.
    pub anchors: Vec<Anchor>,
    /// Judge scores, when a judge result is stored.
    pub judge: Option<JudgeScores>,
    /// Why the turn was not scored, or a note on inputs that did not parse.
    pub note: Option<String>,
}

/// Which kind of record an observation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ObservationKind {
    /// Recorded from the environment.
    Real,
    /// Predicted by a world model.
    Predicted,
    /// Written or corrected by hand.
    Authored,
}

/// A prediction's provenance, for the picker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PredictionSummary {
    /// Id within the node.
    pub id: u32,
    /// Engine name.
    pub engine: String,
    /// Sampler seed, as a decimal string (seeds are 64-bit).
    pub seed: Option<String>,
    /// Context mode.
    pub context: ContextMode,
    /// Extraction status.
    pub status: OutputStatus,
    /// Generation parameters as the engine reported them.
    pub params: serde_json::Value,
    /// Prompt length, tokens.
    pub prompt_tokens: Option<u32>,
    /// Generated tokens.
    pub completion_tokens: Option<u32>,
    /// Total generation time, ms.
    pub total_ms: Option<f64>,
    /// When it was made (RFC 3339).
    pub created_at: Option<String>,
    /// Its overall fidelity, when scored.
    pub overall: Option<f64>,
}

/// An action as shown in lists. A view of `worldloom-core` `Action`: it adds
/// the one-line summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ActionView {
    /// The exact text.
    pub raw: String,
    /// Its action language.
    pub format: ActionFormat,
    /// First line, at most 80 characters.
    pub summary: String,
    /// The parsed form, when it parsed.
    pub parsed: Option<ParsedAction>,
}

// ---------------------------------------------------------------------------
// Trajectories, branches, turns.

/// One trajectory in the sidebar list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TrajectorySummary {
    /// Workspace id (decimal string).
    pub id: String,
    /// Display name: the trajectory's own id.
    pub name: String,
    /// Domain.
    pub domain: Domain,
    /// Source format (`agentlab`, `osworld`, `android-dumps`,
    /// `agentworldbench`, `native`).
    pub source_format: String,
    /// Source file or folder.
    pub source_path: Option<String>,
    /// Task instruction.
    pub goal: Option<String>,
    /// Turns on the recorded (main) path.
    pub turn_count: u32,
    /// Root-to-leaf paths (1 when never branched).
    pub branch_count: u32,
    /// Predictions over all nodes.
    pub prediction_count: u32,
    /// Lowest stored overall fidelity over its turns, `[0, 1]`.
    pub lowest_fidelity: Option<f64>,
    /// Tags set on it or on its nodes.
    pub tags: Vec<String>,
    /// When it was imported (UTC).
    pub imported_at: String,
}

/// A root-to-leaf path of the trajectory tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchSummary {
    /// Branch id: the leaf node id as a decimal string.
    pub id: String,
    /// Display name (`recorded`, `branch at turn 3: click('12')`).
    pub name: String,
    /// Node id of the leaf.
    pub leaf_node: u32,
    /// Number of turns.
    pub turn_count: u32,
    /// Whether this is the recorded (main) path.
    pub recorded: bool,
    /// Turn (1-based) where it leaves its parent branch; `null` for the
    /// recorded path.
    pub forks_at_turn: Option<u32>,
}

/// A node of the branch tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TreeNodeView {
    /// Node id.
    pub node_id: u32,
    /// The edge leading here (`null` for the root).
    pub parent_edge: Option<u32>,
    /// Depth = turn number.
    pub turn: u32,
    /// What the node shows: real when recorded, else authored when authored,
    /// else predicted when predicted; `null` for a state with nothing yet.
    pub kind: Option<ObservationKind>,
    /// Has a recorded observation.
    pub has_real: bool,
    /// Live predictions.
    pub prediction_count: u32,
    /// Has an authored observation.
    pub has_authored: bool,
    /// Overall fidelity of the shown prediction, when scored.
    pub fidelity: Option<f64>,
}

/// An edge (action) of the branch tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TreeEdgeView {
    /// Edge id.
    pub edge_id: u32,
    /// From node.
    pub from: u32,
    /// To node.
    pub to: u32,
    /// The action.
    pub action: ActionView,
    /// The edge this one was edited from (a branch), if any.
    pub edited_from: Option<u32>,
    /// The control instruction added to the world model's prompt for this
    /// edge's turn (`set_perturbation`), if any.
    pub perturbation: Option<String>,
}

/// One turn of a branch, for the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TurnSummary {
    /// 1-based turn number (AgentWorldBench counting).
    pub turn: u32,
    /// Node the turn leads into.
    pub node_id: u32,
    /// The edge (action) of the turn.
    pub edge_id: u32,
    /// The action.
    pub action: ActionView,
    /// Whether the reached state was recorded.
    pub has_real: bool,
    /// Predictions of the reached state.
    pub prediction_count: u32,
    /// Whether it has an authored observation.
    pub has_authored: bool,
    /// Overall fidelity of the shown prediction, `[0, 1]`.
    pub fidelity: Option<f64>,
    /// The control instruction (perturbation) on this turn, if any.
    pub perturbation: Option<String>,
}

/// Everything the panes show for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TurnDetail {
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// 1-based turn number (0 for the initial state).
    pub turn: u32,
    /// The node (state) shown.
    pub node_id: u32,
    /// The edge that led here (`null` at the root).
    pub edge_id: Option<u32>,
    /// The action that led here.
    pub action: Option<ActionView>,
    /// Facts of the real observation.
    pub real_meta: Option<ObservationMeta>,
    /// The step's error (`last_action_error`, a failed capture), if any.
    pub real_error: Option<String>,
    /// Every live prediction of the node.
    pub predictions: Vec<PredictionSummary>,
    /// The prediction the right pane shows (`null` when it shows an authored
    /// observation or nothing).
    pub prediction_id: Option<u32>,
    /// The chosen prediction stored for the node.
    pub chosen_prediction_id: Option<u32>,
    /// What the right pane shows.
    pub predicted_kind: Option<ObservationKind>,
    /// The representations, real and predicted side by side.
    pub views: Vec<ComparedView>,
    /// Fidelity of the right pane against the real observation.
    pub fidelity: Option<Fidelity>,
    /// The shown prediction's reasoning, if any.
    pub reasoning: Option<String>,
    /// The shown prediction's raw output.
    pub raw_output: Option<String>,
    /// The shown prediction's observation tokens with their log-probabilities,
    /// when the engine reported them (for uncertainty shading).
    pub tokens: Option<Vec<TokenView>>,
    /// The control instruction (perturbation) on the turn leading here.
    pub perturbation: Option<String>,
}

// ---------------------------------------------------------------------------
// Commands.

/// `workspace_info` request (no fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct WorkspaceInfoRequest {}

/// `workspace_info` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct WorkspaceInfoResponse {
    /// The workspace file.
    pub path: String,
    /// Its schema version.
    pub schema_version: u32,
    /// Live trajectories.
    pub trajectory_count: u32,
    /// Whether `undo` would do something.
    pub can_undo: bool,
    /// Whether `redo` would do something.
    pub can_redo: bool,
    /// The Worldloom version serving it.
    pub version: String,
}

/// `list_trajectories` request: every filter is optional and they combine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ListTrajectoriesRequest {
    /// Case-insensitive text matched against name, goal, source path and tags.
    pub query: Option<String>,
    /// Only this domain.
    pub domain: Option<Domain>,
    /// Only trajectories with (true) or without (false) branches.
    pub has_branches: Option<bool>,
    /// Only trajectories whose lowest fidelity is at most this value.
    pub max_fidelity: Option<f64>,
    /// Sort order; `null` is `imported`.
    pub sort: Option<TrajectorySort>,
}

/// The order of the trajectory list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TrajectorySort {
    /// Import order (the default).
    Imported,
    /// By name.
    Name,
    /// Lowest fidelity first; unscored trajectories last.
    LowestFidelity,
}

/// `list_trajectories` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListTrajectoriesResponse {
    /// Matching trajectories.
    pub trajectories: Vec<TrajectorySummary>,
}

/// `get_trajectory` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetTrajectoryRequest {
    /// Workspace id.
    pub trajectory_id: String,
}

/// `get_trajectory` response: the summary, branches and the whole tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetTrajectoryResponse {
    /// The summary.
    pub trajectory: TrajectorySummary,
    /// Every root-to-leaf path; the first is the recorded one.
    pub branches: Vec<BranchSummary>,
    /// Live nodes.
    pub nodes: Vec<TreeNodeView>,
    /// Live edges.
    pub edges: Vec<TreeEdgeView>,
}

/// `get_branch` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetBranchRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// Branch id (leaf node id).
    pub branch_id: String,
}

/// `get_branch` response: the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetBranchResponse {
    /// The branch.
    pub branch: BranchSummary,
    /// Its turns, turn 1 first.
    pub turns: Vec<TurnSummary>,
}

/// `get_turn` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetTurnRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node (state) to show.
    pub node_id: u32,
    /// The prediction for the right pane; `null` shows the chosen one (else
    /// the authored observation, else the newest prediction).
    #[serde(default)]
    pub prediction_id: Option<u32>,
}

/// `list_predictions` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListPredictionsRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node.
    pub node_id: u32,
}

/// `list_predictions` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListPredictionsResponse {
    /// Live predictions, oldest first.
    pub predictions: Vec<PredictionSummary>,
    /// The chosen one.
    pub chosen_prediction_id: Option<u32>,
}

/// `choose_prediction` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChoosePredictionRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node.
    pub node_id: u32,
    /// The prediction to show; `null` clears the choice.
    pub prediction_id: Option<u32>,
}

/// What a change of the undo log did (`worldloom-store` change kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Trajectories imported.
    Import,
    /// A prediction added to a state.
    AddPrediction,
    /// The prediction a state shows chosen or cleared.
    ChoosePrediction,
    /// A hand-written observation stored.
    SetAuthored,
    /// A sibling edge (an edited action) added.
    AddBranch,
    /// An action appended from a state.
    AddTurn,
    /// A turn's control instruction set or cleared.
    SetPerturbation,
    /// A note added.
    AddNote,
    /// A note edited.
    EditNote,
    /// A tag set or cleared.
    SetTag,
    /// A run (an eval output) imported: its rows' predictions and any
    /// trajectories it added.
    ImportRun,
    /// A label set on or cleared from a run's row.
    SetLabel,
    /// A run row's note written or cleared.
    SetRowNote,
}

impl ChangeKind {
    /// The kind of an undo-log record (`worldloom-store` `ChangeRecord::kind`).
    ///
    /// # Errors
    /// [`ApiError`](crate::ApiError) (internal) for a kind this build does
    /// not know.
    pub fn from_store(kind: &str) -> Result<Self, crate::ApiError> {
        serde_json::from_value(serde_json::Value::String(kind.to_owned()))
            .map_err(|_| crate::ApiError::internal(format!("unknown change kind `{kind}`")))
    }
}

/// A change of the workspace that is not an undo-log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StudioChangeKind {
    /// The newest change undone.
    Undo,
    /// The oldest undone change redone.
    Redo,
    /// The engine settings saved (not an undoable change).
    SetEngine,
    /// A slow event reader missed events and should refresh everything.
    Lagged,
}

/// What [`StudioEvent::WorkspaceChanged`] reports: a change of the undo log
/// or another change; on the wire the bare name (`add_turn`, `undo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(untagged)]
pub enum WorkspaceChangeKind {
    /// A change recorded in the undo log.
    Change(ChangeKind),
    /// Undo, redo, engine settings, a lagging reader.
    Studio(StudioChangeKind),
}

impl From<ChangeKind> for WorkspaceChangeKind {
    fn from(kind: ChangeKind) -> Self {
        Self::Change(kind)
    }
}

impl From<StudioChangeKind> for WorkspaceChangeKind {
    fn from(kind: StudioChangeKind) -> Self {
        Self::Studio(kind)
    }
}

/// Whether a change of the undo log is in effect (`worldloom-store`
/// `ChangeState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    /// In effect.
    Applied,
    /// Undone; `redo` can apply it again.
    Undone,
    /// Undone and then superseded by a newer change.
    Abandoned,
}

/// A change of the undo log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeSummary {
    /// Change id (decimal string).
    pub id: String,
    /// What the change did.
    pub kind: ChangeKind,
    /// Trajectory changed, if one.
    pub trajectory_id: Option<String>,
    /// Human description.
    pub summary: String,
    /// Whether it is in effect.
    pub state: ChangeState,
    /// When (UTC).
    pub created_at: String,
}

/// Response of commands that make one change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeResponse {
    /// The change made, undone or redone; `null` when there was nothing to
    /// undo or redo.
    pub change: Option<ChangeSummary>,
}

/// `undo` / `redo` / `history` request (no fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct EmptyRequest {}

/// `history` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HistoryResponse {
    /// The newest 200 changes, newest first.
    pub changes: Vec<ChangeSummary>,
}

/// `import_files` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFilesRequest {
    /// Files or folders on the machine running the back end.
    pub paths: Vec<String>,
}

/// One trajectory an import added or found already imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportedTrajectory {
    /// Workspace id.
    pub trajectory_id: String,
    /// The trajectory's own id.
    pub name: String,
    /// The file it came from.
    pub path: String,
    /// False when the same file was imported before (nothing added).
    pub added: bool,
}

/// A file that could not be imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFailure {
    /// The file.
    pub path: String,
    /// Why, naming the line or field.
    pub message: String,
}

impl ImportFailure {
    /// A failure of `path`; a leading `path: ` in `message` (errors name
    /// their file) is dropped so the path is not shown twice.
    pub fn new(path: &str, message: &str) -> Self {
        let message = message
            .strip_prefix(path)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(message);
        Self {
            path: path.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// A run an import added or found already imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportedRun {
    /// Run id.
    pub run_id: String,
    /// Its name.
    pub name: String,
    /// The file it came from.
    pub path: String,
    /// How many rows it has.
    pub rows: u32,
    /// False when the same file was imported before (nothing added).
    pub added: bool,
}

/// `import_files` response. Files are independent: one failing does not stop
/// the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFilesResponse {
    /// Trajectories added or already present (a run's included).
    pub imported: Vec<ImportedTrajectory>,
    /// Runs added or already present: files whose rows carry predictions
    /// (`gen`: `worldloom eval` output, the official `predictions.jsonl` and
    /// `judged.jsonl`).
    #[serde(default)]
    pub runs: Vec<ImportedRun>,
    /// Files that failed.
    pub failed: Vec<ImportFailure>,
    /// Problems that did not stop an import (`path:line: message`).
    pub warnings: Vec<String>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// The native Worldloom JSON file (`worldloom-trajectory`).
    Native,
    /// AgentWorldBench JSONL rows.
    Agentworldbench,
    /// Supervised fine-tuning chat JSONL.
    Sft,
}

/// `export` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// Only this branch (leaf node id); `null` exports the whole tree
    /// (native) or the recorded path (JSONL formats).
    #[serde(default)]
    pub branch_id: Option<String>,
    /// The format.
    pub format: ExportFormat,
    /// Write to this file on the back end's machine; `null` returns the
    /// content only.
    #[serde(default)]
    pub path: Option<String>,
}

/// `export` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportResponse {
    /// The exported text.
    pub content: String,
    /// A file name to save it under.
    pub file_name: String,
    /// The file written, when a path was given.
    pub written_to: Option<String>,
    /// JSONL rows (or trajectories, for native).
    pub record_count: u32,
}

/// `add_note` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AddNoteRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node, for a note on one state.
    #[serde(default)]
    pub node_id: Option<u32>,
    /// The text.
    pub text: String,
}

/// A note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct NoteView {
    /// Note id (decimal string).
    pub id: String,
    /// The node, if about one state.
    pub node_id: Option<u32>,
    /// Current text.
    pub text: String,
    /// When last written (UTC).
    pub updated_at: String,
}

/// `list_notes` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListNotesRequest {
    /// Workspace id.
    pub trajectory_id: String,
}

/// `list_notes` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListNotesResponse {
    /// Current notes, oldest first.
    pub notes: Vec<NoteView>,
}

/// `set_tag` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetTagRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node (a branch's leaf), or `null` for the trajectory.
    #[serde(default)]
    pub node_id: Option<u32>,
    /// The tag.
    pub tag: String,
    /// Set (true) or clear (false).
    pub present: bool,
}

// ---------------------------------------------------------------------------
// Engines.

/// Compute dtype of a local model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ModelDtype {
    /// 32-bit float.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    F16,
}

/// Which engine steps the world model. Saved per workspace (no secrets: an
/// endpoint's API key is read from the named environment variable or the OS
/// keyring when the engine is created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EngineSettings {
    /// A baseline that needs no weights (`copy`: the current state
    /// unchanged, `worldloom-engine` `CopyEngine`).
    Baseline {
        /// The baseline's name (`copy`).
        name: String,
    },
    /// A Hugging Face model directory run in-process (`LocalEngine` over
    /// Qwen3.5-MoE).
    Local {
        /// The model directory on the back end's machine.
        model_dir: String,
        /// `cpu`, `cuda`, `cuda:N`, `metal`.
        device: String,
        /// Compute dtype.
        dtype: ModelDtype,
    },
    /// An OpenAI-compatible chat-completions endpoint.
    Openai {
        /// Base URL, e.g. `http://127.0.0.1:8000/v1`.
        base_url: String,
        /// The served model name.
        model: String,
        /// The environment variable holding the API key (`null`: no key).
        api_key_env: Option<String>,
        /// Step deadline in seconds: a step against this endpoint that has
        /// not finished by then ends with an error naming the limit, even
        /// when the endpoint keeps trickling bytes. Absent or `null`: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        step_deadline_s: Option<u32>,
        /// Where the API key comes from. Absent or `null`: `env` (the
        /// variable named by `api_key_env`), so settings saved before this
        /// field load as before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        key_source: Option<KeySource>,
        /// The OS keyring account (service `worldloom`) holding the key when
        /// `key_source` is `keyring`. Absent, `null` or blank: the base URL
        /// as given. Only the account name is saved, never the key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        keyring_account: Option<String>,
    },
}

/// Where an OpenAI-compatible endpoint's API key is read from when the
/// engine is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// The environment variable named by `api_key_env` (`null`: no key).
    #[default]
    Env,
    /// The OS keyring (Secret Service, macOS Keychain, Windows Credential
    /// Manager), service `worldloom`, account `keyring_account` or the base
    /// URL.
    Keyring,
}

/// `set_endpoint_key` request: stores an API key in the OS keyring.
#[derive(Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetEndpointKeyRequest {
    /// The keyring account (service `worldloom`): the endpoint's base URL or
    /// a name of the user's choosing. Must not be blank.
    pub account: String,
    /// The API key. Never echoed back, logged or written to the workspace;
    /// empty deletes the stored key.
    pub key: String,
}

impl std::fmt::Debug for SetEndpointKeyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetEndpointKeyRequest")
            .field("account", &self.account)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// `endpoint_key_status` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EndpointKeyStatusRequest {
    /// The keyring account (service `worldloom`).
    pub account: String,
}

/// Whether the OS keyring holds a key for an account (the key itself is never
/// returned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EndpointKeyStatus {
    /// The keyring account asked about.
    pub account: String,
    /// Whether a non-empty key is stored.
    pub stored: bool,
}

/// Generation parameters (`worldloom-engine` `GenerationParams`); defaults
/// from the Qwen-AgentWorld model card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GenerationParamsView {
    /// Softmax temperature; 0 is greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1].
    pub top_p: f64,
    /// Keep the k most likely tokens; 0 keeps all.
    pub top_k: u32,
    /// Sampler seed, a u64 as a decimal string.
    pub seed: String,
    /// Upper bound on generated tokens.
    pub max_new_tokens: u32,
    /// Let the model reason before answering (`enable_thinking`).
    pub enable_thinking: bool,
    /// Ask for per-token log-probabilities.
    pub logprobs: bool,
    /// Stop right after the observation block closes.
    pub stop_after_observation: bool,
}

/// The workspace's engine and whether it is ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EngineStatus {
    /// The saved settings (`null` only when none could be read).
    pub settings: Option<EngineSettings>,
    /// The saved generation parameters.
    pub params: GenerationParamsView,
    /// Whether an engine instance is loaded and can step now.
    pub ready: bool,
    /// The engine's provenance name (`copy`, `local:DIR`, `openai:MODEL`).
    pub name: Option<String>,
    /// A human description (`Qwen3.5-MoE 35B-A3B on cuda:0, bf16`).
    pub description: Option<String>,
    /// Why the engine could not be created, if it could not.
    pub error: Option<String>,
    /// Estimated device memory of a local model, bytes.
    #[ts(type = "number | null")]
    pub memory_estimate_bytes: Option<u64>,
}

/// `inspect_model_dir` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct InspectModelDirRequest {
    /// The model directory on the back end's machine.
    pub path: String,
}

/// Memory a model needs in one dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DtypeMemory {
    /// The dtype.
    pub dtype: ModelDtype,
    /// Weights, decode state for `context_tokens` tokens and scratch, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
}

/// What a model directory holds, read before loading it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelDirInfo {
    /// The directory.
    pub path: String,
    /// `config.json` `model_type` (`qwen3_5_moe`).
    pub architecture: String,
    /// Parameters in total.
    #[ts(type = "number")]
    pub total_params: u64,
    /// Parameters active per token (routed experts counted `top_k` times).
    #[ts(type = "number")]
    pub active_params: u64,
    /// Estimated memory per dtype.
    pub memory: Vec<DtypeMemory>,
    /// The context length the estimates reserve decode state for, tokens.
    pub context_tokens: u32,
    /// Free memory on the CPU (or unified memory), bytes, when readable.
    #[ts(type = "number | null")]
    pub available_memory_bytes: Option<u64>,
    /// `tokenizer.json` is present (for a GGUF file: beside it, or else a
    /// tokenizer in its metadata).
    pub has_tokenizer: bool,
    /// A chat template is present (`chat_template.jinja` or in
    /// `tokenizer_config.json`; for a lone GGUF file
    /// `tokenizer.chat_template`).
    pub has_chat_template: bool,
    /// Devices this build can run on (`cpu`, `cuda:0`, `metal`).
    pub devices: Vec<String>,
}

/// `set_engine` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetEngineRequest {
    /// The engine.
    pub settings: EngineSettings,
    /// Generation parameters.
    pub params: GenerationParamsView,
}

// ---------------------------------------------------------------------------
// Stepping.

/// `preview_prompt` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PreviewPromptRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node to predict.
    pub node_id: u32,
    /// Which history the prompt uses.
    pub context: ContextMode,
    /// A control instruction to preview for the predicted turn in place of
    /// the stored one; absent or `null` uses the stored one, `""` none.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub perturbation: Option<String>,
}

/// `preview_prompt` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PreviewPromptResponse {
    /// Exactly the messages `step` sends.
    pub messages: Vec<ChatMessage>,
}

/// `step` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StepRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node to predict (not the root).
    pub node_id: u32,
    /// Which history the prompt uses.
    pub context: ContextMode,
}

/// `step` response: the job runs on; its progress arrives as events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StepResponse {
    /// The job, for `cancel_step` and to match events.
    pub job_id: String,
    /// Workspace id.
    pub trajectory_id: String,
    /// The node being predicted.
    pub node_id: u32,
}

/// One generated token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TokenView {
    /// Its text.
    pub text: String,
    /// Natural-log probability under the model, when reported.
    pub logprob: Option<f64>,
    /// Entropy of the distribution it was drawn from (nats), when reported.
    pub entropy: Option<f64>,
}

/// Counts and timings of one step (`worldloom-engine` `GenerationStats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StepStats {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Prompt tokens the model read (re-read) this time.
    pub prompt_tokens_computed: u32,
    /// Prompt tokens taken from a state snapshot.
    pub prompt_tokens_reused: u32,
    /// Tokens generated (reasoning included).
    pub completion_tokens: u32,
    /// Prompt reading time, ms.
    pub prefill_ms: f64,
    /// Generation time, ms.
    pub decode_ms: f64,
    /// Generated tokens per second of decode time.
    pub decode_tokens_per_sec: f64,
    /// Why generation ended (`end_of_turn`, `observation_closed`,
    /// `max_tokens`, `stop_string`, `cancelled`); `null` when the engine
    /// cannot say.
    pub stop_reason: Option<StopReason>,
}

/// `cancel_step` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CancelStepRequest {
    /// A step or rollout job.
    pub job_id: String,
}

/// `cancel_step` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CancelStepResponse {
    /// False when the job had already finished (or never existed).
    pub cancelled: bool,
}

/// `rollout` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RolloutRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The state to continue from.
    pub node_id: u32,
    /// One action per turn, in order.
    pub actions: Vec<String>,
    /// Which history each step uses (free-running for a rollout).
    pub context: ContextMode,
}

/// `rollout` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RolloutResponse {
    /// The job, for `cancel_step` and to match events.
    pub job_id: String,
}

// ---------------------------------------------------------------------------
// Editing and branching.

/// `edit_action` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EditActionRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The turn (edge) whose action is edited.
    pub edge_id: u32,
    /// The new action's exact text.
    pub raw: String,
}

/// `append_turn` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AppendTurnRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The state the action is taken from.
    pub node_id: u32,
    /// The action's exact text.
    pub raw: String,
}

/// A new edge and state (a branch or a longer branch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchCreated {
    /// Workspace id.
    pub trajectory_id: String,
    /// The new edge.
    pub edge_id: u32,
    /// The new state.
    pub node_id: u32,
    /// The branch it ends: the new node id as a string.
    pub branch_id: String,
    /// The change made (undoable).
    pub change: Option<ChangeSummary>,
}

/// `parse_action` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ParseActionRequest {
    /// The domain whose action language applies.
    pub domain: Domain,
    /// The action text.
    pub raw: String,
}

/// `parse_action` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ParseActionResponse {
    /// The action language.
    pub format: ActionFormat,
    /// The parsed form, when it parsed.
    pub parsed: Option<ParsedAction>,
    /// Why it did not parse, for formats that have a parser.
    pub error: Option<String>,
    /// First line, at most 80 characters.
    pub summary: String,
}

/// `validate_observation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidateObservationRequest {
    /// How the text is to be read.
    pub representation: Representation,
    /// The text.
    pub text: String,
}

/// How bad a [`ValidationProblem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The text does not parse.
    Error,
    /// The text parsed after a repair.
    Warning,
}

/// One problem the observation parser found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidationProblem {
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column (characters), when known.
    pub column: Option<u32>,
    /// Whether the text parsed.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
}

/// What the observation parser (`worldloom-obs`) says about a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidationReport {
    /// No error (warnings allowed).
    pub ok: bool,
    /// Nodes of the parsed tree (`null` for text and JSON, or when it did
    /// not parse).
    pub node_count: Option<u32>,
    /// Errors and warnings in text order.
    pub problems: Vec<ValidationProblem>,
}

/// `author_observation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AuthorObservationRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The state.
    pub node_id: u32,
    /// How the text is to be read.
    pub representation: Representation,
    /// The observation text.
    pub text: String,
    /// The prediction it was corrected from, if any.
    #[serde(default)]
    pub based_on_prediction: Option<u32>,
    /// A note.
    #[serde(default)]
    pub note: Option<String>,
}

/// `author_observation` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AuthorObservationResponse {
    /// The change made (undoable).
    pub change: ChangeSummary,
    /// The parser's verdict (stored even with problems).
    pub validation: ValidationReport,
}

/// `set_perturbation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetPerturbationRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The turn (edge).
    pub edge_id: u32,
    /// The control instruction; `null` (or blank) clears it.
    pub instruction: Option<String>,
}

/// `compare_branches` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareBranchesRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// Left branch id (leaf node id).
    pub left: String,
    /// Right branch id (leaf node id).
    pub right: String,
}

/// One turn of two branches side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRow {
    /// 1-based turn.
    pub turn: u32,
    /// The left branch's turn, if it is that long.
    pub left: Option<TurnSummary>,
    /// The right branch's turn, if it is that long.
    pub right: Option<TurnSummary>,
    /// Both turns exist and have the same action text.
    pub same_action: bool,
    /// The observation the left state shows (real, else authored, else the
    /// chosen prediction).
    pub left_text: Option<String>,
    /// The same for the right state.
    pub right_text: Option<String>,
}

/// `compare_branches` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareBranchesResponse {
    /// One row per turn of the longer branch.
    pub rows: Vec<CompareRow>,
}

// ---------------------------------------------------------------------------
// Curricula and uploads.

/// A branch of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchRef {
    /// Workspace id.
    pub trajectory_id: String,
    /// Branch id (leaf node id).
    pub branch_id: String,
}

/// Curriculum formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CurriculumFormat {
    /// AgentWorldBench JSONL rows (for evaluation).
    Agentworldbench,
    /// SFT chat JSONL (for fine-tuning).
    Sft,
}

/// `export_curriculum` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportCurriculumRequest {
    /// The branches to export.
    #[serde(default)]
    pub selection: Vec<BranchRef>,
    /// Also every branch whose leaf (or trajectory) carries this tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// The format.
    pub format: CurriculumFormat,
    /// How many rows `preview` holds.
    #[serde(default)]
    pub preview_limit: u32,
    /// Write to this file on the back end's machine; `null` returns the
    /// text in `content`.
    #[serde(default)]
    pub path: Option<String>,
}

/// `export_curriculum` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportCurriculumResponse {
    /// JSONL rows written.
    pub rows_total: u32,
    /// The first `preview_limit` lines.
    pub preview: Vec<String>,
    /// The file written, when a path was given.
    pub path: Option<String>,
    /// Size of the export, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Turns left out because their state has no observation (nor any turn
    /// after them on the branch).
    pub skipped: u32,
    /// The whole text when no path was given.
    pub content: Option<String>,
    /// A file name to save it under.
    pub file_name: String,
}

/// One file sent by the browser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UploadedFile {
    /// Its path relative to the dropped folder (or its name), `/`-separated.
    pub relative_path: String,
    /// Its bytes, base64 (RFC 4648, standard alphabet).
    pub content_base64: String,
}

/// `import_uploaded` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportUploadedRequest {
    /// The files.
    pub files: Vec<UploadedFile>,
}

/// How a step ended ([`StudioEvent::StepFinished`]): the extraction status of
/// the stored prediction, or why nothing was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Stored; a closed observation block was found.
    Ok,
    /// Stored; the observation block was cut off.
    Truncated,
    /// Stored; the output holds no observation block.
    NoObservation,
    /// Stored; the output is empty.
    Empty,
    /// Cancelled; nothing stored.
    Cancelled,
    /// Failed; nothing stored (see the event's `error`).
    Error,
}

/// Events the back end pushes (SSE `data:` lines, Tauri channel messages).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StudioEvent {
    /// Something in the workspace changed (a change, undo, redo or import).
    WorkspaceChanged {
        /// The trajectory concerned, if one.
        trajectory_id: Option<String>,
        /// What changed.
        kind: WorkspaceChangeKind,
    },
    /// A prediction was added to a node.
    PredictionAdded {
        /// Workspace id.
        trajectory_id: String,
        /// The node.
        node_id: u32,
        /// The new prediction.
        prediction_id: u32,
    },
    /// Text and tokens of a running step (appended to what came before).
    StepDelta {
        /// The job.
        job_id: String,
        /// Workspace id.
        trajectory_id: String,
        /// The node being predicted.
        node_id: u32,
        /// New reasoning text.
        reasoning: String,
        /// New observation text (tags, marker and surrounding whitespace
        /// removed).
        observation: String,
        /// The observation tokens behind `observation` (their texts
        /// concatenate to it), when the engine reports log-probabilities.
        tokens: Vec<TokenView>,
    },
    /// A step ended. Sent exactly once per step.
    StepFinished {
        /// The job.
        job_id: String,
        /// Workspace id.
        trajectory_id: String,
        /// The node predicted.
        node_id: u32,
        /// The stored prediction (`null` when cancelled or failed).
        prediction_id: Option<u32>,
        /// The extraction status of the stored prediction, or `cancelled` /
        /// `error`.
        status: StepStatus,
        /// What went wrong, for `error`.
        error: Option<String>,
        /// Counts and timings, when the engine finished.
        stats: Option<StepStats>,
    },
    /// A rollout finished one more turn (or started: `done` = 0).
    RolloutProgress {
        /// The rollout job.
        job_id: String,
        /// Workspace id.
        trajectory_id: String,
        /// Turns finished.
        done: u32,
        /// Turns asked for.
        total: u32,
        /// The node of the newest turn (the start state when `done` = 0).
        node_id: u32,
    },
    /// Sent once when an event stream opens.
    Hello {
        /// The Worldloom version.
        version: String,
    },
}

// ---------------------------------------------------------------- runs

/// A run as listed: one model's predictions over a dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunSummary {
    /// Run id.
    pub run_id: String,
    /// The name shown (the file name).
    pub name: String,
    /// The engine or model label (`copy`, `openai:MODEL`, `agentworldbench:gen`).
    pub engine: String,
    /// The file it was imported from.
    pub source_path: Option<String>,
    /// Teacher-forced or free-running.
    pub mode: ContextMode,
    /// When it was imported (UTC).
    pub created_at: String,
    /// Rows.
    pub row_count: u32,
    /// Rows the judge graded (failed included).
    pub judged_count: u32,
    /// The official overall score: every valid row's total on
    /// `(mean − 1) / 4 × 100`, pooled; `null` when no row was judged.
    pub overall_score: Option<f64>,
    /// The mean text F1 over rows where it was computed, in `[0, 1]`.
    pub mean_text_f1: Option<f64>,
}

/// `list_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunsResponse {
    /// Every run, oldest first.
    pub runs: Vec<RunSummary>,
}

/// A request naming one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunRequest {
    /// Run id.
    pub run_id: String,
}

/// The scores of one domain (or of all rows) per judge dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DomainScores {
    /// The domain; `null` for every row of the run.
    pub domain: Option<Domain>,
    /// Rows.
    pub rows: u32,
    /// Judged rows that did not fail.
    pub valid: u32,
    /// Per dimension of [`RunDashboard::dimensions`]: the mean over valid
    /// rows (scores of 0 left out) on `(mean − 1) / 4 × 100`, in `[0, 100]`;
    /// `null` without valid rows.
    pub scores: Vec<Option<f64>>,
}

/// A deterministic metric's distribution over a run's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MetricHistogram {
    /// `text_f1`, `node_f1`, `attribute_accuracy` or `transition_f1`.
    pub metric: String,
    /// Rows where it was computed.
    pub count: u32,
    /// Their mean, in `[0, 1]`.
    pub mean: Option<f64>,
    /// Counts in [`RunDashboard::bins`] equal-width bins over `[0, 1]` (the
    /// last closed: 1.0 falls in it).
    pub bins: Vec<u32>,
}

/// How many rows have one status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StatusCount {
    /// `ok`, `truncated`, `no_observation`, `empty`, `error`, or the judge's
    /// `judge_failed`, `unjudged`.
    pub status: String,
    /// Rows.
    pub count: u32,
}

/// `get_run_dashboard` response: what the run dashboard charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDashboard {
    /// The run.
    pub run: RunSummary,
    /// The judge dimensions in column order: `format`, `factuality`,
    /// `consistency`, `realism`, `quality`, `total`.
    pub dimensions: Vec<String>,
    /// Per domain, in name order.
    pub domains: Vec<DomainScores>,
    /// All rows together (the official overall).
    pub overall: DomainScores,
    /// How many bins each histogram has.
    pub bins: u32,
    /// The deterministic metrics' distributions.
    pub metrics: Vec<MetricHistogram>,
    /// Rows per prediction status (`wl_status`), most first.
    pub statuses: Vec<StatusCount>,
    /// Rows per judge outcome: `judged`, `judge_failed`, `unjudged`.
    pub judge: Vec<StatusCount>,
    /// Rows per label, most first.
    pub labels: Vec<StatusCount>,
}

/// One row of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunRowView {
    /// Row id (unique in the workspace).
    pub row_id: String,
    /// Its run.
    pub run_id: String,
    /// 0-based position in the run's file.
    pub row_index: u32,
    /// The trajectory (workspace id) it belongs to.
    pub trajectory_id: String,
    /// That trajectory's own id.
    pub trajectory_name: String,
    /// The state predicted; open it with `get_turn`.
    pub node_id: u32,
    /// The prediction the row made (pass it to `get_turn`).
    pub prediction_id: u32,
    /// The 1-based turn.
    pub turn: u32,
    /// The domain.
    pub domain: Domain,
    /// `ok`, `truncated`, `no_observation`, `empty` or `error`.
    pub status: String,
    /// The engine's error of an `error` row.
    pub error: Option<String>,
    /// Whether the judge graded it (failed included).
    pub judged: bool,
    /// Whether the judge failed on it.
    pub judge_failed: bool,
    /// The judge's scores 1–5 per dimension (`format` … `quality`), when
    /// judged and not failed.
    pub judge_scores: Vec<Option<f64>>,
    /// The judge's total on `(total − 1) / 4 × 100`, in `[0, 100]`.
    pub score: Option<f64>,
    /// Exact match after normalisation.
    pub exact: Option<bool>,
    /// Text F1, `[0, 1]`.
    pub text_f1: Option<f64>,
    /// Node F1, `[0, 1]`.
    pub node_f1: Option<f64>,
    /// Attribute accuracy, `[0, 1]`.
    pub attribute_accuracy: Option<f64>,
    /// Transition F1, `[0, 1]`.
    pub transition_f1: Option<f64>,
    /// Wall time of the row, milliseconds.
    pub latency_ms: Option<f64>,
    /// The labels set on the row, in the order they were last set.
    pub labels: Vec<String>,
    /// The row's free-text note (`set_row_note`); `null` when none.
    pub note: Option<String>,
}

/// `set_row_label` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetRowLabelRequest {
    /// The row.
    pub row_id: String,
    /// The label (any text; the label set only suggests).
    pub label: String,
    /// Set (true) or clear (false).
    pub present: bool,
}

/// `label_set` / `set_label_set` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LabelSetResponse {
    /// The workspace's labels, in order.
    pub labels: Vec<String>,
}

/// `set_label_set` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetLabelSetRequest {
    /// The labels (trimmed; blanks and repeats dropped).
    pub labels: Vec<String>,
}

/// Which texts a full-text search looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SearchIn {
    /// Real and predicted observations and the action.
    #[default]
    All,
    /// The real observation.
    Real,
    /// The predicted observation.
    Predicted,
    /// The action.
    Action,
}

/// Orders of the row table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunRowSort {
    /// File order (the default).
    Row,
    /// Trajectory name, then turn.
    Trajectory,
    /// Turn.
    Turn,
    /// Domain.
    Domain,
    /// Status.
    Status,
    /// Judge score (unscored last).
    Score,
    /// Text F1 (unscored last).
    TextF1,
    /// Node F1 (unscored last).
    NodeF1,
    /// Transition F1 (unscored last).
    TransitionF1,
    /// Search rank (with a `query`; else file order).
    Relevance,
}

/// `list_run_rows` request: filters combine; `offset`/`limit` page the
/// filtered, sorted rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunRowsRequest {
    /// Run id.
    pub run_id: String,
    /// Full-text search in the rows' texts (words, the last also a prefix).
    #[serde(default)]
    pub query: Option<String>,
    /// Where the search looks.
    #[serde(default)]
    pub search_in: Option<SearchIn>,
    /// Only this domain.
    #[serde(default)]
    pub domain: Option<Domain>,
    /// Only this status.
    #[serde(default)]
    pub status: Option<String>,
    /// Only rows carrying this label.
    #[serde(default)]
    pub label: Option<String>,
    /// Only rows whose judge score (0–100) is at least this.
    #[serde(default)]
    pub min_score: Option<f64>,
    /// Only rows whose judge score (0–100) is at most this.
    #[serde(default)]
    pub max_score: Option<f64>,
    /// Order; `null` is file order.
    #[serde(default)]
    pub sort: Option<RunRowSort>,
    /// Reverse the order (unscored rows stay last).
    #[serde(default)]
    pub descending: bool,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u32,
    /// At most this many rows; `null` for all.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `list_run_rows` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunRowsResponse {
    /// The page of rows.
    pub rows: Vec<RunRowView>,
    /// How many rows pass the filters.
    pub total: u32,
    /// The offset of the first row.
    pub offset: u32,
}

/// The value two runs are compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CompareMetric {
    /// The judge score, 0–100.
    Score,
    /// Text F1 × 100.
    TextF1,
    /// Node F1 × 100.
    NodeF1,
    /// Transition F1 × 100.
    TransitionF1,
}

/// Which pairs a comparison lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PairOutcome {
    /// A's value is higher by more than the tie margin.
    ABetter,
    /// B's value is higher by more than the tie margin.
    BBetter,
    /// Within the tie margin.
    Tie,
    /// One side (or both) has no value.
    Unscored,
}

/// `compare_runs` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRunsRequest {
    /// Run A.
    pub run_a: String,
    /// Run B.
    pub run_b: String,
    /// The value compared; `null`: the judge score when both runs were
    /// judged, else text F1.
    #[serde(default)]
    pub metric: Option<CompareMetric>,
    /// Only pairs with this outcome.
    #[serde(default)]
    pub outcome: Option<PairOutcome>,
    /// Differences up to this (on the 0–100 scale) are ties; default 0.5.
    #[serde(default)]
    pub tie_margin: Option<f64>,
    /// Only this domain.
    #[serde(default)]
    pub domain: Option<Domain>,
    /// Pairs to skip.
    #[serde(default)]
    pub offset: u32,
    /// At most this many pairs; `null` for all.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One state predicted by both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunPair {
    /// A's row.
    pub a: RunRowView,
    /// B's row.
    pub b: RunRowView,
    /// A's value (0–100).
    pub a_value: Option<f64>,
    /// B's value (0–100).
    pub b_value: Option<f64>,
    /// `a_value − b_value`.
    pub delta: Option<f64>,
    /// Who did better.
    pub outcome: PairOutcome,
}

/// How many pairs have each outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareCounts {
    /// States both runs predicted.
    pub paired: u32,
    /// A better.
    pub a_better: u32,
    /// B better.
    pub b_better: u32,
    /// Ties.
    pub tie: u32,
    /// Pairs without a value on one side.
    pub unscored: u32,
    /// Rows of A with no row of B on their state.
    pub only_a: u32,
    /// Rows of B with no row of A on their state.
    pub only_b: u32,
}

/// One point of the A-vs-B scatter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ScatterPoint {
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// A's row id (to open the pair).
    pub row_a: String,
}

/// `compare_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRunsResponse {
    /// Run A.
    pub run_a: RunSummary,
    /// Run B.
    pub run_b: RunSummary,
    /// The value compared.
    pub metric: CompareMetric,
    /// The tie margin used.
    pub tie_margin: f64,
    /// Outcome counts over every pair of the domain filter.
    pub counts: CompareCounts,
    /// Every pair with both values (the domain filter applied, not the outcome filter).
    pub scatter: Vec<ScatterPoint>,
    /// The page of pairs passing the filters, largest |delta| first.
    pub pairs: Vec<RunPair>,
    /// How many pairs pass the filters.
    pub total: u32,
}

/// `search_runs` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchRunsRequest {
    /// The words (the last also a prefix).
    pub query: String,
    /// Where to look.
    #[serde(default)]
    pub search_in: Option<SearchIn>,
    /// Only this run.
    #[serde(default)]
    pub run_id: Option<String>,
    /// At most this many hits; default 200.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `search_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchRunsResponse {
    /// Matching rows, best first.
    pub hits: Vec<RunRowView>,
    /// How long the index took, milliseconds.
    pub took_ms: f64,
}

/// `set_row_note` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetRowNoteRequest {
    /// The row.
    pub row_id: String,
    /// The note (trimmed); empty clears it.
    pub text: String,
}

/// `run_drift` request: one run, or two (A and B: a teacher-forced and a
/// free-running run of one model, or any two runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDriftRequest {
    /// Run A.
    pub run_a: String,
    /// Run B, when comparing.
    #[serde(default)]
    pub run_b: Option<String>,
    /// The value averaged; `null`: the judge score when every run given was
    /// judged, else text F1 (as `compare_runs`).
    #[serde(default)]
    pub metric: Option<CompareMetric>,
}

/// One turn index of one run in [`RunDriftResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DriftPoint {
    /// The 1-based turn.
    pub turn: u32,
    /// The run's rows at this turn.
    pub rows: u32,
    /// How many of them have the metric.
    pub scored: u32,
    /// The metric's mean over those, on 0–100; `null` when none has it.
    pub mean: Option<f64>,
    /// The lowest and highest value, 0–100.
    pub min: Option<f64>,
    /// See `min`.
    pub max: Option<f64>,
}

/// One run's fidelity by turn index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DriftSeries {
    /// The run.
    pub run: RunSummary,
    /// Per turn present in the run, in turn order.
    pub points: Vec<DriftPoint>,
}

/// `run_drift` response: fidelity by turn index (does free-running drift
/// after turn 3?).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDriftResponse {
    /// The value averaged (0–100: the judge score, or an F1 × 100).
    pub metric: CompareMetric,
    /// A's series, then B's when given.
    pub series: Vec<DriftSeries>,
}

/// The file format of `export_run_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RowsExportFormat {
    /// Comma-separated values with a header line (RFC 4180 quoting; labels
    /// joined by `; `).
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// `export_run_rows` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRunRowsRequest {
    /// The run.
    pub run_id: String,
    /// The format.
    pub format: RowsExportFormat,
    /// Only rows with a label or a note (the default); `false`: every row.
    #[serde(default = "default_true")]
    pub annotated_only: bool,
    /// Write to this file on the back end's machine; `null` returns the
    /// text in `content`.
    #[serde(default)]
    pub path: Option<String>,
}

fn default_true() -> bool {
    true
}

/// `export_run_rows` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRunRowsResponse {
    /// Rows written (the CSV header not counted).
    pub rows_total: u32,
    /// The file written, when a path was given.
    pub path: Option<String>,
    /// Size of the export, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// The whole text when no path was given.
    pub content: Option<String>,
    /// A file name to save it under.
    pub file_name: String,
}
