//! `get_turn`: one state side by side, real and shown, with parsed trees,
//! diffs, metrics, judge scores and tokens.

use worldloom_core as core;
use worldloom_core::{NodeId, PredictionId};
use worldloom_obs as obs;

use crate::Studio;
use crate::branches::live_node;
use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::scoring::{
    METRICS_PRODUCER, Shown, evaluate, predictions_of, shown, shown_text, store_score, subject_of,
};
use std::sync::Arc;

use crate::tree_rows::{
    self, FIRST_WINDOW_ROWS, SideTree, TurnKey, TurnTrees, ViewTrees, WHOLE_TREE_MAX_NODES,
    capped_text,
};
use crate::types::*;
use crate::views::{self};

/// `get_turn`: everything the side-by-side panes show for one state.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown node or prediction;
/// [`crate::ErrorCode::BadRequest`]; [`crate::ErrorCode::Storage`].
pub fn get_turn(studio: &Studio, req: GetTurnRequest) -> Result<TurnDetail, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let mut ws = studio.lock()?;
    // The trees kept for the turn shown last are rebuilt below; released
    // first, so that two turns' trees are never held together.
    studio.drop_cached_trees();
    // Only the state's records are read (its observations and predictions,
    // the action into it) and, for transition F1, the real observation
    // before it: the cost does not grow with the state's depth.
    let node_id = NodeId(req.node_id);
    // The prompt of the turn into the state (an AgentWorldBench row's holds
    // the whole state before it) is not shown here: never read.
    let mut st = ws.load_trajectory_states_without_prompts(key, &[node_id])?;
    // The real observation before is read for transition F1 only, so only
    // when something is shown to score, and released once scored, before
    // this state's trees are parsed.
    let scored = shown(
        live_node(&st, req.node_id)?,
        req.prediction_id.map(PredictionId),
    )?
    .is_some();
    let before = match ws.parent_state(key, node_id)? {
        Some(p) if scored && p != node_id => Some(p),
        _ => None,
    };
    if let Some(p) = before {
        let real = ws.real_observation(key, p)?;
        if let Some(n) = st.trajectory.node_mut(p) {
            n.real = real;
        }
    }
    let evaluation = {
        let node = live_node(&st, req.node_id)?;
        let shown = shown(node, req.prediction_id.map(PredictionId))?;
        shown.as_ref().and_then(|s| evaluate(&st, node, s))
    };
    if let Some(n) = before.and_then(|p| st.trajectory.node_mut(p)) {
        n.real = None;
    }
    let node = live_node(&st, req.node_id)?;
    let edge = node.parent_edge.and_then(|e| st.trajectory.edge(e));
    let shown = shown(node, req.prediction_id.map(PredictionId))?;
    if let (Some(s), Some(e)) = (&shown, &evaluation) {
        let subject = subject_of(s);
        let have = ws
            .metric_results(key, node.id)?
            .iter()
            .any(|r| r.subject == subject && r.producer == METRICS_PRODUCER);
        if !have {
            store_score(
                &mut ws,
                key,
                node.id,
                &subject,
                views::overall(e).map(|x| x.clamp(0.0, 1.0)),
                e,
            )?;
        }
    }
    let (pred_text, pred_repr) = shown.as_ref().map(shown_text).unwrap_or((None, None));
    let action_target = edge.and_then(|e| e.action.target());

    let mut views = Vec::new();
    let mut trees = Vec::new();
    let mut pred_placed = false;
    if let Some(real) = &node.real {
        let mut reals: Vec<(String, core::Representation, &str)> =
            vec![("main".to_string(), real.representation, real.text.as_str())];
        for v in &real.views {
            reals.push((v.name.clone(), v.representation, v.text.as_str()));
        }
        for (name, repr, text) in reals {
            let takes_prediction = !pred_placed && pred_repr == Some(repr);
            let view_pred_text = pred_text.filter(|_| takes_prediction);
            // Both sides are parsed whole for their diff; a side with no
            // counterpart straight into the compact form it is kept in.
            let real_side = parse_side(text, repr, view_pred_text.is_some());
            let predicted = view_pred_text.map(|t| parse_side(t, repr, true));
            pred_placed |= takes_prediction;
            let (view, view_trees) = compared(
                name,
                repr,
                Some(real_side),
                predicted,
                text,
                view_pred_text,
                action_target.as_ref(),
            )?;
            views.push(view);
            trees.push(view_trees);
        }
    }
    if !pred_placed && let (Some(text), Some(repr)) = (pred_text, pred_repr) {
        let (view, view_trees) = compared(
            "main".into(),
            repr,
            None,
            Some(parse_side(text, repr, false)),
            "",
            None,
            action_target.as_ref(),
        )?;
        views.insert(0, view);
        trees.insert(0, view_trees);
    }
    let predicted_kind = shown.as_ref().map(|s| match s {
        Shown::Prediction(_) => ObservationKind::Predicted,
        Shown::Authored(..) => ObservationKind::Authored,
    });
    let (prediction_id, reasoning, raw_output) = match &shown {
        Some(Shown::Prediction(p)) => {
            let parsed = core::parse_model_output(&p.raw_output);
            let reasoning = p
                .reasoning_content
                .clone()
                .or_else(|| (!parsed.reasoning.is_empty()).then_some(parsed.reasoning));
            (Some(p.id.0), reasoning, Some(p.raw_output.clone()))
        }
        _ => (None, None, None),
    };
    // Kept under the prediction shown (what `TurnDetail.prediction_id`
    // says), which tree requests name.
    studio.cache_trees(Arc::new(TurnTrees {
        key: TurnKey {
            trajectory: key.0,
            node: req.node_id,
            prediction: prediction_id,
            revision: ws.revision()?,
        },
        views: trees,
    }));
    let predictions = predictions_of(&ws, &st, node)?;
    let tokens = match &shown {
        Some(Shown::Prediction(p)) => p
            .extra
            .get(views::TOKENS_FIELD)
            .and_then(|v| serde_json::from_value::<Vec<TokenView>>(v.clone()).ok())
            .map(views::stored_observation_tokens),
        _ => None,
    };
    let perturbation = match edge {
        Some(e) => ws.perturbations(key)?.remove(&e.id),
        None => None,
    };
    // Judge scores: a stored `judge:<model>` result for what is shown, else
    // the fields of a judged predictions file the prediction came from.
    let judge = match &shown {
        Some(s) => {
            let subject = subject_of(s);
            let stored = ws.metric_results(key, node.id)?;
            let from_store = stored
                .iter()
                .rev()
                .filter(|r| r.subject == subject)
                .find_map(|r| {
                    let model = r.producer.strip_prefix("judge:")?;
                    views::judge_scores(r.result.as_object()?, Some(model))
                });
            from_store.or_else(|| match s {
                Shown::Prediction(p) => views::judge_scores(&p.extra, None),
                Shown::Authored(..) => None,
            })
        }
        None => None,
    };
    Ok(TurnDetail {
        trajectory_id: key.0.to_string(),
        turn: st.trajectory.turn_of(node.id).unwrap_or(0) as u32,
        node_id: node.id.0,
        edge_id: edge.map(|e| e.id.0),
        action: edge.map(|e| views::action(&e.action)),
        action_target,
        real_meta: node.real.as_ref().map(|r| r.metadata.clone()),
        real_error: node
            .real
            .as_ref()
            .and_then(|r| r.error.as_ref())
            .map(|e| e.message.clone()),
        predictions,
        prediction_id,
        chosen_prediction_id: node.chosen_prediction.map(|p| p.0),
        predicted_kind,
        views,
        fidelity: evaluation.as_ref().map(|e| {
            let mut f = views::fidelity(e);
            f.judge = judge;
            f
        }),
        reasoning,
        raw_output,
        tokens,
        perturbation,
    })
}

