//! Aligning a real and a predicted [`UiTree`]: which predicted node stands
//! for which real node.
//!
//! Two stages, neither recursive:
//! 1. **Stable keys.** Nodes whose key (`bid`, `resource-id`, HTML `id`)
//!    occurs exactly once in each tree are paired. OS accessibility trees
//!    have no key: AT-SPI gives no element identity, and a path of ancestor
//!    names would change for a whole subtree when one window title differs.
//! 2. **Structure.** Walking the real tree in document order, the children
//!    of each aligned pair are aligned as sequences: a longest common
//!    subsequence over `role + name` signatures (Myers' diff, via the
//!    `similar` crate); then leftover children whose signature is left over
//!    on both sides are paired as reordered ("moved"); then, inside each
//!    gap between LCS runs, leftover children with the same role are paired
//!    in order (they become "changed"). An inserted node therefore leaves
//!    later siblings aligned instead of shifting each of them one place
//!    (the tree-diff framing of
//!    Zhang & Shasha 1989 restricted to order-preserving top-down mappings,
//!    as in Chawathe et al. 1996 "Change detection in hierarchically
//!    structured information").
//!
//! Roots are always paired.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::{Deserialize, Serialize};
use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::tree::{NodeId, UiNode, UiTree, collapse_whitespace};

/// How a pair was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// Both roots.
    Root,
    /// The same unique stable key.
    Key,
    /// Same role and name in the LCS of their parents' children.
    Signature,
    /// Same role and name, outside the LCS of their parents' children
    /// (reordered among siblings; reported as moved).
    Reordered,
    /// Same role, left over in the same gap between LCS runs.
    Role,
}

/// A node alignment between two trees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alignment {
    /// For each real node (by index), its predicted counterpart.
    pub real_to_pred: Vec<Option<NodeId>>,
    /// For each predicted node (by index), its real counterpart.
    pub pred_to_real: Vec<Option<NodeId>>,
    /// For each real node, how it was matched (`None` when unmatched).
    pub matched_by: Vec<Option<MatchedBy>>,
    /// For each real node matched by key or as reordered: true when it sits
    /// in a different place (its parent is not aligned with the
    /// counterpart's parent, or it was reordered among its siblings).
    pub moved: Vec<bool>,
}

impl Alignment {
    /// Number of aligned pairs, roots included.
    pub fn pair_count(&self) -> usize {
        self.real_to_pred.iter().filter(|p| p.is_some()).count()
    }

    /// Aligned pairs `(real, pred)` in real document order.
    pub fn pairs(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        self.real_to_pred
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (NodeId(u32::try_from(i).unwrap_or(u32::MAX)), p)))
    }
}

/// The `role + name` signature used for structural matching (name with
/// whitespace collapsed), as a 64-bit hash.
pub fn signature(node: &UiNode) -> u64 {
    let mut h = DefaultHasher::new();
    0u8.hash(&mut h);
    node.role.hash(&mut h);
    collapse_whitespace(&node.name).hash(&mut h);
    h.finish()
}

fn token(tag: u8, value: u64) -> u64 {
    let mut h = DefaultHasher::new();
    tag.hash(&mut h);
    value.hash(&mut h);
    h.finish()
}

/// Aligns `real` with `pred`. Cost: linear in the trees plus one sequence
/// diff per aligned parent (Myers, O((n + m)·d) for n and m children and d
/// differences).
pub fn align(real: &UiTree, pred: &UiTree) -> Alignment {
    let mut al = Alignment {
        real_to_pred: vec![None; real.len()],
        pred_to_real: vec![None; pred.len()],
        matched_by: vec![None; real.len()],
        moved: vec![false; real.len()],
    };
    if real.is_empty() || pred.is_empty() {
        return al;
    }
    set(&mut al, real.root(), pred.root(), MatchedBy::Root);

    // Stage 1: unique keys.
    let real_keys = unique_keys(real);
    let pred_keys = unique_keys(pred);
    for (k, r) in &real_keys {
        if let Some(p) = pred_keys.get(k) {
            set(&mut al, *r, *p, MatchedBy::Key);
        }
    }
    // Key pairs whose parents are not aligned with each other are moved;
    // decided after stage 2, when parents are known.

    // Stage 2: structure, top-down in real document order (parents first).
    for r in 0..real.len() {
        let r_id = NodeId(u32::try_from(r).unwrap_or(u32::MAX));
        let Some(p_id) = al.real_to_pred[r] else {
            continue;
        };
        align_children(real, pred, r_id, p_id, &mut al);
    }

    for r in 0..real.len() {
        if al.matched_by[r] == Some(MatchedBy::Key)
            && let Some(p) = al.real_to_pred[r]
        {
            let rp = real.nodes[r].parent;
            let pp = pred.node(p).parent;
            let parents_aligned = match (rp, pp) {
                (Some(a), Some(b)) => al.real_to_pred[a.index()] == Some(b),
                (None, None) => true,
                _ => false,
            };
            if !parents_aligned {
                al.moved[r] = true;
            }
        }
    }
    al
}

/// Keys that occur exactly once in a tree (root excluded).
fn unique_keys(t: &UiTree) -> HashMap<&str, NodeId> {
    let mut count: HashMap<&str, (usize, NodeId)> = HashMap::new();
    for n in t.iter().skip(1) {
        if let Some(k) = n.key.as_deref() {
            let e = count.entry(k).or_insert((0, n.id));
            e.0 += 1;
        }
    }
    count
        .into_iter()
        .filter(|(_, (c, _))| *c == 1)
        .map(|(k, (_, id))| (k, id))
        .collect()
}

