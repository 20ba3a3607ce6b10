//! The error taxonomy of one turn: what a prediction got wrong, read from
//! the evaluation the studio already makes (`metrics::evaluate_observed`:
//! its per-node diff, transition detail, anchors and line diff). Nothing is
//! aligned or diffed a second time here; each kind is a reading of one of
//! those results. The rules are written out in `docs/metrics.md`
//! ("Error taxonomy").
//!
//! Trees (non-synthetic nodes only):
//! - **invented**: a predicted node with no real counterpart (diff status
//!   `added`, not past a truncated real tree's cut), by its predicted role;
//! - **forgotten**: a real node with no predicted counterpart (`removed`),
//!   by its real role;
//! - **attribute**: an aligned pair whose field other than `name` and
//!   `value` differs (`role`, `key`, `bounds`, `state:<name>`,
//!   `attr:<name>`), one per field, by field name and real role;
//! - **text**: an aligned pair whose `name` or `value` differs, by field;
//! - **moved**: an aligned pair reported as moved;
//! - **stale** / **over_change** / **diverged** (one per turn, with a
//!   previous observation): from transition F1's change items, the real
//!   state changed and the prediction kept the previous one; the real state
//!   stayed and the prediction changed it; both changed, differently;
//! - **anchor**: a domain anchor `mismatched`, by anchor name.
//!
//! Texts (`text`, `json`: MCP, Search, Terminal, SWE) have no tree; the line
//! diff stands for the node diff: real lines deleted are **forgotten**,
//! predicted lines inserted are **invented**, a replaced run pairs its lines
//! in order as **text** changes and its surplus lines as forgotten or
//! invented (role `line`); stale / over-change / diverged compare the three
//! texts after exact match's normalisation.

use serde::{Deserialize, Serialize};

use crate::diff::{LineTag, NodeStatus, TreeDiff};
use crate::metrics::{
    AnchorStatus, EvalStatus, Evaluation, Observed, evaluate_observed, normalize_text,
};
use crate::tree::{UiNode, UiTree};
use worldloom_core::domain::Representation;

/// Most source lines kept per finding on each side (enough to point at the
/// nodes; the count is exact).
pub const MAX_LINES_PER_FINDING: usize = 16;

/// The role text findings on lines carry.
pub const LINE_ROLE: &str = "line";

/// A kind of error in a predicted observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// In the prediction only (a node or a line).
    Invented,
    /// In the real state only (a node or a line).
    Forgotten,
    /// An aligned node with a field other than its text wrong.
    Attribute,
    /// An aligned node with its name or value wrong (or a replaced line).
    Text,
    /// An aligned node in another place.
    Moved,
    /// The real state changed; the prediction kept the previous one.
    Stale,
    /// The real state stayed; the prediction changed it.
    OverChange,
    /// Both changed, differently.
    Diverged,
    /// A domain anchor (URL, focus, checked states, keyboard…) missed.
    Anchor,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Invented,
        ErrorKind::Forgotten,
        ErrorKind::Attribute,
        ErrorKind::Text,
        ErrorKind::Moved,
        ErrorKind::Stale,
        ErrorKind::OverChange,
        ErrorKind::Diverged,
        ErrorKind::Anchor,
    ];

    /// The snake_case name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Invented => "invented",
            ErrorKind::Forgotten => "forgotten",
            ErrorKind::Attribute => "attribute",
            ErrorKind::Text => "text",
            ErrorKind::Moved => "moved",
            ErrorKind::Stale => "stale",
            ErrorKind::OverChange => "over_change",
            ErrorKind::Diverged => "diverged",
            ErrorKind::Anchor => "anchor",
        }
    }

    /// Reads a snake_case name; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the kind is about the turn as a whole (no node or role).
    pub fn is_turn_level(self) -> bool {
        matches!(
            self,
            ErrorKind::Stale | ErrorKind::OverChange | ErrorKind::Diverged | ErrorKind::Anchor
        )
    }
}

/// One kind of error in one turn, for one role and detail, with how many
/// times it happened.
///
/// JSON: `{"kind": "attribute", "detail": "state:checked", "role":
/// "checkbox", "count": 2, "real_lines": [14, 15], "pred_lines": [14, 16]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Finding {
    /// The kind.
    pub kind: ErrorKind,
    /// The field (`attribute`: `role`, `key`, `bounds`, `state:<name>`,
    /// `attr:<name>`; `text`: `name`, `value` or `line`) or the anchor
    /// name (`anchor`); empty otherwise.
    pub detail: String,
    /// The node's role or class (`button`, `android.widget.TextView`; the
    /// predicted node's for `invented`, the real one's otherwise), `line`
    /// for texts, empty for turn-level kinds.
    pub role: String,
    /// How many nodes (or lines) it concerns; 1 for turn-level kinds.
    pub count: u32,
    /// 1-based lines of the real observation where those nodes start (the
    /// first [`MAX_LINES_PER_FINDING`]).
    pub real_lines: Vec<u32>,
    /// 1-based lines of the prediction where those nodes start (the first
    /// [`MAX_LINES_PER_FINDING`]).
    pub pred_lines: Vec<u32>,
}

