//! Per-node diff statuses on both sides of an [`Alignment`], and line diffs
//! of raw text (via the `similar` crate).

use serde::{Deserialize, Serialize};
use similar::{DiffTag, TextDiff};

use crate::align::{Alignment, align};
use crate::tree::{NodeId, STATE_NAMES, UiNode, UiTree, collapse_whitespace};
use worldloom_core::domain::Representation;

/// One field that differs between aligned nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FieldChange {
    /// `role`, `name`, `value`, `key`, `bounds`, `state:<name>` or
    /// `attr:<attribute name>`.
    pub field: String,
    /// Value on the real side (`null` when absent there).
    pub real: Option<String>,
    /// Value on the predicted side (`null` when absent there).
    pub pred: Option<String>,
}

/// The diff status of one node, as seen from its own tree.
///
/// JSON: `{"status": "unchanged", "counterpart": 7}`,
/// `{"status": "changed", "counterpart": 7, "changes": [{"field": "name",
/// "real": "a", "pred": "b"}]}`, `{"status": "moved", …same…}`,
/// `{"status": "added"}` (predicted side only), `{"status": "removed"}` (real
/// side only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum NodeStatus {
    /// Aligned, and every compared field is equal.
    Unchanged {
        /// The aligned node in the other tree.
        counterpart: NodeId,
    },
    /// Aligned, some fields differ.
    Changed {
        /// The aligned node in the other tree.
        counterpart: NodeId,
        /// What differs.
        changes: Vec<FieldChange>,
    },
    /// Aligned by stable key but under a different parent or reordered among
    /// its siblings (fields may differ too).
    Moved {
        /// The aligned node in the other tree.
        counterpart: NodeId,
        /// What differs besides the position (may be empty).
        changes: Vec<FieldChange>,
    },
    /// Only in the predicted tree.
    Added,
    /// Only in the real tree.
    Removed,
}

impl NodeStatus {
    /// The status name (`unchanged`, `changed`, `moved`, `added`, `removed`).
    pub fn name(&self) -> &'static str {
        match self {
            NodeStatus::Unchanged { .. } => "unchanged",
            NodeStatus::Changed { .. } => "changed",
            NodeStatus::Moved { .. } => "moved",
            NodeStatus::Added => "added",
            NodeStatus::Removed => "removed",
        }
    }

    /// The field changes (empty for unchanged, added, removed).
    pub fn changes(&self) -> &[FieldChange] {
        match self {
            NodeStatus::Changed { changes, .. } | NodeStatus::Moved { changes, .. } => changes,
            _ => &[],
        }
    }
}

/// Counts of node statuses (synthetic nodes excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffSummary {
    /// Aligned, equal.
    pub unchanged: usize,
    /// Aligned, different fields.
    pub changed: usize,
    /// Aligned by key, different place.
    pub moved: usize,
    /// Predicted only.
    pub added: usize,
    /// Real only.
    pub removed: usize,
    /// Predicted only, but after the point where a truncated real tree was
    /// cut (see [`statuses`]): not counted in `added`, because the real
    /// tree could not have shown them. Omitted from JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub beyond_cut: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl DiffSummary {
    /// True when nothing differs.
    pub fn is_identical(&self) -> bool {
        self.changed == 0 && self.moved == 0 && self.added == 0 && self.removed == 0
    }
}

/// A tree diff reported on both trees, so each pane can highlight its side.
///
/// JSON: `{"real": [NodeStatus per real node index], "pred": [NodeStatus per
/// predicted node index], "summary": {"unchanged": n, "changed": n, "moved":
/// n, "added": n, "removed": n}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeDiff {
    /// Status of each real node, indexed like `real.nodes`.
    pub real: Vec<NodeStatus>,
    /// Status of each predicted node, indexed like `pred.nodes`.
    pub pred: Vec<NodeStatus>,
    /// Counts over non-synthetic nodes.
    pub summary: DiffSummary,
}

/// Attributes left out of field comparison because they encode position,
/// not content: Android `index` (the child ordinal) changes for every later
/// sibling when one node is inserted.
fn positional_attribute(representation: Representation, name: &str) -> bool {
    representation == Representation::AndroidXml && name == "index"
}