fn set(al: &mut Alignment, r: NodeId, p: NodeId, by: MatchedBy) {
    al.real_to_pred[r.index()] = Some(p);
    al.pred_to_real[p.index()] = Some(r);
    al.matched_by[r.index()] = Some(by);
}

fn align_children(real: &UiTree, pred: &UiTree, r: NodeId, p: NodeId, al: &mut Alignment) {
    let rc = &real.node(r).children;
    let pc = &pred.node(p).children;
    if rc.is_empty() || pc.is_empty() {
        return;
    }
    let real_tokens: Vec<u64> = rc
        .iter()
        .map(|c| match al.real_to_pred[c.index()] {
            Some(q) if pred.node(q).parent == Some(p) => token(1, u64::from(c.0)),
            Some(_) => token(2, u64::from(c.0)),
            None => signature(real.node(*c)),
        })
        .collect();
    let pred_tokens: Vec<u64> = pc
        .iter()
        .map(|c| match al.pred_to_real[c.index()] {
            Some(q) if real.node(q).parent == Some(r) => token(1, u64::from(q.0)),
            Some(_) => token(3, u64::from(c.0)),
            None => signature(pred.node(*c)),
        })
        .collect();
    let ops = capture_diff_slices(Algorithm::Myers, &real_tokens, &pred_tokens);
    let mut in_lcs = vec![false; rc.len()];
    let mut gap: Option<(usize, usize, usize, usize)> = None; // old start/end, new start/end
    let mut gaps: Vec<(usize, usize, usize, usize)> = Vec::new();
    let flush = |gap: &mut Option<(usize, usize, usize, usize)>,
                 gaps: &mut Vec<(usize, usize, usize, usize)>| {
        if let Some(g) = gap.take() {
            gaps.push(g);
        }
    };
    for op in &ops {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                flush(&mut gap, &mut gaps);
                for k in 0..len {
                    let a = rc[old_index + k];
                    let b = pc[new_index + k];
                    in_lcs[old_index + k] = true;
                    if al.real_to_pred[a.index()].is_none() && al.pred_to_real[b.index()].is_none()
                    {
                        set(al, a, b, MatchedBy::Signature);
                    }
                }
            }
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => {
                let g = gap.get_or_insert((old_index, old_index, new_index, new_index));
                g.1 = g.1.max(old_index + old_len);
                g.2 = g.2.min(new_index);
                g.3 = g.3.max(new_index);
            }
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                let g = gap.get_or_insert((old_index, old_index, new_index, new_index));
                g.0 = g.0.min(old_index);
                g.1 = g.1.max(old_index);
                g.3 = g.3.max(new_index + new_len);
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let g = gap.get_or_insert((old_index, old_index, new_index, new_index));
                g.1 = g.1.max(old_index + old_len);
                g.3 = g.3.max(new_index + new_len);
            }
        }
    }
    flush(&mut gap, &mut gaps);
    // Reordered siblings: a child left out of the LCS whose exact `role +
    // name` signature is also left over on the other side (in another gap)
    // is the same node in another place, e.g. two swapped icons. Paired
    // before the per-gap role pairing so that pairing cannot split them.
    pair_reordered(real, pred, rc, pc, al);
    for (os, oe, ns, ne) in gaps {
        pair_by_role(real, pred, &rc[os..oe], &pc[ns..ne], al);
    }
    // Key- or signature-matched siblings that fell outside the LCS were
    // reordered.
    for (k, c) in rc.iter().enumerate() {
        if !in_lcs[k]
            && matches!(
                al.matched_by[c.index()],
                Some(MatchedBy::Key | MatchedBy::Reordered)
            )
            && al.real_to_pred[c.index()].is_some_and(|q| pred.node(q).parent == Some(p))
        {
            al.moved[c.index()] = true;
        }
    }
}

/// Pairs unmatched real and predicted children with the same signature, in
/// order (the first unmatched real child with signature s takes the first
/// unmatched predicted child with s).
fn pair_reordered(real: &UiTree, pred: &UiTree, rc: &[NodeId], pc: &[NodeId], al: &mut Alignment) {
    let mut free: HashMap<u64, std::collections::VecDeque<NodeId>> = HashMap::new();
    for b in pc {
        if al.pred_to_real[b.index()].is_none() {
            free.entry(signature(pred.node(*b)))
                .or_default()
                .push_back(*b);
        }
    }
    if free.is_empty() {
        return;
    }
    for a in rc {
        if al.real_to_pred[a.index()].is_some() {
            continue;
        }
        if let Some(b) = free
            .get_mut(&signature(real.node(*a)))
            .and_then(|q| q.pop_front())
        {
            set(al, *a, b, MatchedBy::Reordered);
        }
    }
}

/// Pairs unmatched children with the same role, in order, inside one gap.
fn pair_by_role(real: &UiTree, pred: &UiTree, rs: &[NodeId], ps: &[NodeId], al: &mut Alignment) {
    let mut next = 0usize;
    for a in rs {
        if al.real_to_pred[a.index()].is_some() {
            continue;
        }
        let role = &real.node(*a).role;
        if let Some(off) = ps[next..]
            .iter()
            .position(|b| al.pred_to_real[b.index()].is_none() && pred.node(*b).role == *role)
        {
            let b = ps[next + off];
            set(al, *a, b, MatchedBy::Role);
            next += off + 1;
        }
    }
}
