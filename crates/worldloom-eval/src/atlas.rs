//! The fidelity atlas: the error taxonomy of each turn
//! (`worldloom_obs::findings`) counted over a run, by domain, role or
//! class, attribute, action type and turn index, and two runs side by side.
//!
//! The input is each row's findings as computed once (the studio stores
//! them; `worldloom atlas` computes them from an eval output file); nothing
//! here parses an observation. Rates are over scored rows: a row whose
//! prediction is missing or whose real observation cannot be scored counts
//! in `missing` / `skipped` only. Definitions in `docs/metrics.md`
//! ("Fidelity atlas").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use worldloom_core::Action;
use worldloom_core::action::{AndroidAction, ParsedAction};
use worldloom_core::domain::Domain;
use worldloom_obs::findings::{ErrorKind, Finding};
use worldloom_obs::metrics::EvalStatus;

/// What kind of action a turn took, for the atlas's action-type tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ActionKind {
    /// A click, tap, long press, hover, drag or selection by pointer.
    Click,
    /// Typing or filling text.
    Type,
    /// Scrolling or swiping.
    Scroll,
    /// Going to a URL or app, back, forward, home, a tab change.
    Navigate,
    /// A key press or hotkey.
    Key,
    /// A tool call, shell command or search (MCP, SWE, Terminal, Search).
    ToolCall,
    /// Anything else (wait, no-op, an action that does not parse).
    Other,
}

impl ActionKind {
    /// Every kind, in report order.
    pub const ALL: [ActionKind; 7] = [
        ActionKind::Click,
        ActionKind::Type,
        ActionKind::Scroll,
        ActionKind::Navigate,
        ActionKind::Key,
        ActionKind::ToolCall,
        ActionKind::Other,
    ];

    /// The snake_case name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Click => "click",
            ActionKind::Type => "type",
            ActionKind::Scroll => "scroll",
            ActionKind::Navigate => "navigate",
            ActionKind::Key => "key",
            ActionKind::ToolCall => "tool_call",
            ActionKind::Other => "other",
        }
    }

    /// Reads a snake_case name; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        ActionKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// The kind of a function name (BrowserGym calls, `pyautogui` functions).
fn kind_of_name(name: &str) -> ActionKind {
    let n = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    if has(&["scroll", "swipe"]) {
        ActionKind::Scroll
    } else if has(&["fill", "type", "write", "upload", "clear"]) {
        ActionKind::Type
    } else if has(&["press", "hotkey", "key"]) {
        ActionKind::Key
    } else if has(&["goto", "go_back", "go_forward", "tab", "navigate", "open"]) {
        ActionKind::Navigate
    } else if has(&[
        "click", "tap", "hover", "drag", "select", "check", "focus", "move",
    ]) {
        ActionKind::Click
    } else {
        ActionKind::Other
    }
}

/// The action type of a turn's action: the first BrowserGym call, the
/// Android `action_type`, the first `pyautogui.<function>` of desktop code;
/// tool calls, shell commands and search queries are [`ActionKind::ToolCall`].
pub fn action_kind(action: &Action) -> ActionKind {
    use worldloom_core::action::ActionFormat;
    match (&action.parsed, action.format) {
        (Some(ParsedAction::Browsergym { calls }), _) => calls
            .first()
            .map_or(ActionKind::Other, |c| kind_of_name(&c.function)),
        (Some(ParsedAction::Android { action }), _) => match action {
            AndroidAction::Click { .. } | AndroidAction::LongPress { .. } => ActionKind::Click,
            AndroidAction::Type { .. } => ActionKind::Type,
            AndroidAction::Scroll { .. } => ActionKind::Scroll,
            AndroidAction::NavigateBack
            | AndroidAction::NavigateHome
            | AndroidAction::OpenApp { .. } => ActionKind::Navigate,
            AndroidAction::KeyboardEnter => ActionKind::Key,
            AndroidAction::Wait => ActionKind::Other,
            AndroidAction::Other { name } => kind_of_name(name),
        },
        (_, ActionFormat::Pyautogui) => action
            .raw
            .split("pyautogui.")
            .nth(1)
            .and_then(|rest| rest.split('(').next())
            .map_or(ActionKind::Other, kind_of_name),
        (_, ActionFormat::ToolCall | ActionFormat::Shell | ActionFormat::Text) => {
            if action.raw.trim().is_empty() {
                ActionKind::Other
            } else {
                ActionKind::ToolCall
            }
        }
        _ => ActionKind::Other,
    }
}

