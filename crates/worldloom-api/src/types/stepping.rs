//! Types of stepping a turn (`stepping.rs`: preview, step, cancel, rollout)
//! and the observation tokens a prediction keeps.

use super::*;

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
    /// Forward passes while decoding (0 when the engine cannot say).
    pub decode_forwards: u32,
    /// Tokens the local engine's drafter proposed (speculative decoding;
    /// 0 when drafting is off).
    pub drafted_tokens: u32,
    /// Proposed tokens that verification kept.
    pub accepted_tokens: u32,
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
