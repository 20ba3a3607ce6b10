//! Writing a trajectory into the workspace: its `trajectories` row, its
//! nodes with their observations, predictions and choice, its edges and its
//! contents fingerprint (`trajectory_fingerprint`, which runs match rows
//! by), as part of one change (the import paths of
//! `trajectories`, runs that bring their dataset).

use rusqlite::{Transaction, params};
use worldloom_core::{Edge, Node, NodeId, Representation, Trajectory};

use super::predictions::{insert_authored, insert_prediction};
use super::{ChangeId, Workspace, tx_err};
use crate::error::Result;

/// Inserts `trajectory` (its row, nodes, edges and contents fingerprint) as
/// part of `change` and returns its key.
pub(super) fn insert_trajectory(
    tx: &Transaction<'_>,
    path: &std::path::Path,
    trajectory: &Trajectory,
    source_sha256: Option<&str>,
    change: ChangeId,
) -> Result<i64> {
    let fingerprint = trajectory_fingerprint(trajectory);
    insert_trajectory_with(
        tx,
        change,
        path,
        trajectory,
        source_sha256,
        &fingerprint,
        |key| {
            trajectory
                .nodes
                .iter()
                .try_for_each(|node| insert_node(tx, key, node, change))
        },
    )
}

/// Inserts the `trajectories` row of `trajectory`, then its nodes through
/// `insert_nodes` (given the new key: a borrowed or an owned tree writes
/// them its own way), its edges and its contents `fingerprint`, as part of
/// `change`; returns the key.
pub(super) fn insert_trajectory_with(
    tx: &Transaction<'_>,
    change: ChangeId,
    path: &std::path::Path,
    trajectory: &Trajectory,
    source_sha256: Option<&str>,
    fingerprint: &str,
    insert_nodes: impl FnOnce(i64) -> rusqlite::Result<()>,
) -> Result<i64> {
    let err = tx_err(path, "importing a trajectory");
    tx.execute(
        "INSERT INTO trajectories (change_id, ext_id, domain, source_format, source_path, source_sha256, goal, system_prompt, extra_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            change.0,
            trajectory.id,
            trajectory.domain.as_str(),
            trajectory.source.format,
            trajectory.source.path,
            source_sha256,
            trajectory.goal,
            trajectory.system_prompt,
            Workspace::json(&trajectory.extra),
        ],
    )
    .map_err(&err)?;
    let key = tx.last_insert_rowid();
    insert_nodes(key).map_err(&err)?;
    for edge in &trajectory.edges {
        insert_edge(tx, key, edge, change).map_err(&err)?;
    }
    tx.execute(
        "INSERT INTO trajectory_fingerprints (trajectory_id, fingerprint) VALUES (?1, ?2)",
        params![key, fingerprint],
    )
    .map_err(&err)?;
    Ok(key)
}

/// Inserts `node` of trajectory `key` with its observations, predictions
/// and choice, as part of `change`.
pub(super) fn insert_node(
    tx: &Transaction<'_>,
    key: i64,
    node: &Node,
    change: ChangeId,
) -> rusqlite::Result<()> {
    insert_node_row(tx, key, node, change)?;
    if let Some(real) = &node.real {
        insert_real(
            tx,
            key,
            node.id,
            real.representation,
            Workspace::json(real),
            change,
        )?;
    }
    insert_node_rest(tx, key, node, change)
}

/// As [`insert_node`], consuming the node: its real observation is dropped
/// once its JSON is made, before SQLite copies the JSON.
pub(super) fn insert_node_owned(
    tx: &Transaction<'_>,
    key: i64,
    mut node: Node,
    change: ChangeId,
) -> rusqlite::Result<()> {
    insert_node_row(tx, key, &node, change)?;
    if let Some(real) = node.real.take() {
        let (representation, json) = (real.representation, Workspace::json(&real));
        drop(real);
        insert_real(tx, key, node.id, representation, json, change)?;
    }
    insert_node_rest(tx, key, &node, change)
}

