//! Simulation-fidelity metrics between a real observation and a predicted
//! one (and, for transition F1, the previous real observation).
//!
//! Every formula is written out in `docs/metrics.md`. In short, with
//! non-synthetic nodes only:
//!
//! - **exact**: the trees are identical after normalisation (parsing, which
//!   drops formatting, indentation and attribute quoting; whitespace
//!   collapsed in names and values; Android `index` ignored): every node
//!   aligned and unchanged. For `text`/`json`: the texts are equal after
//!   CRLF → LF, trailing whitespace removed per line, blank lines dropped.
//! - **text_f1**: bag-of-tokens F1 over visible text (SQuAD token F1,
//!   Rajpurkar et al. 2016): tokens are lower-cased runs of alphanumeric
//!   characters from every node's name and value; overlap =
//!   Σ min(count_real, count_pred); P = overlap / |pred|, R = overlap /
//!   |real|, F1 = 2PR / (P + R); both empty → 1.
//! - **node_f1**: a true positive is an aligned pair with the same role,
//!   name and key; P = TP / pred nodes, R = TP / real nodes.
//! - **attribute_accuracy**: over aligned pairs, for each of checked,
//!   selected, focused, enabled (counted when either side states it), value
//!   and text (counted when either side is non-empty): correct / counted.
//! - **transition_f1**: the change prev → real and the change prev → pred
//!   as multisets of items (removed prev node; changed field of a prev node
//!   with its new value; moved prev node; added node described by its
//!   nearest aligned ancestor in prev plus the role/name path below it, with
//!   its value and its checked/selected/focused/enabled states);
//!   F1 = 2·|A ∩ B| / (|A| + |B|), both empty → 1. Copying prev after a real
//!   change scores 0; predicting a no-op correctly scores 1. This follows
//!   AgentWorldBench's judging emphasis on "the primary post-action effect"
//!   (Qwen-AgentWorld report, arXiv 2606.24597).
//! - **anchors**: per-domain facts, each `matched`, `mismatched` or `absent`.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::{Deserialize, Serialize};
use worldloom_core::domain::{Domain, Representation};

use crate::align::Alignment;
use crate::diff::{LineDiff, NodeStatus, TreeDiff, diff_trees, line_diff};
use crate::parse::{ParseError, ParseWarning, Parsed, parse_bytes};
use crate::tree::{STATE_NAMES, UiNode, UiTree, collapse_whitespace};

/// Per-attribute tally behind attribute accuracy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeTally {
    /// `checked`, `selected`, `focused`, `enabled`, `value` or `text`.
    pub attribute: String,
    /// Aligned pairs where the attribute was compared.
    pub compared: usize,
    /// Of those, pairs where both sides agree.
    pub correct: usize,
}

/// Details behind transition F1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionDetail {
    /// Change items prev → real.
    pub real_changes: usize,
    /// Change items prev → pred.
    pub pred_changes: usize,
    /// Items in both (multiset intersection).
    pub matched_changes: usize,
}

/// Outcome of one anchor comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum AnchorStatus {
    /// Both sides state it and agree.
    Matched,
    /// The sides disagree, or only one states it.
    Mismatched,
    /// Neither side states it.
    Absent,
}

/// One domain anchor: a fact the judges check first (URL, focused element…).
///
/// JSON: `{"anchor": "title", "status": "matched", "real": "Click Task",
/// "pred": "Click Task"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Anchor {
    /// Anchor name (see [`anchors`]).
    pub anchor: String,
    /// Comparison outcome.
    pub status: AnchorStatus,
    /// The real value, if stated.
    pub real: Option<String>,
    /// The predicted value, if stated.
    pub pred: Option<String>,
}

