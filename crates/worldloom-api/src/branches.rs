//! The live tree of a stored trajectory: its root-to-leaf branches and their
//! summaries, live nodes, the timeline rows of a branch, the tree without
//! undone parts (for exports), and appending a turn under the workspace lock
//! (shared by `append_turn` and rollouts).

use std::collections::BTreeMap;

use worldloom_core as core;
use worldloom_core::action::ActionFormat;
use worldloom_core::{EdgeId, NodeId};
use worldloom_store::{StoredTrajectory, TrajectoryKey, Workspace};

use crate::error::ApiError;
use crate::scoring::node_score;
use crate::types::*;
use crate::views;

/// Live root-to-leaf paths, depth first, older edges first; the first is the
/// recorded path.
pub(crate) fn live_branches(st: &StoredTrajectory) -> Vec<core::TreePath> {
    // Children of every node, oldest edge first, in one pass (a per-node
    // scan of all edges is quadratic on large trees).
    let mut children_of: BTreeMap<NodeId, Vec<EdgeId>> = BTreeMap::new();
    for e in &st.trajectory.edges {
        if st.live_edges.contains(&e.id) {
            children_of.entry(e.from).or_default().push(e.id);
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![core::TreePath {
        nodes: vec![NodeId(0)],
        edges: Vec::new(),
    }];
    while let Some(path) = stack.pop() {
        let last = path.nodes.last().copied().unwrap_or(NodeId(0));
        let children = children_of.get(&last).map(Vec::as_slice).unwrap_or(&[]);
        if children.is_empty() || path.edges.len() > st.trajectory.edges.len() {
            out.push(path);
            continue;
        }
        for &e in children.iter().rev() {
            if let Some(edge) = st.trajectory.edge(e) {
                let mut p = path.clone();
                p.nodes.push(edge.to);
                p.edges.push(e);
                stack.push(p);
            }
        }
    }
    out
}

/// The index in `paths` (the [`live_branches`] of `st`) of the branch ending
/// at `leaf`.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] when no live branch ends there.
pub(crate) fn branch_index(
    st: &StoredTrajectory,
    paths: &[core::TreePath],
    leaf: NodeId,
) -> Result<usize, ApiError> {
    paths
        .iter()
        .position(|p| p.nodes.last() == Some(&leaf))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "trajectory {} has no branch ending at node {}",
                st.key.0, leaf.0
            ))
        })
}

/// The sidebar summary of the branch `path`, the `index`-th of [`live_branches`]
/// (`main` is the recorded path, the first).
pub(crate) fn branch_summary(
    st: &StoredTrajectory,
    path: &core::TreePath,
    index: usize,
    main: &core::TreePath,
) -> BranchSummary {
    let leaf = path.nodes.last().copied().unwrap_or(NodeId(0));
    let forks_at = if index == 0 {
        None
    } else {
        // The first edge not on the recorded path.
        path.edges
            .iter()
            .position(|e| !main.edges.contains(e))
            .map(|i| i as u32 + 1)
    };
    let name = match forks_at {
        None => "recorded".to_string(),
        Some(turn) => {
            let action = path
                .edges
                .get(turn as usize - 1)
                .and_then(|e| st.trajectory.edge(*e))
                .map(|e| e.action.summary())
                .unwrap_or_default();
            format!("branch at turn {turn}: {action}")
        }
    };
    BranchSummary {
        id: leaf.0.to_string(),
        name,
        leaf_node: leaf.0,
        turn_count: path.edges.len() as u32,
        recorded: index == 0,
        forks_at_turn: forks_at,
    }
}

/// A live node of `st`.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown or undone node.
pub(crate) fn live_node(st: &StoredTrajectory, node: u32) -> Result<&core::Node, ApiError> {
    st.trajectory
        .node(NodeId(node))
        .filter(|n| st.live_nodes.contains(&n.id))
        .ok_or_else(|| ApiError::not_found(format!("trajectory {} has no node {node}", st.key.0)))
}

/// The timeline rows of a root-to-leaf path.
pub(crate) fn path_turns(
    ws: &mut Workspace,
    st: &StoredTrajectory,
    path: &core::TreePath,
    perturbations: &BTreeMap<EdgeId, String>,
) -> Result<Vec<TurnSummary>, ApiError> {
    let mut turns = Vec::new();
    for (i, (edge_id, node_id)) in path.edges.iter().zip(path.nodes.iter().skip(1)).enumerate() {
        let (Some(edge), Some(node)) = (st.trajectory.edge(*edge_id), st.trajectory.node(*node_id))
        else {
            continue;
        };
        turns.push(TurnSummary {
            turn: i as u32 + 1,
            node_id: node.id.0,
            edge_id: edge.id.0,
            action: views::action(&edge.action),
            has_real: node.real.is_some(),
            prediction_count: node.predictions.len() as u32,
            has_authored: !node.authored.is_empty(),
            fidelity: node_score(ws, st, node)?,
            perturbation: perturbations.get(edge_id).cloned(),
        });
    }
    Ok(turns)
}

/// The stored tree without undone branches: undone nodes and edges are
/// dropped and the rest renumbered in order (ids in an export are the file's
/// own).
pub(crate) fn live_tree(st: &StoredTrajectory) -> core::Trajectory {
    if st.live_nodes.len() == st.trajectory.nodes.len() {
        return st.trajectory.clone();
    }
    let mut t = st.trajectory.clone();
    let node_map: BTreeMap<NodeId, NodeId> = st
        .live_nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, NodeId(i as u32)))
        .collect();
    let edge_map: BTreeMap<EdgeId, EdgeId> = st
        .live_edges
        .iter()
        .enumerate()
        .map(|(i, e)| (*e, EdgeId(i as u32)))
        .collect();
    t.nodes.retain(|n| node_map.contains_key(&n.id));
    t.edges.retain(|e| edge_map.contains_key(&e.id));
    for n in &mut t.nodes {
        n.id = node_map[&n.id];
        n.parent_edge = n.parent_edge.and_then(|e| edge_map.get(&e).copied());
    }
    for e in &mut t.edges {
        e.id = edge_map[&e.id];
        e.from = node_map.get(&e.from).copied().unwrap_or(NodeId(0));
        e.to = node_map.get(&e.to).copied().unwrap_or(NodeId(0));
        e.edited_from = e.edited_from.and_then(|x| edge_map.get(&x).copied());
    }
    t
}

/// Appends a turn with the workspace already locked (shared with rollouts).
pub(crate) fn append_locked(
    ws: &mut Workspace,
    key: TrajectoryKey,
    from: NodeId,
    raw: &str,
) -> Result<(EdgeId, NodeId), ApiError> {
    let st = ws.load_trajectory(key)?;
    let node = live_node(&st, from.0)?;
    let format = node
        .parent_edge
        .and_then(|e| st.trajectory.edge(e))
        .map(|e| e.action.format)
        .unwrap_or_else(|| ActionFormat::for_domain(st.trajectory.domain));
    Ok(ws.add_turn(key, from, core::Action::new(raw, format))?)
}
