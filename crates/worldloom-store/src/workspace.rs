//! The [`Workspace`] handle: opening, migrating, reading and changing a
//! workspace file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use worldloom_core::{
    Action, AuthoredObservation, Domain, Edge, EdgeId, Node, NodeId, Observation, Prediction,
    PredictionId, Source, Trajectory,
};

use crate::error::{Result, StoreError};
use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};

/// The first 16 bytes of every SQLite database file (SQLite file format,
/// section 1.3 "The Database Header").
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// A trajectory's key in a workspace (the `trajectories.id` row id). Stable
/// for the life of the workspace; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TrajectoryKey(pub i64);

/// A change's id in the change log (`changes.id`), increasing with time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChangeId(pub i64);

/// A note's id (`notes.id` of its first version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NoteId(pub i64);

/// Where a change stands in the undo history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    /// In effect: its records are live.
    Applied,
    /// Undone; the next redo re-applies the oldest undone change.
    Undone,
    /// Undone and then passed by a new change: it can no longer be redone.
    /// Its records stay in the file.
    Abandoned,
}

impl ChangeState {
    fn parse(s: &str) -> Self {
        match s {
            "applied" => ChangeState::Applied,
            "undone" => ChangeState::Undone,
            _ => ChangeState::Abandoned,
        }
    }
}

/// One entry of the change log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// The change's id.
    pub id: ChangeId,
    /// What kind of change (`import`, `add_prediction`, `choose_prediction`,
    /// `set_authored`, `add_branch`, `add_turn`, `set_perturbation`,
    /// `add_note`, `edit_note`, `set_tag`).
    pub kind: String,
    /// The trajectory it changed, if one.
    pub trajectory: Option<TrajectoryKey>,
    /// A one-line human description.
    pub summary: String,
    /// Its undo state.
    pub state: ChangeState,
    /// When it was made (UTC, `YYYY-MM-DDTHH:MM:SS.sssZ`).
    pub created_at: String,
}

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

/// A note on a trajectory or one of its nodes (current version).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The note's id (that of its first version).
    pub id: NoteId,
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node, when the note is about one state.
    pub node: Option<NodeId>,
    /// The current text.
    pub text: String,
    /// When the current version was written (UTC).
    pub updated_at: String,
}

/// A tag set on a trajectory or on one node (a branch is tagged at its leaf).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagRecord {
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node, when the tag is on a branch or state.
    pub node: Option<NodeId>,
    /// The tag text.
    pub tag: String,
}

/// A stored metric result (derived data: not part of undo).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    /// The row id.
    pub id: i64,
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node whose observation was scored.
    pub node: NodeId,
    /// What was scored against the real observation: `prediction:<id>` or
    /// `authored:<observation row id>`.
    pub subject: String,
    /// What produced it (`worldloom-obs 0.1.0`, `judge:<model>`).
    pub producer: String,
    /// The headline score in `[0, 1]`, when the producer gives one.
    pub score: Option<f64>,
    /// The full result as the producer wrote it.
    pub result: serde_json::Value,
    /// When it was stored (UTC).
    pub created_at: String,
}

/// SHA-256 of `bytes`, lowercase hex (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `path` is an SQLite file carrying the Worldloom application id,
/// or an empty SQLite file. Reads only the 100-byte header; `false` for
/// anything that cannot be read.
pub fn is_workspace_file(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 100];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    if file.read_exact(&mut header).is_err() {
        return false;
    }
    if &header[..16] != SQLITE_HEADER {
        return false;
    }
    // Application id: big-endian 4 bytes at offset 68.
    let app_id = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    app_id == APPLICATION_ID || app_id == 0
}

/// An open workspace file. One handle holds one connection; share it between
/// threads behind a mutex.
#[derive(Debug)]
pub struct Workspace {
    conn: Connection,
    path: PathBuf,
}

