//! Types of the trajectory list, a trajectory's tree and a branch's
//! timeline (`commands/trajectories.rs`): summaries, tree node and edge
//! views, turn rows, and the action view they share with editing.

use super::*;

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
    /// `android-trace`, `webarena`, `atif`, `agentworldbench`, `native`).
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
