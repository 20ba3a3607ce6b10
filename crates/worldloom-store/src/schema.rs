//! The workspace schema and its migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version` (0 for a new, empty
//! file). Migration `n` takes a workspace from version `n - 1` to `n`; each
//! runs in its own transaction together with the `user_version` bump, so a
//! crash during a migration leaves the file at the previous version. A
//! migration, once released, is never edited: later changes are new
//! migrations. `tests/fixtures/workspace-v1.worldloom` is a file written at
//! version 1 that every later build must open.
//!
//! Record layout, in brief:
//! - `changes`: one row per user change (import, prediction, choice, edit,
//!   note, tag), with its undo state (`applied`, `undone`, `abandoned`).
//! - every other table's rows are immutable and carry the `change_id` that
//!   made them; a row is *live* while its change is `applied`. Pointers (the
//!   chosen prediction of a node, the current text of a note, whether a tag is
//!   set) are rows too: the newest live row wins. Undo and redo only move a
//!   change's state, so nothing is ever overwritten or deleted.
//! - `perturbations`: a control instruction on a turn (edge), added to the
//!   world model's prompt; the newest live row per edge wins and a `NULL`
//!   instruction clears it.
//! - `runs`: a set of predictions over a dataset (an imported eval output);
//!   `run_rows` link each row to its trajectory, state and prediction with
//!   the judge's scores and the deterministic metrics; a run lives while its
//!   import change is applied. `trajectory_fingerprints` (derived, outside
//!   undo) name a trajectory by its contents so that rows of one dataset
//!   from several runs attach to the same trajectories; `run_rows_text` is
//!   a contentless FTS5 index of each row's real and predicted observations
//!   and action, keyed by `run_rows.id`. `run_row_labels`: a label set on
//!   or cleared from a row, as a change; the newest live record per row and
//!   label wins (as for tags). `run_row_notes`: a row's free-text note, a
//!   new record per edit; the newest live one wins and an empty text clears
//!   it. `run_row_findings` (derived, outside undo): what the alignment of
//!   a row found (the fidelity atlas's error taxonomy), one record per row
//!   keyed by `run_rows.id`, replaced when computed again.
//! - every query that reads one trajectory, state, turn or run reaches its
//!   rows through an index (a key or one of the `CREATE INDEX` below), never
//!   by scanning a table: its cost does not grow with the workspace
//!   (`tests/query_plans.rs` checks each plan).
//! - `screenshots`: image bytes (PNG, JPEG) keyed by their SHA-256, each
//!   kept once however many states show it, at most 16 MiB each, with the
//!   media type and the size read from the header; outside undo (content,
//!   not a change). `node_screenshots`: the screenshot a state shows, a row
//!   per import or change; the newest live row per state wins.
//! - core records (actions, observations, predictions) are stored as the
//!   JSON of the `worldloom-core` types beside the columns that are queried.

/// One schema migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version the migration produces (1-based).
    pub version: u32,
    /// What it changes, for humans.
    pub description: &'static str,
    /// The SQL it runs (several statements).
    pub sql: &'static str,
}

/// The `application_id` written into every workspace (`PRAGMA
/// application_id`): the ASCII bytes `WLWS`, so other SQLite files are
/// recognised and refused.
pub const APPLICATION_ID: i32 = 0x574C_5753;

/// Every migration, oldest first. `MIGRATIONS[i].version == i + 1`.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "trajectories, branch tree, observations, predictions, chosen-prediction pointers, change log",
        sql: r#"