impl Workspace {
    /// Opens the workspace at `path`, creating it when the file does not
    /// exist, and migrates it to [`SCHEMA_VERSION`].
    ///
    /// # Errors
    /// [`StoreError::NotAWorkspace`] for a file that is not SQLite or is
    /// another program's database, [`StoreError::NewerSchema`] for a file
    /// from a newer build, [`StoreError::Sqlite`] when SQLite fails.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_to_version(path, SCHEMA_VERSION)
    }

    /// Opens (or creates) a workspace and migrates it only up to `version`.
    /// Used to write old-version files for migration tests; applications use
    /// [`Workspace::open`]. The handle's other methods expect the current
    /// schema.
    ///
    /// # Errors
    /// As [`Workspace::open`]; [`StoreError::Invalid`] when `version` is
    /// above [`SCHEMA_VERSION`].
    pub fn open_to_version(path: &Path, version: u32) -> Result<Self> {
        if version > SCHEMA_VERSION {
            return Err(StoreError::Invalid(format!(
                "schema version {version} does not exist (newest is {SCHEMA_VERSION})"
            )));
        }
        if path.exists() {
            let len = std::fs::metadata(path)
                .map_err(|source| StoreError::Io {
                    path: path.to_path_buf(),
                    source,
                })?
                .len();
            if len > 0 && !is_workspace_file(path) {
                return Err(StoreError::NotAWorkspace {
                    path: path.to_path_buf(),
                    reason: "the file is not an SQLite database written by Worldloom".into(),
                });
            }
        }
        let conn = Connection::open(path).map_err(|source| StoreError::Sqlite {
            path: path.to_path_buf(),
            context: "opening".into(),
            source,
        })?;
        let mut ws = Workspace {
            conn,
            path: path.to_path_buf(),
        };
        ws.configure()?;
        ws.migrate(version)?;
        Ok(ws)
    }

    /// The workspace file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql_err(
        &self,
        context: impl Into<String>,
    ) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        let context = context.into();
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            context,
            source,
        }
    }

    fn configure(&mut self) -> Result<()> {
        // WAL: readers never block the writer; FULL: a committed change
        // survives power loss, not only a process crash.
        self.conn
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA busy_timeout = 5000;",
            )
            .map_err(self.sql_err("configuring the connection"))
    }

    /// The file's schema version (`PRAGMA user_version`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn schema_version(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
            .map_err(self.sql_err("reading the schema version"))
    }

    fn migrate(&mut self, target: u32) -> Result<()> {
        let found = self.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        let app_id: i32 = self
            .conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(self.sql_err("reading the application id"))?;
        if found > 0 && app_id != APPLICATION_ID {
            return Err(StoreError::NotAWorkspace {
                path: self.path.clone(),
                reason: format!(
                    "application id is {app_id:#x}, not Worldloom's {APPLICATION_ID:#x}"
                ),
            });
        }
        if found == 0 {
            let tables: i64 = self
                .conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )
                .map_err(self.sql_err("inspecting the file"))?;
            if tables > 0 {
                return Err(StoreError::NotAWorkspace {
                    path: self.path.clone(),
                    reason: format!("it holds {tables} tables but no Worldloom schema version"),
                });
            }
        }
        for m in MIGRATIONS
            .iter()
            .filter(|m| m.version > found && m.version <= target)
        {
            let path = self.path.clone();
            let context = format!(
                "migrating to schema version {} ({})",
                m.version, m.description
            );
            let err = |source| StoreError::Sqlite {
                path: path.clone(),
                context: context.clone(),
                source,
            };
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            tx.execute_batch(m.sql).map_err(err)?;
            tx.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {};",
                m.version
            ))
            .map_err(err)?;
            if m.version == 1 {
                tx.execute(
                    "INSERT INTO workspace_meta (key, value) VALUES ('created_by', ?1)",
                    params![concat!("worldloom ", env!("CARGO_PKG_VERSION"))],
                )
                .map_err(err)?;
            }
            tx.execute(
                "INSERT OR REPLACE INTO workspace_meta (key, value) VALUES ('migrated_by', ?1)",
                params![concat!("worldloom ", env!("CARGO_PKG_VERSION"))],
            )
            .map_err(err)?;
            tx.commit().map_err(err)?;
        }
        Ok(())
    }

    /// Runs `f` as one change: one immediate SQLite transaction that first
    /// records a `changes` row of `kind` (returning its id to `f`), and
    /// abandons the redo history. Everything `f` writes commits together or
    /// not at all. Rows `f` adds must carry the given change id to take part
    /// in undo.
    ///
    /// This is the building block of every change method; it is public for
    /// tools that add their own records.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`], or whatever `f` returns (the transaction is
    /// then rolled back).
    pub fn with_change<T>(
        &mut self,
        kind: &str,
        trajectory: Option<TrajectoryKey>,
        summary: &str,
        f: impl FnOnce(&Transaction<'_>, ChangeId) -> Result<T>,
    ) -> Result<T> {
        let path = self.path.clone();
        let context = format!("writing change `{kind}`");
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            context: context.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute(
            "UPDATE changes SET state = 'abandoned' WHERE state = 'undone'",
            [],
        )
        .map_err(err)?;
        tx.execute(
            "INSERT INTO changes (kind, trajectory_id, summary) VALUES (?1, ?2, ?3)",
            params![kind, trajectory.map(|t| t.0), summary],
        )
        .map_err(err)?;
        let change = ChangeId(tx.last_insert_rowid());
        let out = f(&tx, change)?;
        tx.commit().map_err(err)?;
        Ok(out)
    }

    fn json<T: Serialize>(value: &T) -> String {
        // The core types serialise infallibly (string keys only).
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    }

    /// Imports a trajectory as one change and returns its key.
    ///
    /// `source_sha256` is the SHA-256 of the file it came from (see
    /// [`sha256_hex`]); [`Workspace::find_imported`] uses it to skip files
    /// already imported.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when the tree does not validate;
    /// [`StoreError::Sqlite`].
    pub fn import_trajectory(
        &mut self,
        trajectory: &Trajectory,
        source_sha256: Option<&str>,
    ) -> Result<TrajectoryKey> {
        trajectory
            .validate()
            .map_err(|m| StoreError::Invalid(format!("trajectory `{}`: {m}", trajectory.id)))?;
        let path = self.path.clone();
        let turns = trajectory.edges.len();
        let summary = format!(
            "import `{}` ({}, {turns} {})",
            trajectory.id,
            trajectory.domain,
            if turns == 1 { "turn" } else { "turns" }
        );
        self.with_change("import", None, &summary, |tx, change| {
            let err = |source| StoreError::Sqlite { path: path.clone(), context: "importing a trajectory".into(), source };
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
                    Self::json(&trajectory.extra),
                ],
            )
            .map_err(err)?;
            let key = tx.last_insert_rowid();
            tx.execute("UPDATE changes SET trajectory_id = ?1 WHERE id = ?2", params![key, change.0]).map_err(err)?;
            for node in &trajectory.nodes {
                insert_node(tx, key, node, change).map_err(err)?;
            }
            for edge in &trajectory.edges {
                insert_edge(tx, key, edge, change).map_err(err)?;
            }
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
        let sql = "
            SELECT t.id, t.ext_id, t.domain, t.source_format, t.source_path, t.goal, t.source_sha256, t.imported_at,
              (SELECT count(*) FROM predictions p JOIN changes pc ON pc.id = p.change_id
                 WHERE p.trajectory_id = t.id AND pc.state = 'applied'),
              (SELECT count(*) FROM observations o JOIN changes oc ON oc.id = o.change_id
                 WHERE o.trajectory_id = t.id AND o.kind = 'authored' AND oc.state = 'applied'),
              (SELECT min(m.score) FROM metric_results m WHERE m.trajectory_id = t.id AND m.id IN
                 (SELECT max(id) FROM metric_results WHERE trajectory_id = t.id GROUP BY node_id, subject, producer))
            FROM trajectories t JOIN changes c ON c.id = t.change_id
            WHERE c.state = 'applied' ORDER BY t.id";
        let mut stmt = self
            .conn
            .prepare(sql)
            .map_err(self.sql_err("listing trajectories"))?;
        let rows = stmt
            .query_map([], |r| {
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
            })
            .map_err(self.sql_err("listing trajectories"))?;
        let mut out = Vec::new();
        for row in rows {
            let (
                key,
                ext_id,
                domain,
                format,
                path,
                goal,
                sha,
                imported_at,
                preds,
                authored,
                lowest,
            ) = row.map_err(self.sql_err("listing trajectories"))?;
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

    fn parse_domain(&self, s: &str, key: i64) -> Result<Domain> {
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
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.trajectory_id, e.edge_id, e.from_node, e.to_node FROM edges e
                 JOIN changes c ON c.id = e.change_id WHERE c.state = 'applied' ORDER BY e.trajectory_id, e.edge_id",
            )
            .map_err(self.sql_err("reading edges"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, u32>(3)?,
                ))
            })
            .map_err(self.sql_err("reading edges"))?;
        let mut out: BTreeMap<TrajectoryKey, Vec<EdgeLink>> = BTreeMap::new();
        for row in rows {
            let (t, e, from, to) = row.map_err(self.sql_err("reading edges"))?;
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
        self.load_inner(key, None)
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
        let mut stmt = self
            .conn
            .prepare("SELECT edge_id, from_node, to_node FROM edges WHERE trajectory_id = ?1")
            .map_err(self.sql_err("reading the tree shape"))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?,
                ))
            })
            .map_err(self.sql_err("reading the tree shape"))?;
        let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
        for row in rows {
            let (_, from, to) = row.map_err(self.sql_err("reading the tree shape"))?;
            parent.insert(to, from);
        }
        let mut on_path = BTreeSet::from([node.0]);
        let mut at = node.0;
        while let Some(&from) = parent.get(&at) {
            if !on_path.insert(from) {
                break;
            }
            at = from;
        }
        let loaded = self.load_inner(key, Some(&on_path))?;
        if loaded.trajectory.node(node).is_none() {
            return Err(StoreError::NotFound(format!(
                "trajectory {} has no node {}",
                key.0, node.0
            )));
        }
        Ok(loaded)
    }

    /// Reads a trajectory; with `only`, records are read for those nodes
    /// (and the edges into them) only.
    fn load_inner(
        &self,
        key: TrajectoryKey,
        only: Option<&BTreeSet<u32>>,
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
        let ctx = || format!("reading trajectory {}", key.0);
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
            .map_err(self.sql_err(ctx()))?;
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
        let mut stmt = self
            .conn
            .prepare(
                "SELECT n.node_id, n.parent_edge, n.extra_json, c.state FROM nodes n JOIN changes c ON c.id = n.change_id
                 WHERE n.trajectory_id = ?1 ORDER BY n.node_id",
            )
            .map_err(self.sql_err(ctx()))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(self.sql_err(ctx()))?;
        for row in rows {
            let (id, parent_edge, extra, state) = row.map_err(self.sql_err(ctx()))?;
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
            if wanted(id) {
                node.extra = self.parse_json("nodes", &format!("{}/{id}", key.0), &extra)?;
            }
            if state == "applied" {
                live_nodes.insert(NodeId(id));
            }
            trajectory.nodes.push(node);
        }

        let mut live_edges = BTreeSet::new();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.edge_id, e.edge_json, c.state, e.from_node, e.to_node FROM edges e JOIN changes c ON c.id = e.change_id
                 WHERE e.trajectory_id = ?1 ORDER BY e.edge_id",
            )
            .map_err(self.sql_err(ctx()))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, u32>(3)?,
                    r.get::<_, u32>(4)?,
                ))
            })
            .map_err(self.sql_err(ctx()))?;
        for row in rows {
            let (id, json, state, from, to) = row.map_err(self.sql_err(ctx()))?;
            let edge: Edge = if wanted(to) {
                self.parse_json("edges", &format!("{}/{id}", key.0), &json)?
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

        let mut stmt = self
            .conn
            .prepare(
                &format!("SELECT o.id, o.node_id, o.kind, o.observation_json, o.author, o.based_on, o.note FROM observations o
                 JOIN changes c ON c.id = o.change_id
                 WHERE o.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY o.id", node_filter("o.node_id")),
            )
            .map_err(self.sql_err(ctx()))?;
        type ObsRow = (
            i64,
            u32,
            String,
            String,
            Option<String>,
            Option<u32>,
            Option<String>,
        );
        let rows = stmt
            .query_map(params![key.0], |r| -> rusqlite::Result<ObsRow> {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .map_err(self.sql_err(ctx()))?;
        for row in rows {
            let (row_id, node_id, kind, json, author, based_on, note) =
                row.map_err(self.sql_err(ctx()))?;
            let observation: Observation =
                self.parse_json("observations", &row_id.to_string(), &json)?;
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

        let mut stmt = self
            .conn
            .prepare(
                &format!("SELECT p.node_id, p.prediction_id, p.prediction_json FROM predictions p JOIN changes c ON c.id = p.change_id
                 WHERE p.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY p.node_id, p.prediction_id", node_filter("p.node_id")),
            )
            .map_err(self.sql_err(ctx()))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(self.sql_err(ctx()))?;
        for row in rows {
            let (node_id, pred_id, json) = row.map_err(self.sql_err(ctx()))?;
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

        let mut stmt = self
            .conn
            .prepare(
                &format!("SELECT cp.node_id, cp.prediction_id FROM chosen_predictions cp JOIN changes c ON c.id = cp.change_id
                 WHERE cp.trajectory_id = ?1 AND c.state = 'applied'{} ORDER BY cp.id", node_filter("cp.node_id")),
            )
            .map_err(self.sql_err(ctx()))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((r.get::<_, u32>(0)?, r.get::<_, Option<u32>>(1)?))
            })
            .map_err(self.sql_err(ctx()))?;
        for row in rows {
            let (node_id, pred) = row.map_err(self.sql_err(ctx()))?;
            node_slot(&mut trajectory.nodes, node_id, key)?.chosen_prediction =
                pred.map(PredictionId);
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

    fn parse_json<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        row: &str,
        json: &str,
    ) -> Result<T> {
        serde_json::from_str(json).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            table,
            row: row.to_owned(),
            source,
        })
    }

    /// Adds a prediction of `node` as one change and returns its id (one more
    /// than the highest id the node ever had, so ids are never reused).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node;
    /// [`StoreError::Sqlite`].
    pub fn add_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: &Prediction,
    ) -> Result<PredictionId> {
        let summary = format!("prediction of node {} by `{}`", node.0, prediction.engine);
        let path = self.path.clone();
        self.with_change("add_prediction", Some(key), &summary, |tx, change| {
            add_next_prediction(tx, &path, key, node, prediction, change)
        })
    }

    /// Adds a prediction of `node` and makes it the chosen one, as one change
    /// (a studio step: one undo removes both). Returns its id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node;
    /// [`StoreError::Sqlite`].
    pub fn add_chosen_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: &Prediction,
    ) -> Result<PredictionId> {
        let summary = format!("step node {} with `{}`", node.0, prediction.engine);
        let path = self.path.clone();
        self.with_change("add_prediction", Some(key), &summary, |tx, change| {
            let id = add_next_prediction(tx, &path, key, node, prediction, change)?;
            tx.execute(
                "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, node.0, id.0, change.0],
            )
            .map_err(tx_err(&path, "choosing a prediction"))?;
            Ok(id)
        })
    }

    /// Chooses which prediction stands for `node` (shown in the predicted
    /// pane, used in free-running context); `None` clears the choice. One
    /// change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown node or prediction.
    pub fn choose_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: Option<PredictionId>,
    ) -> Result<ChangeId> {
        let summary = match prediction {
            Some(p) => format!("choose prediction {} of node {}", p.0, node.0),
            None => format!("clear the chosen prediction of node {}", node.0),
        };
        let path = self.path.clone();
        self.with_change("choose_prediction", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node)?;
            if let Some(p) = prediction {
                let found: Option<i64> = tx
                    .query_row(
                        "SELECT 1 FROM predictions p JOIN changes c ON c.id = p.change_id
                         WHERE p.trajectory_id = ?1 AND p.node_id = ?2 AND p.prediction_id = ?3 AND c.state = 'applied'",
                        params![key.0, node.0, p.0],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(tx_err(&path, "checking a prediction"))?;
                if found.is_none() {
                    return Err(StoreError::NotFound(format!(
                        "node {} of trajectory {} has no prediction {}",
                        node.0, key.0, p.0
                    )));
                }
            }
            tx.execute(
                "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, node.0, prediction.map(|p| p.0), change.0],
            )
            .map_err(tx_err(&path, "choosing a prediction"))?;
            Ok(change)
        })
    }

    /// Adds an authored observation of `node` as one change. It becomes the
    /// current one: the node's chosen prediction, if any, is cleared in the
    /// same change, so the state shows what was written until a prediction
    /// is chosen again (a later step chooses its own).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown node.
    pub fn set_authored(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        authored: &AuthoredObservation,
    ) -> Result<ChangeId> {
        let summary = format!("author the observation of node {}", node.0);
        let path = self.path.clone();
        self.with_change("set_authored", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node)?;
            tx.execute(
                "INSERT INTO observations (trajectory_id, node_id, kind, representation, observation_json, author, based_on, note, change_id)
                 VALUES (?1, ?2, 'authored', ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    key.0,
                    node.0,
                    authored.observation.representation.as_str(),
                    Self::json(&authored.observation),
                    authored.author,
                    authored.based_on.map(|p| p.0),
                    authored.note,
                    change.0
                ],
            )
            .map_err(tx_err(&path, "authoring an observation"))?;
            // The state now shows what was written: a chosen prediction is
            // cleared in the same change (undo brings the choice back).
            tx.execute(
                "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, NULL, ?3)",
                params![key.0, node.0, change.0],
            )
            .map_err(tx_err(&path, "authoring an observation"))?;
            Ok(change)
        })
    }

    /// Edits the action of turn `edge`: adds a sibling edge from the same
    /// state with `action`, leading to a new node with no real observation
    /// (see [`Trajectory::add_branch`]). One change; the original stays.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone edge.
    pub fn add_branch(
        &mut self,
        key: TrajectoryKey,
        edge: EdgeId,
        action: Action,
    ) -> Result<(EdgeId, NodeId)> {
        let stored = self.load_trajectory(key)?;
        if !stored.live_edges.contains(&edge) {
            return Err(StoreError::NotFound(format!(
                "trajectory {} has no edge {}",
                key.0, edge.0
            )));
        }
        let mut tree = stored.trajectory;
        let summary = format!("branch at edge {}: {}", edge.0, action.summary());
        let (new_edge, new_node) = tree
            .add_branch(edge, action)
            .map_err(|e| StoreError::NotFound(e.to_string()))?;
        let edge_record = tree.edges[new_edge.0 as usize].clone();
        let node_record = tree.nodes[new_node.0 as usize].clone();
        let path = self.path.clone();
        self.with_change("add_branch", Some(key), &summary, |tx, change| {
            insert_node(tx, key.0, &node_record, change)
                .map_err(tx_err(&path, "adding a branch"))?;
            insert_edge(tx, key.0, &edge_record, change)
                .map_err(tx_err(&path, "adding a branch"))?;
            Ok((new_edge, new_node))
        })
    }

    /// Adds an action from state `from` (a leaf continues its branch; an
    /// inner state gets a new branch), leading to a new node with no
    /// observation (see [`Trajectory::add_step`]). One change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node.
    pub fn add_turn(
        &mut self,
        key: TrajectoryKey,
        from: NodeId,
        action: Action,
    ) -> Result<(EdgeId, NodeId)> {
        let stored = self.load_trajectory(key)?;
        if !stored.live_nodes.contains(&from) {
            return Err(StoreError::NotFound(format!(
                "trajectory {} has no node {}",
                key.0, from.0
            )));
        }
        let mut tree = stored.trajectory;
        let summary = format!("new turn from node {}: {}", from.0, action.summary());
        let (new_edge, new_node) = tree
            .add_step(from, action, None)
            .map_err(|e| StoreError::NotFound(e.to_string()))?;
        let edge_record = tree.edges[new_edge.0 as usize].clone();
        let node_record = tree.nodes[new_node.0 as usize].clone();
        let path = self.path.clone();
        self.with_change("add_turn", Some(key), &summary, |tx, change| {
            insert_node(tx, key.0, &node_record, change).map_err(tx_err(&path, "adding a turn"))?;
            insert_edge(tx, key.0, &edge_record, change).map_err(tx_err(&path, "adding a turn"))?;
            Ok((new_edge, new_node))
        })
    }

    /// Sets (or, with `None` or a blank text, clears) the control instruction
    /// of turn `edge`: a perturbation added to the world model's prompt for
    /// that turn (`worldloom_core::prompt`). One change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone edge.
    pub fn set_perturbation(
        &mut self,
        key: TrajectoryKey,
        edge: EdgeId,
        instruction: Option<&str>,
    ) -> Result<ChangeId> {
        let instruction = instruction.map(str::trim).filter(|i| !i.is_empty());
        let summary = match instruction {
            Some(i) => {
                let short: String = i.chars().take(60).collect();
                format!("perturb turn at edge {}: {short}", edge.0)
            }
            None => format!("clear the perturbation of edge {}", edge.0),
        };
        let path = self.path.clone();
        self.with_change("set_perturbation", Some(key), &summary, |tx, change| {
            let live: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM edges e JOIN changes c ON c.id = e.change_id
                     JOIN trajectories t ON t.id = e.trajectory_id JOIN changes tc ON tc.id = t.change_id
                     WHERE e.trajectory_id = ?1 AND e.edge_id = ?2 AND c.state = 'applied' AND tc.state = 'applied'",
                    params![key.0, edge.0],
                    |r| r.get(0),
                )
                .optional()
                .map_err(tx_err(&path, "checking an edge"))?;
            if live.is_none() {
                return Err(StoreError::NotFound(format!(
                    "trajectory {} has no edge {}",
                    key.0, edge.0
                )));
            }
            tx.execute(
                "INSERT INTO perturbations (trajectory_id, edge_id, instruction, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, edge.0, instruction, change.0],
            )
            .map_err(tx_err(&path, "setting a perturbation"))?;
            Ok(change)
        })
    }

    /// The current control instructions of a trajectory's turns, by edge.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn perturbations(&self, key: TrajectoryKey) -> Result<BTreeMap<EdgeId, String>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT p.edge_id, p.instruction FROM perturbations p JOIN changes c ON c.id = p.change_id
                 WHERE p.trajectory_id = ?1 AND c.state = 'applied' ORDER BY p.id",
            )
            .map_err(self.sql_err("reading perturbations"))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((r.get::<_, u32>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .map_err(self.sql_err("reading perturbations"))?;
        let mut current: BTreeMap<EdgeId, Option<String>> = BTreeMap::new();
        for row in rows {
            let (edge, instruction) = row.map_err(self.sql_err("reading perturbations"))?;
            current.insert(EdgeId(edge), instruction);
        }
        Ok(current
            .into_iter()
            .filter_map(|(e, i)| i.map(|i| (e, i)))
            .collect())
    }

    /// Adds a note on a trajectory (or one of its nodes) as one change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown trajectory or node.
    pub fn add_note(
        &mut self,
        key: TrajectoryKey,
        node: Option<NodeId>,
        text: &str,
    ) -> Result<NoteId> {
        let summary = format!("note on trajectory {}", key.0);
        let path = self.path.clone();
        self.with_change("add_note", Some(key), &summary, |tx, change| {
            match node {
                Some(n) => check_live_node(tx, &path, key, n)?,
                None => check_live_node(tx, &path, key, NodeId(0))?,
            }
            tx.execute(
                "INSERT INTO notes (trajectory_id, node_id, text, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, node.map(|n| n.0), text, change.0],
            )
            .map_err(tx_err(&path, "adding a note"))?;
            Ok(NoteId(tx.last_insert_rowid()))
        })
    }

    /// Replaces a note's text by adding a new version (an empty text removes
    /// the note from [`Workspace::notes`]). One change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown note.
    pub fn edit_note(&mut self, note: NoteId, text: &str) -> Result<ChangeId> {
        let head: Option<(i64, Option<u32>)> = self
            .conn
            .query_row(
                "SELECT n.trajectory_id, n.node_id FROM notes n JOIN changes c ON c.id = n.change_id
                 WHERE n.id = ?1 AND n.supersedes IS NULL AND c.state = 'applied'",
                params![note.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(self.sql_err("reading a note"))?;
        let Some((trajectory, node)) = head else {
            return Err(StoreError::NotFound(format!("no note {}", note.0)));
        };
        let path = self.path.clone();
        self.with_change("edit_note", Some(TrajectoryKey(trajectory)), &format!("edit note {}", note.0), |tx, change| {
            tx.execute(
                "INSERT INTO notes (trajectory_id, node_id, text, supersedes, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![trajectory, node, text, note.0, change.0],
            )
            .map_err(tx_err(&path, "editing a note"))?;
            Ok(change)
        })
    }

    /// The current notes of a trajectory, oldest first (removed notes left
    /// out).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn notes(&self, key: TrajectoryKey) -> Result<Vec<Note>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT coalesce(n.supersedes, n.id) AS note, n.node_id, n.text, n.created_at FROM notes n
                 JOIN changes c ON c.id = n.change_id
                 WHERE n.trajectory_id = ?1 AND c.state = 'applied' ORDER BY n.id",
            )
            .map_err(self.sql_err("reading notes"))?;
        let rows = stmt
            .query_map(params![key.0], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(self.sql_err("reading notes"))?;
        let mut current: BTreeMap<i64, Note> = BTreeMap::new();
        for row in rows {
            let (id, node, text, updated_at) = row.map_err(self.sql_err("reading notes"))?;
            current.insert(
                id,
                Note {
                    id: NoteId(id),
                    trajectory: key,
                    node: node.map(NodeId),
                    text,
                    updated_at,
                },
            );
        }
        Ok(current
            .into_values()
            .filter(|n| !n.text.is_empty())
            .collect())
    }

    /// Sets (`present = true`) or clears a tag on a trajectory or node. One
    /// change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown trajectory or node;
    /// [`StoreError::Invalid`] for an empty tag.
    pub fn set_tag(
        &mut self,
        key: TrajectoryKey,
        node: Option<NodeId>,
        tag: &str,
        present: bool,
    ) -> Result<ChangeId> {
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(StoreError::Invalid("a tag must not be empty".into()));
        }
        let summary = format!("{} tag `{tag}`", if present { "set" } else { "clear" });
        let path = self.path.clone();
        self.with_change("set_tag", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node.unwrap_or(NodeId(0)))?;
            tx.execute(
                "INSERT INTO tags (trajectory_id, node_id, tag, present, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![key.0, node.map(|n| n.0), tag, present, change.0],
            )
            .map_err(tx_err(&path, "setting a tag"))?;
            Ok(change)
        })
    }

    /// Every tag currently set in the workspace, by trajectory then tag.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn tags(&self) -> Result<Vec<TagRecord>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT g.trajectory_id, g.node_id, g.tag, g.present FROM tags g JOIN changes c ON c.id = g.change_id
                 JOIN trajectories t ON t.id = g.trajectory_id JOIN changes tc ON tc.id = t.change_id
                 WHERE c.state = 'applied' AND tc.state = 'applied' ORDER BY g.id",
            )
            .map_err(self.sql_err("reading tags"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            })
            .map_err(self.sql_err("reading tags"))?;
        let mut current: BTreeMap<(i64, Option<u32>, String), bool> = BTreeMap::new();
        for row in rows {
            let (t, n, tag, present) = row.map_err(self.sql_err("reading tags"))?;
            current.insert((t, n, tag), present);
        }
        Ok(current
            .into_iter()
            .filter(|(_, present)| *present)
            .map(|((t, n, tag), _)| TagRecord {
                trajectory: TrajectoryKey(t),
                node: n.map(NodeId),
                tag,
            })
            .collect())
    }

    /// Stores a metric result for `node` (derived data: its own transaction,
    /// not a change, not undone). Returns the row id.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a score outside `[0, 1]`;
    /// [`StoreError::Sqlite`].
    pub fn record_metric_result(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        subject: &str,
        producer: &str,
        score: Option<f64>,
        result: &serde_json::Value,
    ) -> Result<i64> {
        if let Some(s) = score
            && !(0.0..=1.0).contains(&s)
        {
            return Err(StoreError::Invalid(format!(
                "metric score {s} is outside [0, 1]"
            )));
        }
        self.conn
            .execute(
                "INSERT INTO metric_results (trajectory_id, node_id, subject, producer, score, result_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![key.0, node.0, subject, producer, score, Self::json(result)],
            )
            .map_err(self.sql_err("storing a metric result"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest metric result per subject and producer for `node`.
    ///
    /// # Errors
    /// [`StoreError::Record`], [`StoreError::Sqlite`].
    pub fn metric_results(&self, key: TrajectoryKey, node: NodeId) -> Result<Vec<MetricResult>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, subject, producer, score, result_json, created_at FROM metric_results
                 WHERE id IN (SELECT max(id) FROM metric_results WHERE trajectory_id = ?1 AND node_id = ?2
                              GROUP BY subject, producer) ORDER BY id",
            )
            .map_err(self.sql_err("reading metric results"))?;
        let rows = stmt
            .query_map(params![key.0, node.0], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<f64>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(self.sql_err("reading metric results"))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, subject, producer, score, json, created_at) =
                row.map_err(self.sql_err("reading metric results"))?;
            let result = self.parse_json("metric_results", &id.to_string(), &json)?;
            out.push(MetricResult {
                id,
                trajectory: key,
                node,
                subject,
                producer,
                score,
                result,
                created_at,
            });
        }
        Ok(out)
    }

    /// Undoes the newest applied change. Returns it, or `None` when there is
    /// nothing to undo.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn undo(&mut self) -> Result<Option<ChangeRecord>> {
        self.move_change(
            "SELECT id FROM changes WHERE state = 'applied' ORDER BY id DESC LIMIT 1",
            "undone",
        )
    }

    /// Re-applies the oldest undone change. Returns it, or `None` when there
    /// is nothing to redo.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn redo(&mut self) -> Result<Option<ChangeRecord>> {
        self.move_change(
            "SELECT id FROM changes WHERE state = 'undone' ORDER BY id ASC LIMIT 1",
            "applied",
        )
    }

    fn move_change(&mut self, pick: &str, to: &str) -> Result<Option<ChangeRecord>> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            context: format!("moving a change to `{to}`"),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let id: Option<i64> = tx
            .query_row(pick, [], |r| r.get(0))
            .optional()
            .map_err(err)?;
        let Some(id) = id else { return Ok(None) };
        tx.execute(
            "UPDATE changes SET state = ?1 WHERE id = ?2",
            params![to, id],
        )
        .map_err(err)?;
        let record = read_change(&tx, id).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Some(record))
    }

    /// The newest `limit` changes of the log, newest first.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn history(&self, limit: u32) -> Result<Vec<ChangeRecord>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, kind, trajectory_id, summary, state, created_at FROM changes ORDER BY id DESC LIMIT ?1")
            .map_err(self.sql_err("reading the change log"))?;
        let rows = stmt
            .query_map(params![limit], change_from_row)
            .map_err(self.sql_err("reading the change log"))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql_err("reading the change log"))
    }

    /// Whether an undo / a redo is possible now.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn can_undo_redo(&self) -> Result<(bool, bool)> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM changes WHERE state = 'applied'),
                        EXISTS (SELECT 1 FROM changes WHERE state = 'undone')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.sql_err("reading the change log"))
    }

    /// Runs SQLite's `PRAGMA integrity_check`; `Ok(())` when it reports `ok`.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] with SQLite's report; [`StoreError::Sqlite`].
    pub fn integrity_check(&self) -> Result<()> {
        let report: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(self.sql_err("checking integrity"))?;
        if report == "ok" {
            Ok(())
        } else {
            Err(StoreError::Invalid(format!(
                "{}: {report}",
                self.path.display()
            )))
        }
    }

    /// Writes a value of the `workspace_meta` table (settings such as the
    /// studio's engine; not a change, not undone). Never store secrets here.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO workspace_meta (key, value) VALUES (?1, ?2)",
                params![key, value],
            )
            .map(|_| ())
            .map_err(self.sql_err("writing workspace metadata"))
    }

    /// A value from the `workspace_meta` table (`created_by`, `migrated_by`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT value FROM workspace_meta WHERE key = ?1",
                params![key],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.sql_err("reading workspace metadata"))
    }
}

