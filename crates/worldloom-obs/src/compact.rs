//! A read-only, compact form of a [`UiTree`] for keeping large trees in
//! memory (the studio keeps the trees of the turn it shows, to answer
//! windows of rows and searches).
//!
//! A [`UiTree`] spends most of its memory on small allocations: every node
//! holds a child list, a role, name, key and value `String`, and a `Vec` of
//! attributes with two `String`s each (a 200,000-node uiautomator dump with
//! 16 attributes per node is about 2.3 KiB per node). [`CompactTree`] keeps
//! the same information in a handful of flat vectors:
//!
//! - every string in **one arena** (`String`), referred to by `u32` offset
//!   and length; an attribute value equal to the previous value of the same
//!   attribute name (`package`, `class`, `enabled="true"`…) and a role, name,
//!   key or value equal to one of the node's attribute values are stored
//!   once;
//! - attribute names and roles **interned** (each distinct one stored once,
//!   referred to by a `u32` index);
//! - nodes as fixed-size records with `u32` indices (parent, depth, first
//!   attribute, one past the last descendant); child lists are not stored:
//!   nodes are in pre-order, so the children of node `i` are `i + 1`, then
//!   the node after each child's subtree, up to the end of `i`'s subtree.
//!
//! [`CompactTree::node`] gives back the exact [`UiNode`] the tree was built
//! from; [`CompactTree::node_without_children`] the same without the child
//! list (what a row of a tree window shows).

use std::collections::HashMap;

use worldloom_core::domain::Representation;

use crate::tree::{
    Attribute, BoundsAnomaly, BoundsPx, NodeId, NodeStates, SourceSpan, Truncation, UiNode, UiTree,
};

/// A string in the arena: byte offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Str {
    start: u32,
    len: u32,
}

/// Bounds as written, with their anomaly flags (an empty `Vec` allocates
/// nothing, and most bounds have no anomaly).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bounds {
    edges: [i64; 4],
    anomalies: Vec<BoundsAnomaly>,
}

/// One node's fixed-size record.
#[derive(Debug, Clone)]
struct Record {
    /// Parent index, `u32::MAX` for none.
    parent: u32,
    depth: u32,
    /// One past the last descendant (pre-order).
    end: u32,
    child_count: u32,
    /// Index into the interned names (roles and attribute names share it).
    role: u32,
    name: Str,
    value: Option<Str>,
    key: Option<Str>,
    /// First attribute in `attributes`; the node's attributes run to the
    /// next node's first.
    first_attribute: u32,
    states: NodeStates,
    bounds: Option<Bounds>,
    span: Option<SourceSpan>,
    synthetic: bool,
}

/// Why a tree could not be made compact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    /// The tree's strings, attributes or nodes do not fit `u32` offsets
    /// (more than 4 GiB of text, or 4 billion attributes or nodes).
    #[error("the tree is too large to keep ({what} over 4 GiB / 2^32)")]
    TooLarge {
        /// What overflowed: `text`, `attributes` or `nodes`.
        what: &'static str,
    },
    /// The tree is not an arena in pre-order (a node's id is not its index,
    /// or a parent does not come before its child).
    #[error("node {node} is out of pre-order")]
    NotPreorder {
        /// The first offending node index.
        node: usize,
    },
}

/// A [`UiTree`] in compact, read-only form (see the module documentation).
/// Node ids, order, and every field are those of the tree it was built
/// from.
#[derive(Debug, Clone)]
pub struct CompactTree {
    /// The representation the tree was parsed from.
    pub representation: Representation,
    /// As [`UiTree::truncated`].
    pub truncated: Option<Truncation>,
    /// As [`UiTree::incomplete`].
    pub incomplete: bool,
    records: Vec<Record>,
    /// (interned name, value) per attribute, nodes' attributes one after the
    /// other.
    attributes: Vec<(u32, Str)>,
    names: Vec<Str>,
    text: String,
}

/// Builds the arena and the interned names.
#[derive(Default)]
struct Builder {
    text: String,
    names: Vec<Str>,
    name_index: HashMap<Box<str>, u32>,
    /// The last value stored per interned attribute name.
    last_value: Vec<Option<Str>>,
}

