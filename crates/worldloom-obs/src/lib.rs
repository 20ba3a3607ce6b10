//! Observation trees: one UI tree for every GUI representation, tree
//! alignment and diff, and simulation-fidelity metrics.
//!
//! - [`tree`]: the arena [`UiTree`] / [`UiNode`] shared by all formats.
//! - [`parse`]: parsers for `html`, `axtree`, `os-xml`, `os-table` and
//!   `android-xml`, returning the tree plus warnings.
//! - [`compact`]: a read-only compact form of a tree (one string arena,
//!   interned names, `u32` indices) for keeping large trees in memory.
//! - [`align`]: real ↔ predicted node alignment (stable keys, then role +
//!   name signatures with an LCS over children).
//! - [`diff`]: per-node statuses on both sides and line diffs.
//! - [`target`]: where an action landed (the node a bid, a point or an
//!   element reference names).
//! - [`findings`]: the error taxonomy of one turn (invented, forgotten,
//!   attribute, text, moved, stale, over-change, diverged, anchor), read
//!   from the evaluation's diff, transition detail and anchors.
//! - [`metrics`]: exact match, visible-text F1, node F1, attribute accuracy,
//!   transition F1 and domain anchors (formulas in `docs/metrics.md`).

pub mod align;
pub mod compact;
pub mod diff;
pub mod findings;
pub mod metrics;
pub mod parse;
pub mod target;
pub mod tree;

pub use compact::{CompactBuilder, CompactError, CompactTree};
pub use parse::{
    CompactParseError, ParseError, ParseWarning, Parsed, WarningKind, parse, parse_bytes,
    parse_compact,
};
pub use tree::{
    Attribute, BoundsAnomaly, BoundsPx, NodeId, NodeStates, SourceSpan, Truncation,
    TruncationReason, UiNode, UiTree,
};
