//! A turn's trees in windows: the parsed trees and per-node diff of the
//! turn `get_turn` showed last, kept in the [`Studio`](crate::Studio) so that
//! `get_tree_rows` and `search_tree` answer from them without parsing again;
//! the visible rows of a tree under a collapsed set, and tree search.
//!
//! A side's tree reaches the panes only as windows of rows ([`window`]):
//! the first window travels in `get_turn`, the rest on demand. A 200,000-node
//! tree is then a few hundred rows per reply instead of one reply of hundreds
//! of megabytes.

use std::collections::BTreeSet;
use std::sync::Arc;

use worldloom_obs as obs;
use worldloom_obs::CompactTree;
use worldloom_obs::diff::NodeStatus;
use worldloom_obs::tree::UiTree;

use crate::error::ApiError;
use crate::types::{
    ComparedView, DiffStatus, Fidelity, PaneSide, SearchTreeResponse, StatusCounts, TreeRow,
    TreeWindow,
};

/// Rows in the first window `get_turn` sends per side.
pub const FIRST_WINDOW_ROWS: u32 = 200;

/// Most rows one `get_tree_rows` reply holds.
pub const TREE_WINDOW_MAX_ROWS: u32 = 2_000;

/// Largest tree sent whole in `get_turn` (`SideDocument.tree`) for the views
/// that need every node (wireframe, render, source spans, inspector).
pub const WHOLE_TREE_MAX_NODES: usize = 20_000;

/// Most bytes of a side's text sent in `get_turn` (`SideDocument.text`).
pub const TEXT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Most matches one `search_tree` reply lists.
pub const SEARCH_MAX_MATCHES: u32 = 10_000;

/// What identifies a turn's trees: the trajectory, the node, the prediction
/// shown (`TurnDetail.prediction_id`; `None` for an authored observation or
/// none) and the workspace revision they were read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnKey {
    pub trajectory: i64,
    pub node: u32,
    pub prediction: Option<u32>,
    pub revision: (i64, i64),
}

/// One parsed side, kept compact ([`CompactTree`]: one string arena,
/// interned names, `u32` indices, subtree extents), so that the tree kept
/// for windows costs a fraction of the parsed [`UiTree`] it was made from.
#[derive(Debug)]
pub(crate) struct SideTree {
    pub tree: CompactTree,
}

impl SideTree {
    /// The compact form of `tree`, which is released node by node as it is
    /// copied.
    ///
    /// # Errors
    /// [`crate::ErrorCode::Internal`] when the tree cannot be kept (over
    /// 4 GiB of text, or not in pre-order).
    pub fn new(tree: UiTree) -> Result<Self, ApiError> {
        CompactTree::from_tree(tree)
            .map(|tree| Self { tree })
            .map_err(|e| ApiError::internal(format!("keeping the parsed tree: {e}")))
    }
}

/// The trees of one compared view and their diff, when both parsed.
#[derive(Debug, Default)]
pub(crate) struct ViewTrees {
    pub real: Option<SideTree>,
    pub predicted: Option<SideTree>,
    pub diff: Option<obs::diff::TreeDiff>,
}

impl ViewTrees {
    /// The tree of one side, when it parsed.
    pub fn tree(&self, side: PaneSide) -> Option<&SideTree> {
        match side {
            PaneSide::Real => self.real.as_ref(),
            PaneSide::Predicted => self.predicted.as_ref(),
        }
    }

    fn statuses(&self, side: PaneSide) -> Option<&[NodeStatus]> {
        self.diff.as_ref().map(|d| match side {
            PaneSide::Real => d.real.as_slice(),
            PaneSide::Predicted => d.pred.as_slice(),
        })
    }
}

/// What `get_turn` computed from a turn's observations: its views and the
/// evaluation's figures (without the judge's scores, read on each call).
#[derive(Debug, Clone)]
pub(crate) struct ShownTurn {
    pub views: Vec<ComparedView>,
    pub fidelity: Option<Fidelity>,
}

/// Every view's trees of one turn, in `TurnDetail.views` order, and the
/// views themselves as `get_turn` answered them, so that a turn is parsed
/// and diffed once per revision.
#[derive(Debug)]
pub(crate) struct TurnTrees {
    pub key: TurnKey,
    pub views: Vec<ViewTrees>,
    pub shown: ShownTurn,
}