/// One row's findings, as the atlas reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct AtlasRow {
    /// The row's key (a run row id, or the 0-based row of a file).
    pub row_id: i64,
    /// Its domain.
    pub domain: Domain,
    /// Its 1-based turn.
    pub turn: u32,
    /// Its action's type.
    pub action: ActionKind,
    /// Whether it was scored.
    pub status: EvalStatus,
    /// Its findings (empty unless scored).
    pub findings: Vec<Finding>,
}

/// Which table of the atlas a cell belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum AtlasTable {
    /// One group, `all`.
    Overall,
    /// By domain (`web`, `android`…).
    Domain,
    /// By the node's role or class (node kinds only).
    Role,
    /// By field or anchor name (`attribute`, `text` and `anchor` kinds).
    Attribute,
    /// By action type.
    Action,
    /// By 1-based turn index.
    Turn,
}

impl AtlasTable {
    /// Every table, in report order.
    pub const ALL: [AtlasTable; 6] = [
        AtlasTable::Overall,
        AtlasTable::Domain,
        AtlasTable::Role,
        AtlasTable::Attribute,
        AtlasTable::Action,
        AtlasTable::Turn,
    ];

    /// The snake_case name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            AtlasTable::Overall => "overall",
            AtlasTable::Domain => "domain",
            AtlasTable::Role => "role",
            AtlasTable::Attribute => "attribute",
            AtlasTable::Action => "action",
            AtlasTable::Turn => "turn",
        }
    }

    /// Reads a snake_case name; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        AtlasTable::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The groups a row's finding falls in, in this table (none when the
    /// table does not apply to the finding's kind).
    fn group(self, row: &AtlasRow, f: &Finding) -> Option<String> {
        match self {
            AtlasTable::Overall => Some("all".to_owned()),
            AtlasTable::Domain => Some(row.domain.as_str().to_owned()),
            AtlasTable::Role => (!f.role.is_empty()).then(|| f.role.clone()),
            AtlasTable::Attribute => (!f.detail.is_empty()).then(|| f.detail.clone()),
            AtlasTable::Action => Some(row.action.as_str().to_owned()),
            AtlasTable::Turn => Some(row.turn.to_string()),
        }
    }

    /// The group a row belongs to for the rate's denominator; `None` for
    /// tables whose groups are not a partition of rows (role, attribute:
    /// their rates are over every scored row).
    fn row_group(self, row: &AtlasRow) -> Option<String> {
        match self {
            AtlasTable::Overall => Some("all".to_owned()),
            AtlasTable::Domain => Some(row.domain.as_str().to_owned()),
            AtlasTable::Action => Some(row.action.as_str().to_owned()),
            AtlasTable::Turn => Some(row.turn.to_string()),
            AtlasTable::Role | AtlasTable::Attribute => None,
        }
    }
}

/// Whether a row's finding falls in `(table, group, kind)`.
pub fn in_cell(
    table: AtlasTable,
    group: &str,
    kind: ErrorKind,
    row: &AtlasRow,
    f: &Finding,
) -> bool {
    f.kind == kind && table.group(row, f).as_deref() == Some(group)
}

/// One cell of an atlas table: one error kind in one group.
///
/// JSON: `{"table": "action", "group": "click", "kind": "invented",
/// "count": 42, "rows": 17, "scored_rows": 120, "rate": 0.1417}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AtlasCell {
    /// The table.
    pub table: AtlasTable,
    /// The group (`all`, a domain, role, field, action type or turn).
    pub group: String,
    /// The error kind.
    pub kind: ErrorKind,
    /// How many times it happened (nodes, lines or turns).
    pub count: u32,
    /// How many rows it happened in.
    pub rows: u32,
    /// The scored rows of the group (every scored row for the role and
    /// attribute tables).
    pub scored_rows: u32,
    /// `rows / scored_rows` in `[0, 1]` (0 when there is no scored row).
    pub rate: f64,
}

