//! The [`Workspace`] handle: opening, migrating, reading and changing a
//! workspace file.
//!
//! One file per entity, each an `impl Workspace` block:
//! - this module: the handle, opening and migrating, the integrity check,
//!   `workspace_meta` values (settings such as the studio's engine), and the
//!   helpers the others share;
//! - `history`: the change log every change goes through
//!   ([`Workspace::with_change`]), undo and redo;
//! - `trajectories`: importing, listing and reading trajectories back;
//! - `branches`: new branches and turns, perturbations of turns;
//! - `predictions`: predictions, the chosen prediction, authored
//!   observations;
//! - `notes_tags`: notes and tags;
//! - `scores`: metric results (derived data, outside undo);
//! - `runs`: runs (predictions over a dataset), their rows, the full-text
//!   index of their texts.

mod branches;
mod history;
mod notes_tags;
mod predictions;
mod records;
mod run_findings;
mod runs;
mod runs_grown;
mod scores;
mod screenshots;
mod trajectories;
mod trajectory_rows;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use worldloom_core::{EdgeId, NodeId};

use crate::error::{Result, StoreError};
use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};

pub use branches::AppendTurn;
pub use history::{ChangeId, ChangeRecord, ChangeState};
pub use notes_tags::{Note, NoteId, TagRecord};
pub use run_findings::RowFindings;
pub use runs::{DEFAULT_LABELS, NewRun, RunId, RunImport, RunRecord, SearchField, StoredRunRow};
pub use scores::MetricResult;
pub use screenshots::ScreenshotBytes;
pub use trajectories::{EdgeLink, StoredTrajectory, TrajectoryRow};
pub use trajectory_rows::trajectory_fingerprint;

/// The first 16 bytes of every SQLite database file (SQLite file format,
/// section 1.3 "The Database Header").
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// A trajectory's key in a workspace (the `trajectories.id` row id). Stable
/// for the life of the workspace; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TrajectoryKey(pub i64);

/// SHA-256 of `bytes`, lowercase hex (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Sha256Hex::default();
    h.update(bytes);
    h.finish()
}

/// An incremental [`sha256_hex`]: the hash of everything fed, so that a
/// large file is hashed without being read whole.
#[derive(Debug, Clone, Default)]
pub struct Sha256Hex(Sha256);

impl Sha256Hex {
    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Feeds everything `reader` yields, 64 KiB at a time.
    ///
    /// # Errors
    /// The reader's I/O error.
    pub fn update_reader(&mut self, mut reader: impl std::io::Read) -> std::io::Result<()> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => self.0.update(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The hash, lowercase hex (64 characters).
    pub fn finish(self) -> String {
        let digest = self.0.finalize();
        let mut out = String::with_capacity(64);
        for b in digest {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }
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

/// The SQL statements a workspace handle ran since
/// [`Workspace::log_statements`], in order; clones share one log.
#[derive(Debug, Clone, Default)]
pub struct StatementLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl StatementLog {
    /// The statements logged since the last call, in order, and empties the
    /// log.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut statements| std::mem::take(&mut *statements))
            .unwrap_or_default()
    }
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
            let context = format!(
                "migrating to schema version {} ({})",
                m.version, m.description
            );
            self.in_transaction(&context, |tx, err| {
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
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Runs `f` in one immediate SQLite transaction and commits what it
    /// wrote; nothing is written when `f` fails. `f` gets the mapper that
    /// turns an SQLite error into [`StoreError::Sqlite`] naming `context`.
    fn in_transaction<T>(
        &mut self,
        context: &str,
        f: impl FnOnce(&Transaction<'_>, &dyn Fn(rusqlite::Error) -> StoreError) -> Result<T>,
    ) -> Result<T> {
        let err = tx_err(&self.path, context);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        let out = f(&tx, &err)?;
        tx.commit().map_err(&err)?;
        Ok(out)
    }

    /// Starts recording the text of every SQL statement this handle runs
    /// (SQLite's statement trace; parameters left as `?N`), for checking
    /// their query plans ([`Workspace::full_scans`]); returns the log,
    /// which fills until the handle is dropped. Costs a callback per
    /// statement: for tests and benchmarks, not for serving.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when SQLite refuses the trace.
    pub fn log_statements(&mut self) -> Result<StatementLog> {
        let log = StatementLog::default();
        let sink = log.0.clone();
        let trace = move |event: rusqlite::trace::TraceEvent<'_>| {
            // A trigger's run is reported as an `-- …` comment: not a
            // statement of its own.
            if let rusqlite::trace::TraceEvent::Stmt(_, sql) = event
                && !sql.trim_start().starts_with("--")
                && let Ok(mut statements) = sink.lock()
            {
                statements.push(sql.to_owned());
            }
        };
        self.conn
            .trace_v2(
                rusqlite::trace::TraceEventCodes::SQLITE_TRACE_STMT,
                Some(trace),
            )
            .map_err(self.sql_err("starting a statement trace"))?;
        Ok(log)
    }

    /// The lines of SQLite's plan for `sql` (`EXPLAIN QUERY PLAN`) that read
    /// a whole table (`SCAN t`, `SCAN t USING INDEX …`); empty when every
    /// table is reached through a key or an index (`SEARCH …`), so that
    /// the statement costs the same however many rows the tables hold.
    /// `SCAN CONSTANT ROW` and searches of a full-text index are not scans
    /// of a table. Parameters are left unbound (the plan does not depend on
    /// them).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when `sql` does not prepare.
    pub fn full_scans(&self, sql: &str) -> Result<Vec<String>> {
        let err = self.sql_err("explaining a query");
        let plan = (|| {
            let mut stmt = self.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            // Every parameter NULL: rusqlite wants them all bound.
            let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
            let lines =
                stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))?;
            lines.collect::<rusqlite::Result<Vec<String>>>()
        })()
        .map_err(err)?;
        Ok(plan
            .into_iter()
            .filter(|line| {
                line.starts_with("SCAN ")
                    && line != "SCAN CONSTANT ROW"
                    && !line.contains("VIRTUAL TABLE")
            })
            .collect())
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

    /// Maps an SQLite error to [`StoreError::Sqlite`] naming this file and
    /// what the store was doing.
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

    /// Runs the query `sql` and maps every row with `map`, in the query's
    /// order. SQLite errors name `context`.
    fn query_all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        context: &str,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let err = |source| StoreError::Sqlite {
            path: self.path.clone(),
            context: context.to_owned(),
            source,
        };
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let rows = stmt.query_map(params, map).map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<T>>>().map_err(err)
    }

    /// A record as stored JSON text.
    fn json<T: Serialize>(value: &T) -> String {
        // The core types serialise infallibly (string keys only).
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    }

    /// Reads back a record stored as JSON in `table`, row `row`, with
    /// `parse` (one of [`records`]' readers).
    fn parse_record<T>(
        &self,
        table: &'static str,
        row: &str,
        json: &str,
        parse: impl FnOnce(&str) -> serde_json::Result<T>,
    ) -> Result<T> {
        parse(json).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            table,
            row: row.to_owned(),
            source,
        })
    }

