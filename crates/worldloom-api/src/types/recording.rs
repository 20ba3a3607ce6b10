//! Types of recording an agent loop as it runs (`recording.rs`): a new
//! trajectory, then one observed turn per step.

use super::*;

/// `record_trajectory` request: a new trajectory an agent loop records into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecordTrajectoryRequest {
    /// The environment's domain.
    pub domain: Domain,
    /// How its observations are written (`html`, `axtree`, `os-xml`, `os-table`, `android-xml`, `json`, `text`).
    pub representation: Representation,
    /// The agent's task, shown with the trajectory.
    pub goal: Option<String>,
    /// The trajectory's name (`recorded-<time>` when absent).
    pub name: Option<String>,
    /// The first observation (the state before the first action), when the loop has one.
    pub observation: Option<String>,
    /// A screenshot of that state: a PNG or JPEG file on the machine running
    /// the studio (at most 16 MiB), kept in the workspace.
    #[serde(default)]
    pub screenshot: Option<String>,
}

/// `record_turn` request: one step of the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecordTurnRequest {
    /// Workspace id of the recorded trajectory.
    pub trajectory_id: String,
    /// The state the action is taken from (the previous reply's `node_id`).
    pub from_node: u32,
    /// The action's exact text, in the domain's action language.
    pub action: String,
    /// How the observations are written (as in `record_trajectory`).
    pub representation: Representation,
    /// The observation the action led to.
    pub observation: Option<String>,
    /// A world model's prediction of that observation (raw output or the
    /// observation itself), stored as the state's chosen prediction and scored.
    pub predicted: Option<String>,
    /// A screenshot of the state the action led to (a PNG or JPEG file, as in
    /// `record_trajectory`).
    #[serde(default)]
    pub screenshot: Option<String>,
}

/// Where a recorded step landed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecordedTurn {
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// The new state (the root for `record_trajectory`).
    pub node_id: u32,
    /// The new turn's edge (`null` for `record_trajectory`).
    pub edge_id: Option<u32>,
}
