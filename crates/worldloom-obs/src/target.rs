//! Where an action landed: the node of a [`UiTree`] that an action's
//! [`ActionTarget`] names.
//!
//! - A BrowserGym `bid` → the node whose `bid` attribute is that bid (an
//!   HTML element's `bid`, an accessibility-tree row's `[bid]`).
//! - A point → the topmost node whose bounds contain it: of every node with
//!   usable bounds (not empty, not inverted, not stated invisible) that
//!   contains the point (right and bottom edges exclusive), the last in
//!   document order. Trees are stored in pre-order, which is also the order
//!   uiautomator and AT-SPI views are drawn in (a parent before its children,
//!   earlier siblings below later ones), so the last containing node is the
//!   deepest, last-drawn one.
//! - An element reference (Android) → the first node whose `resource-id`
//!   equals it, else whose `resource-id` ends in `:id/<reference>`, else
//!   whose text or content description equals it. A bare number is an index
//!   into the agent framework's own element list, which a dump does not
//!   carry: it is not resolved.
//!
//! The walk is iterative and linear in the node count.

use std::fmt;

use worldloom_core::ActionTarget;
use worldloom_core::domain::Representation;

use crate::compact::CompactTree;
use crate::tree::{BoundsAnomaly, NodeId, UiNode, UiTree};

/// Why an action's target was not found in a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum NotLanded {
    /// No node carries this bid.
    NoSuchBid(String),
    /// No node matches this element reference.
    NoSuchElement(String),
    /// The reference is a bare element index (AndroidWorld numbers the
    /// elements of its own list, which the dump does not carry).
    ElementIndex(String),
    /// No node with bounds contains the point (x, y in px).
    NothingAtPoint(f64, f64),
    /// No node of the tree has usable bounds (web trees without geometry).
    NoBounds,
}

impl NotLanded {
    /// A sentence for the reader, naming the tree (`real`, `predicted`):
    /// `bid 12 not in the predicted tree`.
    pub fn describe(&self, tree_name: &str) -> String {
        match self {
            NotLanded::NoSuchBid(bid) => format!("bid {bid} not in the {tree_name} tree"),
            NotLanded::NoSuchElement(e) => format!("no element {e:?} in the {tree_name} tree"),
            NotLanded::ElementIndex(e) => format!(
                "element index {e} numbers the agent's own element list, which the {tree_name} tree does not carry"
            ),
            NotLanded::NothingAtPoint(x, y) => format!(
                "no element of the {tree_name} tree contains ({}, {})",
                Px(*x),
                Px(*y)
            ),
            NotLanded::NoBounds => format!("the {tree_name} tree has no element bounds"),
        }
    }
}

impl fmt::Display for NotLanded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe("given"))
    }
}

/// A coordinate written without a needless `.0`.
struct Px(f64);

impl fmt::Display for Px {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// The node `target` names in `tree`.
///
/// # Errors
/// [`NotLanded`] says why none was found.
pub fn land(tree: &UiTree, target: &ActionTarget) -> Result<NodeId, NotLanded> {
    land_in(tree.representation, tree.iter(), target)
}

/// [`land`] on the compact form a large tree is kept in (same rules, same
/// answer), read in place: no node is rebuilt.
///
/// # Errors
/// [`NotLanded`] says why none was found.
pub fn land_compact(tree: &CompactTree, target: &ActionTarget) -> Result<NodeId, NotLanded> {
    let nodes = (0..tree.len()).map(|i| CompactNode { tree, i });
    land_in(tree.representation, nodes, target)
}

/// What landing reads of a node, from a [`UiTree`] or a [`CompactTree`].
trait LandNode {
    fn id(&self) -> NodeId;
    fn attr(&self, name: &str) -> Option<&str>;
    fn key(&self) -> Option<&str>;
    fn name(&self) -> &str;
    fn synthetic(&self) -> bool;
    /// Left, top, right, bottom (px) and the anomaly flags.
    fn bounds(&self) -> Option<([i64; 4], &[BoundsAnomaly])>;
}

impl LandNode for &UiNode {
    fn id(&self) -> NodeId {
        self.id
    }
    fn attr(&self, name: &str) -> Option<&str> {
        UiNode::attr(self, name)
    }
    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn synthetic(&self) -> bool {
        self.synthetic
    }
    fn bounds(&self) -> Option<([i64; 4], &[BoundsAnomaly])> {
        self.bounds_px
            .as_ref()
            .map(|b| ([b.left, b.top, b.right, b.bottom], b.anomalies.as_slice()))
    }
}

/// Node `i` of a compact tree.
struct CompactNode<'a> {
    tree: &'a CompactTree,
    i: usize,
}

