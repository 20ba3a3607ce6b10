//! The UI tree: one node type for every GUI representation (HTML, BrowserGym
//! accessibility-tree text, OS AT-SPI XML and its linearized table, Android
//! uiautomator XML).
//!
//! The tree is an arena: [`UiTree::nodes`] is a flat `Vec` in document order
//! (pre-order), each node holding its parent and child indices. Nothing in this
//! crate recurses on input depth, so a 10,000-level document neither overflows
//! the stack while parsing, walking, dropping nor serialising (the JSON form is
//! the flat node list, not a nested object).

use serde::{Deserialize, Serialize};
use worldloom_core::domain::Representation;

/// Index of a node in [`UiTree::nodes`]. Serialised as a plain integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index into [`UiTree::nodes`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One attribute as written in the source, in source order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Attribute {
    /// Attribute name as written, with its prefix (`st:focused`, `resource-id`,
    /// `bid`, `checked`).
    pub name: String,
    /// Attribute value, entity-decoded.
    pub value: String,
}

/// Something unusual about a node's bounds. The numbers are always kept as
/// written; the flag only tells the reader not to trust them blindly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum BoundsAnomaly {
    /// `left` or `top` is below zero (off-screen to the left or above; AT-SPI
    /// window-relative frames, Android views scrolled partly out).
    Negative,
    /// Zero width or zero height.
    Empty,
    /// `right < left` or `bottom < top` (AT-SPI `(-1, -1)` sizes, broken dumps).
    Inverted,
}

/// A rectangle in screen pixels: left, top, right, bottom (right and bottom
/// exclusive, as in Android's `bounds="[l,t][r,b]"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BoundsPx {
    /// Left edge, px.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub left: i64,
    /// Top edge, px.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub top: i64,
    /// Right edge, px.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub right: i64,
    /// Bottom edge, px.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub bottom: i64,
    /// Anomalies found in these numbers (empty when the rectangle is normal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<BoundsAnomaly>,
}

impl BoundsPx {
    /// Builds bounds from edges and computes the anomaly flags.
    pub fn from_edges(left: i64, top: i64, right: i64, bottom: i64) -> Self {
        let mut anomalies = Vec::new();
        if left < 0 || top < 0 {
            anomalies.push(BoundsAnomaly::Negative);
        }
        if right < left || bottom < top {
            anomalies.push(BoundsAnomaly::Inverted);
        } else if right == left || bottom == top {
            anomalies.push(BoundsAnomaly::Empty);
        }
        BoundsPx {
            left,
            top,
            right,
            bottom,
            anomalies,
        }
    }

    /// Builds bounds from a top-left corner and a size (AT-SPI
    /// `cp:screencoord` and `cp:size`, OSWorld table `position` and `size`).
    /// Saturates instead of overflowing on absurd numbers.
    pub fn from_origin_size(x: i64, y: i64, width: i64, height: i64) -> Self {
        Self::from_edges(x, y, x.saturating_add(width), y.saturating_add(height))
    }
}

/// Where a node came from in the original text (byte offsets into the text or
/// bytes given to the parser, before any sanitising).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SourceSpan {
    /// First byte of the node's markup or line.
    pub start_byte: usize,
    /// One past the last byte.
    pub end_byte: usize,
    /// 1-based line of `start_byte`.
    pub line: u32,
}

/// Normalised interaction states shared by all representations, read from
/// the format's own spelling (HTML `checked`/`disabled`, BrowserGym
/// `checked='true'`, AT-SPI `st:checked`, Android `checked="true"`).
///
/// `None` means the format does not state it for this node in an informative
/// way: a state is recorded only when the node can carry it (checkable,
/// focusable, selectable) or when it has its non-default value. Comparisons
/// treat `None` as the default (`false`, or `true` for `enabled`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeStates {
    /// Checked (checkbox, radio, switch, toggle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// Selected (option, tab, list item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<bool>,
    /// Has keyboard focus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focused: Option<bool>,
    /// Enabled (not disabled / insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Expanded (menus, combo boxes, tree items).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expanded: Option<bool>,
    /// Editable text field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editable: Option<bool>,
}

/// The state names compared by attribute accuracy, in report order.
pub const STATE_NAMES: [&str; 4] = ["checked", "selected", "focused", "enabled"];

impl NodeStates {
    /// A state by its name in [`STATE_NAMES`] (plus `expanded`, `editable`).
    pub fn get(&self, name: &str) -> Option<bool> {
        match name {
            "checked" => self.checked,
            "selected" => self.selected,
            "focused" => self.focused,
            "enabled" => self.enabled,
            "expanded" => self.expanded,
            "editable" => self.editable,
            _ => None,
        }
    }

