//! Trajectories: importing one as a change, listing them, and reading one
//! back (whole, or only the records on the path to one state).

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use worldloom_core::{
    Action, AuthoredObservation, Domain, Edge, EdgeId, Node, NodeId, Observation, Prediction,
    PredictionId, Source, Trajectory,
};

use super::records::{edge_from_json, observation_from_json};
use super::trajectory_rows::{
    insert_node_owned, insert_trajectory, insert_trajectory_with, trajectory_fingerprint,
};
use super::{TrajectoryKey, Workspace, tx_err};
use crate::error::{Result, StoreError};

/// A trajectory as listed: the columns, without the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryRow {
    /// The workspace key.
    pub key: TrajectoryKey,
    /// The trajectory's own id (from its source).
    pub ext_id: String,
    /// Its domain.
    pub domain: Domain,
    /// Where it was imported from.
    pub source: Source,
    /// The task instruction, when known.
    pub goal: Option<String>,
    /// SHA-256 (lowercase hex) of the source file's bytes, when imported from
    /// a file.
    pub source_sha256: Option<String>,
    /// When it was imported (UTC).
    pub imported_at: String,
    /// Live predictions over all its nodes.
    pub prediction_count: u64,
    /// Live authored observations over all its nodes.
    pub authored_count: u64,
    /// The lowest live metric score stored for it (newest result per node,
    /// subject and producer), when any was stored.
    pub lowest_score: Option<f64>,
}

/// One live edge as `(from, to)` node ids, for quick tree shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeLink {
    /// The edge.
    pub edge: EdgeId,
    /// The state the action was taken from.
    pub from: NodeId,
    /// The state it led to.
    pub to: NodeId,
}

/// A trajectory read back from the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTrajectory {
    /// The workspace key.
    pub key: TrajectoryKey,
    /// The tree. It holds every node and edge ever added (so that ids equal
    /// indices, as [`Trajectory::validate`] requires), but only live
    /// predictions, authored observations and choices.
    pub trajectory: Trajectory,
    /// The nodes whose creating change is applied. Undone branches are not in
    /// it; views show only these.
    pub live_nodes: BTreeSet<NodeId>,
    /// The edges whose creating change is applied.
    pub live_edges: BTreeSet<EdgeId>,
    /// SHA-256 of the source file, when imported from a file.
    pub source_sha256: Option<String>,
    /// When it was imported (UTC).
    pub imported_at: String,
}

impl StoredTrajectory {
    /// The live edges leaving `node`, oldest first.
    pub fn live_children(&self, node: NodeId) -> Vec<EdgeId> {
        self.trajectory
            .edges
            .iter()
            .filter(|e| e.from == node && self.live_edges.contains(&e.id))
            .map(|e| e.id)
            .collect()
    }
}

impl Workspace {
    /// Imports a trajectory as one change and returns its key.
    ///
    /// `source_sha256` is the SHA-256 of the file it came from (see
    /// [`super::sha256_hex`]); [`Workspace::find_imported`] uses it to skip
    /// files already imported.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when the tree does not validate;
    /// [`StoreError::Sqlite`].
    pub fn import_trajectory(
        &mut self,
        trajectory: &Trajectory,
        source_sha256: Option<&str>,
    ) -> Result<TrajectoryKey> {
        self.import_trajectory_tagged(trajectory, source_sha256, &[])
    }

