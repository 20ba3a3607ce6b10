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
    Shown, eval_inputs, evaluate_observed, predictions_of, shown, shown_text, store_score,
    stored_evaluation, subject_of,
};
use std::sync::Arc;
use worldloom_obs::metrics::Observed;
use worldloom_store::{TrajectoryKey, Workspace};

use crate::tree_rows::{
    self, FIRST_WINDOW_ROWS, ShownTurn, SideTree, TurnKey, TurnTrees, ViewTrees,
    WHOLE_TREE_MAX_NODES, capped_text,
};
use crate::types::*;
use crate::views::{self};

/// `get_turn`: everything the side-by-side panes show for one state.
///
/// The turn's views and evaluation are computed once per change of the
/// workspace: each side is parsed once, and the real and predicted trees
/// aligned and diffed once, for the evaluation and the views together; the
/// stored evaluation of what is shown is reused when there is one (then the
/// previous real observation is neither read nor parsed); and a second call
/// at the same revision answers from the kept turn without parsing at all.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown node or prediction;
/// [`crate::ErrorCode::BadRequest`]; [`crate::ErrorCode::Storage`].
pub fn get_turn(studio: &Studio, req: GetTurnRequest) -> Result<TurnDetail, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let mut ws = studio.lock()?;
    // Only the state's records are read (its observations and predictions,
    // the action into it) and, for transition F1, the real observation
    // before it: the cost does not grow with the state's depth.
    let node_id = NodeId(req.node_id);
    // The prompt of the turn into the state (an AgentWorldBench row's holds
    // the whole state before it) is not shown here: never read.
    let st = ws.load_trajectory_states_without_prompts(key, &[node_id])?;
    let node = live_node(&st, req.node_id)?;
    let edge = node.parent_edge.and_then(|e| st.trajectory.edge(e));
    let shown = shown(node, req.prediction_id.map(PredictionId))?;
    let prediction_id = match &shown {
        Some(Shown::Prediction(p)) => Some(p.id.0),
        _ => None,
    };
    let action_target = edge.and_then(|e| e.action.target());
    // Kept under the prediction shown (what `TurnDetail.prediction_id`
    // says), which tree requests name.
    let turn_key = TurnKey {
        trajectory: key.0,
        node: req.node_id,
        prediction: prediction_id,
        revision: ws.revision()?,
    };
    let turn = match studio.cached_trees(turn_key) {
        Some(turn) => turn,
        None => {
            // The trees kept for the turn shown last are released first, so
            // that two turns' trees are never held together.
            studio.drop_cached_trees();
            let turn = Arc::new(turn_view(
                &mut ws,
                node,
                shown.as_ref(),
                action_target.as_ref(),
                turn_key,
            )?);
            studio.cache_trees(turn.clone());
            turn
        }
    };
    let ShownTurn { views, fidelity } = turn.shown.clone();
    let predicted_kind = shown.as_ref().map(|s| match s {
        Shown::Prediction(_) => ObservationKind::Predicted,
        Shown::Authored(..) => ObservationKind::Authored,
    });
    let (reasoning, raw_output) = match &shown {
        Some(Shown::Prediction(p)) => {
            let parsed = core::parse_model_output(&p.raw_output);
            let reasoning = p
                .reasoning_content
                .clone()
                .or_else(|| (!parsed.reasoning.is_empty()).then_some(parsed.reasoning));
            (reasoning, Some(p.raw_output.clone()))
        }
        _ => (None, None),
    };
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
    // Read on every call: a judge's verdict is stored without a change to
    // the workspace's revision.
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
        action_reasoning: edge
            .and_then(core::formats::agent_reasoning)
            .map(str::to_owned),
        action_target,
        real_meta: node.real.as_ref().map(|r| r.metadata.clone()),
        real_error: node
            .real
            .as_ref()
            .and_then(|r| r.error.as_ref())
            .map(|e| e.message.clone()),
        real_screenshot: node.screenshot.clone(),
        predictions,
        prediction_id,
        chosen_prediction_id: node.chosen_prediction.map(|p| p.0),
        predicted_kind,
        views,
        fidelity: fidelity.map(|mut f| {
            f.judge = judge;
            f
        }),
        reasoning,
        raw_output,
        tokens,
        perturbation,
    })
}