    /// The value a comparison uses: the stated value, else the default
    /// (`true` for `enabled`, `false` otherwise).
    pub fn effective(&self, name: &str) -> bool {
        self.get(name).unwrap_or(name == "enabled")
    }
}

/// One node of a [`UiTree`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UiNode {
    /// This node's index.
    pub id: NodeId,
    /// Parent index; `None` for the root.
    pub parent: Option<NodeId>,
    /// Children in document order.
    pub children: Vec<NodeId>,
    /// Depth below the root (root = 0).
    pub depth: u32,
    /// Role: HTML tag name (lower case), BrowserGym/ARIA role, AT-SPI role
    /// (the XML tag), or Android widget class.
    pub role: String,
    /// Accessible name or visible text: HTML element's own text (or
    /// `aria-label`/`alt`/`placeholder` when it has none), BrowserGym quoted
    /// name, AT-SPI `name`, Android `text` (else `content-desc`).
    pub name: String,
    /// Current value, where the format has one: HTML form value, BrowserGym
    /// `value=` property, AT-SPI element text (or `val:value`), OS table
    /// `text` column, Android `text` of editable fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Stable key, when the format has one: BrowserGym `bid`, Android
    /// `resource-id`, HTML `bid` (else `id`). OS accessibility trees have
    /// none (AT-SPI exposes no element identity; they are aligned by
    /// structure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Every attribute or property, in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
    /// Normalised interaction states.
    #[serde(default)]
    pub states: NodeStates,
    /// Screen rectangle in pixels, when the format gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds_px: Option<BoundsPx>,
    /// Where the node is in the original text, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<SourceSpan>,
    /// True for nodes the parser made up (the document root of an
    /// accessibility-tree text or a table, an iframe's inner document root).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

impl UiNode {
    /// A node with only its place and role: no name, value, key,
    /// attributes, states, bounds or span yet, and no children listed.
    pub fn new(id: NodeId, parent: Option<NodeId>, depth: u32, role: String) -> Self {
        Self {
            id,
            parent,
            children: Vec::new(),
            depth,
            role,
            name: String::new(),
            value: None,
            key: None,
            attributes: Vec::new(),
            states: NodeStates::default(),
            bounds_px: None,
            span: None,
            synthetic: false,
        }
    }

    /// The first attribute with this name.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.value.as_str())
    }
}

/// A parsed UI tree. `nodes[0]` is the root; nodes are stored in pre-order,
/// so a node's descendants follow it and `parent < child` always holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UiTree {
    /// The representation this tree was parsed from.
    pub representation: Representation,
    /// All nodes, pre-order; index = [`NodeId`].
    pub nodes: Vec<UiNode>,
    /// Set when the dump tool cut the tree (a marker line or comment), or
    /// when its node count equals a known cap; absent for a complete tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// True when the tree is known to lack content that exists on screen:
    /// an application exposes a frame with no children (accessibility off).
    /// Metrics do not score a prediction against such a tree.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

/// Why a tree is believed to be cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TruncationReason {
    /// The dump carries a marker line or comment saying it was cut (see
    /// [`crate::parse::truncation_marker`] for the accepted forms).
    Marker,
    /// No marker, but the number of nodes equals a known dump-tool cap
    /// ([`KNOWN_NODE_CAPS`]): possibly truncated.
    NodeCountAtCap,
}

/// Node caps AT-SPI dump tools are known to apply.
pub const KNOWN_NODE_CAPS: [u32; 2] = [1_000, 2_000];

/// A tree that was (or may have been) cut short by the tool that dumped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Truncation {
    /// Marker found, or node count at a known cap.
    pub reason: TruncationReason,
    /// The cap in nodes, when the marker names one or the count matched one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<u32>,
    /// Index of the last node read before the cut (the last node in
    /// document order; nodes after it in a prediction have no counterpart
    /// that could have been written).
    pub last_node: NodeId,
}

impl UiTree {
    /// An empty tree holding only a synthetic root of the given role.
    pub fn with_root(representation: Representation, root_role: &str) -> Self {
        let mut tree = UiTree {
            representation,
            nodes: Vec::new(),
            truncated: None,
            incomplete: false,
        };
        let root = tree.push(None, root_role.to_string());
        tree.nodes[root.index()].synthetic = true;
        tree
    }

    /// The root node id (always 0).
    pub fn root(&self) -> NodeId {
        NodeId(0)
    }