    /// As [`import_trajectory`](Self::import_trajectory), with `tags` set on
    /// the new trajectory in the same change: one transaction, so a crash
    /// never leaves the trajectory without its tags (undoing the import
    /// removes both).
    ///
    /// # Errors
    /// As [`import_trajectory`](Self::import_trajectory);
    /// [`StoreError::Invalid`] for an empty tag.
    pub fn import_trajectory_tagged(
        &mut self,
        trajectory: &Trajectory,
        source_sha256: Option<&str>,
        tags: &[&str],
    ) -> Result<TrajectoryKey> {
        let tags: Vec<&str> = tags.iter().map(|t| t.trim()).collect();
        if tags.iter().any(|t| t.is_empty()) {
            return Err(StoreError::Invalid("a tag must not be empty".into()));
        }
        let summary = import_summary(trajectory)?;
        let path = self.path.clone();
        self.with_change("import", None, &summary, |tx, change| {
            let key = insert_trajectory(tx, &path, trajectory, source_sha256, change)?;
            let err = tx_err(&path, "importing a trajectory");
            tx.execute(
                "UPDATE changes SET trajectory_id = ?1 WHERE id = ?2",
                params![key, change.0],
            )
            .map_err(&err)?;
            for tag in &tags {
                tx.execute(
                    "INSERT INTO tags (trajectory_id, node_id, tag, present, change_id) VALUES (?1, NULL, ?2, 1, ?3)",
                    params![key, tag, change.0],
                )
                .map_err(&err)?;
            }
            Ok(TrajectoryKey(key))
        })
    }

    /// As [`import_trajectory`](Self::import_trajectory), consuming the
    /// trajectory so that a huge one is not held twice: its states are
    /// written one by one and released as they are, and each real
    /// observation is dropped as soon as its JSON is made, before SQLite
    /// copies that JSON into the row. The workspace ends up the same.
    ///
    /// # Errors
    /// As [`import_trajectory`](Self::import_trajectory).
    pub fn import_trajectory_owned(
        &mut self,
        mut trajectory: Trajectory,
        source_sha256: Option<&str>,
    ) -> Result<TrajectoryKey> {
        let summary = import_summary(&trajectory)?;
        let path = self.path.clone();
        let fingerprint = trajectory_fingerprint(&trajectory);
        self.with_change("import", None, &summary, move |tx, change| {
            let nodes = std::mem::take(&mut trajectory.nodes);
            let key = insert_trajectory_with(
                tx,
                change,
                &path,
                &trajectory,
                source_sha256,
                &fingerprint,
                |key| {
                    nodes
                        .into_iter()
                        .try_for_each(|node| insert_node_owned(tx, key, node, change))
                },
            )?;
            let err = tx_err(&path, "importing a trajectory");
            tx.execute(
                "UPDATE changes SET trajectory_id = ?1 WHERE id = ?2",
                params![key, change.0],
            )
            .map_err(&err)?;
            Ok(TrajectoryKey(key))
        })
    }