impl LandNode for CompactNode<'_> {
    fn id(&self) -> NodeId {
        NodeId(self.i as u32)
    }
    fn attr(&self, name: &str) -> Option<&str> {
        self.tree.attr(self.i, name)
    }
    fn key(&self) -> Option<&str> {
        self.tree.key(self.i)
    }
    fn name(&self) -> &str {
        self.tree.name(self.i)
    }
    fn synthetic(&self) -> bool {
        self.tree.synthetic(self.i)
    }
    fn bounds(&self) -> Option<([i64; 4], &[BoundsAnomaly])> {
        self.tree.bounds(self.i)
    }
}

/// One pass over `nodes` (pre-order) for every kind of target.
fn land_in<N: LandNode>(
    representation: Representation,
    nodes: impl Iterator<Item = N>,
    target: &ActionTarget,
) -> Result<NodeId, NotLanded> {
    match target {
        ActionTarget::Bid { bid, .. } => by_bid(representation, nodes, bid),
        ActionTarget::Point { x_px, y_px, .. } => at_point(nodes, *x_px, *y_px),
        ActionTarget::Element { element, .. } => by_element(nodes, element),
    }
}

fn by_bid<N: LandNode>(
    representation: Representation,
    mut nodes: impl Iterator<Item = N>,
    bid: &str,
) -> Result<NodeId, NotLanded> {
    nodes
        .find(|n| {
            n.attr("bid") == Some(bid)
                || (representation == Representation::Axtree && n.key() == Some(bid))
        })
        .map(|n| n.id())
        .ok_or_else(|| NotLanded::NoSuchBid(bid.to_owned()))
}

/// False for nodes the dump states are not on screen: AT-SPI
/// `st:showing="false"` / `st:visible="false"`, Android
/// `visible-to-user="false"`.
fn stated_visible(n: &impl LandNode) -> bool {
    !["st:showing", "st:visible", "visible-to-user"]
        .iter()
        .any(|name| n.attr(name) == Some("false"))
}

fn at_point<N: LandNode>(
    nodes: impl Iterator<Item = N>,
    x: f64,
    y: f64,
) -> Result<NodeId, NotLanded> {
    let mut any_bounds = false;
    let mut hit = None;
    for n in nodes {
        let Some(([left, top, right, bottom], anomalies)) = n.bounds() else {
            continue;
        };
        if n.synthetic()
            || anomalies
                .iter()
                .any(|a| matches!(a, BoundsAnomaly::Empty | BoundsAnomaly::Inverted))
            || !stated_visible(&n)
        {
            continue;
        }
        any_bounds = true;
        if (left as f64) <= x && x < right as f64 && (top as f64) <= y && y < bottom as f64 {
            hit = Some(n.id());
        }
    }
    match hit {
        Some(id) => Ok(id),
        None if any_bounds => Err(NotLanded::NothingAtPoint(x, y)),
        None => Err(NotLanded::NoBounds),
    }
}

/// An Android node's `resource-id` (its key).
fn resource_id(n: &impl LandNode) -> Option<&str> {
    n.attr("resource-id").or(n.key())
}