/// Metrics of one real/predicted pair of trees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeMetrics {
    /// Identical after normalisation.
    pub exact: bool,
    /// Visible-text token F1 in [0, 1].
    pub text_f1: f64,
    /// Node F1 in [0, 1].
    pub node_f1: f64,
    /// Node precision (TP / predicted nodes).
    pub node_precision: f64,
    /// Node recall (TP / real nodes).
    pub node_recall: f64,
    /// Attribute accuracy in [0, 1]; `null` when nothing was comparable.
    pub attribute_accuracy: Option<f64>,
    /// Tallies per attribute.
    pub attributes: Vec<AttributeTally>,
    /// Transition F1 in [0, 1]; `null` without a previous observation.
    pub transition_f1: Option<f64>,
    /// Counts behind transition F1.
    pub transition: Option<TransitionDetail>,
    /// Domain anchors.
    pub anchors: Vec<Anchor>,
}

/// Lower-cased alphanumeric tokens of a node's visible text (name, then
/// value when it differs from the name).
fn node_tokens(n: &UiNode, out: &mut HashMap<String, usize>) {
    let mut add = |s: &str| {
        for tok in s
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
        {
            *out.entry(tok.to_lowercase()).or_insert(0) += 1;
        }
    };
    add(&n.name);
    if let Some(v) = &n.value
        && v != &n.name
    {
        add(v);
    }
}

/// F1 of two bags; both empty → 1.
fn bag_f1<K: Eq + Hash>(real: &HashMap<K, usize>, pred: &HashMap<K, usize>) -> f64 {
    let nr: usize = real.values().sum();
    let np: usize = pred.values().sum();
    if nr == 0 && np == 0 {
        return 1.0;
    }
    let overlap: usize = real
        .iter()
        .map(|(k, c)| (*c).min(pred.get(k).copied().unwrap_or(0)))
        .sum();
    f1(overlap, np, nr)
}

/// F1 from true positives, predicted count and real count (0 when either
/// count is 0 and not both).
fn f1(tp: usize, n_pred: usize, n_real: usize) -> f64 {
    if n_pred == 0 && n_real == 0 {
        return 1.0;
    }
    if tp == 0 {
        return 0.0;
    }
    let p = tp as f64 / n_pred as f64;
    let r = tp as f64 / n_real as f64;
    2.0 * p * r / (p + r)
}

/// Visible-text token F1 of two trees.
pub fn text_f1(real: &UiTree, pred: &UiTree) -> f64 {
    let bag = |t: &UiTree| {
        let mut m = HashMap::new();
        for n in t.iter().filter(|n| !n.synthetic) {
            node_tokens(n, &mut m);
        }
        m
    };
    bag_f1(&bag(real), &bag(pred))
}

/// Token F1 of two plain texts (same tokenisation as [`text_f1`]).
pub fn text_token_f1(real: &str, pred: &str) -> f64 {
    let bag = |s: &str| {
        let mut m: HashMap<String, usize> = HashMap::new();
        for tok in s
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
        {
            *m.entry(tok.to_lowercase()).or_insert(0) += 1;
        }
        m
    };
    bag_f1(&bag(real), &bag(pred))
}