/// The atlas of a set of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Atlas {
    /// Rows counted.
    pub rows: u32,
    /// Of those, scored.
    pub scored: u32,
    /// Not scored: no prediction.
    pub missing: u32,
    /// Not scored: the real observation could not be scored.
    pub skipped: u32,
    /// Every non-empty cell, by table, group (domains, roles, fields by
    /// count; actions in [`ActionKind::ALL`] order; turns by number), kind.
    pub cells: Vec<AtlasCell>,
}

impl Atlas {
    /// The cells of one table.
    pub fn table(&self, table: AtlasTable) -> impl Iterator<Item = &AtlasCell> {
        self.cells.iter().filter(move |c| c.table == table)
    }

    /// The cell of `(table, group, kind)`, if anything happened there.
    pub fn cell(&self, table: AtlasTable, group: &str, kind: ErrorKind) -> Option<&AtlasCell> {
        self.cells
            .iter()
            .find(|c| c.table == table && c.group == group && c.kind == kind)
    }
}

/// Counts `rows` into an atlas. Linear in the rows and their findings.
pub fn aggregate<'a>(rows: impl IntoIterator<Item = &'a AtlasRow>) -> Atlas {
    type Key = (AtlasTable, String, ErrorKind);
    let mut counts: BTreeMap<Key, (u32, u32)> = BTreeMap::new();
    let mut scored_in: BTreeMap<(AtlasTable, String), u32> = BTreeMap::new();
    let mut atlas = Atlas {
        rows: 0,
        scored: 0,
        missing: 0,
        skipped: 0,
        cells: Vec::new(),
    };
    let mut seen: Vec<Key> = Vec::new();
    for row in rows {
        atlas.rows += 1;
        match row.status {
            EvalStatus::Scored => atlas.scored += 1,
            EvalStatus::Missing => {
                atlas.missing += 1;
                continue;
            }
            EvalStatus::Skipped => {
                atlas.skipped += 1;
                continue;
            }
        }
        for t in AtlasTable::ALL {
            if let Some(g) = t.row_group(row) {
                *scored_in.entry((t, g)).or_insert(0) += 1;
            }
        }
        seen.clear();
        for f in &row.findings {
            for t in AtlasTable::ALL {
                let Some(g) = t.group(row, f) else { continue };
                let key = (t, g, f.kind);
                let e = counts.entry(key.clone()).or_insert((0, 0));
                e.0 = e.0.saturating_add(f.count);
                if !seen.contains(&key) {
                    e.1 += 1;
                    seen.push(key);
                }
            }
        }
    }
    for ((table, group, kind), (count, rows)) in counts {
        let scored_rows = match table {
            AtlasTable::Role | AtlasTable::Attribute => atlas.scored,
            _ => scored_in.get(&(table, group.clone())).copied().unwrap_or(0),
        };
        let rate = if scored_rows == 0 {
            0.0
        } else {
            f64::from(rows) / f64::from(scored_rows)
        };
        atlas.cells.push(AtlasCell {
            table,
            group,
            kind,
            count,
            rows,
            scored_rows,
            rate,
        });
    }
    sort_cells(&mut atlas.cells);
    atlas
}