/// Compares two aligned nodes field by field. Names and values are compared
/// with whitespace collapsed.
pub fn compare_nodes(
    representation: Representation,
    real: &UiNode,
    pred: &UiNode,
) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    let mut field = |name: String, a: Option<String>, b: Option<String>| {
        if a != b {
            changes.push(FieldChange {
                field: name,
                real: a,
                pred: b,
            });
        }
    };
    field(
        "role".into(),
        Some(real.role.clone()),
        Some(pred.role.clone()),
    );
    field(
        "name".into(),
        Some(collapse_whitespace(&real.name)),
        Some(collapse_whitespace(&pred.name)),
    );
    field(
        "value".into(),
        real.value.as_deref().map(collapse_whitespace),
        pred.value.as_deref().map(collapse_whitespace),
    );
    field("key".into(), real.key.clone(), pred.key.clone());
    for s in STATE_NAMES.iter().chain(["expanded", "editable"].iter()) {
        let (a, b) = (real.states.get(s), pred.states.get(s));
        if (a.is_some() || b.is_some()) && real.states.effective(s) != pred.states.effective(s) {
            field(
                format!("state:{s}"),
                Some(real.states.effective(s).to_string()),
                Some(pred.states.effective(s).to_string()),
            );
        }
    }
    let bounds = |n: &UiNode| {
        n.bounds_px
            .as_ref()
            .map(|b| format!("[{},{}][{},{}]", b.left, b.top, b.right, b.bottom))
    };
    field("bounds".into(), bounds(real), bounds(pred));
    let mut seen: Vec<&str> = Vec::new();
    for a in real.attributes.iter().chain(pred.attributes.iter()) {
        if seen.contains(&a.name.as_str()) || positional_attribute(representation, &a.name) {
            continue;
        }
        seen.push(&a.name);
        field(
            format!("attr:{}", a.name),
            real.attr(&a.name).map(str::to_string),
            pred.attr(&a.name).map(str::to_string),
        );
    }
    changes
}

/// Diffs two trees: aligns them (see [`crate::align`]) and gives each node
/// of both trees a [`NodeStatus`].
pub fn diff_trees(real: &UiTree, pred: &UiTree) -> (Alignment, TreeDiff) {
    let al = align(real, pred);
    let diff = statuses(real, pred, &al);
    (al, diff)
}

/// Statuses of both trees for a given alignment.
///
/// When the real tree is truncated ([`UiTree::truncated`]), predicted
/// nodes with no counterpart that come after every predicted node aligned
/// to a real node (in document order) are past the cut: their status stays
/// [`NodeStatus::Added`] but they are counted in
/// [`DiffSummary::beyond_cut`], not in `added`.
pub fn statuses(real: &UiTree, pred: &UiTree, al: &Alignment) -> TreeDiff {
    let mut summary = DiffSummary::default();
    let mut real_status = Vec::with_capacity(real.len());
    let mut pred_status: Vec<NodeStatus> = vec![NodeStatus::Added; pred.len()];
    for (i, rn) in real.nodes.iter().enumerate() {
        let status = match al.real_to_pred[i] {
            None => NodeStatus::Removed,
            Some(p) => {
                let pn = pred.node(p);
                let changes = compare_nodes(real.representation, rn, pn);
                let (mine, theirs) = if al.moved[i] {
                    (
                        NodeStatus::Moved {
                            counterpart: p,
                            changes: changes.clone(),
                        },
                        NodeStatus::Moved {
                            counterpart: rn.id,
                            changes,
                        },
                    )
                } else if changes.is_empty() {
                    (
                        NodeStatus::Unchanged { counterpart: p },
                        NodeStatus::Unchanged { counterpart: rn.id },
                    )
                } else {
                    (
                        NodeStatus::Changed {
                            counterpart: p,
                            changes: changes.clone(),
                        },
                        NodeStatus::Changed {
                            counterpart: rn.id,
                            changes,
                        },
                    )
                };
                pred_status[p.index()] = theirs;
                mine
            }
        };
        if !rn.synthetic {
            match &status {
                NodeStatus::Unchanged { .. } => summary.unchanged += 1,
                NodeStatus::Changed { .. } => summary.changed += 1,
                NodeStatus::Moved { .. } => summary.moved += 1,
                NodeStatus::Removed => summary.removed += 1,
                NodeStatus::Added => {}
            }
        }
        real_status.push(status);
    }
    let cut = truncation_cut(
        real,
        al.real_to_pred
            .iter()
            .enumerate()
            .filter_map(|(r, p)| p.map(|p| (r, p.index()))),
    );
    for (i, _) in pred
        .nodes
        .iter()
        .zip(pred_status.iter())
        .enumerate()
        .filter(|(_, (n, s))| !n.synthetic && matches!(s, NodeStatus::Added))
    {
        if i > cut {
            summary.beyond_cut += 1;
        } else {
            summary.added += 1;
        }
    }
    TreeDiff {
        real: real_status,
        pred: pred_status,
        summary,
    }
}