/// Computes a turn's views, trees and evaluation (storing the evaluation's
/// score when none is stored): each side parsed once, the real and shown
/// trees diffed once.
fn turn_view(
    ws: &mut Workspace,
    node: &core::Node,
    shown: Option<&Shown<'_>>,
    target: Option<&core::ActionTarget>,
    turn_key: TurnKey,
) -> Result<TurnTrees, ApiError> {
    let key = TrajectoryKey(turn_key.trajectory);
    let subject = shown.map(subject_of);
    let stored = match (&subject, &node.real) {
        (Some(subject), Some(_)) => stored_evaluation(ws, key, node.id, subject)?,
        _ => None,
    };
    let (pred_text, pred_repr) = shown.map(shown_text).unwrap_or((None, None));
    // The real views, main first; each is parsed at most once.
    let mut reals: Vec<(String, core::Representation, &str)> = Vec::new();
    if let Some(real) = &node.real {
        reals.push(("main".to_string(), real.representation, real.text.as_str()));
        for v in &real.views {
            reals.push((v.name.clone(), v.representation, v.text.as_str()));
        }
    }
    let real_observed: Vec<Observed<'_>> = reals
        .iter()
        .map(|(_, repr, text)| Observed::new(text.as_bytes(), *repr))
        .collect();
    // The real view of the shown observation's representation (the first
    // one): the evaluation compares with it, and the view shows both.
    let view_of_pred = pred_repr.and_then(|r| reals.iter().position(|(_, repr, _)| *repr == r));
    let placed = view_of_pred.filter(|_| pred_text.is_some());
    let mut pred_observed = pred_text
        .zip(pred_repr)
        .map(|(t, r)| Observed::new(t.as_bytes(), r));
    // What the evaluation computes that the view of its pair reuses.
    let mut shared = FromEvaluation::default();
    let mut evaluation = match (stored, shown) {
        (Some(e), _) => Some(e),
        (None, Some(shown)) if node.real.is_some() => {
            // The real observation before, for transition F1: read only to
            // make an evaluation, and released once it is made.
            let prev = match ws.parent_state(key, node.id)? {
                Some(p) if p != node.id => ws.real_observation(key, p)?,
                _ => None,
            };
            let evaluation = eval_inputs(node, shown, prev.as_ref()).map(|inputs| {
                let compared = view_of_pred.unwrap_or(0);
                // A prediction read in another representation than its view's
                // (none of the real views has its own) is parsed for the
                // evaluation alone.
                let own_pred = match view_of_pred {
                    Some(_) => None,
                    None => inputs
                        .pred
                        .map(|t| Observed::new(t.as_bytes(), inputs.repr)),
                };
                let pred = own_pred.as_ref().or(pred_observed.as_ref());
                let real = inputs.real.and(real_observed.get(compared));
                let mut e = evaluate_observed(&inputs, real, pred);
                if placed.is_some() {
                    let both_parsed = |o: Option<&Observed<'_>>| {
                        o.is_some_and(|o| o.is_parsed() && o.parsed().is_ok())
                    };
                    if both_parsed(real) && both_parsed(pred) {
                        shared.diff = e.nodes.take();
                    }
                    shared.line_diff = e.line_diff.clone();
                }
                e
            });
            drop(prev);
            if let (Some(subject), Some(e)) = (&subject, &evaluation) {
                store_score(
                    ws,
                    key,
                    node.id,
                    subject,
                    views::overall(e).map(|x| x.clamp(0.0, 1.0)),
                    e,
                )?;
            }
            evaluation
        }
        _ => None,
    };

    let mut views = Vec::new();
    let mut trees = Vec::new();
    let mut line_ratio_source = None;
    for (i, ((name, repr, text), observed)) in reals.iter().zip(real_observed).enumerate() {
        let with_pred = placed == Some(i);
        // Both sides are parsed whole for their diff; a side with no
        // counterpart straight into the compact form it is kept in.
        let real_side = side(text, observed, with_pred);
        let predicted = match (with_pred, pred_text, pred_observed.take()) {
            (true, Some(t), Some(o)) => Some(side(t, o, true)),
            (_, _, o) => {
                pred_observed = o;
                None
            }
        };
        let computed = if with_pred {
            std::mem::take(&mut shared)
        } else {
            FromEvaluation::default()
        };
        let (view, view_trees) = compared(
            name.clone(),
            *repr,
            Some(real_side),
            predicted,
            target,
            computed,
        )?;
        if with_pred {
            line_ratio_source = Some(views.len());
        }
        views.push(view);
        trees.push(view_trees);
    }
    if let (Some(text), Some(observed)) = (pred_text, pred_observed.take()) {
        let (view, view_trees) = compared(
            "main".into(),
            observed.representation(),
            None,
            Some(side(text, observed, false)),
            target,
            FromEvaluation::default(),
        )?;
        views.insert(0, view);
        trees.insert(0, view_trees);
    }
    // A stored evaluation of an older build holds no line ratio: the view's
    // line diff gives it, else it is computed.
    if let Some(e) = evaluation.as_mut()
        && e.status == obs::metrics::EvalStatus::Scored
        && e.line_diff.is_none()
    {
        let from_view = line_ratio_source.and_then(|i: usize| views[i].line_diff.clone());
        e.line_diff = from_view.or_else(|| {
            let real_text = reals.get(view_of_pred.unwrap_or(0))?.2;
            Some(obs::diff::line_diff(real_text, pred_text?))
        });
    }
    Ok(TurnTrees {
        key: turn_key,
        views: trees,
        shown: ShownTurn {
            views,
            fidelity: evaluation.as_ref().map(views::fidelity),
        },
    })
}

