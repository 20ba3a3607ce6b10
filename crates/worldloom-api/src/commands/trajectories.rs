//! The trajectory list, one trajectory's live tree, and a branch's timeline.

use std::collections::BTreeMap;

use worldloom_core as core;
use worldloom_core::NodeId;
use worldloom_store::Workspace;

use crate::Studio;
use crate::branches::{branch_summary, live_branches, path_turns};
use crate::error::ApiError;
use crate::ids::{parse_branch_id, parse_trajectory_id};
use crate::scoring::node_score;
use crate::types::*;
use crate::views::{self};

/// The sidebar row of a stored trajectory.
fn summary(
    ws: &mut Workspace,
    row: &worldloom_store::TrajectoryRow,
    links: &[worldloom_store::EdgeLink],
    tags: &[String],
) -> TrajectorySummary {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for l in links {
        children.entry(l.from.0).or_default().push(l.to.0);
    }
    // Turns on the main path: follow the oldest edge from the root.
    let mut turn_count = 0u32;
    let mut at = 0u32;
    while let Some(next) = children.get(&at).and_then(|c| c.first()) {
        at = *next;
        turn_count += 1;
        if turn_count as usize > links.len() {
            break;
        }
    }
    let parents: std::collections::BTreeSet<u32> = children.keys().copied().collect();
    let leaves = links
        .iter()
        .filter(|l| !parents.contains(&l.to.0))
        .count()
        .max(1);
    let _ = ws;
    TrajectorySummary {
        id: row.key.0.to_string(),
        name: row.ext_id.clone(),
        domain: row.domain,
        source_format: row.source.format.clone(),
        source_path: row.source.path.clone(),
        goal: row.goal.clone(),
        turn_count,
        branch_count: leaves as u32,
        prediction_count: row.prediction_count as u32,
        lowest_fidelity: row.lowest_score,
        tags: tags.to_vec(),
        imported_at: row.imported_at.clone(),
    }
}

/// The sidebar rows of every trajectory.
fn all_summaries(ws: &mut Workspace) -> Result<Vec<TrajectorySummary>, ApiError> {
    let rows = ws.list_trajectories()?;
    let links = ws.live_edge_links()?;
    let mut tags: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for t in ws.tags()? {
        let list = tags.entry(t.trajectory.0).or_default();
        if !list.contains(&t.tag) {
            list.push(t.tag);
        }
    }
    let empty = Vec::new();
    Ok(rows
        .iter()
        .map(|row| {
            summary(
                ws,
                row,
                links.get(&row.key).map(Vec::as_slice).unwrap_or(&[]),
                tags.get(&row.key.0).unwrap_or(&empty),
            )
        })
        .collect())
}

/// `list_trajectories`: the sidebar list, filtered and sorted.
///
/// # Errors
/// [`crate::ErrorCode::Storage`] (an unknown sort is refused when the request is
/// read, as `bad_request`).
pub fn list_trajectories(
    studio: &Studio,
    req: ListTrajectoriesRequest,
) -> Result<ListTrajectoriesResponse, ApiError> {
    let mut ws = studio.lock()?;
    let mut list = all_summaries(&mut ws)?;
    if let Some(q) = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let q = q.to_lowercase();
        list.retain(|t| {
            t.name.to_lowercase().contains(&q)
                || t.goal
                    .as_deref()
                    .is_some_and(|g| g.to_lowercase().contains(&q))
                || t.source_path
                    .as_deref()
                    .is_some_and(|p| p.to_lowercase().contains(&q))
                || t.tags.iter().any(|tag| tag.to_lowercase().contains(&q))
        });
    }
    if let Some(d) = req.domain {
        list.retain(|t| t.domain == d);
    }
    if let Some(b) = req.has_branches {
        list.retain(|t| (t.branch_count > 1) == b);
    }
    if let Some(max) = req.max_fidelity {
        list.retain(|t| t.lowest_fidelity.is_some_and(|f| f <= max));
    }
    match req.sort.unwrap_or(TrajectorySort::Imported) {
        TrajectorySort::Imported => {}
        TrajectorySort::Name => list.sort_by(|a, b| a.name.cmp(&b.name)),
        TrajectorySort::LowestFidelity => list.sort_by(|a, b| {
            let fa = a.lowest_fidelity.unwrap_or(f64::INFINITY);
            let fb = b.lowest_fidelity.unwrap_or(f64::INFINITY);
            fa.total_cmp(&fb)
        }),
    }
    Ok(ListTrajectoriesResponse { trajectories: list })
}

