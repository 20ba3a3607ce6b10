//! Runs: one model's predictions over a dataset, imported as one change.
//!
//! A run's rows attach to trajectories matched by their contents (a
//! fingerprint of domain, id, system prompt, and every turn's prompt and real
//! observation along the main path), so that rows of one dataset from
//! several runs sit on the same states: the same turn of two runs is the
//! same `(trajectory, node)`. Each row's prediction is a prediction of that
//! node like any other (the turn view shows it); the row adds the judge's
//! scores, the deterministic metrics and the status. A full-text index
//! (`run_rows_text`, SQLite FTS5) holds each row's real and predicted
//! observations and action. Labels (`run_row_labels`) and free-text notes
//! (`run_row_notes`) on rows are undoable changes.

use std::collections::BTreeSet;

use rusqlite::{OptionalExtension, Transaction, params};
use worldloom_core::formats::run::{JudgeVerdict, RunMetrics, RunRow};
use worldloom_core::{ContextMode, Domain, NodeId, PredictionId, Trajectory};

use super::predictions::add_next_prediction;
use super::trajectory_rows::{insert_trajectory, trajectory_fingerprint};
use super::{TrajectoryKey, Workspace, tx_err};
use crate::error::{Result, StoreError};

/// A run's key in a workspace (the `runs.id` row id); never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub i64);

/// What is known of a run before its rows: the import's header.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// A name to show (the file name, with its folder for the official
    /// script's fixed names).
    pub name: String,
    /// The engine or model label (`wl_engine`, else `agentworldbench:gen`).
    pub engine: String,
    /// The file it was read from, as shown.
    pub source_path: Option<String>,
    /// SHA-256 of the file's bytes; [`Workspace::find_run`] uses it to skip a
    /// file already imported.
    pub source_sha256: Option<String>,
    /// Teacher-forced (history from the real observations) or free-running.
    pub mode: ContextMode,
}

/// A stored run, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The key.
    pub id: RunId,
    /// The name shown.
    pub name: String,
    /// The engine or model label.
    pub engine: String,
    /// The file it was read from.
    pub source_path: Option<String>,
    /// SHA-256 of that file.
    pub source_sha256: Option<String>,
    /// Teacher-forced or free-running.
    pub mode: ContextMode,
    /// When it was imported (UTC, ISO 8601).
    pub created_at: String,
    /// How many rows it has.
    pub row_count: u64,
    /// How many of them the judge graded (failed included).
    pub judged_count: u64,
}

/// One stored row of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRunRow {
    /// The row's key (`run_rows.id`), also its key in the full-text index.
    pub id: i64,
    /// Its run.
    pub run: RunId,
    /// 0-based position in the run's file.
    pub row_index: u32,
    /// The trajectory the row attached to.
    pub trajectory: TrajectoryKey,
    /// That trajectory's own id.
    pub ext_id: String,
    /// The state predicted.
    pub node: NodeId,
    /// The prediction of that state that the row made.
    pub prediction: PredictionId,
    /// The 1-based turn.
    pub turn: u32,
    /// The domain.
    pub domain: Domain,
    /// `ok`, `truncated`, `no_observation`, `empty` or `error`.
    pub status: String,
    /// The engine's error, for `error` rows.
    pub error: Option<String>,
    /// The deterministic metrics.
    pub metrics: RunMetrics,
    /// The judge's verdict, when judged.
    pub judge: Option<JudgeVerdict>,
    /// Wall time of the row, milliseconds.
    pub latency_ms: Option<f64>,
}

/// What importing a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunImport {
    /// The new run.
    pub run: RunId,
    /// Each trajectory of the file: its key and whether it was added (false:
    /// the rows attached to a trajectory already in the workspace).
    pub trajectories: Vec<(TrajectoryKey, bool)>,
    /// How many rows were stored.
    pub rows: u64,
}

/// Which texts a search looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchField {
    /// Real and predicted observations and the action.
    #[default]
    All,
    /// The real observation.
    Real,
    /// The predicted observation.
    Predicted,
    /// The action.
    Action,
}

/// A search typed by a user as an FTS5 query: each whitespace-separated
/// term a quoted string (so FTS5 operators in the text are plain words),
/// all required, the last one a prefix. `None` when there is no term.
fn fts_query(text: &str, field: SearchField) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    let last = terms.len().checked_sub(1)?;
    let body = terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i == last {
                format!("{t}*")
            } else {
                t.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    Some(match field {
        SearchField::All => body,
        SearchField::Real => format!("real : ({body})"),
        SearchField::Predicted => format!("predicted : ({body})"),
        SearchField::Action => format!("action : ({body})"),
    })
}