/// A side as parsed: its text, its document (text cut to
/// [`tree_rows::TEXT_MAX_BYTES`], no tree or rows yet) and its tree, when it
/// parsed.
struct ParsedSide<'a> {
    text: &'a str,
    doc: SideDocument,
    tree: Option<SideParse>,
}

/// What the evaluation already computed for a view's pair of sides: the
/// per-node diff of the two trees as parsed, and the line diff of the texts.
#[derive(Default)]
struct FromEvaluation {
    diff: Option<obs::diff::TreeDiff>,
    line_diff: Option<obs::diff::LineDiff>,
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
    real: Option<ParsedSide<'_>>,
    predicted: Option<ParsedSide<'_>>,
    target: Option<&core::ActionTarget>,
    computed: FromEvaluation,
) -> Result<(ComparedView, ViewTrees), ApiError> {
    let (mut real_doc, real_tree, real_text) = match real {
        Some(s) => (Some(s.doc), s.tree, s.text),
        None => (None, None, ""),
    };
    let (mut pred_doc, pred_tree, pred_text) = match predicted {
        Some(s) => (Some(s.doc), s.tree, Some(s.text)),
        None => (None, None, None),
    };
    let diff = match (&real_tree, &pred_tree) {
        (Some(SideParse::Whole(rt)), Some(SideParse::Whole(pt))) => Some(
            computed
                .diff
                .unwrap_or_else(|| obs::diff::diff_trees(rt, pt).1),
        ),
        _ => None,
    };
    let small = |t: &Option<SideParse>| t.as_ref().is_none_or(|t| t.len() <= WHOLE_TREE_MAX_NODES);
    let both_small = small(&real_tree) && small(&pred_tree);
    let cut = [&real_doc, &pred_doc]
        .iter()
        .any(|d| d.as_ref().is_some_and(|d| d.text_bytes.is_some()));
    let line_diff = pred_text.filter(|_| real_doc.is_some() && !cut).map(|p| {
        computed
            .line_diff
            .unwrap_or_else(|| obs::diff::line_diff(real_text, p))
    });
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
/// ([`obs::parse_compact`]: same tree, warnings and errors). A side already
/// parsed (for the evaluation) is not parsed again.
fn side<'a>(text: &'a str, observed: Observed<'_>, for_diff: bool) -> ParsedSide<'a> {
    let representation = observed.representation();
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
            text,
            doc: doc(None, &[]),
            tree: None,
        };
    }
    if for_diff {
        observed.parsed();
    }
    let parsed = match observed.into_parsed() {
        Some(parsed) => parsed
            .map(|p| (SideParse::Whole(p.tree), p.warnings))
            .map_err(|e| e.to_string()),
        None => obs::parse_compact(text.as_bytes(), representation)
            .map(|(t, w)| (SideParse::Compact(t), w))
            .map_err(|e| e.to_string()),
    };
    match parsed {
        Ok((tree, warnings)) => ParsedSide {
            text,
            doc: doc(None, &warnings),
            tree: Some(tree),
        },
        Err(e) => ParsedSide {
            text,
            doc: doc(Some(e), &[]),
            tree: None,
        },
    }
}

#[cfg(test)]
fn parse_side(text: &str, representation: core::Representation, for_diff: bool) -> ParsedSide<'_> {
    side(
        text,
        Observed::new(text.as_bytes(), representation),
        for_diff,
    )
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
