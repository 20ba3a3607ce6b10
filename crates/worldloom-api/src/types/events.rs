//! The events the back end pushes ([`StudioEvent`]) and how a step ended.

use super::*;

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
    /// A run or judge job moved on (`start_run`, `resume_run`,
    /// `start_judge`): sent as rows finish (at most about five times a
    /// second) and once when it ends.
    RunJobProgress {
        /// The job as `list_run_jobs` shows it.
        job: RunJobView,
    },
    /// Sent once when an event stream opens.
    Hello {
        /// The Worldloom version.
        version: String,
    },
}