/// Computes every tree metric. `prev` (the real observation before the
/// action) enables transition F1.
pub fn tree_metrics(
    real: &UiTree,
    pred: &UiTree,
    prev: Option<&UiTree>,
) -> (TreeMetrics, Alignment, TreeDiff) {
    let (al, diff) = diff_trees(real, pred);
    let n_real = real.real_node_count();
    // Predicted nodes past a truncated real tree's cut are neither right
    // nor wrong: they leave the denominator of precision.
    let n_pred = pred.real_node_count() - diff.summary.beyond_cut;
    let mut tp = 0usize;
    let mut tallies: Vec<AttributeTally> = STATE_NAMES
        .iter()
        .chain(["value", "text"].iter())
        .map(|a| AttributeTally {
            attribute: a.to_string(),
            compared: 0,
            correct: 0,
        })
        .collect();
    for (r, p) in al.pairs() {
        let (rn, pn) = (real.node(r), pred.node(p));
        if rn.synthetic || pn.synthetic {
            continue;
        }
        let rname = collapse_whitespace(&rn.name);
        let pname = collapse_whitespace(&pn.name);
        if rn.role == pn.role && rname == pname && rn.key == pn.key {
            tp += 1;
        }
        for t in tallies.iter_mut() {
            let (compared, correct) = match t.attribute.as_str() {
                "value" => {
                    let a = rn
                        .value
                        .as_deref()
                        .map(collapse_whitespace)
                        .unwrap_or_default();
                    let b = pn
                        .value
                        .as_deref()
                        .map(collapse_whitespace)
                        .unwrap_or_default();
                    (!a.is_empty() || !b.is_empty(), a == b)
                }
                "text" => (!rname.is_empty() || !pname.is_empty(), rname == pname),
                s => (
                    rn.states.get(s).is_some() || pn.states.get(s).is_some(),
                    rn.states.effective(s) == pn.states.effective(s),
                ),
            };
            if compared {
                t.compared += 1;
                t.correct += usize::from(correct);
            }
        }
    }
    let compared: usize = tallies.iter().map(|t| t.compared).sum();
    let correct: usize = tallies.iter().map(|t| t.correct).sum();
    let (transition_f1, transition) = match prev {
        Some(prev) => {
            let (f, d) = transition_f1(prev, real, pred);
            (Some(f), Some(d))
        }
        None => (None, None),
    };
    let precision = if n_pred == 0 {
        if n_real == 0 { 1.0 } else { 0.0 }
    } else {
        tp as f64 / n_pred as f64
    };
    let recall = if n_real == 0 {
        if n_pred == 0 { 1.0 } else { 0.0 }
    } else {
        tp as f64 / n_real as f64
    };
    let metrics = TreeMetrics {
        exact: diff.summary.is_identical() && n_real == n_pred,
        text_f1: text_f1(real, pred),
        node_f1: f1(tp, n_pred, n_real),
        node_precision: precision,
        node_recall: recall,
        attribute_accuracy: (compared > 0).then(|| correct as f64 / compared as f64),
        attributes: tallies,
        transition_f1,
        transition,
        anchors: anchors(real, pred),
    };
    (metrics, al, diff)
}

fn hash_of(parts: &[&dyn HashPart]) -> u64 {
    let mut h = DefaultHasher::new();
    for p in parts {
        p.feed(&mut h);
    }
    h.finish()
}

trait HashPart {
    fn feed(&self, h: &mut DefaultHasher);
}
impl HashPart for &str {
    fn feed(&self, h: &mut DefaultHasher) {
        self.hash(h);
    }
}
impl HashPart for String {
    fn feed(&self, h: &mut DefaultHasher) {
        self.hash(h);
    }
}
impl HashPart for u64 {
    fn feed(&self, h: &mut DefaultHasher) {
        self.hash(h);
    }
}
impl HashPart for Option<String> {
    fn feed(&self, h: &mut DefaultHasher) {
        self.hash(h);
    }
}

/// The change items of `prev → next` (see the module docs), as a bag of
/// 64-bit hashes.
fn change_items(prev: &UiTree, next: &UiTree) -> HashMap<u64, usize> {
    let (al, diff) = diff_trees(prev, next);
    let mut items: HashMap<u64, usize> = HashMap::new();
    let mut add = |k: u64| *items.entry(k).or_insert(0) += 1;
    for (i, s) in diff.real.iter().enumerate() {
        if prev.nodes[i].synthetic {
            continue;
        }
        let p = i as u64;
        match s {
            NodeStatus::Removed => add(hash_of(&[&"removed", &p])),
            NodeStatus::Changed { changes, .. } | NodeStatus::Moved { changes, .. } => {
                if matches!(s, NodeStatus::Moved { .. }) {
                    add(hash_of(&[&"moved", &p]));
                }
                for c in changes {
                    add(hash_of(&[&"changed", &p, &c.field.as_str(), &c.pred]));
                }
            }
            _ => {}
        }
    }
    // Added nodes: describe each by its aligned ancestor in prev and the
    // role/name path from there (computed in pre-order, parents first).
    let mut desc = vec![0u64; next.len()];
    for n in &next.nodes {
        let i = n.id.index();
        desc[i] = match al.pred_to_real[i] {
            Some(q) => hash_of(&[&"prev", &(q.index() as u64)]),
            None => {
                let parent = n.parent.map(|p| desc[p.index()]).unwrap_or(0);
                hash_of(&[&parent, &n.role.as_str(), &collapse_whitespace(&n.name)])
            }
        };
        if al.pred_to_real[i].is_none() && !n.synthetic {
            // The item carries the added node's content (value and the
            // compared states) as well as its place, so adding the right
            // field with the wrong text or a checkbox in the wrong state
            // does not count as the right change.
            let value = n.value.as_deref().map(collapse_whitespace);
            let states: String = STATE_NAMES
                .iter()
                .map(|s| if n.states.effective(s) { '1' } else { '0' })
                .collect();
            add(hash_of(&[&"added", &desc[i], &value, &states]));
        }
    }
    items
}