fn tx_err(path: &Path, context: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Sqlite {
        path: path.clone(),
        context: context.into(),
        source,
    }
}

/// Inserts `prediction` for a live `node` under the next free id (one more
/// than the highest the node ever had, so ids are never reused).
fn add_next_prediction(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    node: NodeId,
    prediction: &Prediction,
    change: ChangeId,
) -> Result<PredictionId> {
    check_live_node(tx, path, key, node)?;
    let next: u32 = tx
        .query_row(
            "SELECT coalesce(max(prediction_id) + 1, 0) FROM predictions WHERE trajectory_id = ?1 AND node_id = ?2",
            params![key.0, node.0],
            |r| r.get(0),
        )
        .map_err(tx_err(path, "numbering a prediction"))?;
    let mut record = prediction.clone();
    record.id = PredictionId(next);
    insert_prediction(tx, key.0, node, &record, change)
        .map_err(tx_err(path, "adding a prediction"))?;
    Ok(PredictionId(next))
}

fn check_live_node(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    node: NodeId,
) -> Result<()> {
    let live: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM nodes n JOIN changes c ON c.id = n.change_id
             JOIN trajectories t ON t.id = n.trajectory_id JOIN changes tc ON tc.id = t.change_id
             WHERE n.trajectory_id = ?1 AND n.node_id = ?2 AND c.state = 'applied' AND tc.state = 'applied'",
            params![key.0, node.0],
            |r| r.get(0),
        )
        .optional()
        .map_err(tx_err(path, "checking a node"))?;
    live.map(|_| ())
        .ok_or_else(|| StoreError::NotFound(format!("trajectory {} has no node {}", key.0, node.0)))
}