/// `get_trajectory`: summary, branches and the whole live tree.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn get_trajectory(
    studio: &Studio,
    req: GetTrajectoryRequest,
) -> Result<GetTrajectoryResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let mut ws = studio.lock()?;
    let st = ws.load_trajectory(key)?;
    // This trajectory's row, edges and tags alone, by key: the cost does
    // not grow with the workspace (`docs/benchmarks.md`, "Workspace size").
    let row = ws
        .trajectory_row(key)?
        .ok_or_else(|| ApiError::not_found(format!("no trajectory {}", req.trajectory_id)))?;
    let links = ws.live_edge_links_of(key)?;
    let mut tags: Vec<String> = Vec::new();
    for t in ws.tags_of(key)? {
        if !tags.contains(&t.tag) {
            tags.push(t.tag);
        }
    }
    let trajectory = summary(&mut ws, &row, &links, &tags);
    let paths = live_branches(&st);
    let main = paths.first().cloned().unwrap_or(core::TreePath {
        nodes: vec![NodeId(0)],
        edges: Vec::new(),
    });
    let branches = paths
        .iter()
        .enumerate()
        .map(|(i, p)| branch_summary(&st, p, i, &main))
        .collect();
    let mut nodes = Vec::new();
    for node in &st.trajectory.nodes {
        if !st.live_nodes.contains(&node.id) {
            continue;
        }
        let fidelity = node_score(&mut ws, &st, node)?;
        let kind = if node.real.is_some() {
            Some(ObservationKind::Real)
        } else if !node.authored.is_empty() {
            Some(ObservationKind::Authored)
        } else if !node.predictions.is_empty() {
            Some(ObservationKind::Predicted)
        } else {
            None
        };
        nodes.push(TreeNodeView {
            node_id: node.id.0,
            parent_edge: node.parent_edge.map(|e| e.0),
            turn: st.trajectory.turn_of(node.id).unwrap_or(0) as u32,
            kind,
            has_real: node.real.is_some(),
            prediction_count: node.predictions.len() as u32,
            has_authored: !node.authored.is_empty(),
            fidelity,
        });
    }
    let mut perturbations = ws.perturbations(key)?;
    let edges = st
        .trajectory
        .edges
        .iter()
        .filter(|e| st.live_edges.contains(&e.id))
        .map(|e| TreeEdgeView {
            edge_id: e.id.0,
            from: e.from.0,
            to: e.to.0,
            action: views::action(&e.action),
            edited_from: e.edited_from.map(|x| x.0),
            perturbation: perturbations.remove(&e.id),
        })
        .collect();
    Ok(GetTrajectoryResponse {
        trajectory,
        branches,
        nodes,
        edges,
    })
}

/// `get_branch`: the timeline of one branch, with per-turn fidelity.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] when the branch id is not a live leaf;
/// [`crate::ErrorCode::BadRequest`]; [`crate::ErrorCode::Storage`].
pub fn get_branch(studio: &Studio, req: GetBranchRequest) -> Result<GetBranchResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let leaf = parse_branch_id(&req.branch_id)?;
    let mut ws = studio.lock()?;
    // The records of the branch's own states suffice (the tree's shape is
    // always complete).
    let st = match ws.load_trajectory_path(key, leaf) {
        Err(worldloom_store::StoreError::NotFound(_)) if ws.load_trajectory(key).is_ok() => {
            return Err(ApiError::not_found(format!(
                "trajectory {} has no branch ending at node {}",
                key.0, leaf.0
            )));
        }
        other => other?,
    };
    let paths = live_branches(&st);
    let index = paths
        .iter()
        .position(|p| p.nodes.last() == Some(&leaf))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "trajectory {} has no branch ending at node {}",
                key.0, leaf.0
            ))
        })?;
    let path = &paths[index];
    let branch = branch_summary(&st, path, index, &paths[0]);
    let perturbations = ws.perturbations(key)?;
    let turns = path_turns(&mut ws, &st, path, &perturbations)?;
    Ok(GetBranchResponse { branch, turns })
}
