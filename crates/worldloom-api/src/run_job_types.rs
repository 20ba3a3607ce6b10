//! Requests, responses and views of runs started in the studio and of
//! judging a run (`worldloom-api::run_jobs`); re-exported by
//! [`crate::types`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::types::{ContextMode, EngineSettings};

/// Where a studio run's turns come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunInput {
    /// Trajectories of the workspace: every turn along each one's main path
    /// whose state has a real observation.
    Trajectories {
        /// Workspace ids (at least one).
        trajectory_ids: Vec<String>,
    },
    /// A dataset file on the back end's machine (AgentWorldBench JSONL or
    /// any format `import_files` reads): imported first (a file already
    /// imported is not imported twice), then its trajectories as above.
    Dataset {
        /// The file's path.
        path: String,
    },
}

/// `start_run` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StartRunRequest {
    /// The run's name; absent or blank: `<engine> <mode> <UTC time>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
    /// The engine; absent or `null`: the studio's own (`engine_status`),
    /// with its generation parameters either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub engine: Option<EngineSettings>,
    /// The turns to predict.
    pub input: RunInput,
    /// Predictions in flight at once, 1–64.
    pub concurrency: u32,
    /// Teacher-forced (history from the real observations) or free-running
    /// (history from this run's own earlier predictions, one trajectory's
    /// turns in order).
    pub context: ContextMode,
}

/// `resume_run` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ResumeRunRequest {
    /// A run started in the studio.
    pub run_id: String,
    /// Predictions in flight at once, 1–64; absent: as when started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub concurrency: Option<u32>,
}

/// `start_judge` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StartJudgeRequest {
    /// The run to judge; only its rows without a verdict are judged, so
    /// starting again after a cancel resumes.
    pub run_id: String,
    /// The judge: an OpenAI-compatible endpoint (`kind: "openai"`; the
    /// other engine kinds are refused).
    pub judge: EngineSettings,
    /// Judge calls in flight at once, 1–64.
    pub concurrency: u32,
}

/// `cancel_run_job` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CancelRunJobRequest {
    /// The job.
    pub job_id: String,
}

/// What a run job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunJobKind {
    /// Predicting a run's turns.
    Run,
    /// Judging a run's rows.
    Judge,
}

/// Where a run job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunJobState {
    /// Working.
    Running,
    /// Every row done.
    Finished,
    /// Stopped by `cancel_run_job`; rows done so far are kept.
    Cancelled,
    /// Stopped by an error (`error`); rows done so far are kept.
    Failed,
}

/// A run or judge job: progress, rate and estimated time left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunJobView {
    /// Job id.
    pub job_id: String,
    /// Predicting or judging.
    pub kind: RunJobKind,
    /// The run.
    pub run_id: String,
    /// The run's name.
    pub run_name: String,
    /// The engine (a run) or the judge (judging).
    pub engine: String,
    /// Where it stands.
    pub state: RunJobState,
    /// Rows done, earlier runs of the job included.
    pub done: u32,
    /// Rows in all.
    pub total: u32,
    /// Of the rows done by this job, those that failed (`error` status, or
    /// the judge could not grade them).
    pub failed: u32,
    /// Rows that were already done when the job started (a resume).
    pub already_done: u32,
    /// Seconds since the job started.
    pub elapsed_s: f64,
    /// Rows per second done by this job; `null` before the first.
    pub rows_per_sec: Option<f64>,
    /// Seconds left at that rate; `null` when unknown or not running.
    pub eta_s: Option<f64>,
    /// Why the job failed.
    pub error: Option<String>,
}

/// A studio run with turns still to predict (cancelled or interrupted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ResumableRun {
    /// The run.
    pub run_id: String,
    /// Its name.
    pub name: String,
    /// Rows it has.
    pub done: u32,
    /// Rows it was started for.
    pub total: u32,
}

/// `list_run_jobs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunJobsResponse {
    /// The jobs of this session, newest first (finished ones included).
    pub jobs: Vec<RunJobView>,
    /// Studio runs with turns still to predict and no job running.
    pub resumable: Vec<ResumableRun>,
}
