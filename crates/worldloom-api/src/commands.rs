//! The command functions. Each takes the [`Studio`] and a request type and
//! returns a response type or an [`ApiError`]; [`crate::dispatch`] maps
//! command names to them.

use std::collections::BTreeMap;
use std::path::Path;

use worldloom_core as core;
use worldloom_core::{EdgeId, NodeId, PredictionId};
use worldloom_obs as obs;
use worldloom_store::{ChangeRecord, StoredTrajectory, TrajectoryKey, Workspace};

use crate::error::{ApiError, ErrorCode};
use crate::import;
use crate::types::*;
use crate::views;
use crate::{Studio, StudioEvent};

pub use crate::curriculum::{export_curriculum, import_uploaded};
pub use crate::editing::{
    append_turn, author_observation, compare_branches, edit_action, parse_action, set_perturbation,
    validate_observation,
};
pub use crate::engine::{engine_status, inspect_model_dir, set_engine};
pub use crate::stepping::{cancel_step, preview_prompt, rollout, step};

/// The producer name stored with metric results computed here.
pub const METRICS_PRODUCER: &str = concat!("worldloom-obs ", env!("CARGO_PKG_VERSION"));

pub(crate) fn parse_trajectory_id(id: &str) -> Result<TrajectoryKey, ApiError> {
    id.trim().parse::<i64>().map(TrajectoryKey).map_err(|_| {
        ApiError::bad_request(format!(
            "trajectory_id `{id}` is not a workspace trajectory id (a decimal number)"
        ))
    })
}

pub(crate) fn parse_branch_id(id: &str) -> Result<NodeId, ApiError> {
    id.trim().parse::<u32>().map(NodeId).map_err(|_| {
        ApiError::bad_request(format!(
            "branch_id `{id}` is not a branch id (a leaf node number)"
        ))
    })
}

/// The API's view of an undo-log record.
///
/// # Errors
/// [`ErrorCode::Internal`] for a change kind this build does not know.
pub(crate) fn change_summary(c: &ChangeRecord) -> Result<ChangeSummary, ApiError> {
    Ok(ChangeSummary {
        id: c.id.0.to_string(),
        kind: ChangeKind::from_store(&c.kind)?,
        trajectory_id: c.trajectory.map(|t| t.0.to_string()),
        summary: c.summary.clone(),
        state: match c.state {
            worldloom_store::ChangeState::Applied => ChangeState::Applied,
            worldloom_store::ChangeState::Undone => ChangeState::Undone,
            worldloom_store::ChangeState::Abandoned => ChangeState::Abandoned,
        },
        created_at: c.created_at.clone(),
    })
}

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

/// What the right pane shows for a node: a chosen or requested prediction,
/// else the current authored observation, else the newest prediction with an
/// observation.
pub(crate) enum Shown<'a> {
    Prediction(&'a core::Prediction),
    Authored(usize, &'a core::AuthoredObservation),
}

pub(crate) fn shown<'a>(
    node: &'a core::Node,
    requested: Option<PredictionId>,
) -> Result<Option<Shown<'a>>, ApiError> {
    if let Some(id) = requested {
        return node
            .prediction(id)
            .map(|p| Some(Shown::Prediction(p)))
            .ok_or_else(|| {
                ApiError::not_found(format!("node {} has no prediction {}", node.id, id.0))
            });
    }
    if let Some(p) = node.chosen_prediction.and_then(|id| node.prediction(id)) {
        return Ok(Some(Shown::Prediction(p)));
    }
    if let Some(a) = node.authored.last() {
        return Ok(Some(Shown::Authored(node.authored.len() - 1, a)));
    }
    Ok(node
        .predictions
        .iter()
        .rev()
        .find(|p| p.observation.is_some())
        .map(Shown::Prediction))
}

pub(crate) fn subject_of(shown: &Shown<'_>) -> String {
    match shown {
        Shown::Prediction(p) => format!("prediction:{}", p.id.0),
        Shown::Authored(i, _) => format!("authored:{i}"),
    }
}