impl Builder {
    fn push(&mut self, s: &str) -> Result<Str, CompactError> {
        let too_large = CompactError::TooLarge { what: "text" };
        let start = u32::try_from(self.text.len()).map_err(|_| too_large.clone())?;
        let len = u32::try_from(s.len()).map_err(|_| too_large.clone())?;
        start.checked_add(len).ok_or(too_large)?;
        self.text.push_str(s);
        Ok(Str { start, len })
    }

    fn get(&self, s: Str) -> &str {
        &self.text[s.start as usize..(s.start + s.len) as usize]
    }

    fn intern(&mut self, name: &str) -> Result<u32, CompactError> {
        if let Some(&i) = self.name_index.get(name) {
            return Ok(i);
        }
        let i = u32::try_from(self.names.len())
            .map_err(|_| CompactError::TooLarge { what: "attributes" })?;
        let s = self.push(name)?;
        self.names.push(s);
        self.last_value.push(None);
        self.name_index.insert(name.into(), i);
        Ok(i)
    }

    /// Stores an attribute value, reusing the previous value of the same
    /// name when equal.
    fn value(&mut self, name: u32, value: &str) -> Result<Str, CompactError> {
        if let Some(prev) = self.last_value[name as usize]
            && self.get(prev) == value
        {
            return Ok(prev);
        }
        let s = self.push(value)?;
        self.last_value[name as usize] = Some(s);
        Ok(s)
    }

    /// Stores a node field, reusing one of the node's attribute values when
    /// equal.
    fn field(&mut self, value: &str, node_attrs: &[(u32, Str)]) -> Result<Str, CompactError> {
        if let Some((_, s)) = node_attrs.iter().find(|(_, s)| self.get(*s) == value) {
            return Ok(*s);
        }
        self.push(value)
    }
}

/// Builds a [`CompactTree`] one node at a time, in pre-order: a parser hands
/// each node over as soon as it is complete (its child list may be empty or
/// not: children are counted from the nodes that follow), so the whole tree
/// never exists as [`UiNode`]s.
#[derive(Default)]
pub struct CompactBuilder {
    b: Builder,
    records: Vec<Record>,
    attributes: Vec<(u32, Str)>,
    /// The open ancestors of the next node: in pre-order a node's parent is
    /// one of them.
    open: Vec<u32>,
}

impl CompactBuilder {
    /// Appends the next node in pre-order. Its `children` are ignored (see
    /// [`CompactBuilder`]); its strings are copied and released.
    ///
    /// # Errors
    /// [`CompactError::NotPreorder`] when its id is not the next index or
    /// its parent is not an open ancestor (a node before it whose subtree
    /// it can still extend); [`CompactError::TooLarge`] past `u32` offsets.
    pub fn push(&mut self, node: UiNode) -> Result<(), CompactError> {
        let i = self.records.len();
        let in_order = node.id.index() == i
            && u32::try_from(i).is_ok_and(|x| x != u32::MAX)
            && match node.parent {
                None => i == 0,
                Some(p) => {
                    while self.open.last().is_some_and(|&a| a != p.0) {
                        self.open.pop();
                    }
                    !self.open.is_empty()
                }
            };
        if !in_order {
            return Err(CompactError::NotPreorder { node: i });
        }
        if let Some(p) = node.parent {
            self.records[p.index()].child_count += 1;
        }
        self.open.push(i as u32);
        let b = &mut self.b;
        let first_attribute = u32::try_from(self.attributes.len())
            .map_err(|_| CompactError::TooLarge { what: "attributes" })?;
        for a in &node.attributes {
            let name = b.intern(&a.name)?;
            let value = b.value(name, &a.value)?;
            self.attributes.push((name, value));
        }
        let own = &self.attributes[first_attribute as usize..];
        let name = b.field(&node.name, own)?;
        let value = match &node.value {
            Some(v) => Some(b.field(v, own)?),
            None => None,
        };
        let key = match &node.key {
            Some(k) => Some(b.field(k, own)?),
            None => None,
        };
        let role = b.intern(&node.role)?;
        self.records.push(Record {
            parent: node.parent.map_or(u32::MAX, |p| p.0),
            depth: node.depth,
            end: i as u32 + 1,
            child_count: 0,
            role,
            name,
            value,
            key,
            first_attribute,
            states: node.states,
            bounds: node.bounds_px.map(|bp| Bounds {
                edges: [bp.left, bp.top, bp.right, bp.bottom],
                anomalies: bp.anomalies,
            }),
            span: node.span,
            synthetic: node.synthetic,
        });
        Ok(())
    }

