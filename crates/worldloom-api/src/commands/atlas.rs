//! The fidelity atlas of runs: `run_atlas` counts what a run's predictions
//! get wrong (`worldloom-eval::atlas`), `atlas_rows` lists the rows behind
//! one cell with the findings that put them there; `branches_atlas`
//! counts what the workspace's branches show.
//!
//! Each row's findings are computed once, by `worldloom-eval`'s
//! `state_findings` (the studio's evaluation read as the error taxonomy of
//! `worldloom-obs::findings`), and stored with the row
//! (`Workspace::store_row_findings`); later calls count the stored findings
//! without parsing an observation. Findings of another producer (an older
//! build) are computed again.

use std::collections::{BTreeMap, HashMap, HashSet};

use worldloom_eval::atlas::{
    ActionKind, Atlas, AtlasRow, aggregate, compare, in_cell, state_findings,
};
use worldloom_obs::findings::{ErrorKind, Finding};
use worldloom_obs::metrics::EvalStatus;
use worldloom_store::{RowFindings, RunId, StoredRunRow, TrajectoryKey, Workspace};

use super::runs::{parse_run_id, views_of};
use crate::Studio;
use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::scoring::{METRICS_PRODUCER, Shown, shown};
use crate::types::*;

/// Rows whose findings are computed under one hold of the workspace lock
/// (the lock is released between batches, so the studio stays responsive
/// while a large run is read the first time).
const BATCH_ROWS: usize = 256;

fn status_str(s: EvalStatus) -> &'static str {
    match s {
        EvalStatus::Scored => "scored",
        EvalStatus::Missing => "missing",
        EvalStatus::Skipped => "skipped",
    }
}

fn parse_status(s: &str) -> EvalStatus {
    match s {
        "scored" => EvalStatus::Scored,
        "missing" => EvalStatus::Missing,
        _ => EvalStatus::Skipped,
    }
}

/// Computes the findings of `rows` (all of one workspace) and stores them.
fn compute(ws: &mut Workspace, rows: &[&StoredRunRow]) -> Result<(), ApiError> {
    let mut by_trajectory: BTreeMap<TrajectoryKey, Vec<&StoredRunRow>> = BTreeMap::new();
    for r in rows {
        by_trajectory.entry(r.trajectory).or_default().push(r);
    }
    let mut out = Vec::with_capacity(rows.len());
    for (key, rows) in by_trajectory {
        let mut states = Vec::with_capacity(rows.len() * 2);
        for r in &rows {
            states.push(r.node);
            states.extend(ws.parent_state(key, r.node)?);
        }
        states.sort();
        states.dedup();
        let st = ws.load_trajectory_states_without_prompts(key, &states)?;
        for r in rows {
            let prediction = st
                .trajectory
                .node(r.node)
                .and_then(|n| n.prediction(r.prediction));
            let (action, f) = match prediction {
                Some(p) => state_findings(&st.trajectory, r.node, p),
                None => (
                    ActionKind::Other,
                    worldloom_obs::findings::TurnFindings {
                        status: EvalStatus::Missing,
                        findings: Vec::new(),
                    },
                ),
            };
            out.push(RowFindings {
                row_id: r.id,
                producer: METRICS_PRODUCER.to_owned(),
                action_kind: action.as_str().to_owned(),
                status: status_str(f.status).to_owned(),
                findings_json: serde_json::to_string(&f.findings)
                    .map_err(|e| ApiError::internal(e.to_string()))?,
            });
        }
    }
    ws.store_row_findings(&out)?;
    Ok(())
}

/// A run's rows, each row's atlas input by row id, and how many rows'
/// findings the call computed.
type RunFindings = (Vec<StoredRunRow>, HashMap<i64, AtlasRow>, u32);