impl TurnTrees {
    /// The tree of `side` of view `view_index`.
    ///
    /// # Errors
    /// [`crate::ErrorCode::NotFound`] when the view or its tree does not exist.
    pub fn view(
        &self,
        view_index: u32,
        side: PaneSide,
    ) -> Result<(&ViewTrees, &SideTree), ApiError> {
        let view = self.views.get(view_index as usize).ok_or_else(|| {
            ApiError::not_found(format!(
                "node {} shows {} views, not view {view_index}",
                self.key.node,
                self.views.len()
            ))
        })?;
        let tree = view.tree(side).ok_or_else(|| {
            ApiError::not_found(format!(
                "view {view_index} of node {} has no parsed {} tree",
                self.key.node,
                side_name(side)
            ))
        })?;
        Ok((view, tree))
    }
}

fn side_name(side: PaneSide) -> &'static str {
    match side {
        PaneSide::Real => "real",
        PaneSide::Predicted => "predicted",
    }
}

/// The turn's trees kept by the studio (the last one shown), if `key`'s.
pub(crate) type TreeCache = std::sync::Mutex<Option<Arc<TurnTrees>>>;

fn status_of(s: &NodeStatus) -> DiffStatus {
    match s {
        NodeStatus::Unchanged { .. } => DiffStatus::Unchanged,
        NodeStatus::Changed { .. } => DiffStatus::Changed,
        NodeStatus::Moved { .. } => DiffStatus::Moved,
        NodeStatus::Added => DiffStatus::Added,
        NodeStatus::Removed => DiffStatus::Removed,
    }
}

fn counterpart_of(s: &NodeStatus) -> Option<u32> {
    match s {
        NodeStatus::Unchanged { counterpart }
        | NodeStatus::Changed { counterpart, .. }
        | NodeStatus::Moved { counterpart, .. } => Some(counterpart.0),
        NodeStatus::Added | NodeStatus::Removed => None,
    }
}

fn counts(statuses: &[NodeStatus]) -> StatusCounts {
    let mut c = StatusCounts::default();
    for s in statuses {
        match status_of(s) {
            DiffStatus::Unchanged => c.unchanged += 1,
            DiffStatus::Changed => c.changed += 1,
            DiffStatus::Moved => c.moved += 1,
            DiffStatus::Added => c.added += 1,
            DiffStatus::Removed => c.removed += 1,
        }
    }
    c
}