/// Transition F1: compares the change prev → real with prev → pred.
pub fn transition_f1(prev: &UiTree, real: &UiTree, pred: &UiTree) -> (f64, TransitionDetail) {
    let a = change_items(prev, real);
    let b = change_items(prev, pred);
    let na: usize = a.values().sum();
    let nb: usize = b.values().sum();
    let matched: usize = a
        .iter()
        .map(|(k, c)| (*c).min(b.get(k).copied().unwrap_or(0)))
        .sum();
    let score = if na == 0 && nb == 0 {
        1.0
    } else {
        2.0 * matched as f64 / (na + nb) as f64
    };
    (
        score,
        TransitionDetail {
            real_changes: na,
            pred_changes: nb,
            matched_changes: matched,
        },
    )
}

/// The domain whose anchors apply to a representation.
pub fn domain_of(representation: Representation) -> Option<Domain> {
    match representation {
        Representation::Html | Representation::Axtree => Some(Domain::Web),
        Representation::OsXml | Representation::OsTable => Some(Domain::Os),
        Representation::AndroidXml => Some(Domain::Android),
        Representation::Json | Representation::Text => None,
    }
}

fn ident(n: &UiNode, with_key: bool) -> String {
    let mut s = format!("{} '{}'", n.role, collapse_whitespace(&n.name));
    if with_key && let Some(k) = &n.key {
        s = format!("[{k}] {s}");
    }
    s
}

fn list(items: Vec<String>) -> Option<String> {
    if items.is_empty() {
        None
    } else {
        let mut items = items;
        items.sort();
        Some(items.join("; "))
    }
}