/// A side as parsed: its document (text cut to [`tree_rows::TEXT_MAX_BYTES`], no tree
/// or rows yet) and its tree, when it parsed.
struct ParsedSide {
    doc: SideDocument,
    tree: Option<SideParse>,
}

/// A side's tree: whole when it is diffed against the other side, else
/// already in the compact form it is kept in.
enum SideParse {
    Whole(obs::tree::UiTree),
    Compact(obs::CompactTree),
}

impl SideParse {
    fn len(&self) -> usize {
        match self {
            SideParse::Whole(t) => t.nodes.len(),
            SideParse::Compact(t) => t.len(),
        }
    }

    fn to_whole(&self) -> obs::tree::UiTree {
        match self {
            SideParse::Whole(t) => t.clone(),
            SideParse::Compact(t) => t.to_tree(),
        }
    }

    fn into_kept(self) -> Result<SideTree, ApiError> {
        match self {
            SideParse::Whole(t) => SideTree::new(t),
            SideParse::Compact(tree) => Ok(SideTree { tree }),
        }
    }
}

/// Builds one compared view and keeps its trees: each side's tree goes whole
/// into the view only when small, its first window of rows always; the
/// per-node diff list only when both trees are small (rows carry their
/// marks), the line diff only when neither text was cut. Each side with a
/// tree says where `target` (the turn's action's element) landed in it.
fn compared(
    name: String,
    repr: core::Representation,
    real: Option<ParsedSide>,
    predicted: Option<ParsedSide>,
    real_text: &str,
    pred_text: Option<&str>,
    target: Option<&core::ActionTarget>,
) -> Result<(ComparedView, ViewTrees), ApiError> {
    let (mut real_doc, real_tree) = match real {
        Some(s) => (Some(s.doc), s.tree),
        None => (None, None),
    };
    let (mut pred_doc, pred_tree) = match predicted {
        Some(s) => (Some(s.doc), s.tree),
        None => (None, None),
    };
    let diff = match (&real_tree, &pred_tree) {
        (Some(SideParse::Whole(rt)), Some(SideParse::Whole(pt))) => {
            Some(obs::diff::diff_trees(rt, pt).1)
        }
        _ => None,
    };
    let small = |t: &Option<SideParse>| t.as_ref().is_none_or(|t| t.len() <= WHOLE_TREE_MAX_NODES);
    let both_small = small(&real_tree) && small(&pred_tree);
    let cut = [&real_doc, &pred_doc]
        .iter()
        .any(|d| d.as_ref().is_some_and(|d| d.text_bytes.is_some()));
    let line_diff = pred_text
        .filter(|_| real_doc.is_some() && !cut)
        .map(|p| obs::diff::line_diff(real_text, p));
    let diff_view = diff.as_ref().filter(|_| both_small).map(views::tree_diff);
    // A small tree also travels whole; every tree is then kept compact (the
    // parsed one is released as it is copied).
    for (doc, tree) in [(&mut real_doc, &real_tree), (&mut pred_doc, &pred_tree)] {
        if let (Some(doc), Some(tree)) = (doc.as_mut(), tree)
            && tree.len() <= WHOLE_TREE_MAX_NODES
        {
            doc.tree = Some(tree.to_whole());
        }
    }
    let trees = ViewTrees {
        real: real_tree.map(SideParse::into_kept).transpose()?,
        predicted: pred_tree.map(SideParse::into_kept).transpose()?,
        diff,
    };
    for (side, doc) in [
        (PaneSide::Real, &mut real_doc),
        (PaneSide::Predicted, &mut pred_doc),
    ] {
        let Some(doc) = doc.as_mut() else {
            continue;
        };
        let Some(kept) = trees.tree(side) else {
            continue;
        };
        doc.landing = target.map(|t| landing(&kept.tree, t, side));
        doc.rows = Some(tree_rows::window(
            &trees,
            side,
            0,
            FIRST_WINDOW_ROWS,
            &[],
            None,
        )?);
    }
    Ok((
        ComparedView {
            representation: repr,
            name,
            real: real_doc,
            predicted: pred_doc,
            diff: diff_view,
            line_diff,
        },
        trees,
    ))
}