pub(super) fn mode_str(mode: ContextMode) -> &'static str {
    match mode {
        ContextMode::TeacherForced => "teacher-forced",
        ContextMode::FreeRunning => "free-running",
    }
}

/// The node `depth` turns below the root of a stored trajectory, following
/// the oldest edge out of each state (the main path of an imported
/// trajectory).
fn node_at_depth(tx: &Transaction<'_>, key: i64, depth: usize) -> rusqlite::Result<Option<u32>> {
    let mut at = 0u32;
    for _ in 0..depth {
        let next: Option<u32> = tx
            .query_row(
                "SELECT to_node FROM edges WHERE trajectory_id = ?1 AND from_node = ?2 ORDER BY edge_id LIMIT 1",
                params![key, at],
                |r| r.get(0),
            )
            .optional()?;
        match next {
            Some(n) => at = n,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// How many turns `node` lies below the root of `t`.
fn depth_of(t: &Trajectory, node: NodeId) -> usize {
    let mut depth = 0;
    let mut at = node;
    while let Some(e) = t.node(at).and_then(|n| n.parent_edge) {
        let Some(edge) = t.edge(e) else { break };
        at = edge.from;
        depth += 1;
        if depth > t.edges.len() {
            break;
        }
    }
    depth
}

impl Workspace {
    /// Records the fingerprint of live trajectories imported before
    /// fingerprints existed (schema version 3 and older) whose id is in
    /// `ext_ids`, so that a run can attach to them. Derived data, outside
    /// undo.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; the errors of [`Workspace::load_trajectory`].
    pub fn fingerprint_trajectories(&mut self, ext_ids: &BTreeSet<String>) -> Result<()> {
        let missing = self.query_all(
            "SELECT t.id, t.ext_id FROM trajectories t JOIN changes c ON c.id = t.change_id
             WHERE c.state = 'applied'
               AND NOT EXISTS (SELECT 1 FROM trajectory_fingerprints f WHERE f.trajectory_id = t.id)",
            [],
            "finding trajectories without a fingerprint",
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?;
        for (key, ext_id) in missing {
            if !ext_ids.contains(&ext_id) {
                continue;
            }
            let st = self.load_trajectory(TrajectoryKey(key))?;
            let fp = trajectory_fingerprint(&st.trajectory);
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO trajectory_fingerprints (trajectory_id, fingerprint) VALUES (?1, ?2)",
                    params![key, fp],
                )
                .map_err(self.sql_err("recording a trajectory fingerprint"))?;
        }
        Ok(())
    }

    /// The live run imported from a file with this SHA-256, if any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn find_run(&self, source_sha256: &str) -> Result<Option<RunId>> {
        self.conn
            .query_row(
                "SELECT r.id FROM runs r JOIN changes c ON c.id = r.change_id
                 WHERE c.state = 'applied' AND r.source_sha256 = ?1 ORDER BY r.id LIMIT 1",
                params![source_sha256],
                |r| r.get(0),
            )
            .optional()
            .map(|o| o.map(RunId))
            .map_err(self.sql_err("looking up an imported run"))
    }

    /// Imports a run as one change (one undo removes the run, its rows,
    /// their predictions and the trajectories it added). Each trajectory of
    /// `items` is matched by [`trajectory_fingerprint`] against the live
    /// trajectories (call [`Workspace::fingerprint_trajectories`] first for
    /// workspaces from older builds) and added when none matches; each row's
    /// prediction becomes a new prediction of the row's state, indexed for
    /// [`Workspace::search_run_rows`]. The trajectories in `items` must hold
    /// no predictions of their own (see
    /// [`worldloom_core::formats::run::take_rows`]).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when a trajectory does not validate or a row
    /// names a state its trajectory lacks; [`StoreError::Sqlite`].
    pub fn import_run(
        &mut self,
        run: &NewRun,
        items: &[(Trajectory, Vec<RunRow>)],
    ) -> Result<RunImport> {
        for (t, _) in items {
            t.validate()
                .map_err(|m| StoreError::Invalid(format!("trajectory `{}`: {m}", t.id)))?;
        }
        let rows: usize = items.iter().map(|(_, r)| r.len()).sum();
        let summary = format!(
            "import run `{}` ({rows} {}, {})",
            run.name,
            if rows == 1 { "row" } else { "rows" },
            run.engine
        );
        let path = self.path.clone();
        self.with_change("import_run", None, &summary, |tx, change| {
            let err = tx_err(&path, "importing a run");
            tx.execute(
                "INSERT INTO runs (change_id, name, engine, source_path, source_sha256, mode) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![change.0, run.name, run.engine, run.source_path, run.source_sha256, mode_str(run.mode)],
            )
            .map_err(&err)?;
            let run_id = tx.last_insert_rowid();
            let mut out = RunImport {
                run: RunId(run_id),
                trajectories: Vec::new(),
                rows: 0,
            };
            let mut row_index = 0u32;
            for (t, rows) in items {
                let fp = trajectory_fingerprint(t);
                let found: Option<i64> = tx
                    .query_row(
                        "SELECT f.trajectory_id FROM trajectory_fingerprints f
                         JOIN trajectories t ON t.id = f.trajectory_id JOIN changes c ON c.id = t.change_id
                         WHERE f.fingerprint = ?1 AND c.state = 'applied' ORDER BY f.trajectory_id LIMIT 1",
                        params![fp],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(&err)?;
                let (key, added) = match found {
                    Some(k) => (k, false),
                    None => {
                        let k = insert_trajectory(tx, &path, t, run.source_sha256.as_deref(), change)?;
                        (k, true)
                    }
                };
                out.trajectories.push((TrajectoryKey(key), added));
                for row in rows {
                    let depth = depth_of(t, row.node);
                    let node = node_at_depth(tx, key, depth).map_err(&err)?.ok_or_else(|| {
                        StoreError::Invalid(format!(
                            "trajectory `{}` has no state {depth} turns in for row {}",
                            t.id,
                            row.row_index.map_or(row_index as usize, |i| i)
                        ))
                    })?;
                    let prediction = add_next_prediction(
                        tx,
                        &path,
                        TrajectoryKey(key),
                        NodeId(node),
                        &row.prediction,
                        change,
                    )?;
                    insert_row(tx, run_id, row_index, key, node, prediction, t, row).map_err(&err)?;
                    row_index += 1;
                    out.rows += 1;
                }
            }
            Ok(out)
        })
    }

    /// Every live run, oldest first.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; [`StoreError::Invalid`] for an unknown mode.
    pub fn list_runs(&self) -> Result<Vec<RunRecord>> {
        self.runs_where("1", [])
    }

    /// The live runs `filter` (an SQL condition on `r`, the `runs` row)
    /// selects, oldest first.
    fn runs_where(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<RunRecord>> {
        let rows = self.query_all(
            &format!("SELECT r.id, r.name, r.engine, r.source_path, r.source_sha256, r.mode, r.created_at,
                    (SELECT count(*) FROM run_rows w WHERE w.run_id = r.id),
                    (SELECT count(*) FROM run_rows w WHERE w.run_id = r.id AND w.judged = 1)
             FROM runs r JOIN changes c ON c.id = r.change_id WHERE c.state = 'applied' AND {filter} ORDER BY r.id"),
            args,
            "listing runs",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, i64>(8)?,
                ))
            },
        )?;
        rows.into_iter()
            .map(
                |(id, name, engine, source_path, source_sha256, mode, created_at, n, judged)| {
                    Ok(RunRecord {
                        id: RunId(id),
                        name,
                        engine,
                        source_path,
                        source_sha256,
                        mode: parse_mode(&mode, id)?,
                        created_at,
                        row_count: n.max(0) as u64,
                        judged_count: judged.max(0) as u64,
                    })
                },
            )
            .collect()
    }

    /// One live run.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone run;
    /// [`StoreError::Sqlite`].
    pub fn run(&self, id: RunId) -> Result<RunRecord> {
        self.runs_where("r.id = ?1", params![id.0])?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::NotFound(format!("no run {} in this workspace", id.0)))
    }

    /// Every row of a live run, in file order.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone run;
    /// [`StoreError::Sqlite`]; [`StoreError::Invalid`] for a stored domain
    /// this build does not know.
    pub fn run_rows(&self, id: RunId) -> Result<Vec<StoredRunRow>> {
        self.run(id)?;
        self.rows_where("w.run_id = ?1", params![id.0])
    }

    /// The live rows of every run on one state, oldest run first.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn run_rows_of_node(&self, key: TrajectoryKey, node: NodeId) -> Result<Vec<StoredRunRow>> {
        self.rows_where(
            "w.trajectory_id = ?1 AND w.node_id = ?2",
            params![key.0, node.0],
        )
    }

    fn rows_where(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<StoredRunRow>> {
        let sql = format!(
            "SELECT w.id, w.run_id, w.row_index, w.trajectory_id, t.ext_id, w.node_id, w.prediction_id, w.turn,
                    w.domain, w.status, w.error, w.judged, w.judge_failed,
                    w.format, w.factuality, w.consistency, w.realism, w.quality, w.total_score,
                    w.strengths, w.weaknesses, w.judge_error,
                    w.exact, w.text_f1, w.node_f1, w.attribute_accuracy, w.transition_f1, w.latency_ms
             FROM run_rows w JOIN runs r ON r.id = w.run_id JOIN changes c ON c.id = r.change_id
             JOIN trajectories t ON t.id = w.trajectory_id
             WHERE c.state = 'applied' AND {filter} ORDER BY w.run_id, w.row_index"
        );
        type Raw = (StoredRunRow, String);
        let rows = self.query_all(
            &sql,
            args,
            "reading run rows",
            |r| -> rusqlite::Result<Raw> {
                let judged: bool = r.get(11)?;
                let judge = judged
                    .then(|| -> rusqlite::Result<JudgeVerdict> {
                        Ok(JudgeVerdict {
                            scores: [r.get(13)?, r.get(14)?, r.get(15)?, r.get(16)?, r.get(17)?],
                            total_score: r.get(18)?,
                            failed: r.get(12)?,
                            strengths: r.get(19)?,
                            weaknesses: r.get(20)?,
                            error: r.get(21)?,
                        })
                    })
                    .transpose()?;
                Ok((
                    StoredRunRow {
                        id: r.get(0)?,
                        run: RunId(r.get(1)?),
                        row_index: r.get(2)?,
                        trajectory: TrajectoryKey(r.get(3)?),
                        ext_id: r.get(4)?,
                        node: NodeId(r.get(5)?),
                        prediction: PredictionId(r.get(6)?),
                        turn: r.get(7)?,
                        domain: Domain::Web,
                        status: r.get(9)?,
                        error: r.get(10)?,
                        judge,
                        metrics: RunMetrics {
                            exact: r.get(22)?,
                            text_f1: r.get(23)?,
                            node_f1: r.get(24)?,
                            attribute_accuracy: r.get(25)?,
                            transition_f1: r.get(26)?,
                        },
                        latency_ms: r.get(27)?,
                    },
                    r.get(8)?,
                ))
            },
        )?;
        rows.into_iter()
            .map(|(mut row, domain)| {
                row.domain = self.parse_domain(&domain, row.trajectory.0)?;
                Ok(row)
            })
            .collect()
    }

    /// The ids ([`StoredRunRow::id`]) of live run rows whose texts hold every
    /// word of `text` (case-insensitive, whole words, the last word also as a
    /// prefix), best match first, at most `limit`; only rows of `run` when
    /// given. Uses the full-text index: a search over tens of thousands of
    /// rows takes milliseconds (`docs/api.md`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn search_run_rows(
        &self,
        text: &str,
        field: SearchField,
        run: Option<RunId>,
        limit: u32,
    ) -> Result<Vec<i64>> {
        let Some(query) = fts_query(text, field) else {
            return Ok(Vec::new());
        };
        self.query_all(
            "SELECT w.id FROM run_rows_text x JOIN run_rows w ON w.id = x.rowid
             JOIN runs r ON r.id = w.run_id JOIN changes c ON c.id = r.change_id
             WHERE run_rows_text MATCH ?1 AND c.state = 'applied' AND (?2 IS NULL OR w.run_id = ?2)
             ORDER BY x.rank LIMIT ?3",
            params![query, run.map(|r| r.0), limit],
            "searching run rows",
            |r| r.get(0),
        )
    }
}