/// The index of the last predicted node that stands for a real node when
/// the real tree is truncated ([`UiTree::truncated`]): predicted nodes with
/// no counterpart after it are past the cut. `pairs` are the aligned
/// `(real index, predicted index)` pairs; pairs of synthetic real nodes are
/// left out. `usize::MAX` when the real tree is whole.
pub fn truncation_cut(real: &UiTree, pairs: impl Iterator<Item = (usize, usize)>) -> usize {
    if real.truncated.is_none() {
        return usize::MAX;
    }
    pairs
        .filter(|(r, _)| !real.nodes[*r].synthetic)
        .map(|(_, p)| p)
        .max()
        .unwrap_or(0)
}

/// What a run of a line diff does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum LineTag {
    /// The lines are the same on both sides.
    Equal,
    /// Real lines with no predicted counterpart.
    Delete,
    /// Predicted lines with no real counterpart.
    Insert,
    /// Real lines replaced by predicted ones.
    Replace,
}

/// One run of a line diff. Line ranges are 0-based, end-exclusive.
///
/// JSON: `{"tag": "replace", "real_start": 3, "real_end": 4, "pred_start":
/// 3, "pred_end": 5}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LineOp {
    /// `equal`, `delete` (real only), `insert` (predicted only) or `replace`.
    pub tag: LineTag,
    /// First real line.
    pub real_start: usize,
    /// One past the last real line.
    pub real_end: usize,
    /// First predicted line.
    pub pred_start: usize,
    /// One past the last predicted line.
    pub pred_end: usize,
}

/// A line diff of two texts: lines split after each `\n` (the newline
/// kept, as `similar::TextDiff::from_lines` splits them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LineDiff {
    /// Runs covering both texts in order.
    pub ops: Vec<LineOp>,
    /// 2·matching lines / (real lines + predicted lines), in [0, 1] (1 for
    /// two empty texts), as `similar`'s ratio.
    pub ratio: f64,
}

/// Most lines, both sides together, that the middle of a line diff (what
/// is left between the common first and last lines) is diffed line by line
/// over. Myers' algorithm costs O((N + M) · D): on two unlike texts of a
/// million lines it never ends. Past this, the middle counts as one
/// replaced run.
pub const LINE_DIFF_MAX_MIDDLE_LINES: usize = 10_000;

/// Line diff of raw real and predicted text, in time bounded by the texts'
/// length: the common first and last lines are matched directly, the
/// middle between them with Myers (`similar`) when it holds at most
/// [`LINE_DIFF_MAX_MIDDLE_LINES`] lines, else as one `replace` run. The
/// result is exact whenever the middle is within the bound (every edit of a
/// few places in a long text); past it the ratio counts only the common
/// first and last lines (a lower bound of the exact ratio). Deterministic:
/// no time limit decides the result.
pub fn line_diff(real: &str, pred: &str) -> LineDiff {
    let old: Vec<&str> = real.split_inclusive('\n').collect();
    let new: Vec<&str> = pred.split_inclusive('\n').collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut ops = Vec::new();
    let mut matching = head + tail;
    let mut push = |tag, real: std::ops::Range<usize>, pred: std::ops::Range<usize>| {
        ops.push(LineOp {
            tag,
            real_start: real.start,
            real_end: real.end,
            pred_start: pred.start,
            pred_end: pred.end,
        });
    };
    if head > 0 {
        push(LineTag::Equal, 0..head, 0..head);
    }
    let (old_end, new_end) = (head + old_mid.len(), head + new_mid.len());
    if old_mid.len() + new_mid.len() <= LINE_DIFF_MAX_MIDDLE_LINES {
        let diff = TextDiff::from_slices(old_mid, new_mid);
        for op in diff.ops() {
            let (tag, o, n) = op.as_tag_tuple();
            let tag = match tag {
                DiffTag::Equal => {
                    matching += o.len();
                    LineTag::Equal
                }
                DiffTag::Delete => LineTag::Delete,
                DiffTag::Insert => LineTag::Insert,
                DiffTag::Replace => LineTag::Replace,
            };
            push(
                tag,
                head + o.start..head + o.end,
                head + n.start..head + n.end,
            );
        }
    } else {
        push(LineTag::Replace, head..old_end, head..new_end);
    }
    if tail > 0 {
        push(
            LineTag::Equal,
            old_end..old_end + tail,
            new_end..new_end + tail,
        );
    }
    let total = old.len() + new.len();
    LineDiff {
        ops,
        ratio: if total == 0 {
            1.0
        } else {
            (2 * matching) as f64 / total as f64
        },
    }
}

