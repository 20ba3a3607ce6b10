//! The predictions of a node and which one is chosen.

use worldloom_core::{NodeId, PredictionId};

use crate::branches::live_node;
use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::scoring::predictions_of;
use crate::types::*;
use crate::views::change_summary;
use crate::{Studio, StudioEvent};

/// `list_predictions`: the predictions of a node, for the picker.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn list_predictions(
    studio: &Studio,
    req: ListPredictionsRequest,
) -> Result<ListPredictionsResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let ws = studio.lock()?;
    let st = ws.load_trajectory(key)?;
    let node = live_node(&st, req.node_id)?;
    Ok(ListPredictionsResponse {
        predictions: predictions_of(&ws, &st, node)?,
        chosen_prediction_id: node.chosen_prediction.map(|p| p.0),
    })
}

/// `choose_prediction`: which prediction the right pane shows for a node (one
/// undoable change).
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn choose_prediction(
    studio: &Studio,
    req: ChoosePredictionRequest,
) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.choose_prediction(
            key,
            NodeId(req.node_id),
            req.prediction_id.map(PredictionId),
        )?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::ChoosePrediction.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}
