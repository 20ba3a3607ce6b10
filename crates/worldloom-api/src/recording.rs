//! Recording an agent loop into the workspace as it runs (`worldloom
//! record`, the Python package's `Recorder`): `record_trajectory` starts a
//! trajectory, `record_turn` adds one observed step (the action, the
//! observation it led to and, when the loop ran a world model beside the
//! real environment, its prediction; a screenshot of the new state). Each
//! step is one undoable change (two with a screenshot),
//! appended without reading the trajectory back
//! (`Workspace::append_turns`), so a step costs the same at turn 1 and turn
//! 1,000; a studio with the workspace open shows it at once.

use worldloom_core as core;
use worldloom_core::{NodeId, Observation, Trajectory};
use worldloom_store::AppendTurn;

use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::scoring::score_nodes;
use crate::types::*;
use crate::{Studio, StudioEvent};

/// The source format of a recorded trajectory.
pub const RECORDED_SOURCE_FORMAT: &str = "recorded";

/// `record_trajectory`: a new trajectory of `domain` holding only its first
/// state (with `observation`, when given); one change.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a blank name (a blank goal is
/// no goal); storage errors as they come.
pub fn record_trajectory(
    studio: &Studio,
    req: RecordTrajectoryRequest,
) -> Result<RecordedTurn, ApiError> {
    let name = match req.name.as_deref().map(str::trim) {
        Some("") => return Err(ApiError::bad_request("name: empty")),
        Some(n) => n.to_owned(),
        None => format!("recorded-{}", unix_millis()),
    };
    let shot = req.screenshot.as_deref().map(probe_shot).transpose()?;
    let initial = req
        .observation
        .map(|text| Observation::new(req.representation, text));
    let mut t = Trajectory::new(name, req.domain, initial);
    t.source.format = RECORDED_SOURCE_FORMAT.into();
    t.goal = req.goal.filter(|g| !g.trim().is_empty());
    let key = {
        let mut ws = studio.lock()?;
        let key = ws.import_trajectory_owned(t, None)?;
        if let Some(shot) = &shot {
            ws.set_screenshot(key, NodeId(0), shot)?;
        }
        key
    };
    changed(studio, key.0, ChangeKind::Import);
    Ok(RecordedTurn {
        trajectory_id: key.0.to_string(),
        node_id: 0,
        edge_id: None,
    })
}

/// `record_turn`: a turn from `from_node` with `action`, leading to a state
/// holding `observation` (when given) and `predicted` as its chosen,
/// scored prediction (when given: a raw model output, or the observation
/// text itself). The action is read in the trajectory's
/// domain language (a text that does not parse is kept as written, as an
/// import keeps it).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for an empty action or a bad
/// trajectory id; [`crate::ErrorCode::NotFound`] for an unknown trajectory
/// or a state that is not live.
pub fn record_turn(studio: &Studio, req: RecordTurnRequest) -> Result<RecordedTurn, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    if req.action.trim().is_empty() {
        return Err(ApiError::bad_request("action: empty"));
    }
    // A bad image refuses the step before anything is written.
    let shot = req.screenshot.as_deref().map(probe_shot).transpose()?;
    let mut ws = studio.lock()?;
    let row = ws.trajectory_row(key)?.ok_or_else(|| {
        ApiError::not_found(format!("trajectory {} is not in the workspace", key.0))
    })?;
    let prediction = req
        .predicted
        .map(|raw| recorded_prediction(raw, req.representation));
    let scored = prediction.is_some();
    let turn = AppendTurn {
        key,
        from: NodeId(req.from_node),
        action: core::Action::for_domain(row.domain, req.action),
        real: req
            .observation
            .map(|text| Observation::new(req.representation, text)),
        perturbation: None,
        prediction,
    };
    let (edge, node) = ws
        .append_turns(std::slice::from_ref(&turn))?
        .pop()
        .ok_or_else(|| ApiError::internal("the turn was not written"))?;
    if let Some(shot) = &shot {
        ws.set_screenshot(key, node, shot)?;
    }
    if scored {
        score_nodes(&mut ws, key, &[node])?;
    }
    drop(ws);
    changed(studio, key.0, ChangeKind::AddTurn);
    Ok(RecordedTurn {
        trajectory_id: key.0.to_string(),
        node_id: node.0,
        edge_id: Some(edge.0),
    })
}

/// A screenshot file read as the studio's `set_screenshot` reads it (its
/// header only), refused by name when it is no PNG or JPEG or too large.
fn probe_shot(path: &str) -> Result<core::screenshot::Screenshot, ApiError> {
    core::screenshot::probe(std::path::Path::new(path))
        .map_err(|e| ApiError::bad_request(format!("screenshot: {e}")))
}

/// A recorded prediction: a model's raw output is read as every output is
/// (`worldloom-core`'s output parser); a text with neither an observation
/// block nor reasoning is the observation itself.
fn recorded_prediction(raw: String, representation: Representation) -> core::Prediction {
    let parsed = core::parse_model_output(&raw);
    let bare =
        parsed.status == core::OutputStatus::NoObservation && parsed.reasoning.trim().is_empty();
    let mut p = core::Prediction::from_output("recorded", raw);
    if bare {
        p.observation = Some(p.raw_output.clone());
        p.status = core::OutputStatus::Ok;
    }
    p.representation = representation;
    p
}

fn changed(studio: &Studio, key: i64, kind: ChangeKind) {
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.to_string()),
        kind: kind.into(),
    });
}

fn unix_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
