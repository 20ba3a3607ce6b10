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
    // Only the state and the one before it are read (its observations and
    // predictions, the action into it, the previous real observation for
    // transition F1): the cost does not grow with the state's depth.
    let node_id = NodeId(req.node_id);
    let mut states = vec![node_id];
    states.extend(ws.parent_state(key, node_id)?);
    let st = ws.load_trajectory_states(key, &states)?;
    let node = live_node(&st, req.node_id)?;
    let edge = node.parent_edge.and_then(|e| st.trajectory.edge(e));
    let shown = shown(node, req.prediction_id.map(PredictionId))?;
    let evaluation = shown.as_ref().and_then(|s| evaluate(&st, node, s));
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

    let mut views = Vec::new();
    let mut pred_placed = false;
    if let Some(real) = &node.real {
        let mut reals: Vec<(String, core::Representation, &str)> =
            vec![("main".to_string(), real.representation, real.text.as_str())];
        for v in &real.views {
            reals.push((v.name.clone(), v.representation, v.text.as_str()));
        }
        for (name, repr, text) in reals {
            let real_side = side(text, repr);
            let takes_prediction = !pred_placed && pred_repr == Some(repr);
            let predicted = if takes_prediction {
                pred_text.map(|t| side(t, repr))
            } else {
                None
            };
            pred_placed |= takes_prediction;
            views.push(compared(
                name,
                repr,
                Some(real_side),
                predicted,
                text,
                pred_text.filter(|_| takes_prediction),
            ));
        }
    }
    if !pred_placed && let (Some(text), Some(repr)) = (pred_text, pred_repr) {
        views.insert(
            0,
            compared("main".into(), repr, None, Some(side(text, repr)), "", None),
        );
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

fn compared(
    name: String,
    repr: core::Representation,
    real: Option<SideDocument>,
    predicted: Option<SideDocument>,
    real_text: &str,
    pred_text: Option<&str>,
) -> ComparedView {
    // The sides hold the `worldloom-obs` trees themselves: align those.
    let diff = match (
        real.as_ref().and_then(|r| r.tree.as_ref()),
        predicted.as_ref().and_then(|p| p.tree.as_ref()),
    ) {
        (Some(rt), Some(pt)) => Some(views::tree_diff(&obs::diff::diff_trees(rt, pt).1)),
        _ => None,
    };
    let line_diff = pred_text
        .filter(|_| real.is_some())
        .map(|p| obs::diff::line_diff(real_text, p));
    ComparedView {
        representation: repr,
        name,
        real,
        predicted,
        diff,
        line_diff,
    }
}

/// One side of a compared view, with its tree when the representation has one.
fn side(text: &str, representation: core::Representation) -> SideDocument {
    if !representation.is_tree() {
        return SideDocument {
            text: text.to_string(),
            tree: None,
            parse_error: None,
            warnings: Vec::new(),
        };
    }
    match obs::parse(text, representation) {
        Ok(parsed) => SideDocument {
            text: text.to_string(),
            tree: Some(parsed.tree),
            parse_error: None,
            warnings: parsed.warnings.iter().map(views::side_warning).collect(),
        },
        Err(e) => SideDocument {
            text: text.to_string(),
            tree: None,
            parse_error: Some(e.to_string()),
            warnings: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_carries_its_parse_warnings_with_line_and_byte() {
        // adb appends a status line after the root element.
        let text = "<hierarchy rotation=\"0\"><node class=\"android.widget.FrameLayout\" bounds=\"[0,0][1080,2400]\"/></hierarchy>\nUI hierchary dumped to: /dev/tty\n";
        let doc = side(text, core::Representation::AndroidXml);
        assert!(doc.tree.is_some());
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
        let clean = side(
            "<hierarchy><node bounds=\"[0,0][10,10]\"/></hierarchy>",
            core::Representation::AndroidXml,
        );
        assert!(clean.warnings.is_empty());
        let json = serde_json::to_value(&clean).unwrap();
        assert!(json.get("warnings").is_none());
        // Texts that are not trees carry none.
        assert!(
            side("plain text", core::Representation::Text)
                .warnings
                .is_empty()
        );
    }
}