/// Reads the anchor values of one tree, in report order.
///
/// - Web: `url` (an attribute named `url`, else `<link rel=canonical>` /
///   `<base>` href), `title` (`<title>`, else the `RootWebArea` name),
///   `focused` (the last focused node), `form_values` (every node with a
///   value or a checked/selected state), `dialogs` (nodes with role
///   `dialog`/`alertdialog`, or `role="dialog"`).
/// - Android: `package` (the foreground app: the first non-empty `package`
///   that is not the system UI — status bar, navigation bar — nor an input
///   method; when every node is one of those, the first non-empty one),
///   `focused`,
///   `checked_selected` (nodes checked or selected), `text_fields`
///   (editable nodes and their text), `keyboard_visible` (a node from an
///   input-method package or with `keyboard` in its resource-id or class —
///   a heuristic, since uiautomator dumps the app window).
/// - OS: `active_window` (application name / the node with `st:active`),
///   `focused`, `text_values` (nodes with a non-empty value).
pub fn anchor_values(tree: &UiTree) -> Vec<(&'static str, Option<String>)> {
    let real_nodes = || tree.iter().filter(|n| !n.synthetic);
    let focused = |key: bool| {
        real_nodes()
            .filter(|n| n.states.focused == Some(true))
            .last()
            .map(|n| ident(n, key))
    };
    match domain_of(tree.representation) {
        Some(Domain::Web) => {
            let url = real_nodes()
                .find_map(|n| n.attr("url").map(str::to_string))
                .or_else(|| {
                    real_nodes()
                        .find(|n| {
                            n.role == "link" && n.attr("rel") == Some("canonical")
                                || n.role == "base"
                        })
                        .and_then(|n| n.attr("href").map(str::to_string))
                })
                .filter(|u| !u.is_empty());
            let title = real_nodes()
                .find(|n| n.role == "title" || n.role == "RootWebArea" || n.role == "WebArea")
                .map(|n| collapse_whitespace(&n.name));
            let forms = list(
                real_nodes()
                    .filter(|n| {
                        n.value.is_some()
                            || n.states.checked.is_some()
                            || n.states.selected.is_some()
                    })
                    .map(|n| {
                        let mut s = ident(n, true);
                        if let Some(v) = &n.value {
                            s.push_str(&format!(" = {:?}", collapse_whitespace(v)));
                        }
                        if let Some(c) = n.states.checked {
                            s.push_str(&format!(" checked={c}"));
                        }
                        if let Some(c) = n.states.selected {
                            s.push_str(&format!(" selected={c}"));
                        }
                        s
                    })
                    .collect(),
            );
            let dialogs = list(
                real_nodes()
                    .filter(|n| {
                        matches!(n.role.as_str(), "dialog" | "alertdialog")
                            || matches!(n.attr("role"), Some("dialog" | "alertdialog"))
                    })
                    .map(|n| ident(n, false))
                    .collect(),
            );
            vec![
                ("url", url),
                ("title", title),
                ("focused", focused(true)),
                ("form_values", forms),
                ("dialogs", dialogs),
            ]
        }
        Some(Domain::Android) => {
            let packages = || {
                real_nodes()
                    .filter_map(|n| n.attr("package"))
                    .filter(|p| !p.is_empty())
            };
            let package = packages()
                .find(|p| *p != "com.android.systemui" && !p.contains("inputmethod"))
                .or_else(|| packages().next())
                .map(str::to_string);
            let checked = list(
                real_nodes()
                    .filter(|n| n.states.checked == Some(true) || n.states.selected == Some(true))
                    .map(|n| {
                        format!(
                            "{}{}{}",
                            ident(n, true),
                            if n.states.checked == Some(true) {
                                " checked"
                            } else {
                                ""
                            },
                            if n.states.selected == Some(true) {
                                " selected"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect(),
            );
            let fields = list(
                real_nodes()
                    .filter(|n| n.states.editable == Some(true))
                    .map(|n| {
                        format!(
                            "{} = {:?}",
                            ident(n, true),
                            n.value.as_deref().unwrap_or("")
                        )
                    })
                    .collect(),
            );
            let keyboard = real_nodes().any(|n| {
                n.attr("package").is_some_and(|p| p.contains("inputmethod"))
                    || n.key
                        .as_deref()
                        .is_some_and(|k| k.to_ascii_lowercase().contains("keyboard"))
                    || n.role.to_ascii_lowercase().contains("keyboard")
            });
            vec![
                ("package", package),
                ("focused", focused(true)),
                ("checked_selected", checked),
                ("text_fields", fields),
                (
                    "keyboard_visible",
                    (!tree.is_empty()).then(|| keyboard.to_string()),
                ),
            ]
        }
        Some(Domain::Os) => {
            let active = real_nodes()
                .find(|n| n.attr("st:active") == Some("true"))
                .map(|n| {
                    let mut app = None;
                    let mut cur = n.parent;
                    while let Some(p) = cur {
                        let pn = tree.node(p);
                        if pn.role == "application" {
                            app = Some(pn.name.clone());
                            break;
                        }
                        cur = pn.parent;
                    }
                    match app {
                        Some(a) => format!("{a} / {}", ident(n, false)),
                        None => ident(n, false),
                    }
                });
            let texts = list(
                real_nodes()
                    .filter(|n| n.value.as_deref().is_some_and(|v| !v.trim().is_empty()))
                    .map(|n| {
                        format!(
                            "{} = {:?}",
                            ident(n, false),
                            collapse_whitespace(n.value.as_deref().unwrap_or(""))
                        )
                    })
                    .collect(),
            );
            vec![
                ("active_window", active),
                ("focused", focused(false)),
                ("text_values", texts),
            ]
        }
        _ => Vec::new(),
    }
}

/// Compares the anchors of a real and a predicted tree.
pub fn anchors(real: &UiTree, pred: &UiTree) -> Vec<Anchor> {
    let p = anchor_values(pred);
    anchor_values(real)
        .into_iter()
        .map(|(name, r)| {
            let pv = p
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| v.clone());
            let status = match (&r, &pv) {
                (None, None) => AnchorStatus::Absent,
                (Some(a), Some(b)) if a == b => AnchorStatus::Matched,
                _ => AnchorStatus::Mismatched,
            };
            Anchor {
                anchor: name.to_string(),
                status,
                real: r,
                pred: pv,
            }
        })
        .collect()
}

/// Whether an evaluation was scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalStatus {
    /// Metrics were computed.
    Scored,
    /// The real observation is a failed capture (or absent), or a tree
    /// marked incomplete (an application exposing a bare frame): nothing to
    /// score against. Never counted as a match.
    Skipped,
    /// There is no prediction (absent or empty). Never counted as a match.
    Missing,
}

/// Warnings from parsing each input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputWarnings {
    /// Real observation.
    pub real: Vec<ParseWarning>,
    /// Prediction.
    pub pred: Vec<ParseWarning>,
    /// Previous real observation.
    pub prev: Vec<ParseWarning>,
}

/// Per-node statuses for both sides. JSON: see [`TreeDiff`].
pub type NodeDiff = TreeDiff;

/// The full result of comparing a prediction with the real observation.
///
/// JSON (fields in this order; metric fields are `null` unless
/// `status == "scored"`, and `transition_f1` is `null` without a previous
/// observation):
/// `{"status", "reason", "representation", "exact", "text_f1", "node_f1",
/// "node_precision", "node_recall", "attribute_accuracy", "attributes",
/// "transition_f1", "transition", "anchors", "nodes": {"real": […],
/// "pred": […], "summary": {…}}, "line_diff": {"ops": […], "ratio"},
/// "warnings": {"real": […], "pred": […], "prev": […]}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Scored, skipped or missing.
    pub status: EvalStatus,
    /// Why it was skipped or missing, or a note on a prediction or previous
    /// observation that did not parse.
    pub reason: Option<String>,
    /// The representation compared.
    pub representation: Representation,
    /// Identical after normalisation.
    pub exact: Option<bool>,
    /// Visible-text token F1.
    pub text_f1: Option<f64>,
    /// Node F1 (trees only).
    pub node_f1: Option<f64>,
    /// Node precision (trees only).
    pub node_precision: Option<f64>,
    /// Node recall (trees only).
    pub node_recall: Option<f64>,
    /// Attribute accuracy (trees only; `null` when nothing comparable).
    pub attribute_accuracy: Option<f64>,
    /// Attribute tallies.
    pub attributes: Vec<AttributeTally>,
    /// Transition F1 (trees with a previous observation only).
    pub transition_f1: Option<f64>,
    /// Counts behind transition F1.
    pub transition: Option<TransitionDetail>,
    /// Domain anchors.
    pub anchors: Vec<Anchor>,
    /// Per-node statuses (trees only).
    pub nodes: Option<NodeDiff>,
    /// Line diff of the raw texts.
    pub line_diff: Option<LineDiff>,
    /// Parse warnings per input.
    pub warnings: InputWarnings,
}