fn change_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChangeRecord> {
    Ok(ChangeRecord {
        id: ChangeId(r.get(0)?),
        kind: r.get(1)?,
        trajectory: r.get::<_, Option<i64>>(2)?.map(TrajectoryKey),
        summary: r.get(3)?,
        state: ChangeState::parse(&r.get::<_, String>(4)?),
        created_at: r.get(5)?,
    })
}

fn read_change(tx: &Transaction<'_>, id: i64) -> rusqlite::Result<ChangeRecord> {
    tx.query_row(
        "SELECT id, kind, trajectory_id, summary, state, created_at FROM changes WHERE id = ?1",
        params![id],
        change_from_row,
    )
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

fn insert_node(
    tx: &Transaction<'_>,
    key: i64,
    node: &Node,
    change: ChangeId,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO nodes (trajectory_id, node_id, parent_edge, extra_json, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![key, node.id.0, node.parent_edge.map(|e| e.0), Workspace::json(&node.extra), change.0],
    )?;
    if let Some(real) = &node.real {
        tx.execute(
            "INSERT INTO observations (trajectory_id, node_id, kind, representation, observation_json, change_id)
             VALUES (?1, ?2, 'real', ?3, ?4, ?5)",
            params![key, node.id.0, real.representation.as_str(), Workspace::json(real), change.0],
        )?;
    }
    for authored in &node.authored {
        tx.execute(
            "INSERT INTO observations (trajectory_id, node_id, kind, representation, observation_json, author, based_on, note, change_id)
             VALUES (?1, ?2, 'authored', ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                key,
                node.id.0,
                authored.observation.representation.as_str(),
                Workspace::json(&authored.observation),
                authored.author,
                authored.based_on.map(|p| p.0),
                authored.note,
                change.0
            ],
        )?;
    }
    for prediction in &node.predictions {
        insert_prediction(tx, key, node.id, prediction, change)?;
    }
    if let Some(chosen) = node.chosen_prediction {
        tx.execute(
            "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, ?3, ?4)",
            params![key, node.id.0, chosen.0, change.0],
        )?;
    }
    Ok(())
}

fn insert_edge(
    tx: &Transaction<'_>,
    key: i64,
    edge: &Edge,
    change: ChangeId,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO edges (trajectory_id, edge_id, from_node, to_node, edge_json, change_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![key, edge.id.0, edge.from.0, edge.to.0, Workspace::json(edge), change.0],
    )?;
    Ok(())
}

fn insert_prediction(
    tx: &Transaction<'_>,
    key: i64,
    node: NodeId,
    p: &Prediction,
    change: ChangeId,
) -> rusqlite::Result<()> {
    let context = serde_json::to_value(p.context)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    tx.execute(
        "INSERT INTO predictions (trajectory_id, node_id, prediction_id, engine, seed, context, status, prediction_json, change_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            key,
            node.0,
            p.id.0,
            p.engine,
            p.seed.map(|s| s.to_string()),
            context,
            p.status.as_str(),
            Workspace::json(p),
            change.0
        ],
    )?;
    Ok(())
}