/// Orders cells: by table; groups by total count (domains, roles, fields),
/// action order or turn number; kinds in [`ErrorKind::ALL`] order.
fn sort_cells(cells: &mut [AtlasCell]) {
    let mut totals: BTreeMap<(AtlasTable, String), u64> = BTreeMap::new();
    for c in cells.iter() {
        *totals.entry((c.table, c.group.clone())).or_insert(0) += u64::from(c.count);
    }
    cells.sort_by(|a, b| {
        let rank = |c: &AtlasCell| -> (u64, u64) {
            match c.table {
                AtlasTable::Action => (ActionKind::parse(&c.group).map_or(99, |k| k as u64), 0),
                AtlasTable::Turn => (c.group.parse().unwrap_or(u64::MAX), 0),
                _ => (
                    u64::MAX
                        - totals
                            .get(&(c.table, c.group.clone()))
                            .copied()
                            .unwrap_or(0),
                    0,
                ),
            }
        };
        (a.table, rank(a), &a.group, a.kind).cmp(&(b.table, rank(b), &b.group, b.kind))
    });
}

/// One cell of two atlases side by side.
///
/// JSON: `{"table": "overall", "group": "all", "kind": "stale", "rate_a":
/// 0.2, "rate_b": 0.05, "delta": 0.15, "count_a": 20, "count_b": 5}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AtlasDelta {
    /// The table.
    pub table: AtlasTable,
    /// The group.
    pub group: String,
    /// The error kind.
    pub kind: ErrorKind,
    /// A's rate (0 when it never happened in A).
    pub rate_a: f64,
    /// B's rate.
    pub rate_b: f64,
    /// `rate_a − rate_b`: positive when A makes this mistake more often.
    pub delta: f64,
    /// A's count.
    pub count_a: u32,
    /// B's count.
    pub count_b: u32,
}

/// Every cell of either atlas, with both rates and their difference, in
/// A's cell order then B's cells A lacks.
pub fn compare(a: &Atlas, b: &Atlas) -> Vec<AtlasDelta> {
    let mut out: Vec<AtlasDelta> = Vec::new();
    let keys = a.cells.iter().chain(
        b.cells
            .iter()
            .filter(|c| a.cell(c.table, &c.group, c.kind).is_none()),
    );
    for c in keys {
        let ca = a.cell(c.table, &c.group, c.kind);
        let cb = b.cell(c.table, &c.group, c.kind);
        let (rate_a, rate_b) = (ca.map_or(0.0, |x| x.rate), cb.map_or(0.0, |x| x.rate));
        out.push(AtlasDelta {
            table: c.table,
            group: c.group.clone(),
            kind: c.kind,
            rate_a,
            rate_b,
            delta: rate_a - rate_b,
            count_a: ca.map_or(0, |x| x.count),
            count_b: cb.map_or(0, |x| x.count),
        });
    }
    out
}

/// The atlas as text tables: one line per group and kind with count, rows
/// and rate; with `b`, both runs' rates and their difference.
pub fn render(a: &Atlas, b: Option<&Atlas>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let head = |s: &mut String, name: &str, x: &Atlas| {
        let _ = writeln!(
            s,
            "{name}: {} rows, {} scored, {} missing, {} skipped",
            x.rows, x.scored, x.missing, x.skipped
        );
    };
    head(&mut s, if b.is_some() { "A" } else { "run" }, a);
    if let Some(b) = b {
        head(&mut s, "B", b);
    }
    let deltas = b.map(|b| compare(a, b));
    for table in AtlasTable::ALL {
        let _ = writeln!(s, "\nby {}", table.as_str());
        match &deltas {
            None => {
                let _ = writeln!(
                    s,
                    "  {:<32} {:<12} {:>8} {:>6} {:>7}",
                    "group", "kind", "count", "rows", "rate"
                );
                for c in a.table(table) {
                    let _ = writeln!(
                        s,
                        "  {:<32} {:<12} {:>8} {:>6} {:>6.1}%",
                        c.group,
                        c.kind.as_str(),
                        c.count,
                        c.rows,
                        c.rate * 100.0
                    );
                }
            }
            Some(d) => {
                let _ = writeln!(
                    s,
                    "  {:<32} {:<12} {:>7} {:>7} {:>8}",
                    "group", "kind", "A", "B", "A − B"
                );
                for c in d.iter().filter(|c| c.table == table) {
                    let _ = writeln!(
                        s,
                        "  {:<32} {:<12} {:>6.1}% {:>6.1}% {:>+7.1}%",
                        c.group,
                        c.kind.as_str(),
                        c.rate_a * 100.0,
                        c.rate_b * 100.0,
                        c.delta * 100.0
                    );
                }
            }
        }
    }
    s
}