CREATE TABLE workspace_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE changes (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    trajectory_id INTEGER,
    summary       TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'applied' CHECK (state IN ('applied', 'undone', 'abandoned')),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX changes_state ON changes (state, id);

CREATE TABLE trajectories (
    id             INTEGER PRIMARY KEY,
    change_id      INTEGER NOT NULL REFERENCES changes (id),
    ext_id         TEXT NOT NULL,
    domain         TEXT NOT NULL,
    source_format  TEXT NOT NULL,
    source_path    TEXT,
    source_sha256  TEXT,
    goal           TEXT,
    system_prompt  TEXT,
    extra_json     TEXT NOT NULL DEFAULT '{}',
    imported_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX trajectories_sha ON trajectories (source_sha256);

CREATE TABLE nodes (
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    node_id       INTEGER NOT NULL,
    parent_edge   INTEGER,
    extra_json    TEXT NOT NULL DEFAULT '{}',
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    PRIMARY KEY (trajectory_id, node_id)
);

CREATE TABLE edges (
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    edge_id       INTEGER NOT NULL,
    from_node     INTEGER NOT NULL,
    to_node       INTEGER NOT NULL,
    edge_json     TEXT NOT NULL,
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    PRIMARY KEY (trajectory_id, edge_id)
);

CREATE TABLE observations (
    id               INTEGER PRIMARY KEY,
    trajectory_id    INTEGER NOT NULL REFERENCES trajectories (id),
    node_id          INTEGER NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('real', 'authored')),
    representation   TEXT NOT NULL,
    observation_json TEXT NOT NULL,
    author           TEXT,
    based_on         INTEGER,
    note             TEXT,
    change_id        INTEGER NOT NULL REFERENCES changes (id),
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX observations_node ON observations (trajectory_id, node_id, kind, id);

CREATE TABLE predictions (
    trajectory_id   INTEGER NOT NULL REFERENCES trajectories (id),
    node_id         INTEGER NOT NULL,
    prediction_id   INTEGER NOT NULL,
    engine          TEXT NOT NULL,
    seed            TEXT,
    context         TEXT NOT NULL,
    status          TEXT NOT NULL,
    prediction_json TEXT NOT NULL,
    change_id       INTEGER NOT NULL REFERENCES changes (id),
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (trajectory_id, node_id, prediction_id)
);

CREATE TABLE chosen_predictions (
    id            INTEGER PRIMARY KEY,
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    node_id       INTEGER NOT NULL,
    prediction_id INTEGER,
    change_id     INTEGER NOT NULL REFERENCES changes (id)
);
CREATE INDEX chosen_predictions_node ON chosen_predictions (trajectory_id, node_id, id);
"#,
    },
    Migration {
        version: 2,
        description: "notes, tags and metric results",
        sql: r#"
CREATE TABLE notes (
    id            INTEGER PRIMARY KEY,
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    node_id       INTEGER,
    text          TEXT NOT NULL,
    supersedes    INTEGER REFERENCES notes (id),
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX notes_trajectory ON notes (trajectory_id, id);

CREATE TABLE tags (
    id            INTEGER PRIMARY KEY,
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    node_id       INTEGER,
    tag           TEXT NOT NULL,
    present       INTEGER NOT NULL CHECK (present IN (0, 1)),
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX tags_trajectory ON tags (trajectory_id, tag, id);

CREATE TABLE metric_results (
    id             INTEGER PRIMARY KEY,
    trajectory_id  INTEGER NOT NULL REFERENCES trajectories (id),
    node_id        INTEGER NOT NULL,
    subject        TEXT NOT NULL,
    producer       TEXT NOT NULL,
    score          REAL,
    result_json    TEXT NOT NULL,
    created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX metric_results_subject ON metric_results (trajectory_id, node_id, subject, producer, id);
"#,
    },
    Migration {
        version: 3,
        description: "perturbations (control instructions on turns)",
        sql: r#"
CREATE TABLE perturbations (
    id            INTEGER PRIMARY KEY,
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    edge_id       INTEGER NOT NULL,
    instruction   TEXT,
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX perturbations_edge ON perturbations (trajectory_id, edge_id, id);
"#,
    },
    Migration {
        version: 4,
        description: "runs (predictions over a dataset), their rows and labels, trajectory fingerprints, full-text index of run rows",
        sql: r#"
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    change_id     INTEGER NOT NULL REFERENCES changes (id),
    name          TEXT NOT NULL,
    engine        TEXT NOT NULL,
    source_path   TEXT,
    source_sha256 TEXT,
    mode          TEXT NOT NULL CHECK (mode IN ('teacher-forced', 'free-running')),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX runs_sha ON runs (source_sha256);

CREATE TABLE run_rows (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs (id),
    row_index          INTEGER NOT NULL,
    trajectory_id      INTEGER NOT NULL REFERENCES trajectories (id),
    node_id            INTEGER NOT NULL,
    prediction_id      INTEGER NOT NULL,
    turn               INTEGER NOT NULL,
    domain             TEXT NOT NULL,
    status             TEXT NOT NULL,
    error              TEXT,
    judged             INTEGER NOT NULL CHECK (judged IN (0, 1)),
    judge_failed       INTEGER NOT NULL CHECK (judge_failed IN (0, 1)),
    format             REAL,
    factuality         REAL,
    consistency        REAL,
    realism            REAL,
    quality            REAL,
    total_score        REAL,
    strengths          TEXT,
    weaknesses         TEXT,
    judge_error        TEXT,
    exact              INTEGER,
    text_f1            REAL,
    node_f1            REAL,
    attribute_accuracy REAL,
    transition_f1      REAL,
    latency_ms         REAL,
    UNIQUE (run_id, row_index)
);
CREATE INDEX run_rows_node ON run_rows (trajectory_id, node_id, run_id);

CREATE TABLE trajectory_fingerprints (
    trajectory_id INTEGER PRIMARY KEY REFERENCES trajectories (id),
    fingerprint   TEXT NOT NULL
);
CREATE INDEX trajectory_fingerprints_value ON trajectory_fingerprints (fingerprint);

CREATE VIRTUAL TABLE run_rows_text USING fts5 (real, predicted, action, content = '', tokenize = 'unicode61');

CREATE TABLE run_row_labels (
    id         INTEGER PRIMARY KEY,
    row_id     INTEGER NOT NULL REFERENCES run_rows (id),
    label      TEXT NOT NULL,
    present    INTEGER NOT NULL CHECK (present IN (0, 1)),
    change_id  INTEGER NOT NULL REFERENCES changes (id),
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX run_row_labels_row ON run_row_labels (row_id, label, id);
"#,
    },
    Migration {
        version: 5,
        description: "free-text notes on run rows",
        sql: r#"
CREATE TABLE run_row_notes (
    id         INTEGER PRIMARY KEY,
    row_id     INTEGER NOT NULL REFERENCES run_rows (id),
    text       TEXT NOT NULL,
    change_id  INTEGER NOT NULL REFERENCES changes (id),
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX run_row_notes_row ON run_row_notes (row_id, id);
"#,
    },
    Migration {
        version: 6,
        description: "index of edges by the state they lead to",
        // The parent of a state (`get_turn`, reading the path to a state)
        // was found by reading every edge of its trajectory.
        sql: r#"
CREATE INDEX edges_to_node ON edges (trajectory_id, to_node);
"#,
    },
    Migration {
        version: 7,
        description: "screenshots: image bytes kept once per SHA-256, and which one each state shows",
        sql: r#"
CREATE TABLE screenshots (
    sha256      TEXT PRIMARY KEY,
    media_type  TEXT NOT NULL,
    width_px    INTEGER NOT NULL,
    height_px   INTEGER NOT NULL,
    byte_length INTEGER NOT NULL,
    bytes       BLOB NOT NULL
);

CREATE TABLE node_screenshots (
    id            INTEGER PRIMARY KEY,
    trajectory_id INTEGER NOT NULL REFERENCES trajectories (id),
    node_id       INTEGER NOT NULL,
    sha256        TEXT REFERENCES screenshots (sha256),
    change_id     INTEGER NOT NULL REFERENCES changes (id)
);
CREATE INDEX node_screenshots_node ON node_screenshots (trajectory_id, node_id, id);
"#,
    },
    Migration {
        version: 8,
        description: "what the alignment of each run row found (the fidelity atlas's findings)",
        sql: r#"
CREATE TABLE run_row_findings (
    row_id        INTEGER PRIMARY KEY REFERENCES run_rows (id),
    producer      TEXT NOT NULL,
    action_kind   TEXT NOT NULL,
    status        TEXT NOT NULL,
    findings_json TEXT NOT NULL
);
"#,
    },
];

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                m.version as usize,
                i + 1,
                "migration {} out of order",
                m.description
            );
        }
        assert_eq!(SCHEMA_VERSION, 8);
    }
}