#[cfg(test)]
mod line_diff_tests {
    use super::*;

    /// `similar`'s own whole-text line diff, the reference within the bound.
    fn reference(real: &str, pred: &str) -> LineDiff {
        let diff = TextDiff::from_lines(real, pred);
        let ops = diff
            .ops()
            .iter()
            .map(|op| {
                let (tag, old, new) = op.as_tag_tuple();
                LineOp {
                    tag: match tag {
                        DiffTag::Equal => LineTag::Equal,
                        DiffTag::Delete => LineTag::Delete,
                        DiffTag::Insert => LineTag::Insert,
                        DiffTag::Replace => LineTag::Replace,
                    },
                    real_start: old.start,
                    real_end: old.end,
                    pred_start: new.start,
                    pred_end: new.end,
                }
            })
            .collect();
        LineDiff {
            ops,
            ratio: f64::from(diff.ratio()),
        }
    }

    #[test]
    fn within_the_bound_it_is_similars_diff() {
        let cases = [
            ("", ""),
            ("a\n", ""),
            ("", "a\n"),
            ("a\nb\nc\n", "a\nb\nc\n"),
            ("a\nb\nc\n", "a\nx\nc\n"),
            ("a\nb\nc", "a\nb\nc\n"),
            ("head\n1\n2\n3\ntail\n", "head\n3\n2\n1\n9\ntail\n"),
            ("x\ny\n", "p\nq\nr\n"),
            ("same\nsame\nsame\n", "same\nsame\n"),
            ("a\r\nb\r\n", "a\r\nc\r\n"),
        ];
        for (real, pred) in cases {
            let ours = line_diff(real, pred);
            let want = reference(real, pred);
            assert_eq!(ours.ops, want.ops, "{real:?} vs {pred:?}");
            assert!(
                (ours.ratio - want.ratio).abs() < 1e-6,
                "{real:?} vs {pred:?}"
            );
        }
    }

    #[test]
    fn past_the_bound_the_middle_is_one_replaced_run() {
        // Two unlike texts of 100,000 lines each between a common first and
        // last line: Myers would walk ~10^10 cells.
        let body = |tag: &str| -> String { (0..100_000).map(|i| format!("{tag} {i}\n")).collect() };
        let real = format!("top\n{}bottom\n", body("real"));
        let pred = format!("top\n{}bottom\n", body("pred"));
        let d = line_diff(&real, &pred);
        let run = |tag, r: (usize, usize), p: (usize, usize)| LineOp {
            tag,
            real_start: r.0,
            real_end: r.1,
            pred_start: p.0,
            pred_end: p.1,
        };
        assert_eq!(
            d.ops,
            vec![
                run(LineTag::Equal, (0, 1), (0, 1)),
                run(LineTag::Replace, (1, 100_001), (1, 100_001)),
                run(LineTag::Equal, (100_001, 100_002), (100_001, 100_002)),
            ]
        );
        assert!((d.ratio - 4.0 / 200_004.0).abs() < 1e-12);
        // A local edit of a long text stays exact: one line changed.
        let mut edited = real.clone();
        edited = edited.replacen("real 500\n", "edited\n", 1);
        let d = line_diff(&real, &edited);
        assert_eq!(d.ops.len(), 3);
        assert_eq!(d.ops[1], run(LineTag::Replace, (501, 502), (501, 502)));
        assert!((d.ratio - (2.0 * 100_001.0) / 200_004.0).abs() < 1e-12);
    }
}