/// Where `target` landed in one side's tree, as the panes show it.
fn landing(tree: &obs::CompactTree, target: &core::ActionTarget, side: PaneSide) -> Landing {
    match obs::target::land_compact(tree, target) {
        Ok(id) => {
            let i = id.0 as usize;
            let mut path = Vec::new();
            let mut up = tree.parent(i);
            while let Some(p) = up {
                path.push(p.0);
                up = tree.parent(p.0 as usize);
            }
            path.reverse();
            let text = if tree.name(i).is_empty() {
                tree.value(i).unwrap_or("")
            } else {
                tree.name(i)
            };
            let role = tree.role(i);
            let label = if text.is_empty() {
                role.to_string()
            } else {
                let cut: String = text.chars().take(80).collect();
                let more = if cut.len() < text.len() { "…" } else { "" };
                format!("{role} \"{cut}{more}\"")
            };
            let span = tree.span(i);
            Landing {
                node_id: Some(id.0),
                path,
                line: span.map(|s| s.line),
                span,
                label: Some(label),
                reason: None,
            }
        }
        Err(why) => Landing {
            node_id: None,
            path: Vec::new(),
            line: None,
            span: None,
            label: None,
            reason: Some(why.describe(match side {
                PaneSide::Real => "real",
                PaneSide::Predicted => "predicted",
            })),
        },
    }
}

/// One side of a compared view, parsed when the representation is a tree:
/// whole when `for_diff`, else straight into the compact form
/// ([`obs::parse_compact`]: same tree, warnings and errors).
fn parse_side(text: &str, representation: core::Representation, for_diff: bool) -> ParsedSide {
    let (shown, text_bytes) = capped_text(text);
    let doc = |parse_error, warnings: &[obs::ParseWarning]| SideDocument {
        text: shown.clone(),
        text_bytes,
        tree: None,
        rows: None,
        parse_error,
        warnings: warnings.iter().map(views::side_warning).collect(),
        landing: None,
    };
    if !representation.is_tree() {
        return ParsedSide {
            doc: doc(None, &[]),
            tree: None,
        };
    }
    let parsed = if for_diff {
        obs::parse(text, representation)
            .map(|p| (SideParse::Whole(p.tree), p.warnings))
            .map_err(|e| e.to_string())
    } else {
        obs::parse_compact(text.as_bytes(), representation)
            .map(|(t, w)| (SideParse::Compact(t), w))
            .map_err(|e| e.to_string())
    };
    match parsed {
        Ok((tree, warnings)) => ParsedSide {
            doc: doc(None, &warnings),
            tree: Some(tree),
        },
        Err(e) => ParsedSide {
            doc: doc(Some(e), &[]),
            tree: None,
        },
    }
}