/// Errors of [`evaluate`]: only a real observation that is present but
/// unreadable is an error (a failed capture is a skip, a bad prediction is
/// scored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The real observation could not be parsed.
    #[error("real observation: {0}")]
    Real(ParseError),
}

impl Evaluation {
    /// An evaluation with no figures: `status` and its `reason` only (every
    /// metric `None`, no anchors, nodes, line diff or warnings).
    pub fn without_scores(
        status: EvalStatus,
        reason: Option<String>,
        representation: Representation,
    ) -> Self {
        Evaluation {
            status,
            reason,
            representation,
            exact: None,
            text_f1: None,
            node_f1: None,
            node_precision: None,
            node_recall: None,
            attribute_accuracy: None,
            attributes: Vec::new(),
            transition_f1: None,
            transition: None,
            anchors: Vec::new(),
            nodes: None,
            line_diff: None,
            warnings: InputWarnings::default(),
        }
    }
}

fn empty_eval(status: EvalStatus, reason: String, representation: Representation) -> Evaluation {
    Evaluation::without_scores(status, Some(reason), representation)
}

/// Normalisation for exact match of text observations: CRLF → LF, trailing
/// whitespace removed from each line, blank lines dropped.
pub fn normalize_text(s: &str) -> String {
    s.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// An observation's bytes and their parse, made on first use and kept, so
/// that everything computed from one observation (an evaluation, a turn's
/// views) costs one parse of it. The representation is fixed when it is
/// made: it is the one [`Observed::parsed`] reads.
#[derive(Debug)]
pub struct Observed<'a> {
    bytes: &'a [u8],
    representation: Representation,
    parsed: std::cell::OnceCell<Result<Parsed, ParseError>>,
}