    /// Sets the end of node `i`'s source span (a streaming reader knows it
    /// only when the element closes): `end`, or the span's start when
    /// `end` is before it. Nothing happens when `i` has no span.
    pub(crate) fn set_span_end(&mut self, i: usize, end: usize) {
        if let Some(span) = self.records.get_mut(i).and_then(|r| r.span.as_mut()) {
            span.end_byte = end.max(span.start_byte);
        }
    }

    /// The tree of the nodes pushed, with the tree-wide fields of
    /// [`UiTree`].
    pub fn finish(
        self,
        representation: Representation,
        truncated: Option<Truncation>,
        incomplete: bool,
    ) -> CompactTree {
        let CompactBuilder {
            b,
            mut records,
            mut attributes,
            ..
        } = self;
        // Subtree extents: children come after their parent, so a reverse
        // walk sees every descendant before its ancestor.
        let n = records.len();
        for i in (1..n).rev() {
            let p = records[i].parent as usize;
            if p < n {
                let end = records[i].end;
                if end > records[p].end {
                    records[p].end = end;
                }
            }
        }
        let Builder {
            mut text, names, ..
        } = b;
        text.shrink_to_fit();
        attributes.shrink_to_fit();
        records.shrink_to_fit();
        CompactTree {
            representation,
            truncated,
            incomplete,
            records,
            attributes,
            names,
            text,
        }
    }
}