/// The labels a workspace offers before its own set is saved: common ways a
/// world model's prediction goes wrong.
pub const DEFAULT_LABELS: [&str; 6] = [
    "missed effect",
    "hallucinated element",
    "wrong page",
    "stale copy",
    "format error",
    "truncated",
];

/// The `workspace_meta` key of the label set (a JSON list of strings).
const LABELS_KEY: &str = "runs.labels";

impl Workspace {
    /// The workspace's label set: the saved one, else [`DEFAULT_LABELS`].
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; [`StoreError::Invalid`] when the saved value
    /// is not a list of strings.
    pub fn label_set(&self) -> Result<Vec<String>> {
        match self.meta(LABELS_KEY)? {
            None => Ok(DEFAULT_LABELS.iter().map(|l| (*l).to_owned()).collect()),
            Some(json) => serde_json::from_str(&json).map_err(|e| {
                StoreError::Invalid(format!(
                    "workspace_meta `{LABELS_KEY}` is not a list of labels: {e}"
                ))
            }),
        }
    }

    /// Saves the label set (trimmed, blanks and repeats dropped, order
    /// kept). A setting, not an undoable change; labels already on rows stay.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_label_set(&mut self, labels: &[String]) -> Result<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for l in labels {
            let l = l.trim();
            if !l.is_empty() && !out.iter().any(|o| o == l) {
                out.push(l.to_owned());
            }
        }
        self.set_meta(LABELS_KEY, &Self::json(&out))?;
        Ok(out)
    }

    /// Sets or clears `label` on run row `row` as one change (undoable).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for an empty label; [`StoreError::NotFound`]
    /// for a row that is not live; [`StoreError::Sqlite`].
    pub fn set_row_label(
        &mut self,
        row: i64,
        label: &str,
        present: bool,
    ) -> Result<super::ChangeId> {
        let label = label.trim();
        if label.is_empty() {
            return Err(StoreError::Invalid("a label must not be empty".into()));
        }
        let summary = format!(
            "{} label `{label}` on run row {row}",
            if present { "set" } else { "clear" }
        );
        self.annotate_row("set_label", &summary, row, "labelling a run row", |tx, change| {
            tx.execute(
                "INSERT INTO run_row_labels (row_id, label, present, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![row, label, present, change],
            )
        })
    }

    /// The labels set on the live rows of `run` (every run when `None`), by
    /// row id, each row's labels in the order they were last set.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn row_labels(
        &self,
        run: Option<RunId>,
    ) -> Result<std::collections::BTreeMap<i64, Vec<String>>> {
        let rows = self.row_records(
            run,
            "run_row_labels",
            "a.row_id, a.label, a.present",
            "reading run row labels",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            },
        )?;
        let mut out: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
        for (row, label, present) in rows {
            let labels = out.entry(row).or_default();
            labels.retain(|l| l != &label);
            if present {
                labels.push(label);
            }
        }
        out.retain(|_, v| !v.is_empty());
        Ok(out)
    }
}