fn shown_text<'a>(shown: &Shown<'a>) -> (Option<&'a str>, Option<core::Representation>) {
    match shown {
        Shown::Prediction(p) => (p.observation.as_deref(), Some(p.representation)),
        Shown::Authored(_, a) => (
            Some(a.observation.text.as_str()),
            Some(a.observation.representation),
        ),
    }
}

/// The previous real observation (the parent state's), for transition F1.
fn previous_real<'a>(st: &'a StoredTrajectory, node: &core::Node) -> Option<&'a core::Observation> {
    let edge = st.trajectory.edge(node.parent_edge?)?;
    st.trajectory.node(edge.from)?.real.as_ref()
}

/// Evaluates what the right pane shows against the real observation.
pub(crate) fn evaluate(
    st: &StoredTrajectory,
    node: &core::Node,
    shown: &Shown<'_>,
) -> Option<obs::metrics::Evaluation> {
    let real = node.real.as_ref()?;
    let (text, pred_repr) = shown_text(shown);
    let representation = real.representation;
    // A prediction in another representation than the real main text is
    // compared with the real view of that representation, if there is one.
    let real_text = match pred_repr {
        Some(r) if r != representation && real.view(r).is_some() => real.view(r),
        _ => Some(real.text.as_str()),
    }?;
    let repr = match pred_repr {
        Some(r) if real.view(r).is_some() => r,
        _ => representation,
    };
    let prev = previous_real(st, node).and_then(|o| o.view(repr));
    let prev_bytes = prev.map(str::as_bytes);
    let real_bytes = if real.is_error_step() {
        None
    } else {
        Some(real_text.as_bytes())
    };
    match obs::metrics::evaluate(real_bytes, text.map(str::as_bytes), prev_bytes, repr) {
        Ok(e) => Some(e),
        Err(err) => {
            let mut e = obs::metrics::evaluate(None, None, None, repr).ok()?;
            e.reason = Some(err.to_string());
            Some(e)
        }
    }
}

/// The overall score of what a node shows, from the stored results or
/// computed (and stored) now.
pub(crate) fn node_score(
    ws: &mut Workspace,
    st: &StoredTrajectory,
    node: &core::Node,
) -> Result<Option<f64>, ApiError> {
    let Some(shown) = shown(node, None)? else {
        return Ok(None);
    };
    if node.real.is_none() {
        return Ok(None);
    }
    let subject = subject_of(&shown);
    let stored = ws.metric_results(st.key, node.id)?;
    if let Some(r) = stored
        .iter()
        .rev()
        .find(|r| r.subject == subject && r.producer == METRICS_PRODUCER)
    {
        return Ok(r.score);
    }
    let Some(e) = evaluate(st, node, &shown) else {
        return Ok(None);
    };
    let score = views::overall(&e).map(|s| s.clamp(0.0, 1.0));
    store_score(ws, st.key, node.id, &subject, score, &e)?;
    Ok(score)
}

pub(crate) fn store_score(
    ws: &mut Workspace,
    key: TrajectoryKey,
    node: NodeId,
    subject: &str,
    score: Option<f64>,
    e: &obs::metrics::Evaluation,
) -> Result<(), ApiError> {
    // The stored result leaves out the per-node diff and line diff, which
    // are recomputed on display.
    let mut compact = e.clone();
    compact.nodes = None;
    compact.line_diff = None;
    let value =
        serde_json::to_value(&compact).map_err(|err| ApiError::internal(err.to_string()))?;
    ws.record_metric_result(key, node, subject, METRICS_PRODUCER, score, &value)?;
    Ok(())
}

/// Scores every node's shown prediction that has no stored score yet.
pub(crate) fn score_trajectory(ws: &mut Workspace, key: TrajectoryKey) -> Result<(), ApiError> {
    let st = ws.load_trajectory(key)?;
    for node in &st.trajectory.nodes {
        if st.live_nodes.contains(&node.id) {
            node_score(ws, &st, node)?;
        }
    }
    Ok(())
}

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