/// The first node matching the strongest rule that any node matches
/// (exact `resource-id`, then its `:id/` suffix, then text), in one pass.
fn by_element<N: LandNode>(
    nodes: impl Iterator<Item = N>,
    element: &str,
) -> Result<NodeId, NotLanded> {
    let element = element.trim();
    if !element.is_empty() && element.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NotLanded::ElementIndex(element.to_owned()));
    }
    let suffix = format!(":id/{element}");
    let rank = |n: &N| -> Option<usize> {
        if n.synthetic() {
            None
        } else if resource_id(n) == Some(element) {
            Some(0)
        } else if resource_id(n).is_some_and(|r| r.ends_with(&suffix)) {
            Some(1)
        } else if n.name() == element
            || n.attr("text") == Some(element)
            || n.attr("content-desc") == Some(element)
        {
            Some(2)
        } else {
            None
        }
    };
    let mut best: Option<(usize, NodeId)> = None;
    for n in nodes {
        if let Some(r) = rank(&n)
            && best.is_none_or(|(b, _)| r < b)
        {
            best = Some((r, n.id()));
            if r == 0 {
                break;
            }
        }
    }
    best.map(|(_, id)| id)
        .ok_or_else(|| NotLanded::NoSuchElement(element.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn point(x: f64, y: f64) -> ActionTarget {
        ActionTarget::Point {
            verb: "click".into(),
            x_px: x,
            y_px: y,
        }
    }

    fn tree(text: &str, repr: Representation) -> UiTree {
        parse(text, repr).expect("fixture parses").tree
    }

    /// A chat screen as uiautomator dumps it: a full-screen frame, a list
    /// of rows (each a clickable layout holding texts), and a floating
    /// button drawn over the list's lower right.
    const ANDROID: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.harbor" clickable="false" bounds="[0,0][1080,2400]">
    <node index="0" text="" resource-id="com.harbor:id/list" class="androidx.recyclerview.widget.RecyclerView" clickable="false" bounds="[0,200][1080,2400]">
      <node index="0" text="" resource-id="com.harbor:id/row" class="android.widget.LinearLayout" clickable="true" bounds="[0,200][1080,400]">
        <node index="0" text="Mina Okafor" resource-id="com.harbor:id/name" class="android.widget.TextView" clickable="false" bounds="[40,230][700,300]" />
        <node index="1" text="See you at 6" resource-id="com.harbor:id/preview" class="android.widget.TextView" clickable="false" bounds="[40,310][700,370]" />
      </node>
      <node index="1" text="" resource-id="com.harbor:id/row" class="android.widget.LinearLayout" clickable="true" bounds="[0,400][1080,600]">
        <node index="0" text="Theo" resource-id="com.harbor:id/name" class="android.widget.TextView" clickable="false" bounds="[40,430][700,500]" />
      </node>
      <node index="2" text="hidden" resource-id="com.harbor:id/ghost" class="android.widget.TextView" visible-to-user="false" bounds="[0,600][1080,800]" />
    </node>
    <node index="1" text="" content-desc="New chat" resource-id="com.harbor:id/fab" class="android.widget.ImageButton" clickable="true" bounds="[880,2200][1040,2360]" />
    <node index="2" text="" resource-id="com.harbor:id/empty" class="android.view.View" bounds="[0,0][0,0]" />
  </node>
</hierarchy>"#;

    fn role_name(t: &UiTree, id: NodeId) -> (String, String) {
        let n = t.node(id);
        (n.role.clone(), n.name.clone())
    }

    #[test]
    fn android_point_lands_on_the_deepest_last_drawn_element() {
        let t = tree(ANDROID, Representation::AndroidXml);
        // Inside the first row's name text: the text, not the row or list.
        let id = land(&t, &point(540.0, 250.0)).unwrap();
        assert_eq!(
            role_name(&t, id),
            ("android.widget.TextView".into(), "Mina Okafor".into())
        );
        // On the row between its texts: the row.
        let id = land(&t, &point(900.0, 380.0)).unwrap();
        assert_eq!(t.node(id).key.as_deref(), Some("com.harbor:id/row"));
        assert_eq!(t.node(id).attr("bounds"), Some("[0,200][1080,400]"));
        // The floating button is drawn after the list it overlaps.
        let id = land(&t, &point(960.0, 2280.0)).unwrap();
        assert_eq!(t.node(id).key.as_deref(), Some("com.harbor:id/fab"));
        // Right and bottom edges are exclusive: (1040, 2360) is outside the
        // button, on the list.
        let id = land(&t, &point(1040.0, 2300.0)).unwrap();
        assert_eq!(t.node(id).key.as_deref(), Some("com.harbor:id/list"));
        // A view stated invisible is passed over; empty bounds never hit.
        let id = land(&t, &point(500.0, 700.0)).unwrap();
        assert_eq!(t.node(id).key.as_deref(), Some("com.harbor:id/list"));
        // Off the screen: nothing.
        let err = land(&t, &point(1200.0, 10.0)).unwrap_err();
        assert_eq!(err, NotLanded::NothingAtPoint(1200.0, 10.0));
        assert_eq!(
            err.describe("predicted"),
            "no element of the predicted tree contains (1200, 10)"
        );
    }

    #[test]
    fn android_element_references() {
        let t = tree(ANDROID, Representation::AndroidXml);
        let el = |e: &str| ActionTarget::Element {
            verb: "click".into(),
            element: e.into(),
        };
        let key = |r: Result<NodeId, NotLanded>| t.node(r.unwrap()).key.clone().unwrap();
        assert_eq!(key(land(&t, &el("com.harbor:id/fab"))), "com.harbor:id/fab");
        assert_eq!(key(land(&t, &el("preview"))), "com.harbor:id/preview");
        assert_eq!(key(land(&t, &el("Theo"))), "com.harbor:id/name");
        assert_eq!(key(land(&t, &el("New chat"))), "com.harbor:id/fab");
        assert_eq!(
            land(&t, &el("12")).unwrap_err().describe("real"),
            "element index 12 numbers the agent's own element list, which the real tree does not carry"
        );
        assert_eq!(
            land(&t, &el("send")).unwrap_err().describe("real"),
            "no element \"send\" in the real tree"
        );
    }

    #[test]
    fn bids_in_accessibility_trees_and_html() {
        let ax = "RootWebArea 'Inbox', focused\n\t[12] navigation 'Folders'\n\t\t[13] link 'Inbox'\n\t[14] button 'Reply'\n\tStaticText 'Hello'";
        let t = tree(ax, Representation::Axtree);
        let bid = |b: &str| ActionTarget::Bid {
            verb: "click".into(),
            bid: b.into(),
        };
        assert_eq!(
            role_name(&t, land(&t, &bid("14")).unwrap()),
            ("button".into(), "Reply".into())
        );
        assert_eq!(
            land(&t, &bid("99")).unwrap_err().describe("predicted"),
            "bid 99 not in the predicted tree"
        );
        // Points need bounds, which accessibility-tree text has none of.
        assert_eq!(land(&t, &point(10.0, 10.0)), Err(NotLanded::NoBounds));

        // HTML: the element carrying the bid attribute, never an `id` that
        // happens to equal it.
        let html = r#"<html><body><div id="14">decoy</div><form bid="20"><input bid="14" name="q"><button bid="21">Go</button></form></body></html>"#;
        let t = tree(html, Representation::Html);
        let id = land(&t, &bid("14")).unwrap();
        assert_eq!(t.node(id).role, "input");
        assert_eq!(t.node(id).attr("name"), Some("q"));
        assert_eq!(t.node(land(&t, &bid("21")).unwrap()).name, "Go");
    }

    #[test]
    fn desktop_point_in_an_atspi_tree_and_its_table() {
        // A window with a menu bar and a list; the status bar label overlaps
        // nothing; a hidden popup menu sits over the list but is not showing.
        let xml = r#"<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" xmlns:cp="https://accessibility.ubuntu.example.org/ns/component"><application name="Files"><frame name="home - Files" st:showing="true" cp:screencoord="(100, 50)" cp:size="(800, 600)"><menu-bar name="" st:showing="true" cp:screencoord="(100, 50)" cp:size="(800, 25)"><menu name="File" st:showing="true" cp:screencoord="(100, 50)" cp:size="(40, 25)"/><menu name="Edit" st:showing="true" cp:screencoord="(140, 50)" cp:size="(40, 25)"><menu-item name="Rename" st:showing="false" cp:screencoord="(140, 75)" cp:size="(120, 25)"/></menu></menu-bar><list name="Files" st:showing="true" cp:screencoord="(100, 75)" cp:size="(800, 550)"><list-item name="budget.ods" st:showing="true" cp:screencoord="(120, 90)" cp:size="(200, 40)"/></list><label name="2 items" st:showing="true" cp:screencoord="(100, 625)" cp:size="(800, 25)"/></frame></application></desktop-frame>"#;
        let t = tree(xml, Representation::OsXml);
        let at = |x, y| role_name(&t, land(&t, &point(x, y)).unwrap());
        assert_eq!(at(150.0, 60.0), ("menu".into(), "Edit".into()));
        assert_eq!(at(150.0, 80.0), ("list".into(), "Files".into()));
        assert_eq!(at(200.0, 100.0), ("list-item".into(), "budget.ods".into()));
        assert_eq!(at(500.0, 630.0), ("label".into(), "2 items".into()));
        assert_eq!(
            land(&t, &point(99.0, 630.0)),
            Err(NotLanded::NothingAtPoint(99.0, 630.0))
        );
        let table = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\nframe\thome - Files\t\"\"\t\t\t(100, 50)\t(800, 600)\nlist-item\tbudget.ods\t\"\"\t\t\t(120, 90)\t(200, 40)\n";
        let t = tree(table, Representation::OsTable);
        let id = land(&t, &point(200.0, 100.0)).unwrap();
        assert_eq!(t.node(id).name, "budget.ods");
        assert_eq!(
            t.node(land(&t, &point(500.0, 500.0)).unwrap()).name,
            "home - Files"
        );
    }

    #[test]
    fn the_compact_form_lands_where_the_tree_does() {
        let ax = "RootWebArea 'Inbox', focused\n\t[12] navigation 'Folders'\n\t\t[13] link 'Inbox'\n\t[14] button 'Reply'";
        let el = |e: &str| ActionTarget::Element {
            verb: "click".into(),
            element: e.into(),
        };
        let bid = |b: &str| ActionTarget::Bid {
            verb: "click".into(),
            bid: b.into(),
        };
        let cases = [
            (ANDROID, Representation::AndroidXml, point(540.0, 250.0)),
            (ANDROID, Representation::AndroidXml, point(960.0, 2280.0)),
            (ANDROID, Representation::AndroidXml, point(1200.0, 10.0)),
            (ANDROID, Representation::AndroidXml, el("fab")),
            (ANDROID, Representation::AndroidXml, el("Theo")),
            (ANDROID, Representation::AndroidXml, el("nope")),
            (ANDROID, Representation::AndroidXml, el("3")),
            (ax, Representation::Axtree, bid("14")),
            (ax, Representation::Axtree, bid("99")),
            (ax, Representation::Axtree, point(1.0, 1.0)),
        ];
        for (text, repr, target) in cases {
            let t = tree(text, repr);
            let whole = land(&t, &target);
            let compact = CompactTree::from_tree(t).expect("compact");
            assert_eq!(land_compact(&compact, &target), whole, "{target:?}");
        }
        // The expected answers themselves, so both cannot be wrong alike.
        let t = CompactTree::from_tree(tree(ANDROID, Representation::AndroidXml)).unwrap();
        let id = land_compact(&t, &el("fab")).unwrap();
        assert_eq!(t.key(id.0 as usize), Some("com.harbor:id/fab"));
        let id = land_compact(&t, &point(540.0, 250.0)).unwrap();
        assert_eq!(t.name(id.0 as usize), "Mina Okafor");
    }
}