/// The findings of one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnFindings {
    /// Whether the turn was scored (only scored turns have findings).
    pub status: EvalStatus,
    /// Findings sorted by kind, detail and role, one per triple.
    pub findings: Vec<Finding>,
}

impl TurnFindings {
    /// How many findings of `kind` (summed counts).
    pub fn count(&self, kind: ErrorKind) -> u32 {
        self.findings
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.count)
            .sum()
    }
}

/// Accumulates findings keyed by (kind, detail, role).
#[derive(Default)]
struct Tally {
    found: Vec<Finding>,
}

impl Tally {
    fn add(
        &mut self,
        kind: ErrorKind,
        detail: &str,
        role: &str,
        n: u32,
        real: &[u32],
        pred: &[u32],
    ) {
        if n == 0 {
            return;
        }
        let at = match self
            .found
            .iter()
            .position(|f| f.kind == kind && f.detail == detail && f.role == role)
        {
            Some(i) => i,
            None => {
                self.found.push(Finding {
                    kind,
                    detail: detail.to_owned(),
                    role: role.to_owned(),
                    count: 0,
                    real_lines: Vec::new(),
                    pred_lines: Vec::new(),
                });
                self.found.len() - 1
            }
        };
        let f = &mut self.found[at];
        f.count += n;
        for (lines, add) in [(&mut f.real_lines, real), (&mut f.pred_lines, pred)] {
            for l in add {
                if lines.len() < MAX_LINES_PER_FINDING && !lines.contains(l) {
                    lines.push(*l);
                }
            }
        }
    }

    fn finish(mut self) -> Vec<Finding> {
        self.found
            .sort_by(|a, b| (a.kind, &a.detail, &a.role).cmp(&(b.kind, &b.detail, &b.role)));
        self.found
    }
}

fn line_of(n: &UiNode) -> Vec<u32> {
    n.span.as_ref().map(|s| vec![s.line]).unwrap_or_default()
}

/// Reads the findings of an evaluation. `real` and `pred` are the trees the
/// evaluation's per-node diff indexes (`pred` absent when the prediction
/// did not parse: the diff was made against an empty tree); `texts` the
/// previous, real and predicted texts for a text representation's
/// transition (`None` without a previous observation).
///
/// Only a [`EvalStatus::Scored`] evaluation has findings.
pub fn findings_of(
    e: &Evaluation,
    real: Option<&UiTree>,
    pred: Option<&UiTree>,
    texts: Option<(&str, &str, &str)>,
) -> TurnFindings {
    let mut t = Tally::default();
    if e.status != EvalStatus::Scored {
        return TurnFindings {
            status: e.status,
            findings: Vec::new(),
        };
    }
    match (&e.nodes, real) {
        (Some(diff), Some(real)) => tree_findings(&mut t, diff, real, pred),
        _ => line_findings(&mut t, e),
    }
    if let Some(d) = &e.transition {
        transition(&mut t, d.real_changes > 0, d.pred_changes > 0, {
            d.matched_changes < d.real_changes || d.matched_changes < d.pred_changes
        });
    } else if !e.representation.is_tree()
        && let Some((prev, real, pred)) = texts
    {
        let (prev, real, pred) = (
            normalize_text(prev),
            normalize_text(real),
            normalize_text(pred),
        );
        transition(&mut t, prev != real, prev != pred, pred != real);
    }
    for a in &e.anchors {
        if a.status == AnchorStatus::Mismatched {
            t.add(ErrorKind::Anchor, &a.anchor, "", 1, &[], &[]);
        }
    }
    TurnFindings {
        status: e.status,
        findings: t.finish(),
    }
}

/// Stale, over-change or diverged from whether the real and the predicted
/// state changed and whether their changes differ.
fn transition(t: &mut Tally, real_changed: bool, pred_changed: bool, differ: bool) {
    let kind = match (real_changed, pred_changed) {
        (true, false) => Some(ErrorKind::Stale),
        (false, true) => Some(ErrorKind::OverChange),
        (true, true) if differ => Some(ErrorKind::Diverged),
        _ => None,
    };
    if let Some(k) = kind {
        t.add(k, "", "", 1, &[], &[]);
    }
}