    /// Number of nodes, including synthetic ones.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the tree has no nodes at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node at `id`. Ids are only meaningful for the tree that made them;
    /// an id from another, larger tree panics (out of bounds).
    pub fn node(&self, id: NodeId) -> &UiNode {
        &self.nodes[id.index()]
    }

    /// Appends a node as the last child of `parent` (or as the root when
    /// `parent` is `None`) and returns its id. Callers append in pre-order.
    pub fn push(&mut self, parent: Option<NodeId>, role: String) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        let depth = match parent {
            Some(p) => self.nodes[p.index()].depth + 1,
            None => 0,
        };
        self.nodes.push(UiNode::new(id, parent, depth, role));
        if let Some(p) = parent {
            self.nodes[p.index()].children.push(id);
        }
        id
    }

    /// Mutable access to a node.
    pub fn node_mut(&mut self, id: NodeId) -> &mut UiNode {
        &mut self.nodes[id.index()]
    }

    /// Number of nodes that are not synthetic.
    pub fn real_node_count(&self) -> usize {
        self.nodes.iter().filter(|n| !n.synthetic).count()
    }

    /// Nodes in document order (pre-order). The arena already is in
    /// pre-order, so this is a plain slice walk.
    pub fn iter(&self) -> impl Iterator<Item = &UiNode> {
        self.nodes.iter()
    }

    /// Renumbers the nodes into pre-order (document order) with an explicit
    /// stack, recomputing depths. Parsers that attach content out of order
    /// (iframe documents) call this last, so that `nodes` is pre-order.
    pub fn into_preorder(self) -> UiTree {
        let UiTree {
            representation,
            nodes,
            truncated,
            incomplete,
        } = self;
        if nodes.is_empty() {
            return UiTree {
                representation,
                nodes,
                truncated,
                incomplete,
            };
        }
        let mut order: Vec<usize> = Vec::with_capacity(nodes.len());
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            order.push(i);
            stack.extend(nodes[i].children.iter().rev().map(|c| c.index()));
        }
        let mut new_id = vec![u32::MAX; nodes.len()];
        for (new, old) in order.iter().enumerate() {
            new_id[*old] = u32::try_from(new).unwrap_or(u32::MAX);
        }
        let mut slots: Vec<Option<UiNode>> = nodes.into_iter().map(Some).collect();
        let mut out: Vec<UiNode> = Vec::with_capacity(order.len());
        for old in order {
            let Some(mut n) = slots[old].take() else {
                continue;
            };
            n.id = NodeId(new_id[old]);
            n.parent = n.parent.map(|p| NodeId(new_id[p.index()]));
            n.children = n
                .children
                .iter()
                .map(|c| NodeId(new_id[c.index()]))
                .collect();
            n.depth = n.parent.map(|p| out[p.index()].depth + 1).unwrap_or(0);
            out.push(n);
        }
        let truncated = truncated.map(|t| Truncation {
            last_node: NodeId(new_id.get(t.last_node.index()).copied().unwrap_or(u32::MAX)),
            ..t
        });
        UiTree {
            representation,
            nodes: out,
            truncated,
            incomplete,
        }
    }

    /// Maximum depth of any node.
    pub fn max_depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.depth).max().unwrap_or(0)
    }

    /// An indented text outline (two spaces per level): `role "name"
    /// value=… [key] {states}`. Used by `worldloom parse` and snapshot tests.
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            for _ in 0..n.depth.min(200) {
                out.push_str("  ");
            }
            out.push_str(&n.role);
            if !n.name.is_empty() {
                out.push_str(&format!(" {:?}", n.name));
            }
            if let Some(v) = &n.value {
                out.push_str(&format!(" value={v:?}"));
            }
            if let Some(k) = &n.key {
                out.push_str(&format!(" [{k}]"));
            }
            let mut states = Vec::new();
            for s in [
                "checked", "selected", "focused", "enabled", "expanded", "editable",
            ] {
                if let Some(b) = n.states.get(s) {
                    states.push(format!("{s}={b}"));
                }
            }
            if !states.is_empty() {
                out.push_str(&format!(" {{{}}}", states.join(",")));
            }
            if let Some(b) = &n.bounds_px {
                out.push_str(&format!(" ({},{},{},{})", b.left, b.top, b.right, b.bottom));
                for a in &b.anomalies {
                    out.push_str(&format!(" !{a:?}"));
                }
            }
            out.push('\n');
        }
        out
    }
}

/// Collapses runs of whitespace to one space and trims the ends.
pub fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}
