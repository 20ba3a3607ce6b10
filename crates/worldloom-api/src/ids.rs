//! The ids the API reads from requests: workspace trajectory keys and branch
//! ids (a branch is named by its leaf node).

use worldloom_core::NodeId;
use worldloom_store::TrajectoryKey;

use crate::error::ApiError;

/// A `trajectory_id` as the workspace key it names (a decimal number).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] when `id` is not a decimal number.
pub(crate) fn parse_trajectory_id(id: &str) -> Result<TrajectoryKey, ApiError> {
    id.trim().parse::<i64>().map(TrajectoryKey).map_err(|_| {
        ApiError::bad_request(format!(
            "trajectory_id `{id}` is not a workspace trajectory id (a decimal number)"
        ))
    })
}

/// A `branch_id` as its leaf node (a decimal node number).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] when `id` is not a node number.
pub(crate) fn parse_branch_id(id: &str) -> Result<NodeId, ApiError> {
    id.trim().parse::<u32>().map(NodeId).map_err(|_| {
        ApiError::bad_request(format!(
            "branch_id `{id}` is not a branch id (a leaf node number)"
        ))
    })
}