fn tree_findings(t: &mut Tally, diff: &TreeDiff, real: &UiTree, pred: Option<&UiTree>) {
    // Predicted nodes past a truncated real tree's cut are not counted, as
    // in the diff's summary (`DiffSummary::beyond_cut`).
    let cut = crate::diff::truncation_cut(
        real,
        diff.real.iter().enumerate().filter_map(|(i, s)| match s {
            NodeStatus::Unchanged { counterpart }
            | NodeStatus::Changed { counterpart, .. }
            | NodeStatus::Moved { counterpart, .. } => Some((i, counterpart.index())),
            _ => None,
        }),
    );
    for (i, s) in diff.real.iter().enumerate() {
        let rn = &real.nodes[i];
        if rn.synthetic {
            continue;
        }
        let role = rn.role.as_str();
        let rl = line_of(rn);
        let (counterpart, changes) = match s {
            NodeStatus::Removed => {
                t.add(ErrorKind::Forgotten, "", role, 1, &rl, &[]);
                continue;
            }
            NodeStatus::Added | NodeStatus::Unchanged { .. } => continue,
            NodeStatus::Changed {
                counterpart,
                changes,
            } => (*counterpart, changes),
            NodeStatus::Moved {
                counterpart,
                changes,
            } => {
                let pl = pred
                    .map(|p| line_of(p.node(*counterpart)))
                    .unwrap_or_default();
                t.add(ErrorKind::Moved, "", role, 1, &rl, &pl);
                (*counterpart, changes)
            }
        };
        let pl = pred
            .map(|p| line_of(p.node(counterpart)))
            .unwrap_or_default();
        for c in changes {
            let kind = match c.field.as_str() {
                "name" | "value" => ErrorKind::Text,
                _ => ErrorKind::Attribute,
            };
            t.add(kind, &c.field, role, 1, &rl, &pl);
        }
    }
    if let Some(pred) = pred {
        for (i, s) in diff.pred.iter().enumerate() {
            let pn = &pred.nodes[i];
            if pn.synthetic || !matches!(s, NodeStatus::Added) || i > cut {
                continue;
            }
            t.add(ErrorKind::Invented, "", &pn.role, 1, &[], &line_of(pn));
        }
    }
}

fn line_findings(t: &mut Tally, e: &Evaluation) {
    let Some(ld) = &e.line_diff else { return };
    let lines = |a: usize, b: usize| -> Vec<u32> {
        (a..b)
            .take(MAX_LINES_PER_FINDING)
            .map(|l| u32::try_from(l + 1).unwrap_or(u32::MAX))
            .collect()
    };
    let n = |a: usize, b: usize| u32::try_from(b - a).unwrap_or(u32::MAX);
    for op in &ld.ops {
        let (r, p) = ((op.real_start, op.real_end), (op.pred_start, op.pred_end));
        match op.tag {
            LineTag::Equal => {}
            LineTag::Delete => t.add(
                ErrorKind::Forgotten,
                "",
                LINE_ROLE,
                n(r.0, r.1),
                &lines(r.0, r.1),
                &[],
            ),
            LineTag::Insert => t.add(
                ErrorKind::Invented,
                "",
                LINE_ROLE,
                n(p.0, p.1),
                &[],
                &lines(p.0, p.1),
            ),
            LineTag::Replace => {
                let paired = (r.1 - r.0).min(p.1 - p.0);
                t.add(
                    ErrorKind::Text,
                    LINE_ROLE,
                    LINE_ROLE,
                    n(0, paired),
                    &lines(r.0, r.0 + paired),
                    &lines(p.0, p.0 + paired),
                );
                let (rs, ps) = (r.0 + paired, p.0 + paired);
                t.add(
                    ErrorKind::Forgotten,
                    "",
                    LINE_ROLE,
                    n(rs, r.1),
                    &lines(rs, r.1),
                    &[],
                );
                t.add(
                    ErrorKind::Invented,
                    "",
                    LINE_ROLE,
                    n(ps, p.1),
                    &[],
                    &lines(ps, p.1),
                );
            }
        }
    }
}

/// Evaluates a prediction ([`evaluate_observed`], each input parsed once)
/// and reads its findings ([`findings_of`]). Returns both; the evaluation's
/// errors are those of [`evaluate_observed`].
///
/// # Errors
/// [`crate::metrics::EvalError::Real`] when the real observation is present
/// but malformed.
pub fn turn_findings(
    real: Option<&Observed<'_>>,
    pred: Option<&Observed<'_>>,
    prev: Option<&Observed<'_>>,
    representation: Representation,
) -> Result<(Evaluation, TurnFindings), crate::metrics::EvalError> {
    let e = evaluate_observed(real, pred, prev, representation)?;
    let (tp, tr, tq) = (text_of(prev), text_of(real), text_of(pred));
    let texts = match (&tp, &tr, &tq) {
        (Some(a), Some(b), Some(c)) if !representation.is_tree() => {
            Some((a.as_ref(), b.as_ref(), c.as_ref()))
        }
        _ => None,
    };
    let f = findings_of(
        &e,
        tree_of(real, representation),
        tree_of(pred, representation),
        texts,
    );
    Ok((e, f))
}

/// The parsed tree of an observation of a tree representation.
fn tree_of<'a>(o: Option<&'a Observed<'_>>, representation: Representation) -> Option<&'a UiTree> {
    if !representation.is_tree() {
        return None;
    }
    o?.parsed().as_ref().ok().map(|p| &p.tree)
}

/// An observation's text (one U+FFFD per invalid sequence).
fn text_of<'a>(o: Option<&Observed<'a>>) -> Option<std::borrow::Cow<'a, str>> {
    o.map(|o| worldloom_core::text::lossy(o.bytes()))
}