/// The findings of one predicted state of a trajectory: `prediction`'s
/// observation against the state's real observation, with the parent
/// state's real observation for the transition view, and the type of the
/// action into the state. The one definition both the studio's atlas and
/// `worldloom atlas` use.
///
/// The representation compared is the prediction's when the real
/// observation has a view in it (else the real observation's own), as the
/// turn view compares them. A real observation that is absent, a failed
/// capture or malformed gives [`EvalStatus::Skipped`]; no predicted
/// observation gives [`EvalStatus::Missing`].
pub fn state_findings(
    t: &worldloom_core::Trajectory,
    node: worldloom_core::NodeId,
    prediction: &worldloom_core::Prediction,
) -> (ActionKind, worldloom_obs::findings::TurnFindings) {
    use worldloom_obs::findings::{TurnFindings, turn_findings};
    use worldloom_obs::metrics::Observed;
    let state = t.node(node);
    let edge = state.and_then(|n| n.parent_edge).and_then(|e| t.edge(e));
    let action = edge.map_or(ActionKind::Other, |e| action_kind(&e.action));
    let skipped = TurnFindings {
        status: EvalStatus::Skipped,
        findings: Vec::new(),
    };
    let Some(real) = state.and_then(|n| n.real.as_ref()) else {
        return (action, skipped);
    };
    let repr = if real.view(prediction.representation).is_some() {
        prediction.representation
    } else {
        real.representation
    };
    let real_text = real.view(repr).unwrap_or(real.text.as_str());
    let prev = edge
        .and_then(|e| t.node(e.from))
        .and_then(|n| n.real.as_ref())
        .and_then(|o| o.view(repr));
    let real_obs = (!real.is_error_step()).then(|| Observed::new(real_text.as_bytes(), repr));
    let pred_obs = prediction
        .observation
        .as_deref()
        .map(|p| Observed::new(p.as_bytes(), repr));
    let prev_obs = prev.map(|p| Observed::new(p.as_bytes(), repr));
    match turn_findings(
        real_obs.as_ref(),
        pred_obs.as_ref(),
        prev_obs.as_ref(),
        repr,
    ) {
        Ok((_, f)) => (action, f),
        Err(_) => (action, skipped),
    }
}

/// The atlas of an eval output file (a predictions or judged JSON Lines
/// file, `worldloom eval`'s or the official script's): each row's findings
/// computed from the file's own real observations ([`state_findings`]),
/// then [`aggregate`]d.
///
/// # Errors
/// [`crate::EvalError::Input`] naming the file when it cannot be read as
/// trajectories or holds no row with a prediction (`gen`).
pub fn atlas_of_file(path: &std::path::Path) -> Result<(Atlas, Vec<AtlasRow>), crate::EvalError> {
    use worldloom_core::formats::run::{is_run, take_rows};
    let imported = worldloom_core::import_path(path, &worldloom_core::ImportOptions::default())
        .map_err(|e| crate::EvalError::Input(format!("{}: {e}", path.display())))?;
    let mut rows = Vec::new();
    for mut t in imported.trajectories {
        if !is_run(&t) {
            continue;
        }
        for r in take_rows(&mut t) {
            let (action, f) = state_findings(&t, r.node, &r.prediction);
            rows.push(AtlasRow {
                row_id: r.row_index.map_or(rows.len() as i64, |i| i as i64),
                domain: t.domain,
                turn: r.turn,
                action,
                status: f.status,
                findings: f.findings,
            });
        }
    }
    if rows.is_empty() {
        return Err(crate::EvalError::Input(format!(
            "{}: no row with a prediction (`gen`): not a predictions or judged file",
            path.display()
        )));
    }
    rows.sort_by_key(|r| r.row_id);
    Ok((aggregate(&rows), rows))
}