/// The `nodes` row of `node`.
fn insert_node_row(
    tx: &Transaction<'_>,
    key: i64,
    node: &Node,
    change: ChangeId,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO nodes (trajectory_id, node_id, parent_edge, extra_json, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![key, node.id.0, node.parent_edge.map(|e| e.0), Workspace::json(&node.extra), change.0],
    )?;
    Ok(())
}

/// The row of a state's real observation, from its JSON.
fn insert_real(
    tx: &Transaction<'_>,
    key: i64,
    node: NodeId,
    representation: Representation,
    json: String,
    change: ChangeId,
) -> rusqlite::Result<()> {
    execute_with_json(
        tx,
        "INSERT INTO observations (trajectory_id, node_id, kind, representation, change_id, observation_json)
         VALUES (?1, ?2, 'real', ?3, ?4, ?5)",
        params![key, node.0, representation.as_str(), change.0],
        json,
    )?;
    Ok(())
}

/// A state's authored observations, predictions, chosen prediction and
/// screenshot.
fn insert_node_rest(
    tx: &Transaction<'_>,
    key: i64,
    node: &Node,
    change: ChangeId,
) -> rusqlite::Result<()> {
    for authored in &node.authored {
        insert_authored(tx, key, node.id, authored, change)?;
    }
    for prediction in &node.predictions {
        insert_prediction(tx, key, node.id, prediction, change)?;
    }
    if let Some(shot) = &node.screenshot {
        // A screenshot whose bytes are not to be had is left out.
        super::screenshots::insert_node_screenshot(tx, key, node.id, shot, change)?;
    }
    if let Some(chosen) = node.chosen_prediction {
        tx.execute(
            "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, ?3, ?4)",
            params![key, node.id.0, chosen.0, change.0],
        )?;
    }
    Ok(())
}

/// Inserts `edge` of trajectory `key` as part of `change`.
pub(super) fn insert_edge(
    tx: &Transaction<'_>,
    key: i64,
    edge: &Edge,
    change: ChangeId,
) -> rusqlite::Result<()> {
    execute_with_json(
        tx,
        "INSERT INTO edges (trajectory_id, edge_id, from_node, to_node, change_id, edge_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![key, edge.id.0, edge.from.0, edge.to.0, change.0],
        Workspace::json(edge),
    )?;
    Ok(())
}

/// Runs `sql` with `params` and then `json` as its last parameter, dropping
/// this copy of `json` as soon as SQLite has bound its own: a record of a
/// large observation is then held twice at most (SQLite's bound value and
/// the row it builds), not three times.
fn execute_with_json(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    json: String,
) -> rusqlite::Result<usize> {
    let mut stmt = tx.prepare_cached(sql)?;
    for (i, p) in params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, p)?;
    }
    stmt.raw_bind_parameter(params.len() + 1, &json)?;
    drop(json);
    stmt.raw_execute()
}

/// The contents fingerprint of a trajectory: SHA-256 over its domain, id,
/// system prompt, and along its main path every turn's prompt (or action)
/// and real observation. Equal for the same dataset trajectory read from
/// the dataset file, from `worldloom eval` output or from the official
/// script's output.
pub fn trajectory_fingerprint(t: &Trajectory) -> String {
    // Fed piece by piece: the texts are hashed where they lie, never copied
    // (one copy of every observation along the path, for a huge one).
    let mut h = super::Sha256Hex::default();
    let mut push = |s: &str| {
        h.update(s.as_bytes());
        h.update(&[0]);
    };
    push(t.domain.as_str());
    push(&t.id);
    push(t.system_prompt.as_deref().unwrap_or(""));
    let path = t.main_path();
    for (j, edge) in path.edges.iter().enumerate() {
        let Some(e) = t.edge(*edge) else { continue };
        push(e.prompt.as_deref().unwrap_or(&e.action.raw));
        let real = path
            .nodes
            .get(j + 1)
            .and_then(|n| t.node(*n))
            .and_then(|n| n.real.as_ref());
        push(real.map_or("", |o| o.text.as_str()));
    }
    h.finish()
}