impl Workspace {
    /// Sets the free-text note of run row `row` as one change (undoable; a
    /// new record, the newest live one wins). A text that is empty after
    /// trimming clears the note. Returns the change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for a row that is not live;
    /// [`StoreError::Sqlite`].
    pub fn set_row_note(&mut self, row: i64, text: &str) -> Result<super::ChangeId> {
        let text = text.trim();
        let summary = if text.is_empty() {
            format!("clear the note on run row {row}")
        } else {
            format!("note on run row {row}")
        };
        self.annotate_row(
            "set_row_note",
            &summary,
            row,
            "writing a run row's note",
            |tx, change| {
                tx.execute(
                    "INSERT INTO run_row_notes (row_id, text, change_id) VALUES (?1, ?2, ?3)",
                    params![row, text, change],
                )
            },
        )
    }

    /// Writes one record on run row `row` as one change `kind` described by
    /// `summary` (undoable): checks that the row belongs to a live run, then
    /// runs `insert` with the change id. Returns the change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for a row that is not live;
    /// [`StoreError::Sqlite`] naming `context`.
    fn annotate_row(
        &mut self,
        kind: &str,
        summary: &str,
        row: i64,
        context: &str,
        insert: impl FnOnce(&Transaction<'_>, i64) -> rusqlite::Result<usize>,
    ) -> Result<super::ChangeId> {
        let path = self.path.clone();
        self.with_change(kind, None, summary, |tx, change| {
            let err = tx_err(&path, context);
            let live: Option<i64> = tx
                .query_row(
                    "SELECT w.id FROM run_rows w JOIN runs r ON r.id = w.run_id JOIN changes c ON c.id = r.change_id
                     WHERE w.id = ?1 AND c.state = 'applied'",
                    params![row],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&err)?;
            if live.is_none() {
                return Err(StoreError::NotFound(format!("no run row {row} in this workspace")));
            }
            insert(tx, change.0).map_err(&err)?;
            Ok(change)
        })
    }

    /// The live records of `table` (a table of run-row records, aliased `a`)
    /// on the rows of `run` (every run when `None`), oldest first: `columns`
    /// of `a`, read by `map`. Two statements, not one with `?1 IS NULL OR …`:
    /// that form keeps SQLite from reaching one run's records through its
    /// rows' index and scans every record of every run. `table` and
    /// `columns` are fixed names, never input.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] naming `context`.
    fn row_records<T>(
        &self,
        run: Option<RunId>,
        table: &'static str,
        columns: &'static str,
        context: &str,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        match run {
            Some(run) => self.query_all(
                &format!(
                    "SELECT {columns} FROM run_rows w
                     JOIN {table} a ON a.row_id = w.id JOIN changes c ON c.id = a.change_id
                     WHERE w.run_id = ?1 AND c.state = 'applied' ORDER BY a.id"
                ),
                params![run.0],
                context,
                map,
            ),
            None => self.query_all(
                &format!(
                    "SELECT {columns} FROM {table} a JOIN changes c ON c.id = a.change_id
                     WHERE c.state = 'applied' ORDER BY a.id"
                ),
                [],
                context,
                map,
            ),
        }
    }

    /// The notes of the live rows of `run` (every run when `None`), by row
    /// id: each row's newest live note, rows whose note is cleared left out.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn row_notes(&self, run: Option<RunId>) -> Result<std::collections::BTreeMap<i64, String>> {
        let rows = self.row_records(
            run,
            "run_row_notes",
            "a.row_id, a.text",
            "reading run row notes",
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?;
        let mut out: std::collections::BTreeMap<i64, String> = Default::default();
        for (row, text) in rows {
            out.insert(row, text);
        }
        out.retain(|_, t| !t.is_empty());
        Ok(out)
    }
}

fn parse_mode(s: &str, run: i64) -> Result<ContextMode> {
    match s {
        "teacher-forced" => Ok(ContextMode::TeacherForced),
        "free-running" => Ok(ContextMode::FreeRunning),
        other => Err(StoreError::Invalid(format!(
            "runs row {run}: unknown mode `{other}`"
        ))),
    }
}

/// Inserts one run row and its full-text entry.
#[allow(clippy::too_many_arguments)]
pub(super) fn insert_row(
    tx: &Transaction<'_>,
    run: i64,
    row_index: u32,
    key: i64,
    node: u32,
    prediction: PredictionId,
    t: &Trajectory,
    row: &RunRow,
) -> rusqlite::Result<()> {
    let j = row.judge.as_ref();
    let score = |i: usize| j.and_then(|v| v.scores[i]);
    let m = &row.metrics;
    tx.execute(
        "INSERT INTO run_rows (run_id, row_index, trajectory_id, node_id, prediction_id, turn, domain, status, error,
            judged, judge_failed, format, factuality, consistency, realism, quality, total_score,
            strengths, weaknesses, judge_error, exact, text_f1, node_f1, attribute_accuracy, transition_f1, latency_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                 ?21, ?22, ?23, ?24, ?25, ?26)",
        params![
            run,
            row_index,
            key,
            node,
            prediction.0,
            row.turn,
            t.domain.as_str(),
            row.status,
            row.error,
            j.is_some(),
            j.is_some_and(|v| v.failed),
            score(0),
            score(1),
            score(2),
            score(3),
            score(4),
            j.and_then(|v| v.total_score),
            j.and_then(|v| v.strengths.clone()),
            j.and_then(|v| v.weaknesses.clone()),
            j.and_then(|v| v.error.clone()),
            m.exact,
            m.text_f1,
            m.node_f1,
            m.attribute_accuracy,
            m.transition_f1,
            row.latency_ms,
        ],
    )?;
    let id = tx.last_insert_rowid();
    let state = t.node(row.node);
    let real = state
        .and_then(|n| n.real.as_ref())
        .map_or("", |o| o.text.as_str());
    let action = state
        .and_then(|n| n.parent_edge)
        .and_then(|e| t.edge(e))
        .map_or("", |e| e.action.raw.as_str());
    let predicted = row
        .prediction
        .observation
        .as_deref()
        .unwrap_or(&row.prediction.raw_output);
    tx.execute(
        "INSERT INTO run_rows_text (rowid, real, predicted, action) VALUES (?1, ?2, ?3, ?4)",
        params![id, real, predicted, action],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_searches_become_quoted_fts_terms() {
        assert_eq!(fts_query("  ", SearchField::All), None);
        assert_eq!(
            fts_query("Add to cart", SearchField::All).as_deref(),
            Some("\"Add\" \"to\" \"cart\"*")
        );
        assert_eq!(
            fts_query("say \"hi\" OR", SearchField::Real).as_deref(),
            Some("real : (\"say\" \"\"\"hi\"\"\" \"OR\"*)")
        );
    }
}