    /// Reads back a record stored as JSON in `table`, row `row`.
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
}

/// Maps an SQLite error inside a transaction to [`StoreError::Sqlite`]
/// naming `path` and `context`.
fn tx_err(path: &Path, context: &str) -> impl Fn(rusqlite::Error) -> StoreError + use<> {
    let path = path.to_path_buf();
    let context = context.to_owned();
    move |source| StoreError::Sqlite {
        path: path.clone(),
        context: context.clone(),
        source,
    }
}

/// `Ok` when `node` of trajectory `key` is live (its creating change and the
/// trajectory's import are applied).
///
/// # Errors
/// [`StoreError::NotFound`] otherwise; [`StoreError::Sqlite`].
fn check_live_node(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    node: NodeId,
) -> Result<()> {
    if is_live(tx, key, "nodes", "node_id", node.0).map_err(tx_err(path, "checking a node"))? {
        Ok(())
    } else {
        Err(StoreError::NotFound(format!(
            "trajectory {} has no node {}",
            key.0, node.0
        )))
    }
}

/// `Ok` when `edge` of trajectory `key` is live, as [`check_live_node`].
///
/// # Errors
/// [`StoreError::NotFound`] otherwise; [`StoreError::Sqlite`].
fn check_live_edge(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    edge: EdgeId,
) -> Result<()> {
    if is_live(tx, key, "edges", "edge_id", edge.0).map_err(tx_err(path, "checking an edge"))? {
        Ok(())
    } else {
        Err(no_edge(key, edge))
    }
}

/// Whether the row of `table` whose `column` is `id` in trajectory `key` was
/// made by an applied change, in a trajectory whose import is applied.
/// `table` and `column` are fixed names, never input.
fn is_live(
    tx: &Transaction<'_>,
    key: TrajectoryKey,
    table: &'static str,
    column: &'static str,
    id: u32,
) -> rusqlite::Result<bool> {
    let sql = format!(
        "SELECT 1 FROM {table} r JOIN changes c ON c.id = r.change_id
         JOIN trajectories t ON t.id = r.trajectory_id JOIN changes tc ON tc.id = t.change_id
         WHERE r.trajectory_id = ?1 AND r.{column} = ?2 AND c.state = 'applied' AND tc.state = 'applied'"
    );
    tx.query_row(&sql, params![key.0, id], |r| r.get::<_, i64>(0))
        .optional()
        .map(|found| found.is_some())
}

/// The error for an unknown or undone edge.
fn no_edge(key: TrajectoryKey, edge: EdgeId) -> StoreError {
    StoreError::NotFound(format!("trajectory {} has no edge {}", key.0, edge.0))
}
