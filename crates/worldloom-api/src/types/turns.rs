//! Types of a turn's panes (`commands/turns.rs`: `get_turn`,
//! `get_tree_rows`, `search_tree`): the two sides' documents, tree diffs,
//! where the action landed, tree windows and search, fidelity and the
//! judge's scores.

use super::*;

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
    /// Where the turn's action landed in this side's tree (see
    /// `worldloom-obs::target`). Absent when the action names no element
    /// (`TurnDetail.action_target` is absent) or this side has no tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub landing: Option<Landing>,
}

/// The element of one side's tree that the turn's action names: a
/// BrowserGym bid's node, or the topmost node containing a tap or click
/// point, or an Android element found by `resource-id` or text. Either
/// `node_id` or `reason` is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Landing {
    /// The node (`UiTree.nodes` index; `get_tree_rows` can `reveal` it),
    /// `null` when the target is not in this tree.
    pub node_id: Option<u32>,
    /// Indices of the node's ancestors, root first (the path a tree view
    /// expands to reach it); empty when not found.
    pub path: Vec<u32>,
    /// 1-based line of the node in this side's text, when its source span
    /// is known.
    pub line: Option<u32>,
    /// The node's markup in this side's text (UTF-8 byte offsets, its
    /// subtree included), when known: a one-line dump marks the element, not
    /// the line.
    pub span: Option<SourceSpan>,
    /// The node as a caption: its role, then its name or value in quotes
    /// (cut at 80 characters).
    pub label: Option<String>,
    /// Why the target was not found (`bid 12 not in the predicted tree`).
    pub reason: Option<String>,
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
    /// `(mean − 1) / 4 × 100`, in `[0, 100]` (`worldloom-core::judge::scale`).
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
    /// The agent's reasoning for that action, as recorded beside it
    /// (AgentLab's `think`, the prose around a code block the runner
    /// executed, a raw model answer), shown beside the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub action_reasoning: Option<String>,
    /// The element that action names (a bid, a point in px, an element
    /// reference), when it names one; each tree side's `landing` says
    /// where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub action_target: Option<ActionTarget>,
    /// Facts of the real observation.
    pub real_meta: Option<ObservationMeta>,
    /// The step's error (`last_action_error`, a failed capture), if any.
    pub real_error: Option<String>,
    /// The real state's screenshot (metadata; its bytes from
    /// `get_screenshot` or `GET /api/screenshots/<sha256>`), if it has one.
    #[serde(default)]
    pub real_screenshot: Option<Screenshot>,
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

/// `get_screenshot` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GetScreenshotRequest {
    /// The screenshot's SHA-256 (lowercase hex, as in [`Screenshot::sha256`]).
    pub sha256: String,
}

/// `get_screenshot` response: a stored screenshot's bytes, exactly as
/// imported (the desktop IPC carries JSON only; the HTTP server also serves
/// the bytes as they are at `GET /api/screenshots/<sha256>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ScreenshotData {
    /// The image format.
    pub media_type: ImageType,
    /// The bytes in standard base64.
    pub data_base64: String,
}

/// `set_screenshot` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetScreenshotRequest {
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// The state.
    pub node_id: u32,
    /// A PNG or JPEG file on the machine running the studio (at most 16 MiB).
    pub path: String,
}