impl CompactTree {
    /// Builds the compact form of `tree`, consuming it: each node's strings
    /// are released as soon as they are copied, so building it holds little
    /// more than the tree itself.
    ///
    /// # Errors
    /// [`CompactError::TooLarge`] past `u32` offsets;
    /// [`CompactError::NotPreorder`] when the tree is not in pre-order with
    /// ids equal to indices and child counts matching the parents (every
    /// parser's output is).
    pub fn from_tree(tree: UiTree) -> Result<Self, CompactError> {
        let UiTree {
            representation,
            nodes,
            truncated,
            incomplete,
        } = tree;
        let mut children: Vec<u32> = Vec::with_capacity(nodes.len());
        let mut builder = CompactBuilder::default();
        for node in nodes {
            children.push(u32::try_from(node.children.len()).unwrap_or(u32::MAX));
            builder.push(node)?;
        }
        let tree = builder.finish(representation, truncated, incomplete);
        if let Some(i) = (0..tree.len()).find(|&i| tree.records[i].child_count != children[i]) {
            return Err(CompactError::NotPreorder { node: i });
        }
        Ok(tree)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when the tree has no nodes.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn str(&self, s: Str) -> &str {
        &self.text[s.start as usize..(s.start + s.len) as usize]
    }

    /// The role of node `i` (panics past [`len`](Self::len)).
    pub fn role(&self, i: usize) -> &str {
        self.str(self.names[self.records[i].role as usize])
    }

    /// The name of node `i`.
    pub fn name(&self, i: usize) -> &str {
        self.str(self.records[i].name)
    }

    /// The value of node `i`.
    pub fn value(&self, i: usize) -> Option<&str> {
        self.records[i].value.map(|s| self.str(s))
    }

    /// The key of node `i`.
    pub fn key(&self, i: usize) -> Option<&str> {
        self.records[i].key.map(|s| self.str(s))
    }

    /// The parent of node `i`.
    pub fn parent(&self, i: usize) -> Option<NodeId> {
        let p = self.records[i].parent;
        (p != u32::MAX).then_some(NodeId(p))
    }

    /// Where node `i` came from in the source text (line, byte span), when
    /// the parser recorded it.
    pub fn span(&self, i: usize) -> Option<SourceSpan> {
        self.records[i].span
    }

    /// Node `i`'s bounds as written (left, top, right, bottom in px) with
    /// their anomaly flags, when it has bounds.
    pub fn bounds(&self, i: usize) -> Option<([i64; 4], &[BoundsAnomaly])> {
        self.records[i]
            .bounds
            .as_ref()
            .map(|b| (b.edges, b.anomalies.as_slice()))
    }

    /// Whether node `i` was made by the parser (not in the source).
    pub fn synthetic(&self, i: usize) -> bool {
        self.records[i].synthetic
    }

    /// The value of node `i`'s attribute `name`, as [`UiNode::attr`].
    pub fn attr(&self, i: usize, name: &str) -> Option<&str> {
        self.attributes(i).find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// How many children node `i` has.
    pub fn child_count(&self, i: usize) -> u32 {
        self.records[i].child_count
    }

    /// One past the index of node `i`'s last descendant: its subtree is
    /// `i .. subtree_end(i)`.
    pub fn subtree_end(&self, i: usize) -> u32 {
        self.records[i].end
    }

    /// The attributes of node `i` as (name, value), in source order.
    pub fn attributes(&self, i: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
        let start = self.records[i].first_attribute as usize;
        let end = self
            .records
            .get(i + 1)
            .map_or(self.attributes.len(), |r| r.first_attribute as usize);
        self.attributes[start..end]
            .iter()
            .map(|(n, v)| (self.str(self.names[*n as usize]), self.str(*v)))
    }

    /// The children of node `i`, in document order.
    pub fn children(&self, i: usize) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(self.records[i].child_count as usize);
        let end = self.records[i].end as usize;
        let mut c = i + 1;
        while c < end {
            out.push(NodeId(c as u32));
            c = (self.records[c].end as usize).max(c + 1);
        }
        out
    }

    /// Node `i` as the [`UiNode`] it was built from, with an empty child
    /// list (see [`child_count`](Self::child_count)).
    pub fn node_without_children(&self, i: usize) -> UiNode {
        let r = &self.records[i];
        UiNode {
            id: NodeId(i as u32),
            parent: self.parent(i),
            children: Vec::new(),
            depth: r.depth,
            role: self.role(i).to_string(),
            name: self.name(i).to_string(),
            value: self.value(i).map(str::to_string),
            key: self.key(i).map(str::to_string),
            attributes: self
                .attributes(i)
                .map(|(name, value)| Attribute {
                    name: name.to_string(),
                    value: value.to_string(),
                })
                .collect(),
            states: r.states.clone(),
            bounds_px: r.bounds.as_ref().map(|b| BoundsPx {
                left: b.edges[0],
                top: b.edges[1],
                right: b.edges[2],
                bottom: b.edges[3],
                anomalies: b.anomalies.clone(),
            }),
            span: r.span,
            synthetic: r.synthetic,
        }
    }

    /// Node `i` exactly as the [`UiNode`] it was built from.
    pub fn node(&self, i: usize) -> UiNode {
        UiNode {
            children: self.children(i),
            ..self.node_without_children(i)
        }
    }

    /// The whole tree back as a [`UiTree`] (equal to the one it was built
    /// from).
    pub fn to_tree(&self) -> UiTree {
        UiTree {
            representation: self.representation,
            nodes: (0..self.len()).map(|i| self.node(i)).collect(),
            truncated: self.truncated.clone(),
            incomplete: self.incomplete,
        }
    }

    /// Bytes held, approximately: the arena, attribute and node records and
    /// their bounds (what keeping the tree costs).
    pub fn heap_bytes(&self) -> usize {
        let anomalies: usize = self
            .records
            .iter()
            .filter_map(|r| r.bounds.as_ref())
            .map(|b| b.anomalies.capacity() * std::mem::size_of::<BoundsAnomaly>())
            .sum();
        self.text.capacity()
            + self.attributes.capacity() * std::mem::size_of::<(u32, Str)>()
            + self.records.capacity() * std::mem::size_of::<Record>()
            + anomalies
            + self.names.capacity() * std::mem::size_of::<Str>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{self, CompactParseError};

    const ANDROID: &str = r#"<hierarchy rotation="0"><node index="0" text="" class="android.widget.FrameLayout" package="app" enabled="true" bounds="[0,0][100,100]"><node index="0" text="Title" resource-id="app:id/title" class="android.widget.TextView" package="app" enabled="true" bounds="[-5,0][100,10]"/><node index="1" text="" class="android.widget.LinearLayout" package="app" enabled="true" bounds="[0,10][100,100]"><node index="0" text="Wi-Fi" checkable="true" checked="true" resource-id="app:id/wifi" class="android.widget.Switch" package="app" enabled="true" bounds="[0,10][100,20]"/><node index="1" text="Name" resource-id="app:id/name" class="android.widget.EditText" package="app" enabled="false" bounds="[0,20][0,30]"/></node><node index="2" text="Bad" class="android.widget.Button" package="app" enabled="true" bounds="[50,50][10,10]"/></node></hierarchy>"#;

    fn roundtrip(tree: &UiTree) {
        let compact = CompactTree::from_tree(tree.clone()).expect("compact");
        assert_eq!(compact.len(), tree.nodes.len());
        for (i, node) in tree.nodes.iter().enumerate() {
            assert_eq!(&compact.node(i), node, "node {i}");
            assert_eq!(compact.child_count(i) as usize, node.children.len());
        }
        assert_eq!(&compact.to_tree(), tree);
    }

    #[test]
    fn every_representation_comes_back_unchanged() {
        roundtrip(
            &parse::parse(ANDROID, Representation::AndroidXml)
                .unwrap()
                .tree,
        );
        let html = r#"<html><body><div id="a" class="x"><p>Hello <b>world</b></p><input type="checkbox" checked bid="12"><select><option selected>One</option><option>Two</option></select></div><iframe srcdoc="<p>inner</p>"></iframe></body></html>"#;
        roundtrip(&parse::parse(html, Representation::Html).unwrap().tree);
        let ax = "RootWebArea 'Shop', focused\n\t[12] link 'Home'\n\t[13] textbox 'Search', value='shoes'\n\t\t[14] StaticText 'x'\n\t[15] checkbox 'Remember', checked='true'\n";
        roundtrip(&parse::parse(ax, Representation::Axtree).unwrap().tree);
        let os = r#"<desktop-frame name="main"><application name="gedit" xmlns:st="https://accessibility.ubuntu.example.org/ns/state"><frame name="doc" st:focused="true">  <text>hello</text></frame></application></desktop-frame>"#;
        roundtrip(&parse::parse(os, Representation::OsXml).unwrap().tree);
        let table = "id\tclass\tname\ttext\tposition\tsize\n1\tframe\tDocs\t\t(0, 0)\t(800, 600)\n2\tpush-button\tOK\t\t(10, 10)\t(50, 20)\n";
        let p = parse::parse(table, Representation::OsTable).unwrap();
        assert!(p.tree.nodes.len() >= 3);
        roundtrip(&p.tree);
    }

    #[test]
    fn subtrees_and_children_follow_the_tree() {
        let tree = parse::parse(ANDROID, Representation::AndroidXml)
            .unwrap()
            .tree;
        let compact = CompactTree::from_tree(tree.clone()).unwrap();
        // The root spans everything; a leaf only itself.
        assert_eq!(compact.subtree_end(0) as usize, tree.nodes.len());
        let list = tree
            .nodes
            .iter()
            .position(|n| n.role.ends_with("LinearLayout"))
            .unwrap();
        assert_eq!(compact.subtree_end(list) as usize, list + 3);
        assert_eq!(compact.children(list), tree.nodes[list].children);
        assert_eq!(
            compact.attributes(list).count(),
            tree.nodes[list].attributes.len()
        );
        assert!(compact.node_without_children(list).children.is_empty());
    }

    #[test]
    fn repeated_strings_are_stored_once() {
        // 2,000 rows with the same package, class and flags: the arena holds
        // each repeated value once, not once per node.
        let mut xml = String::from(
            "<hierarchy><node class=\"android.widget.ListView\" package=\"com.example.app\" bounds=\"[0,0][10,10]\">",
        );
        for i in 0..2_000 {
            xml.push_str(&format!("<node index=\"{i}\" text=\"Row {i}\" class=\"android.widget.TextView\" package=\"com.example.app\" clickable=\"true\" enabled=\"true\" bounds=\"[0,0][10,10]\"/>"));
        }
        xml.push_str("</node></hierarchy>");
        let tree = parse::parse(&xml, Representation::AndroidXml).unwrap().tree;
        let compact = CompactTree::from_tree(tree.clone()).unwrap();
        let unique: usize = (0..2_000)
            .map(|i| format!("Row {i}").len() + i.to_string().len())
            .sum();
        // Row texts and indices, plus well under a byte per node for the rest
        // (the name equals the `text` attribute and is not stored again).
        assert!(
            compact.text.len() < unique + 2_000,
            "{} bytes",
            compact.text.len()
        );
        assert_eq!(compact.to_tree(), tree);
    }

    #[test]
    fn android_dumps_read_straight_into_compact_form_equal_the_parsed_tree() {
        // Warnings (trailing text, malformed bounds, bytes that are not
        // UTF-8) and errors are those of the tree parser.
        let mut odd = ANDROID.replace("[50,50][10,10]", "[50,50]").into_bytes();
        let at = odd.iter().position(|&b| b == b'W').unwrap();
        odd.splice(at..at, [0xED, 0xA0, 0xBD]);
        odd.extend_from_slice(b"\nUI hierchary dumped to: /dev/tty\n");
        for input in [ANDROID.as_bytes(), &odd] {
            let parsed = parse::parse_bytes(input, Representation::AndroidXml).unwrap();
            let (compact, warnings) =
                parse::parse_compact(input, Representation::AndroidXml).unwrap();
            assert_eq!(compact.to_tree(), parsed.tree);
            assert_eq!(warnings, parsed.warnings);
        }
        assert_eq!(
            parse::parse_compact(&odd, Representation::AndroidXml)
                .unwrap()
                .1
                .len(),
            3
        );
        for bad in [
            "ERROR: could not get idle state.",
            "",
            "<hierarchy><node class=\"a\"></hierarchy>",
        ] {
            let want = parse::parse(bad, Representation::AndroidXml).unwrap_err();
            assert_eq!(
                parse::parse_compact(bad.as_bytes(), Representation::AndroidXml).unwrap_err(),
                CompactParseError::Parse(want)
            );
        }
        // Other representations go through the parsed tree.
        let ax = "RootWebArea 'Shop'\n\t[12] link 'Home'\n";
        let (c, _) = parse::parse_compact(ax.as_bytes(), Representation::Axtree).unwrap();
        assert_eq!(
            c.to_tree(),
            parse::parse(ax, Representation::Axtree).unwrap().tree
        );
        assert!(matches!(
            parse::parse_compact(b"x", Representation::Text),
            Err(CompactParseError::Parse(parse::ParseError::NotATree(_)))
        ));
    }

    #[test]
    fn a_tree_out_of_preorder_is_refused() {
        let mut tree = UiTree::with_root(Representation::Html, "document");
        tree.push(Some(NodeId(0)), "p".into());
        tree.nodes[1].id = NodeId(7);
        assert_eq!(
            CompactTree::from_tree(tree).unwrap_err(),
            CompactError::NotPreorder { node: 1 }
        );
        let empty = UiTree {
            representation: Representation::Html,
            nodes: Vec::new(),
            truncated: None,
            incomplete: false,
        };
        let c = CompactTree::from_tree(empty.clone()).unwrap();
        assert!(c.is_empty());
        assert_eq!(c.to_tree(), empty);
        // A node whose parent's subtree is already closed.
        let mut t = UiTree::with_root(Representation::Html, "document");
        let a = t.push(Some(NodeId(0)), "a".into());
        t.push(Some(NodeId(0)), "b".into());
        t.push(Some(a), "late".into());
        assert_eq!(
            CompactTree::from_tree(t).unwrap_err(),
            CompactError::NotPreorder { node: 3 }
        );
    }
}
