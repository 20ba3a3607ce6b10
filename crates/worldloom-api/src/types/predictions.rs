//! Types of a turn's predictions (`commands/predictions.rs`: list, choose).

use super::*;

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