/// A run's rows with their findings, computing (and storing) the findings
/// of rows that have none of this build's producer. Returns the rows, each
/// row's atlas input by row id, and how many rows were computed.
fn rows_with_findings(studio: &Studio, run: RunId) -> Result<RunFindings, ApiError> {
    let rows = studio.lock()?.run_rows(run)?;
    let stored_ids: HashSet<i64> = studio
        .lock()?
        .run_row_findings(run)?
        .into_iter()
        .filter(|f| f.producer == METRICS_PRODUCER)
        .map(|f| f.row_id)
        .collect();
    let todo: Vec<&StoredRunRow> = rows
        .iter()
        .filter(|r| !stored_ids.contains(&r.id))
        .collect();
    let computed = todo.len() as u32;
    for batch in todo.chunks(BATCH_ROWS) {
        let mut ws = studio.lock()?;
        compute(&mut ws, batch)?;
    }
    drop(todo);
    let stored = studio.lock()?.run_row_findings(run)?;
    let by_id: HashMap<i64, &StoredRunRow> = rows.iter().map(|r| (r.id, r)).collect();
    let mut out = HashMap::with_capacity(stored.len());
    for f in stored {
        let Some(row) = by_id.get(&f.row_id) else {
            continue;
        };
        let findings: Vec<Finding> = serde_json::from_str(&f.findings_json).map_err(|e| {
            ApiError::internal(format!(
                "run row {}: stored findings do not read: {e}",
                f.row_id
            ))
        })?;
        out.insert(
            f.row_id,
            AtlasRow {
                row_id: f.row_id,
                domain: row.domain,
                turn: row.turn,
                action: ActionKind::parse(&f.action_kind).unwrap_or(ActionKind::Other),
                status: parse_status(&f.status),
                findings,
            },
        );
    }
    Ok((rows, out, computed))
}

/// Row ids of a request (`RunRowView.row_id`).
fn parse_row_ids(ids: &[String]) -> Result<HashSet<i64>, ApiError> {
    ids.iter()
        .map(|r| {
            r.trim()
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("`{r}` is not a row id")))
        })
        .collect()
}

/// The atlas of `rows` in row order (those of `only` when not empty).
fn atlas_of(rows: &[StoredRunRow], found: &HashMap<i64, AtlasRow>, only: &HashSet<i64>) -> Atlas {
    let picked = rows
        .iter()
        .filter(|r| only.is_empty() || only.contains(&r.id))
        .filter_map(|r| found.get(&r.id));
    aggregate(picked)
}

/// `run_atlas`: what a run's predictions get wrong, by error kind and by
/// domain, role, attribute, action type and turn; with run B, both and the
/// difference of each rate. The first call on a run computes and stores
/// each row's findings; later calls count the stored ones.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed id,
/// [`crate::ErrorCode::NotFound`] for an unknown run;
/// [`crate::ErrorCode::Storage`].
pub fn run_atlas(studio: &Studio, req: RunAtlasRequest) -> Result<RunAtlasResponse, ApiError> {
    let id = parse_run_id(&req.run_id)?;
    let only = parse_row_ids(&req.row_ids)?;
    let (rows, found, mut computed) = rows_with_findings(studio, id)?;
    let a = atlas_of(&rows, &found, &only);
    let b = match req.run_b.as_deref() {
        Some(rb) => {
            let (rows_b, found_b, n) = rows_with_findings(studio, parse_run_id(rb)?)?;
            computed += n;
            Some(atlas_of(&rows_b, &found_b, &HashSet::new()))
        }
        None => None,
    };
    Ok(RunAtlasResponse {
        compare: b.as_ref().map(|b| compare(&a, b)).unwrap_or_default(),
        a,
        b,
        kinds: ErrorKind::ALL.to_vec(),
        actions: ActionKind::ALL.to_vec(),
        computed_rows: computed,
    })
}