/// The trees of the turn a tree request names: the studio's cached ones when
/// they were read at the workspace's current revision, else `get_turn`'s
/// (which caches them).
fn turn_trees(
    studio: &Studio,
    trajectory_id: &str,
    node_id: u32,
    prediction_id: Option<u32>,
) -> Result<Arc<TurnTrees>, ApiError> {
    let key = parse_trajectory_id(trajectory_id)?;
    let turn_key = |revision| TurnKey {
        trajectory: key.0,
        node: node_id,
        prediction: prediction_id,
        revision,
    };
    let revision = studio.lock()?.revision()?;
    if let Some(t) = studio.cached_trees(turn_key(revision)) {
        return Ok(t);
    }
    get_turn(
        studio,
        GetTurnRequest {
            trajectory_id: trajectory_id.to_string(),
            node_id,
            prediction_id,
        },
    )?;
    let revision = studio.lock()?.revision()?;
    studio
        .cached_trees(turn_key(revision))
        .ok_or_else(|| ApiError::internal("the turn's trees changed while being read; retry"))
}

/// `get_tree_rows`: a window of the visible rows of one side's tree of a
/// turn, with their diff marks.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown node, prediction, view or a
/// side without a parsed tree; [`crate::ErrorCode::BadRequest`] for a
/// `reveal` node not in the tree; [`crate::ErrorCode::Storage`].
pub fn get_tree_rows(studio: &Studio, req: GetTreeRowsRequest) -> Result<TreeWindow, ApiError> {
    let trees = turn_trees(studio, &req.trajectory_id, req.node_id, req.prediction_id)?;
    let (view, _) = trees.view(req.view_index, req.side)?;
    tree_rows::window(
        view,
        req.side,
        req.offset,
        req.limit,
        &req.collapsed,
        req.reveal,
    )
}

/// `search_tree`: the nodes of one side's tree that match a query.
///
/// # Errors
/// As [`get_tree_rows`].
pub fn search_tree(
    studio: &Studio,
    req: SearchTreeRequest,
) -> Result<SearchTreeResponse, ApiError> {
    let trees = turn_trees(studio, &req.trajectory_id, req.node_id, req.prediction_id)?;
    let (_, side) = trees.view(req.view_index, req.side)?;
    Ok(tree_rows::search(&side.tree, &req.query, req.limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_carries_its_parse_warnings_with_line_and_byte() {
        // adb appends a status line after the root element.
        let text = "<hierarchy rotation=\"0\"><node class=\"android.widget.FrameLayout\" bounds=\"[0,0][1080,2400]\"/></hierarchy>\nUI hierchary dumped to: /dev/tty\n";
        let whole = parse_side(text, core::Representation::AndroidXml, true);
        let doc = parse_side(text, core::Representation::AndroidXml, false);
        assert!(matches!(whole.tree, Some(SideParse::Whole(_))));
        assert!(matches!(doc.tree, Some(SideParse::Compact(_))));
        assert_eq!(whole.doc, doc.doc);
        let tree = doc.tree;
        let doc = doc.doc;
        assert!(tree.is_some());
        assert_eq!(doc.parse_error, None);
        let parsed = obs::parse(text, core::Representation::AndroidXml).unwrap();
        assert!(!parsed.warnings.is_empty());
        assert_eq!(doc.warnings.len(), parsed.warnings.len());
        let w = &doc.warnings[0];
        assert_eq!(w.kind, "trailing_text");
        // Right after `</hierarchy>`, on the first line.
        assert_eq!((w.line, w.byte), (1, 104));
        assert_eq!(w.line, parsed.warnings[0].line);
        assert_eq!(w.byte, parsed.warnings[0].byte);
        assert_eq!(w.message, parsed.warnings[0].message);

        // A clean side has none, and its JSON has no `warnings` field.
        let clean = parse_side(
            "<hierarchy><node bounds=\"[0,0][10,10]\"/></hierarchy>",
            core::Representation::AndroidXml,
            false,
        )
        .doc;
        assert!(clean.warnings.is_empty());
        let json = serde_json::to_value(&clean).unwrap();
        assert!(json.get("warnings").is_none());
        // Texts that are not trees carry none.
        assert!(
            parse_side("plain text", core::Representation::Text, false)
                .doc
                .warnings
                .is_empty()
        );
    }
}