/// The visible rows `offset .. offset + limit` of `side` of a view, with
/// the descendants of `collapsed` nodes hidden; with `reveal`, that node's
/// collapsed ancestors are expanded first and its row reported. Field
/// changes of a predicted row are those of its real counterpart (the diff
/// records them once, on the real side).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a `reveal` node not in the tree.
pub(crate) fn window(
    view: &ViewTrees,
    side: PaneSide,
    offset: u32,
    limit: u32,
    collapsed: &[u32],
    reveal: Option<u32>,
) -> Result<TreeWindow, ApiError> {
    let Some(st) = view.tree(side) else {
        return Err(ApiError::not_found(format!(
            "no parsed {} tree",
            side_name(side)
        )));
    };
    let tree = &st.tree;
    let n = tree.len();
    let mut collapsed: BTreeSet<u32> = collapsed
        .iter()
        .copied()
        .filter(|&c| (c as usize) < n)
        .collect();
    if let Some(r) = reveal {
        if r as usize >= n {
            return Err(ApiError::bad_request(format!(
                "node {r} is not in the {} tree ({n} nodes)",
                side_name(side)
            )));
        }
        let mut p = tree.parent(r as usize);
        let mut guard = 0;
        while let Some(a) = p
            && guard <= n
        {
            collapsed.remove(&a.0);
            p = (a.index() < n).then(|| tree.parent(a.index())).flatten();
            guard += 1;
        }
    }
    let limit = limit.min(TREE_WINDOW_MAX_ROWS) as usize;
    let statuses = view.statuses(side);
    let real_statuses = view.statuses(PaneSide::Real);
    let mut rows = Vec::with_capacity(limit);
    let mut revealed_row = None;
    let mut row = 0usize;
    let mut i = 0usize;
    while i < n {
        if Some(i as u32) == reveal {
            revealed_row = Some(row as u32);
        }
        if row >= offset as usize && rows.len() < limit {
            let status = statuses.and_then(|s| s.get(i));
            let counterpart = status.and_then(counterpart_of);
            let changes = match (side, status) {
                (PaneSide::Real, Some(s)) => s.changes().to_vec(),
                (PaneSide::Predicted, Some(_)) => counterpart
                    .and_then(|c| real_statuses?.get(c as usize))
                    .map(|s| s.changes().to_vec())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            rows.push(TreeRow {
                row: row as u32,
                node: tree.node_without_children(i),
                child_count: tree.child_count(i),
                subtree_end: tree.subtree_end(i),
                status: status.map(status_of),
                counterpart,
                changes,
            });
        }
        row += 1;
        i = if collapsed.contains(&(i as u32)) {
            (tree.subtree_end(i) as usize).max(i + 1)
        } else {
            i + 1
        };
    }
    Ok(TreeWindow {
        node_count: n as u32,
        visible_count: row as u32,
        offset,
        rows,
        collapsed: collapsed.into_iter().collect(),
        revealed_row,
        status_counts: statuses.map(counts),
    })
}

/// Writes the text a tree search looks at into `out` (cleared first): role,
/// name, value, key and every attribute as `name=value`, lower-cased. One
/// buffer serves every node, so a search allocates nothing per node.
fn search_text(tree: &CompactTree, i: usize, out: &mut String) {
    out.clear();
    for part in [
        tree.role(i),
        tree.name(i),
        tree.value(i).unwrap_or(""),
        tree.key(i).unwrap_or(""),
    ] {
        out.push_str(part);
        out.push(' ');
    }
    for (name, value) in tree.attributes(i) {
        out.push_str(name);
        out.push('=');
        out.push_str(value);
        out.push(' ');
    }
    if out.is_ascii() {
        out.make_ascii_lowercase();
    } else {
        *out = out.to_lowercase();
    }
}

/// Nodes whose search text contains every whitespace-separated word of
/// `query` (case-insensitive), the first `limit` of them in document order,
/// and how many match in all. A blank query matches nothing.
pub(crate) fn search(tree: &CompactTree, query: &str, limit: u32) -> SearchTreeResponse {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let limit = limit.min(SEARCH_MAX_MATCHES) as usize;
    let mut total = 0u32;
    let mut matches = Vec::new();
    if words.is_empty() {
        return SearchTreeResponse { total, matches };
    }
    let mut text = String::new();
    for i in 0..tree.len() {
        search_text(tree, i, &mut text);
        if words.iter().all(|w| text.contains(w.as_str())) {
            total += 1;
            if matches.len() < limit {
                matches.push(i as u32);
            }
        }
    }
    SearchTreeResponse { total, matches }
}

/// A prefix of `text` of at most [`TEXT_MAX_BYTES`] bytes, cut at a
/// character boundary, and the whole length when it was cut.
pub(crate) fn capped_text(text: &str) -> (String, Option<u64>) {
    if text.len() <= TEXT_MAX_BYTES {
        return (text.to_string(), None);
    }
    let mut cut = TEXT_MAX_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (text[..cut].to_string(), Some(text.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldloom_core::Representation;

    fn tree(xml: &str) -> UiTree {
        obs::parse(xml, Representation::AndroidXml).unwrap().tree
    }

    const REAL: &str = r#"<hierarchy rotation="0"><node class="android.widget.FrameLayout" bounds="[0,0][100,100]"><node class="android.widget.TextView" text="Title" resource-id="app:id/title" bounds="[0,0][100,10]"/><node class="android.widget.LinearLayout" bounds="[0,10][100,100]"><node class="android.widget.Switch" text="Wi-Fi" checked="true" resource-id="app:id/wifi" bounds="[0,10][100,20]"/><node class="android.widget.Switch" text="Bluetooth" checked="false" resource-id="app:id/bt" bounds="[0,20][100,30]"/></node></node></hierarchy>"#;
    const PRED: &str = r#"<hierarchy rotation="0"><node class="android.widget.FrameLayout" bounds="[0,0][100,100]"><node class="android.widget.TextView" text="Title" resource-id="app:id/title" bounds="[0,0][100,10]"/><node class="android.widget.LinearLayout" bounds="[0,10][100,100]"><node class="android.widget.Switch" text="Wi-Fi" checked="false" resource-id="app:id/wifi" bounds="[0,10][100,20]"/><node class="android.widget.Switch" text="Bluetooth" checked="false" resource-id="app:id/bt" bounds="[0,20][100,30]"/><node class="android.widget.Button" text="Extra" resource-id="app:id/extra" bounds="[0,30][100,40]"/></node></node></hierarchy>"#;

    fn view() -> ViewTrees {
        let real = tree(REAL);
        let pred = tree(PRED);
        let diff = obs::diff::diff_trees(&real, &pred).1;
        ViewTrees {
            real: Some(SideTree::new(real).unwrap()),
            predicted: Some(SideTree::new(pred).unwrap()),
            diff: Some(diff),
        }
    }

    fn compact(t: &UiTree) -> CompactTree {
        CompactTree::from_tree(t.clone()).unwrap()
    }

    fn ids(w: &TreeWindow) -> Vec<u32> {
        w.rows.iter().map(|r| r.node.id.0).collect()
    }

    #[test]
    fn windows_cover_the_visible_rows_in_order() {
        let v = view();
        let real = &tree(REAL);
        let n = real.nodes.len() as u32;
        let whole = window(&v, PaneSide::Real, 0, 100, &[], None).unwrap();
        assert_eq!(whole.node_count, n);
        assert_eq!(whole.visible_count, n);
        assert_eq!(ids(&whole), (0..n).collect::<Vec<_>>());
        assert_eq!(
            whole.rows.iter().map(|r| r.row).collect::<Vec<_>>(),
            (0..n).collect::<Vec<_>>()
        );
        // Nodes travel without their child lists, with the count instead;
        // every other field is the parsed node's (the kept tree is compact).
        for (r, node) in whole.rows.iter().zip(&real.nodes) {
            assert!(r.node.children.is_empty());
            assert_eq!(r.child_count as usize, node.children.len());
            assert_eq!(r.node.role, node.role);
            let bare = obs::tree::UiNode {
                children: Vec::new(),
                ..node.clone()
            };
            assert_eq!(r.node, bare);
        }
        // Two windows make the whole.
        let a = window(&v, PaneSide::Real, 0, 2, &[], None).unwrap();
        let b = window(&v, PaneSide::Real, 2, 100, &[], None).unwrap();
        assert_eq!((a.offset, b.offset), (0, 2));
        assert_eq!([ids(&a), ids(&b)].concat(), ids(&whole));
        // Past the end: no rows, the counts still right.
        let past = window(&v, PaneSide::Real, 50, 10, &[], None).unwrap();
        assert!(past.rows.is_empty());
        assert_eq!(past.visible_count, n);
    }

    #[test]
    fn collapsing_hides_descendants_and_revealing_expands_ancestors() {
        let v = view();
        let real = &tree(REAL);
        // The LinearLayout holding the two switches.
        let list = real
            .nodes
            .iter()
            .find(|x| x.role.ends_with("LinearLayout"))
            .unwrap()
            .id
            .0;
        let w = window(&v, PaneSide::Real, 0, 100, &[list], None).unwrap();
        assert_eq!(w.visible_count, real.nodes.len() as u32 - 2);
        assert!(ids(&w).contains(&list));
        assert!(!ids(&w).contains(&(list + 1)));
        assert_eq!(w.collapsed, vec![list]);
        let row = w.rows.iter().find(|r| r.node.id.0 == list).unwrap();
        assert_eq!(row.child_count, 2);
        assert_eq!(row.subtree_end, list + 3);
        // Revealing the second switch expands its parent and gives its row.
        let bt = list + 2;
        let r = window(&v, PaneSide::Real, 0, 1, &[list, 0], Some(bt)).unwrap();
        assert!(r.collapsed.is_empty());
        assert_eq!(r.revealed_row, Some(bt));
        assert_eq!(r.visible_count, real.nodes.len() as u32);
        assert_eq!(r.rows.len(), 1);
        // An unknown node is a bad request, not a panic.
        assert!(window(&v, PaneSide::Real, 0, 1, &[], Some(999)).is_err());
        // Unknown collapsed ids are ignored.
        let w = window(&v, PaneSide::Real, 0, 100, &[999], None).unwrap();
        assert!(w.collapsed.is_empty());
    }

    #[test]
    fn rows_carry_their_change_marks_on_both_sides() {
        let v = view();
        let real = window(&v, PaneSide::Real, 0, 100, &[], None).unwrap();
        let pred = window(&v, PaneSide::Predicted, 0, 100, &[], None).unwrap();
        let diff = v.diff.as_ref().unwrap();
        for r in &real.rows {
            assert_eq!(r.status, Some(status_of(&diff.real[r.node.id.index()])));
        }
        let wifi_real = real.rows.iter().find(|r| r.node.name == "Wi-Fi").unwrap();
        assert_eq!(wifi_real.status, Some(DiffStatus::Changed));
        assert!(
            wifi_real
                .changes
                .iter()
                .any(|c| c.field.contains("checked"))
        );
        let wifi_pred = pred.rows.iter().find(|r| r.node.name == "Wi-Fi").unwrap();
        assert_eq!(wifi_pred.status, Some(DiffStatus::Changed));
        assert_eq!(wifi_pred.counterpart, Some(wifi_real.node.id.0));
        assert_eq!(wifi_real.counterpart, Some(wifi_pred.node.id.0));
        assert_eq!(wifi_pred.changes, wifi_real.changes);
        let extra = pred.rows.iter().find(|r| r.node.name == "Extra").unwrap();
        assert_eq!(extra.status, Some(DiffStatus::Added));
        assert_eq!(extra.counterpart, None);
        let rc = real.status_counts.unwrap();
        let pc = pred.status_counts.unwrap();
        assert_eq!((rc.changed, rc.added, rc.removed), (1, 0, 0));
        assert_eq!((pc.changed, pc.added), (1, 1));
        assert_eq!(
            rc.unchanged + rc.changed + rc.moved + rc.removed,
            real.node_count
        );
        // No diff: no marks, no counts.
        let alone = ViewTrees {
            real: Some(SideTree::new(tree(REAL)).unwrap()),
            ..ViewTrees::default()
        };
        let w = window(&alone, PaneSide::Real, 0, 100, &[], None).unwrap();
        assert!(
            w.rows
                .iter()
                .all(|r| r.status.is_none() && r.changes.is_empty())
        );
        assert_eq!(w.status_counts, None);
        assert!(window(&alone, PaneSide::Predicted, 0, 1, &[], None).is_err());
    }

    #[test]
    fn search_matches_every_word_case_insensitively_and_counts_past_the_limit() {
        let t = tree(PRED);
        let c = compact(&t);
        let all = search(&c, "switch", 100);
        assert_eq!(all.total, 2);
        assert_eq!(all.matches.len(), 2);
        let one = search(&c, "SWITCH bluetooth", 100);
        assert_eq!(one.total, 1);
        assert_eq!(t.nodes[one.matches[0] as usize].name, "Bluetooth");
        // Attributes match as `name=value`.
        assert_eq!(search(&c, "checked=false", 100).total, 2);
        let capped = search(&c, "android", 1);
        assert_eq!(capped.matches.len(), 1);
        assert_eq!(capped.total as usize, t.nodes.len() - 1);
        assert_eq!(search(&c, "   ", 10).total, 0);
        assert_eq!(search(&c, "nothing-like-this", 10).total, 0);
    }

    /// What search looked at on the parsed tree before trees were kept
    /// compact: role, name, value, key, `name=value` per attribute.
    fn reference_search(t: &UiTree, query: &str) -> Vec<u32> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Vec::new();
        }
        t.nodes
            .iter()
            .filter(|n| {
                let mut text = format!(
                    "{} {} {} {} ",
                    n.role,
                    n.name,
                    n.value.as_deref().unwrap_or(""),
                    n.key.as_deref().unwrap_or("")
                );
                for a in &n.attributes {
                    text.push_str(&format!("{}={} ", a.name, a.value));
                }
                let text = text.to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .map(|n| n.id.0)
            .collect()
    }

    #[test]
    fn the_compact_tree_answers_as_the_parsed_one() {
        // Rows, extents and search results of the kept (compact) tree are
        // those the parsed tree gives, on every representation.
        let html = r#"<html><body><div id="a"><p>Hello <b>Wörld</b></p><input type="checkbox" checked bid="12"><ul><li>One</li><li>Two</li></ul></div></body></html>"#;
        let ax = "RootWebArea 'Shop', focused\n\t[12] link 'Home'\n\t[13] textbox 'Search', value='shoes'\n\t\t[14] StaticText 'x'\n\t[15] checkbox 'Remember', checked='true'\n";
        for (text, repr) in [
            (REAL, Representation::AndroidXml),
            (PRED, Representation::AndroidXml),
            (html, Representation::Html),
            (ax, Representation::Axtree),
        ] {
            let t = obs::parse(text, repr).unwrap().tree;
            let c = compact(&t);
            let v = ViewTrees {
                real: Some(SideTree::new(t.clone()).unwrap()),
                ..ViewTrees::default()
            };
            let w = window(&v, PaneSide::Real, 0, 1_000, &[], None).unwrap();
            assert_eq!(w.rows.len(), t.nodes.len());
            for (r, node) in w.rows.iter().zip(&t.nodes) {
                let bare = obs::tree::UiNode {
                    children: Vec::new(),
                    ..node.clone()
                };
                assert_eq!(r.node, bare);
                assert_eq!(r.child_count as usize, node.children.len());
                let i = node.id.index();
                assert_eq!(c.children(i), node.children);
                // The subtree is the node and its descendants.
                let end = r.subtree_end as usize;
                assert!(end > i && end <= t.nodes.len());
                for d in i + 1..end {
                    let mut a = t.nodes[d].parent;
                    while let Some(p) = a
                        && p.index() > i
                    {
                        a = t.nodes[p.index()].parent;
                    }
                    assert_eq!(a.map(|p| p.index()), Some(i), "{d} under {i}");
                }
                if end < t.nodes.len() {
                    assert!(t.nodes[end].depth <= node.depth);
                }
            }
            for q in [
                "a",
                "ONE",
                "checked=true",
                "textbox shoes",
                "wörld",
                "item 12",
                "=",
                "",
            ] {
                let got = search(&c, q, SEARCH_MAX_MATCHES);
                let want = reference_search(&t, q);
                assert_eq!(got.matches, want, "{q:?} in {repr:?}");
                assert_eq!(got.total as usize, want.len());
            }
        }
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        let (t, n) = capped_text("short");
        assert_eq!((t.as_str(), n), ("short", None));
        let long = "é".repeat(TEXT_MAX_BYTES); // 2 bytes each
        let (t, n) = capped_text(&long);
        assert_eq!(n, Some(long.len() as u64));
        assert!(t.len() <= TEXT_MAX_BYTES);
        assert!(long.starts_with(&t));
        assert_eq!(t.len(), TEXT_MAX_BYTES);
    }

    #[test]
    fn deep_trees_get_extents_without_recursion() {
        let mut xml = String::from("<hierarchy>");
        for _ in 0..5_000 {
            xml.push_str("<node class=\"a\" bounds=\"[0,0][1,1]\">");
        }
        for _ in 0..5_000 {
            xml.push_str("</node>");
        }
        xml.push_str("</hierarchy>");
        let t = tree(&xml);
        let n = t.nodes.len();
        let side = SideTree::new(t).unwrap();
        assert_eq!(side.tree.subtree_end(0) as usize, n);
        assert_eq!(side.tree.subtree_end(n - 1) as usize, n);
        assert_eq!(side.tree.subtree_end(n / 2) as usize, n);
        assert_eq!(
            side.tree.children(n / 2),
            vec![obs::NodeId(n as u32 / 2 + 1)]
        );
    }
}