/// `atlas_rows`: the rows of one atlas cell (of the run, or of the selection
/// `row_ids`), in row order, each with the
/// findings that put it there (and the source lines of the nodes in
/// question); with run B, B's row on the same state and its findings of
/// the same kind.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::NotFound`],
/// [`crate::ErrorCode::Storage`].
pub fn atlas_rows(studio: &Studio, req: AtlasRowsRequest) -> Result<AtlasRowsResponse, ApiError> {
    let id = parse_run_id(&req.run_id)?;
    let only = parse_row_ids(&req.row_ids)?;
    let (rows, found, _) = rows_with_findings(studio, id)?;
    let mut hits: Vec<(&StoredRunRow, &AtlasRow, Vec<Finding>)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| only.is_empty() || only.contains(&r.id))
    {
        let Some(a) = found.get(&r.id) else { continue };
        if a.status != EvalStatus::Scored {
            continue;
        }
        let fs: Vec<Finding> = a
            .findings
            .iter()
            .filter(|f| in_cell(req.table, &req.group, req.kind, a, f))
            .cloned()
            .collect();
        if !fs.is_empty() {
            hits.push((r, a, fs));
        }
    }
    let total = hits.len() as u32;
    let take = if req.limit == 0 {
        usize::MAX
    } else {
        req.limit as usize
    };
    let hits: Vec<_> = hits
        .into_iter()
        .skip(req.offset as usize)
        .take(take)
        .collect();
    let b = match req.run_b.as_deref() {
        Some(rb) => Some(rows_with_findings(studio, parse_run_id(rb)?)?),
        None => None,
    };
    let ws = studio.lock()?;
    let a_rows: Vec<StoredRunRow> = hits.iter().map(|(r, _, _)| (*r).clone()).collect();
    let a_views = views_of(&ws, &a_rows, Some(id))?;
    let b_side: HashMap<(TrajectoryKey, u32), AtlasRowSide> = match &b {
        Some((rows_b, found_b, _)) => {
            let wanted: HashSet<(TrajectoryKey, u32)> =
                a_rows.iter().map(|r| (r.trajectory, r.node.0)).collect();
            let matched: Vec<StoredRunRow> = rows_b
                .iter()
                .filter(|r| wanted.contains(&(r.trajectory, r.node.0)))
                .cloned()
                .collect();
            let views = views_of(&ws, &matched, matched.first().map(|r| r.run))?;
            matched
                .iter()
                .zip(views)
                .map(|(r, v)| {
                    let findings = found_b
                        .get(&r.id)
                        .map(|x| {
                            x.findings
                                .iter()
                                .filter(|f| f.kind == req.kind)
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default();
                    ((r.trajectory, r.node.0), AtlasRowSide { row: v, findings })
                })
                .collect()
        }
        None => HashMap::new(),
    };
    drop(ws);
    let rows = hits
        .into_iter()
        .zip(a_views)
        .map(|((r, a, findings), view)| AtlasRowView {
            row: view,
            action: a.action,
            findings,
            b: b_side.get(&(r.trajectory, r.node.0)).cloned(),
        })
        .collect();
    Ok(AtlasRowsResponse { rows, total })
}

/// How many turns `node` lies below the root of `t`.
fn depth(t: &worldloom_core::Trajectory, node: worldloom_core::NodeId) -> u32 {
    let mut d = 0u32;
    let mut at = node;
    while let Some(edge) = t
        .node(at)
        .and_then(|n| n.parent_edge)
        .and_then(|e| t.edge(e))
    {
        at = edge.from;
        d += 1;
        if d as usize > t.edges.len() {
            break;
        }
    }
    d
}

/// `branches_atlas`: the atlas of what the workspace's branches show — on
/// every live state of the given trajectories (all when none is given),
/// the prediction the turn view shows (the chosen one, else the newest
/// with an observation; authored observations are not counted), by the
/// same rule as a run's rows. Computed on each call, one trajectory under
/// the lock at a time, nothing stored (a run's rows are stored once:
/// `run_atlas`); `turn` is the state's depth. The response's `b` and
/// `compare` are empty, `computed_rows` the states counted.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed id,
/// [`crate::ErrorCode::NotFound`] for an unknown trajectory,
/// [`crate::ErrorCode::Storage`].
pub fn branches_atlas(
    studio: &Studio,
    req: BranchesAtlasRequest,
) -> Result<RunAtlasResponse, ApiError> {
    let keys: Vec<TrajectoryKey> = if req.trajectory_ids.is_empty() {
        studio
            .lock()?
            .list_trajectories()?
            .into_iter()
            .map(|t| t.key)
            .collect()
    } else {
        req.trajectory_ids
            .iter()
            .map(|id| parse_trajectory_id(id))
            .collect::<Result<_, _>>()?
    };
    let mut rows = Vec::new();
    for key in keys {
        let st = studio.lock()?.load_trajectory(key)?;
        for id in &st.live_nodes {
            let Some(node) = st.trajectory.node(*id) else {
                continue;
            };
            let Some(Shown::Prediction(p)) = shown(node, None)? else {
                continue;
            };
            let (action, f) = state_findings(&st.trajectory, node.id, p);
            rows.push(AtlasRow {
                row_id: rows.len() as i64,
                domain: st.trajectory.domain,
                turn: depth(&st.trajectory, node.id),
                action,
                status: f.status,
                findings: f.findings,
            });
        }
    }
    Ok(RunAtlasResponse {
        a: aggregate(&rows),
        b: None,
        compare: Vec::new(),
        kinds: ErrorKind::ALL.to_vec(),
        actions: ActionKind::ALL.to_vec(),
        computed_rows: rows.len() as u32,
    })
}