    /// The live trajectory imported from a file with this SHA-256 and this
    /// trajectory id, if any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn find_imported(
        &self,
        source_sha256: &str,
        ext_id: &str,
    ) -> Result<Option<TrajectoryKey>> {
        self.conn
            .query_row(
                "SELECT t.id FROM trajectories t JOIN changes c ON c.id = t.change_id
                 WHERE c.state = 'applied' AND t.source_sha256 = ?1 AND t.ext_id = ?2 ORDER BY t.id LIMIT 1",
                params![source_sha256, ext_id],
                |r| r.get(0),
            )
            .optional()
            .map(|o| o.map(TrajectoryKey))
            .map_err(self.sql_err("looking up an imported file"))
    }

    /// Every live trajectory, in import order.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn list_trajectories(&self) -> Result<Vec<TrajectoryRow>> {
        self.trajectory_rows("1", [])
    }

    /// One live trajectory as [`Workspace::list_trajectories`] lists it;
    /// `None` for an unknown key or an undone import. Reads that row alone
    /// (by key), so it costs the same in any workspace.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn trajectory_row(&self, key: TrajectoryKey) -> Result<Option<TrajectoryRow>> {
        Ok(self
            .trajectory_rows("t.id = ?1", params![key.0])?
            .into_iter()
            .next())
    }

    /// The live trajectories `filter` (an SQL condition on `t`) selects.
    fn trajectory_rows(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<TrajectoryRow>> {
        let sql = format!(
            "
            SELECT t.id, t.ext_id, t.domain, t.source_format, t.source_path, t.goal, t.source_sha256, t.imported_at,
              (SELECT count(*) FROM predictions p JOIN changes pc ON pc.id = p.change_id
                 WHERE p.trajectory_id = t.id AND pc.state = 'applied'),
              (SELECT count(*) FROM observations o JOIN changes oc ON oc.id = o.change_id
                 WHERE o.trajectory_id = t.id AND o.kind = 'authored' AND oc.state = 'applied'),
              (SELECT min(m.score) FROM metric_results m WHERE m.trajectory_id = t.id AND m.id IN
                 (SELECT max(id) FROM metric_results WHERE trajectory_id = t.id GROUP BY node_id, subject, producer))
            FROM trajectories t JOIN changes c ON c.id = t.change_id
            WHERE c.state = 'applied' AND {filter} ORDER BY t.id"
        );
        let rows = self.query_all(&sql, args, "listing trajectories", |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, i64>(8)?,
                r.get::<_, i64>(9)?,
                r.get::<_, Option<f64>>(10)?,
            ))
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for (key, ext_id, domain, format, path, goal, sha, imported_at, preds, authored, lowest) in
            rows
        {
            out.push(TrajectoryRow {
                key: TrajectoryKey(key),
                ext_id,
                domain: self.parse_domain(&domain, key)?,
                source: Source { format, path },
                goal,
                source_sha256: sha,
                imported_at,
                prediction_count: preds.max(0) as u64,
                authored_count: authored.max(0) as u64,
                lowest_score: lowest,
            });
        }
        Ok(out)
    }

    pub(super) fn parse_domain(&self, s: &str, key: i64) -> Result<Domain> {
        s.parse::<Domain>().map_err(|m| {
            StoreError::Invalid(format!(
                "{}: trajectories row {key}: {m}",
                self.path.display()
            ))
        })
    }

    /// Every live edge of every live trajectory as `(from, to)` pairs, keyed
    /// by trajectory; cheap enough to compute tree shapes for a list.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn live_edge_links(&self) -> Result<BTreeMap<TrajectoryKey, Vec<EdgeLink>>> {
        self.edge_links_where("1", [])
    }

    /// The live edges of one trajectory as `(from, to)` pairs, in id order
    /// (its entry of [`Workspace::live_edge_links`], read alone).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn live_edge_links_of(&self, key: TrajectoryKey) -> Result<Vec<EdgeLink>> {
        Ok(self
            .edge_links_where("e.trajectory_id = ?1", params![key.0])?
            .remove(&key)
            .unwrap_or_default())
    }

    /// The live edges `filter` (an SQL condition on `e`) selects, by
    /// trajectory.
    fn edge_links_where(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<BTreeMap<TrajectoryKey, Vec<EdgeLink>>> {
        let rows = self.query_all(
            &format!("SELECT e.trajectory_id, e.edge_id, e.from_node, e.to_node FROM edges e
             JOIN changes c ON c.id = e.change_id WHERE c.state = 'applied' AND {filter} ORDER BY e.trajectory_id, e.edge_id"),
            args,
            "reading edges",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, u32>(3)?,
                ))
            },
        )?;
        let mut out: BTreeMap<TrajectoryKey, Vec<EdgeLink>> = BTreeMap::new();
        for (t, e, from, to) in rows {
            out.entry(TrajectoryKey(t)).or_default().push(EdgeLink {
                edge: EdgeId(e),
                from: NodeId(from),
                to: NodeId(to),
            });
        }
        Ok(out)
    }

    /// Reads a live trajectory back.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the key is unknown or its import was
    /// undone; [`StoreError::Record`] when a stored record does not parse;
    /// [`StoreError::Invalid`] when the stored tree is inconsistent;
    /// [`StoreError::Sqlite`].
    pub fn load_trajectory(&self, key: TrajectoryKey) -> Result<StoredTrajectory> {
        self.load_inner(key, None, true)
    }

    /// Reads a live trajectory with the records of only the states on the
    /// path from the root to `node` (and `node` itself): their observations,
    /// predictions, choices and edges are complete; every other node and
    /// edge is present (ids equal indices, the tree shape and live sets are
    /// exact) but empty: no observation, prediction or extra fields, and an
    /// edge action with an empty text. For views of one state on large trees
    /// (`cargo bench -p worldloom-api --bench get_turn`; figures in
    /// `docs/api.md`).
    ///
    /// # Errors
    /// As [`Workspace::load_trajectory`]; [`StoreError::NotFound`] when
    /// `node` does not exist.
    pub fn load_trajectory_path(
        &self,
        key: TrajectoryKey,
        node: NodeId,
    ) -> Result<StoredTrajectory> {
        let links = self.query_all(
            "SELECT from_node, to_node FROM edges WHERE trajectory_id = ?1",
            params![key.0],
            "reading the tree shape",
            |r| Ok((r.get::<_, u32>(0)?, r.get::<_, u32>(1)?)),
        )?;
        let parent: BTreeMap<u32, u32> = links.into_iter().map(|(from, to)| (to, from)).collect();
        let mut on_path = BTreeSet::from([node.0]);
        let mut at = node.0;
        while let Some(&from) = parent.get(&at) {
            if !on_path.insert(from) {
                break;
            }
            at = from;
        }
        let loaded = self.load_inner(key, Some(&on_path), true)?;
        if loaded.trajectory.node(node).is_none() {
            return Err(StoreError::NotFound(format!(
                "trajectory {} has no node {}",
                key.0, node.0
            )));
        }
        Ok(loaded)
    }

    /// Reads a live trajectory with the records of only the given states
    /// (their observations, predictions, choices and the edges into them);
    /// every other node and edge is present but empty, as in
    /// [`Workspace::load_trajectory_path`]. `get_turn` reads a state and its
    /// parent this way, so its cost does not grow with the state's depth
    /// (`cargo bench -p worldloom-api --bench huge`; `docs/benchmarks.md`).
    ///
    /// # Errors
    /// As [`Workspace::load_trajectory`]; [`StoreError::NotFound`] when one
    /// of `nodes` does not exist.
    pub fn load_trajectory_states(
        &self,
        key: TrajectoryKey,
        nodes: &[NodeId],
    ) -> Result<StoredTrajectory> {
        self.load_states(key, nodes, true)
    }

    /// As [`Workspace::load_trajectory_states`], but the edges' prompts are
    /// not read (every `Edge::prompt` is `None`): an AgentWorldBench turn's
    /// prompt holds the whole state before it, which a view of the state
    /// itself does not show (`get_turn`).
    ///
    /// # Errors
    /// As [`Workspace::load_trajectory_states`].
    pub fn load_trajectory_states_without_prompts(
        &self,
        key: TrajectoryKey,
        nodes: &[NodeId],
    ) -> Result<StoredTrajectory> {
        self.load_states(key, nodes, false)
    }

    fn load_states(
        &self,
        key: TrajectoryKey,
        nodes: &[NodeId],
        prompts: bool,
    ) -> Result<StoredTrajectory> {
        let wanted: BTreeSet<u32> = nodes.iter().map(|n| n.0).collect();
        let loaded = self.load_inner(key, Some(&wanted), prompts)?;
        if let Some(missing) = nodes.iter().find(|n| loaded.trajectory.node(**n).is_none()) {
            return Err(StoreError::NotFound(format!(
                "trajectory {} has no node {}",
                key.0, missing.0
            )));
        }
        Ok(loaded)
    }

    /// The real observation of one state, as [`load_trajectory`](Self::load_trajectory)
    /// would give it (the newest live record), read alone; `None` when the
    /// state has none.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; [`StoreError::Record`] for a record that does
    /// not parse.
    pub fn real_observation(
        &self,
        key: TrajectoryKey,
        node: NodeId,
    ) -> Result<Option<Observation>> {
        let ctx = format!("reading trajectory {}", key.0);
        let rows = self.query_all(
            "SELECT o.id, o.observation_json FROM observations o JOIN changes c ON c.id = o.change_id
             WHERE o.trajectory_id = ?1 AND o.node_id = ?2 AND o.kind = 'real' AND c.state = 'applied'
             ORDER BY o.id DESC LIMIT 1",
            params![key.0, node.0],
            &ctx,
            |r| {
                let row_id: i64 = r.get(0)?;
                let json = r.get_ref(1)?.as_str()?;
                Ok(self.parse_record(
                    "observations",
                    &row_id.to_string(),
                    json,
                    observation_from_json,
                ))
            },
        )?;
        rows.into_iter().next().transpose()
    }

    /// The parent state of `node` (the state its turn was taken from), from
    /// the tree's shape alone; `None` for the root.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn parent_state(&self, key: TrajectoryKey, node: NodeId) -> Result<Option<NodeId>> {
        self.conn
            .query_row(
                "SELECT from_node FROM edges WHERE trajectory_id = ?1 AND to_node = ?2 LIMIT 1",
                params![key.0, node.0],
                |r| r.get::<_, u32>(0),
            )
            .optional()
            .map(|o| o.map(NodeId))
            .map_err(self.sql_err("reading a parent state"))
    }

    /// Reads a trajectory; with `only`, records are read for those nodes
    /// (and the edges into them) only.
    /// `prompts` false leaves every edge's prompt unread (`None`).
    fn load_inner(
        &self,
        key: TrajectoryKey,
        only: Option<&BTreeSet<u32>>,
        prompts: bool,
    ) -> Result<StoredTrajectory> {
        let wanted = |n: u32| only.is_none_or(|set| set.contains(&n));
        // An SQL filter on node ids (integers only, so it is safe to inline).
        let node_filter = |column: &str| match only {
            None => String::new(),
            Some(set) => format!(
                " AND {column} IN ({})",
                set.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            ),
        };
        // A record column read only for the wanted states (NULL for the rest).
        let wanted_column = |column: &str, state_column: &str| match only {
            None => column.to_string(),
            Some(_) => format!("CASE WHEN 1{} THEN {column} END", node_filter(state_column)),
        };
        let ctx = format!("reading trajectory {}", key.0);
        let node_template = empty_node(NodeId(0), None);
        let edge_template = empty_edge(EdgeId(0), NodeId(0), NodeId(0));
        type Head = (
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            Option<String>,
            String,
        );
        let head: Option<Head> = self
            .conn
            .query_row(
                "SELECT t.ext_id, t.domain, t.source_format, t.source_path, t.goal, t.system_prompt, t.extra_json,
                        t.source_sha256, t.imported_at
                 FROM trajectories t JOIN changes c ON c.id = t.change_id WHERE t.id = ?1 AND c.state = 'applied'",
                params![key.0],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?)),
            )
            .optional()
            .map_err(self.sql_err(ctx.clone()))?;
        let Some((
            ext_id,
            domain,
            format,
            source_path,
            goal,
            system_prompt,
            extra_json,
            sha,
            imported_at,
        )) = head
        else {
            return Err(StoreError::NotFound(format!(
                "no trajectory {} in this workspace",
                key.0
            )));
        };
        let domain = self.parse_domain(&domain, key.0)?;
        let mut trajectory = Trajectory::new(ext_id, domain, None);
        trajectory.source = Source {
            format,
            path: source_path,
        };
        trajectory.goal = goal;
        trajectory.system_prompt = system_prompt;
        trajectory.extra = self.parse_json("trajectories", &key.0.to_string(), &extra_json)?;
        trajectory.nodes.clear();

        let mut live_nodes = BTreeSet::new();
        let extra_json = wanted_column("n.extra_json", "n.node_id");
        let rows = self.query_all(
            &format!("SELECT n.node_id, n.parent_edge, {extra_json}, c.state FROM nodes n JOIN changes c ON c.id = n.change_id
             WHERE n.trajectory_id = ?1 ORDER BY n.node_id"),
            params![key.0],
            &ctx,
            |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
        )?;
        for (id, parent_edge, extra, state) in rows {
            if id as usize != trajectory.nodes.len() {
                return Err(StoreError::Invalid(format!(
                    "trajectory {}: node ids are not contiguous at {id}",
                    key.0
                )));
            }
            // One empty node built once and cloned: building each through
            // serde costs more than the rest of a large tree's shape.
            let mut node = node_template.clone();
            node.id = NodeId(id);
            node.parent_edge = parent_edge.map(EdgeId);
            if let (true, Some(extra)) = (wanted(id), extra) {
                node.extra = self.parse_json("nodes", &format!("{}/{id}", key.0), &extra)?;
            }
            if state == "applied" {
                live_nodes.insert(NodeId(id));
            }
            trajectory.nodes.push(node);
        }

        let mut live_edges = BTreeSet::new();
        // Edge records of unwanted states are not even read from the file.
        let edge_json = wanted_column("e.edge_json", "e.to_node");
        let rows = self.query_all(
            &format!("SELECT e.edge_id, {edge_json}, c.state, e.from_node, e.to_node FROM edges e JOIN changes c ON c.id = e.change_id
             WHERE e.trajectory_id = ?1 ORDER BY e.edge_id"),
            params![key.0],
            &ctx,
            |r| {
                let id = r.get::<_, u32>(0)?;
                let to = r.get::<_, u32>(4)?;
                // Parsed from SQLite's own copy of the text as the row is
                // stepped (a prompt can be hundreds of megabytes).
                let edge = match r.get_ref(1)?.as_str_or_null()? {
                    Some(json) if wanted(to) => {
                        Some(self.parse_record(
                            "edges",
                            &format!("{}/{id}", key.0),
                            json,
                            |j| edge_from_json(j, prompts),
                        ))
                    }
                    _ => None,
                };
                Ok((id, edge, r.get::<_, String>(2)?, r.get::<_, u32>(3)?, to))
            },
        )?;
        for (id, edge, state, from, to) in rows {
            let edge: Edge = if let Some(edge) = edge {
                edge?
            } else {
                let mut e = edge_template.clone();
                e.id = EdgeId(id);
                e.from = NodeId(from);
                e.to = NodeId(to);
                e
            };
            if edge.id.0 != id || id as usize != trajectory.edges.len() {
                return Err(StoreError::Invalid(format!(
                    "trajectory {}: edge ids are not contiguous at {id}",
                    key.0
                )));
            }
            if state == "applied" {
                live_edges.insert(EdgeId(id));
            }
            trajectory.edges.push(edge);
        }

        type ObsRow = (
            i64,
            u32,
            String,
            Option<String>,
            Option<u32>,
            Option<String>,
        );
        // The rows in order without their records, then each record by its
        // row id, read from SQLite's own copy of the text (never copied into
        // a `String` first). Sorting rows that carry their records would
        // copy every record into SQLite's sorter: an observation can be
        // hundreds of megabytes.
        let rows = self.query_all(
            &format!(
                "SELECT o.id, o.node_id, o.kind, o.author, o.based_on, o.note FROM observations o
             JOIN changes c ON c.id = o.change_id
             WHERE o.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY o.id",
                node_filter("o.node_id")
            ),
            params![key.0],
            &ctx,
            |r| -> rusqlite::Result<ObsRow> {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )?;
        let mut record = self
            .conn
            .prepare_cached("SELECT observation_json FROM observations WHERE id = ?1")
            .map_err(self.sql_err(ctx.clone()))?;
        for (row_id, node_id, kind, author, based_on, note) in rows {
            let observation: Observation = record
                .query_row(params![row_id], |r| {
                    let json = r.get_ref(0)?.as_str()?;
                    Ok(self.parse_record(
                        "observations",
                        &row_id.to_string(),
                        json,
                        observation_from_json,
                    ))
                })
                .map_err(self.sql_err(ctx.clone()))??;
            let node = node_slot(&mut trajectory.nodes, node_id, key)?;
            if kind == "real" {
                node.real = Some(observation);
            } else {
                node.authored.push(AuthoredObservation {
                    observation,
                    author,
                    based_on: based_on.map(PredictionId),
                    note,
                });
            }
        }

        let rows = self.query_all(
            &format!("SELECT p.node_id, p.prediction_id, p.prediction_json FROM predictions p JOIN changes c ON c.id = p.change_id
             WHERE p.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY p.node_id, p.prediction_id", node_filter("p.node_id")),
            params![key.0],
            &ctx,
            |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )?;
        for (node_id, pred_id, json) in rows {
            let mut prediction: Prediction = self.parse_json(
                "predictions",
                &format!("{}/{node_id}/{pred_id}", key.0),
                &json,
            )?;
            prediction.id = PredictionId(pred_id);
            node_slot(&mut trajectory.nodes, node_id, key)?
                .predictions
                .push(prediction);
        }

        let rows = self.query_all(
            &format!("SELECT cp.node_id, cp.prediction_id FROM chosen_predictions cp JOIN changes c ON c.id = cp.change_id
             WHERE cp.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY cp.id", node_filter("cp.node_id")),
            params![key.0],
            &ctx,
            |r| Ok((r.get::<_, u32>(0)?, r.get::<_, Option<u32>>(1)?)),
        )?;
        for (node_id, pred) in rows {
            node_slot(&mut trajectory.nodes, node_id, key)?.chosen_prediction =
                pred.map(PredictionId);
        }

        for (node_id, shot) in self.screenshots_of(key)? {
            if wanted(node_id.0) {
                node_slot(&mut trajectory.nodes, node_id.0, key)?.screenshot = Some(shot);
            }
        }

        trajectory
            .validate()
            .map_err(|m| StoreError::Invalid(format!("trajectory {} as stored: {m}", key.0)))?;
        Ok(StoredTrajectory {
            key,
            trajectory,
            live_nodes,
            live_edges,
            source_sha256: sha,
            imported_at,
        })
    }
}

/// The summary of the change importing `trajectory`, once it validates.
///
/// # Errors
/// [`StoreError::Invalid`] naming the trajectory when it does not validate.
fn import_summary(trajectory: &Trajectory) -> Result<String> {
    trajectory
        .validate()
        .map_err(|m| StoreError::Invalid(format!("trajectory `{}`: {m}", trajectory.id)))?;
    let turns = trajectory.edges.len();
    Ok(format!(
        "import `{}` ({}, {turns} {})",
        trajectory.id,
        trajectory.domain,
        if turns == 1 { "turn" } else { "turns" }
    ))
}

fn empty_node(id: NodeId, parent_edge: Option<EdgeId>) -> Node {
    // Built through serde so that fields the core adds later get their
    // defaults without this crate naming them.
    let value = serde_json::json!({ "id": id, "parent_edge": parent_edge });
    serde_json::from_value(value).unwrap_or_else(|_| {
        let mut t = Trajectory::new("", Domain::Web, None);
        let mut n = t.nodes.remove(0);
        n.id = id;
        n.parent_edge = parent_edge;
        n
    })
}

fn empty_edge(id: EdgeId, from: NodeId, to: NodeId) -> Edge {
    // Through serde, as for nodes: fields the core adds later get defaults.
    let value = serde_json::json!({
        "id": id, "from": from, "to": to,
        "action": { "raw": "", "format": "text" },
    });
    serde_json::from_value(value).unwrap_or_else(|_| Edge {
        id,
        from,
        to,
        action: Action::new("", worldloom_core::action::ActionFormat::Text),
        prompt: None,
        edited_from: None,
        note: None,
        awb_row: None,
        extra: serde_json::Map::new(),
    })
}

fn node_slot(nodes: &mut [Node], node_id: u32, key: TrajectoryKey) -> Result<&mut Node> {
    nodes.get_mut(node_id as usize).ok_or_else(|| {
        StoreError::Invalid(format!(
            "trajectory {}: a record names missing node {node_id}",
            key.0
        ))
    })
}

#[cfg(test)]
mod tests;