/// `workspace_info`: the workspace file, schema version and undo state.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn workspace_info(
    studio: &Studio,
    _req: WorkspaceInfoRequest,
) -> Result<WorkspaceInfoResponse, ApiError> {
    let ws = studio.lock()?;
    let (can_undo, can_redo) = ws.can_undo_redo()?;
    Ok(WorkspaceInfoResponse {
        path: ws.path().display().to_string(),
        schema_version: ws.schema_version()?,
        trajectory_count: ws.list_trajectories()?.len() as u32,
        can_undo,
        can_redo,
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// `list_trajectories`: the sidebar list, filtered and sorted.
///
/// # Errors
/// [`ErrorCode::Storage`] (an unknown sort is refused when the request is
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
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
pub fn get_trajectory(
    studio: &Studio,
    req: GetTrajectoryRequest,
) -> Result<GetTrajectoryResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let mut ws = studio.lock()?;
    let st = ws.load_trajectory(key)?;
    let trajectory = all_summaries(&mut ws)?
        .into_iter()
        .find(|t| t.id == req.trajectory_id.trim())
        .ok_or_else(|| ApiError::not_found(format!("no trajectory {}", req.trajectory_id)))?;
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
/// [`ErrorCode::NotFound`] when the branch id is not a live leaf;
/// [`ErrorCode::BadRequest`]; [`ErrorCode::Storage`].
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

fn side(text: &str, representation: core::Representation) -> SideDocument {
    if !representation.is_tree() {
        return SideDocument {
            text: text.to_string(),
            tree: None,
            parse_error: None,
        };
    }
    match obs::parse(text, representation) {
        Ok(parsed) => SideDocument {
            text: text.to_string(),
            tree: Some(parsed.tree),
            parse_error: None,
        },
        Err(e) => SideDocument {
            text: text.to_string(),
            tree: None,
            parse_error: Some(e.to_string()),
        },
    }
}

fn prediction_summary(p: &core::Prediction, overall: Option<f64>) -> PredictionSummary {
    PredictionSummary {
        id: p.id.0,
        engine: p.engine.clone(),
        seed: p.seed.map(|s| s.to_string()),
        context: p.context,
        status: p.status,
        params: serde_json::Value::Object(p.params.clone()),
        prompt_tokens: p.prompt_tokens.map(|t| t.min(u32::MAX as u64) as u32),
        completion_tokens: p.completion_tokens.map(|t| t.min(u32::MAX as u64) as u32),
        total_ms: p.total_ms,
        created_at: p.created_at.clone(),
        overall,
    }
}

fn predictions_of(
    ws: &Workspace,
    st: &StoredTrajectory,
    node: &core::Node,
) -> Result<Vec<PredictionSummary>, ApiError> {
    let stored = ws.metric_results(st.key, node.id)?;
    Ok(node
        .predictions
        .iter()
        .map(|p| {
            let subject = format!("prediction:{}", p.id.0);
            let overall = stored
                .iter()
                .rev()
                .find(|r| r.subject == subject && r.producer == METRICS_PRODUCER)
                .and_then(|r| r.score);
            prediction_summary(p, overall)
        })
        .collect())
}

pub(crate) fn live_node(st: &StoredTrajectory, node: u32) -> Result<&core::Node, ApiError> {
    st.trajectory
        .node(NodeId(node))
        .filter(|n| st.live_nodes.contains(&n.id))
        .ok_or_else(|| ApiError::not_found(format!("trajectory {} has no node {node}", st.key.0)))
}

/// `get_turn`: everything the side-by-side panes show for one state.
///
/// # Errors
/// [`ErrorCode::NotFound`] for an unknown node or prediction;
/// [`ErrorCode::BadRequest`]; [`ErrorCode::Storage`].
pub fn get_turn(studio: &Studio, req: GetTurnRequest) -> Result<TurnDetail, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let mut ws = studio.lock()?;
    // Only the path to the node is needed (its state, the previous one, the
    // action): large trees are not read whole.
    let st = ws.load_trajectory_path(key, NodeId(req.node_id))?;
    let node = live_node(&st, req.node_id)?;
    let edge = node.parent_edge.and_then(|e| st.trajectory.edge(e));
    let shown = shown(node, req.prediction_id.map(PredictionId))?;
    let evaluation = shown.as_ref().and_then(|s| evaluate(&st, node, s));
    if let (Some(s), Some(e)) = (&shown, &evaluation) {
        let subject = subject_of(s);
        let have = ws
            .metric_results(key, node.id)?
            .iter()
            .any(|r| r.subject == subject && r.producer == METRICS_PRODUCER);
        if !have {
            store_score(
                &mut ws,
                key,
                node.id,
                &subject,
                views::overall(e).map(|x| x.clamp(0.0, 1.0)),
                e,
            )?;
        }
    }
    let (pred_text, pred_repr) = shown.as_ref().map(shown_text).unwrap_or((None, None));

    let mut views = Vec::new();
    let mut pred_placed = false;
    if let Some(real) = &node.real {
        let mut reals: Vec<(String, core::Representation, &str)> =
            vec![("main".to_string(), real.representation, real.text.as_str())];
        for v in &real.views {
            reals.push((v.name.clone(), v.representation, v.text.as_str()));
        }
        for (name, repr, text) in reals {
            let real_side = side(text, repr);
            let takes_prediction = !pred_placed && pred_repr == Some(repr);
            let predicted = if takes_prediction {
                pred_text.map(|t| side(t, repr))
            } else {
                None
            };
            pred_placed |= takes_prediction;
            views.push(compared(
                name,
                repr,
                Some(real_side),
                predicted,
                text,
                pred_text.filter(|_| takes_prediction),
            ));
        }
    }
    if !pred_placed && let (Some(text), Some(repr)) = (pred_text, pred_repr) {
        views.insert(
            0,
            compared("main".into(), repr, None, Some(side(text, repr)), "", None),
        );
    }

    let predicted_kind = shown.as_ref().map(|s| match s {
        Shown::Prediction(_) => ObservationKind::Predicted,
        Shown::Authored(..) => ObservationKind::Authored,
    });
    let (prediction_id, reasoning, raw_output) = match &shown {
        Some(Shown::Prediction(p)) => {
            let parsed = core::parse_model_output(&p.raw_output);
            let reasoning = p
                .reasoning_content
                .clone()
                .or_else(|| (!parsed.reasoning.is_empty()).then_some(parsed.reasoning));
            (Some(p.id.0), reasoning, Some(p.raw_output.clone()))
        }
        _ => (None, None, None),
    };
    let predictions = predictions_of(&ws, &st, node)?;
    let tokens = match &shown {
        Some(Shown::Prediction(p)) => p
            .extra
            .get(crate::stepping::TOKENS_FIELD)
            .and_then(|v| serde_json::from_value::<Vec<TokenView>>(v.clone()).ok())
            .map(crate::stepping::stored_observation_tokens),
        _ => None,
    };
    let perturbation = match edge {
        Some(e) => ws.perturbations(key)?.remove(&e.id),
        None => None,
    };
    // Judge scores: a stored `judge:<model>` result for what is shown, else
    // the fields of a judged predictions file the prediction came from.
    let judge = match &shown {
        Some(s) => {
            let subject = subject_of(s);
            let stored = ws.metric_results(key, node.id)?;
            let from_store = stored
                .iter()
                .rev()
                .filter(|r| r.subject == subject)
                .find_map(|r| {
                    let model = r.producer.strip_prefix("judge:")?;
                    views::judge_scores(r.result.as_object()?, Some(model))
                });
            from_store.or_else(|| match s {
                Shown::Prediction(p) => views::judge_scores(&p.extra, None),
                Shown::Authored(..) => None,
            })
        }
        None => None,
    };
    Ok(TurnDetail {
        trajectory_id: key.0.to_string(),
        turn: st.trajectory.turn_of(node.id).unwrap_or(0) as u32,
        node_id: node.id.0,
        edge_id: edge.map(|e| e.id.0),
        action: edge.map(|e| views::action(&e.action)),
        real_meta: node.real.as_ref().map(|r| r.metadata.clone()),
        real_error: node
            .real
            .as_ref()
            .and_then(|r| r.error.as_ref())
            .map(|e| e.message.clone()),
        predictions,
        prediction_id,
        chosen_prediction_id: node.chosen_prediction.map(|p| p.0),
        predicted_kind,
        views,
        fidelity: evaluation.as_ref().map(|e| {
            let mut f = views::fidelity(e);
            f.judge = judge;
            f
        }),
        reasoning,
        raw_output,
        tokens,
        perturbation,
    })
}

fn compared(
    name: String,
    repr: core::Representation,
    real: Option<SideDocument>,
    predicted: Option<SideDocument>,
    real_text: &str,
    pred_text: Option<&str>,
) -> ComparedView {
    // The sides hold the `worldloom-obs` trees themselves: align those.
    let diff = match (
        real.as_ref().and_then(|r| r.tree.as_ref()),
        predicted.as_ref().and_then(|p| p.tree.as_ref()),
    ) {
        (Some(rt), Some(pt)) => Some(views::tree_diff(&obs::diff::diff_trees(rt, pt).1)),
        _ => None,
    };
    let line_diff = pred_text
        .filter(|_| real.is_some())
        .map(|p| obs::diff::line_diff(real_text, p));
    ComparedView {
        representation: repr,
        name,
        real,
        predicted,
        diff,
        line_diff,
    }
}

/// `list_predictions`: the predictions of a node, for the picker.
///
/// # Errors
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
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
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
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

/// `undo`: undoes the newest change.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn undo(studio: &Studio, _req: EmptyRequest) -> Result<ChangeResponse, ApiError> {
    let change = studio.lock()?.undo()?;
    if let Some(c) = &change {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: c.trajectory.map(|t| t.0.to_string()),
            kind: StudioChangeKind::Undo.into(),
        });
    }
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// `redo`: re-applies the oldest undone change.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn redo(studio: &Studio, _req: EmptyRequest) -> Result<ChangeResponse, ApiError> {
    let change = studio.lock()?.redo()?;
    if let Some(c) = &change {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: c.trajectory.map(|t| t.0.to_string()),
            kind: StudioChangeKind::Redo.into(),
        });
    }
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// `history`: the newest 200 changes.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn history(studio: &Studio, _req: EmptyRequest) -> Result<HistoryResponse, ApiError> {
    let changes = studio.lock()?.history(200)?;
    Ok(HistoryResponse {
        changes: changes
            .iter()
            .map(change_summary)
            .collect::<Result<_, _>>()?,
    })
}

