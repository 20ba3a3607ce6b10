//! The prediction record: what the trajectory keeps of one prediction
//! (engine, parameters, seed, context mode, the output already split into
//! observation and reasoning, the raw output for provenance, token counts,
//! timings and the engine's statistics). Shared by the studio and
//! `worldloom step` / `rollout`.

use serde_json::Value;
use worldloom_core::{ContextMode, NodeId, Prediction, PredictionId, Representation, Trajectory};

use crate::collect::Collected;
use crate::world_model::GenerationParams;

/// The `Prediction::extra` field holding the generation statistics
/// ([`GenerationStats`](crate::GenerationStats) as JSON).
pub const STATS_FIELD: &str = "stats";

/// The record of a collected prediction of `node`.
///
/// The observation, status and reasoning come from the engine's parse (the
/// reasoning is stored in `reasoning_content`, so nothing is parsed again);
/// `raw_output` is the generated text as the engine produced it. The
/// representation is that of the node's real observation, else that of the
/// nearest ancestor with an observation.
pub fn prediction_record(
    engine_name: &str,
    trajectory: &Trajectory,
    node: NodeId,
    params: &GenerationParams,
    mode: ContextMode,
    collected: &Collected,
) -> Prediction {
    let output = &collected.output;
    let parsed = &output.parsed;
    let mut params_map = serde_json::Map::new();
    if let Ok(Value::Object(map)) = serde_json::to_value(params) {
        params_map = map;
    }
    let mut extra = serde_json::Map::new();
    if let Ok(Value::Object(stats)) = serde_json::to_value(&collected.stats) {
        extra.insert(STATS_FIELD.into(), Value::Object(stats));
    }
    let representation = trajectory
        .node(node)
        .and_then(|n| n.real.as_ref())
        .map(|real| real.representation)
        .or_else(|| representation_guess(trajectory, node))
        .unwrap_or(Representation::Text);
    Prediction {
        id: PredictionId(0),
        engine: engine_name.to_owned(),
        params: params_map,
        seed: Some(params.seed),
        context: mode,
        raw_output: output.raw.clone(),
        reasoning_content: (!parsed.reasoning.is_empty()).then(|| parsed.reasoning.clone()),
        observation: parsed.observation.clone(),
        status: parsed.status,
        representation,
        prompt_tokens: Some(collected.stats.prompt_tokens as u64),
        completion_tokens: Some(collected.stats.completion_tokens as u64),
        time_to_first_token_ms: collected.time_to_first_token_ms,
        total_ms: Some(collected.total_ms),
        created_at: None,
        extra,
    }
}

/// For a state never recorded: the representation of the nearest ancestor
/// with an observation.
fn representation_guess(t: &Trajectory, node: NodeId) -> Option<Representation> {
    let path = t.path_to(node).ok()?;
    path.nodes.iter().rev().find_map(|n| {
        let n = t.node(*n)?;
        n.real
            .as_ref()
            .map(|o| o.representation)
            .or_else(|| n.current_authored().map(|a| a.observation.representation))
    })
}