impl<'a> Observed<'a> {
    /// `bytes` read as `representation`, not parsed yet.
    pub fn new(bytes: &'a [u8], representation: Representation) -> Self {
        Observed {
            bytes,
            representation,
            parsed: std::cell::OnceCell::new(),
        }
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The representation the bytes are read as.
    pub fn representation(&self) -> Representation {
        self.representation
    }

    /// The parse ([`parse_bytes`]), made on the first call only.
    pub fn parsed(&self) -> &Result<Parsed, ParseError> {
        self.parsed
            .get_or_init(|| parse_bytes(self.bytes, self.representation))
    }

    /// Whether [`Observed::parsed`] was called (the parse exists).
    pub fn is_parsed(&self) -> bool {
        self.parsed.get().is_some()
    }

    /// The parse, if one was made; `None` when nothing asked for it.
    pub fn into_parsed(self) -> Option<Result<Parsed, ParseError>> {
        self.parsed.into_inner()
    }
}

/// Compares raw observations. `real = None` (no capture) is
/// [`EvalStatus::Skipped`], as is a real failed capture and a real tree
/// marked [`UiTree::incomplete`] (an application exposing a bare frame); `pred = None` or a
/// blank prediction is [`EvalStatus::Missing`]. A prediction that does not
/// parse is scored against an empty tree (so it scores 0, never skipped) and
/// the parse error is given in `reason`. A previous observation that does
/// not parse leaves `transition_f1` null, with a note in `reason`.
///
/// Errors: [`EvalError::Real`] when the real observation is present but
/// malformed.
pub fn evaluate(
    real: Option<&[u8]>,
    pred: Option<&[u8]>,
    prev: Option<&[u8]>,
    representation: Representation,
) -> Result<Evaluation, EvalError> {
    let real = real.map(|b| Observed::new(b, representation));
    let pred = pred.map(|b| Observed::new(b, representation));
    let prev = prev.map(|b| Observed::new(b, representation));
    evaluate_observed(real.as_ref(), pred.as_ref(), prev.as_ref(), representation)
}

/// [`evaluate`] over observations whose parses are kept: each input is
/// parsed (through [`Observed::parsed`]) only when the evaluation needs its
/// tree and only if not parsed already, so a caller that shows the trees
/// afterwards parses nothing again. Each input's representation is
/// `representation`. The per-node diff (`nodes`) is that of the real and
/// predicted trees as parsed (against an empty tree when the prediction did
/// not parse).
///
/// Errors: as [`evaluate`].
pub fn evaluate_observed(
    real: Option<&Observed<'_>>,
    pred: Option<&Observed<'_>>,
    prev: Option<&Observed<'_>>,
    representation: Representation,
) -> Result<Evaluation, EvalError> {
    let Some(real) = real else {
        return Ok(empty_eval(
            EvalStatus::Skipped,
            "no real observation".into(),
            representation,
        ));
    };
    let real_bytes = real.bytes();
    if !representation.is_tree() {
        let real_text = worldloom_core::text::lossy(real_bytes);
        if real_text.trim().is_empty() {
            return Ok(empty_eval(
                EvalStatus::Skipped,
                "real observation is empty".into(),
                representation,
            ));
        }
        let Some(pred_text) = pred
            .map(|p| worldloom_core::text::lossy(p.bytes()))
            .filter(|p| !p.trim().is_empty())
        else {
            return Ok(empty_eval(
                EvalStatus::Missing,
                "no prediction".into(),
                representation,
            ));
        };
        let mut e = empty_eval(EvalStatus::Scored, String::new(), representation);
        e.reason = None;
        e.exact = Some(normalize_text(&real_text) == normalize_text(&pred_text));
        e.text_f1 = Some(text_token_f1(&real_text, &pred_text));
        e.line_diff = Some(line_diff(&real_text, &pred_text));
        return Ok(e);
    }
    let real_parsed = match real.parsed() {
        Ok(p) => p,
        Err(ParseError::FailedCapture { message }) => {
            return Ok(empty_eval(
                EvalStatus::Skipped,
                format!("real observation is a failed capture: {message}"),
                representation,
            ));
        }
        Err(e) => return Err(EvalError::Real(e.clone())),
    };
    let Some(pred) = pred.filter(|p| !worldloom_core::text::lossy(p.bytes()).trim().is_empty())
    else {
        return Ok(empty_eval(
            EvalStatus::Missing,
            "no prediction".into(),
            representation,
        ));
    };
    let pred_bytes = pred.bytes();
    let mut notes = Vec::new();
    let mut warnings = InputWarnings {
        real: real_parsed.warnings.clone(),
        ..InputWarnings::default()
    };
    let empty;
    let pred_tree = match pred.parsed() {
        Ok(p) => {
            warnings.pred = p.warnings.clone();
            &p.tree
        }
        Err(e) => {
            notes.push(format!(
                "prediction does not parse ({e}); scored as an empty tree"
            ));
            empty = UiTree::with_root(representation, "#empty");
            &empty
        }
    };
    let prev_tree = match prev.map(Observed::parsed) {
        Some(Ok(p)) => {
            warnings.prev = p.warnings.clone();
            Some(&p.tree)
        }
        Some(Err(e)) => {
            notes.push(format!(
                "previous observation does not parse ({e}); no transition F1"
            ));
            None
        }
        None => None,
    };
    if real_parsed.tree.incomplete {
        let mut e = empty_eval(
            EvalStatus::Skipped,
            "real tree is incomplete: application exposes a frame with no children; \
             accessibility is probably off (not scored)"
                .into(),
            representation,
        );
        e.warnings = warnings;
        return Ok(e);
    }
    let (m, _al, diff) = tree_metrics(&real_parsed.tree, pred_tree, prev_tree);
    Ok(Evaluation {
        status: EvalStatus::Scored,
        reason: (!notes.is_empty()).then(|| notes.join("; ")),
        representation,
        exact: Some(m.exact),
        text_f1: Some(m.text_f1),
        node_f1: Some(m.node_f1),
        node_precision: Some(m.node_precision),
        node_recall: Some(m.node_recall),
        attribute_accuracy: m.attribute_accuracy,
        attributes: m.attributes,
        transition_f1: m.transition_f1,
        transition: m.transition,
        anchors: m.anchors,
        nodes: Some(diff),
        line_diff: Some(line_diff(
            &worldloom_core::text::lossy(real_bytes),
            &worldloom_core::text::lossy(pred_bytes),
        )),
        warnings,
    })
}