/// `import_files`: imports trajectory files or folders (every format
/// `worldloom-core` reads) into the workspace. A file already imported (same
/// bytes, same trajectory id) is reported, not added again.
///
/// # Errors
/// Never for a bad file (those are listed in `failed`); [`ErrorCode::Storage`]
/// when the workspace cannot be written.
pub fn import_files(
    studio: &Studio,
    req: ImportFilesRequest,
) -> Result<ImportFilesResponse, ApiError> {
    import_paths(studio, &req.paths, None)
}

/// Imports `paths`; with `strip`, that prefix is removed from every path
/// stored or reported (uploads written under a temporary folder).
pub(crate) fn import_paths(
    studio: &Studio,
    paths: &[String],
    strip: Option<&str>,
) -> Result<ImportFilesResponse, ApiError> {
    let shown = |s: &str| -> String {
        match strip {
            Some(prefix) => s.replace(prefix, ""),
            None => s.to_string(),
        }
    };
    let mut out = ImportFilesResponse {
        imported: Vec::new(),
        failed: Vec::new(),
        warnings: Vec::new(),
    };
    for full_path in paths {
        let path = &shown(full_path);
        let read = match import::read_path(Path::new(full_path)) {
            Ok(r) => r,
            Err(message) => {
                out.failed.push(ImportFailure::new(path, &shown(&message)));
                continue;
            }
        };
        out.warnings.extend(read.warnings.iter().map(|w| shown(w)));
        let mut ws = studio.lock()?;
        for mut t in read.trajectories {
            if let Some(p) = &t.source.path {
                t.source.path = Some(shown(p));
            }
            if let Some(existing) = ws.find_imported(&read.sha256, &t.id)? {
                out.imported.push(ImportedTrajectory {
                    trajectory_id: existing.0.to_string(),
                    name: t.id.clone(),
                    path: path.clone(),
                    added: false,
                });
                continue;
            }
            match ws.import_trajectory(&t, Some(&read.sha256)) {
                Ok(key) => {
                    score_trajectory(&mut ws, key)?;
                    out.imported.push(ImportedTrajectory {
                        trajectory_id: key.0.to_string(),
                        name: t.id.clone(),
                        path: path.clone(),
                        added: true,
                    });
                }
                Err(worldloom_store::StoreError::Invalid(message)) => {
                    out.failed.push(ImportFailure::new(path, &shown(&message)));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    if out.imported.iter().any(|i| i.added) {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: None,
            kind: ChangeKind::Import.into(),
        });
    }
    Ok(out)
}

/// `export`: a trajectory, or one branch of it, as a native file,
/// AgentWorldBench JSONL or SFT JSONL.
///
/// # Errors
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`],
/// [`ErrorCode::Unsupported`] for a format this build cannot write,
/// [`ErrorCode::ExportFailed`] when the file cannot be written.
pub fn export(studio: &Studio, req: ExportRequest) -> Result<ExportResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let st = studio.lock()?.load_trajectory(key)?;
    let mut tree = live_tree(&st);
    if let Some(branch) = &req.branch_id {
        let leaf = parse_branch_id(branch)?;
        if !live_branches(&st)
            .iter()
            .any(|p| p.nodes.last() == Some(&leaf))
        {
            return Err(ApiError::not_found(format!(
                "trajectory {} has no branch ending at node {}",
                key.0, leaf.0
            )));
        }
        tree = import::only_path(&tree, leaf).map_err(|e| ApiError::internal(e.to_string()))?;
    }
    let (content, record_count, ext) = import::export(&tree, req.format)?;
    let stem: String = tree
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let file_name = format!("{stem}{ext}");
    let written_to = match &req.path {
        Some(p) => {
            std::fs::write(p, &content)
                .map_err(|e| ApiError::new(ErrorCode::ExportFailed, format!("{p}: {e}")))?;
            Some(p.clone())
        }
        None => None,
    };
    Ok(ExportResponse {
        content,
        file_name,
        written_to,
        record_count,
    })
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

/// `add_note`: a note on a trajectory or one of its states (one change).
///
/// # Errors
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
pub fn add_note(studio: &Studio, req: AddNoteRequest) -> Result<NoteView, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let note = {
        let mut ws = studio.lock()?;
        let id = ws.add_note(key, req.node_id.map(NodeId), &req.text)?;
        ws.notes(key)?.into_iter().find(|n| n.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::AddNote.into(),
    });
    let note = note.ok_or_else(|| ApiError::bad_request("an empty note is not kept"))?;
    Ok(NoteView {
        id: note.id.0.to_string(),
        node_id: note.node.map(|n| n.0),
        text: note.text,
        updated_at: note.updated_at,
    })
}

/// `list_notes`: the current notes of a trajectory.
///
/// # Errors
/// [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
pub fn list_notes(studio: &Studio, req: ListNotesRequest) -> Result<ListNotesResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let notes = studio.lock()?.notes(key)?;
    Ok(ListNotesResponse {
        notes: notes
            .into_iter()
            .map(|n| NoteView {
                id: n.id.0.to_string(),
                node_id: n.node.map(|x| x.0),
                text: n.text,
                updated_at: n.updated_at,
            })
            .collect(),
    })
}

/// `set_tag`: sets or clears a tag on a trajectory or node (one change).
///
/// # Errors
/// [`ErrorCode::NotFound`], [`ErrorCode::BadRequest`], [`ErrorCode::Storage`].
pub fn set_tag(studio: &Studio, req: SetTagRequest) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_tag(key, req.node_id.map(NodeId), &req.tag, req.present)?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::SetTag.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}
