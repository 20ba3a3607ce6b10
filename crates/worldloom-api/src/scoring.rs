//! What a node shows and how well it matches the real observation: the
//! shown prediction or authored observation, its evaluation
//! (`worldloom_obs::metrics`), and the overall scores stored in the
//! workspace as metric results of [`METRICS_PRODUCER`].

use worldloom_core as core;
use worldloom_core::{NodeId, PredictionId};
use worldloom_obs as obs;
use worldloom_store::{StoredTrajectory, TrajectoryKey, Workspace};

use crate::error::ApiError;
use crate::types::*;
use crate::views;

/// The producer name stored with metric results computed here.
pub const METRICS_PRODUCER: &str = concat!("worldloom-obs ", env!("CARGO_PKG_VERSION"));

/// What the right pane shows for a node: a chosen or requested prediction,
/// else the current authored observation, else the newest prediction with an
/// observation.
pub(crate) enum Shown<'a> {
    Prediction(&'a core::Prediction),
    Authored(usize, &'a core::AuthoredObservation),
}

pub(crate) fn shown<'a>(
    node: &'a core::Node,
    requested: Option<PredictionId>,
) -> Result<Option<Shown<'a>>, ApiError> {
    if let Some(id) = requested {
        return node
            .prediction(id)
            .map(|p| Some(Shown::Prediction(p)))
            .ok_or_else(|| {
                ApiError::not_found(format!("node {} has no prediction {}", node.id, id.0))
            });
    }
    if let Some(p) = node.chosen_prediction.and_then(|id| node.prediction(id)) {
        return Ok(Some(Shown::Prediction(p)));
    }
    if let Some(a) = node.authored.last() {
        return Ok(Some(Shown::Authored(node.authored.len() - 1, a)));
    }
    Ok(node
        .predictions
        .iter()
        .rev()
        .find(|p| p.observation.is_some())
        .map(Shown::Prediction))
}

pub(crate) fn subject_of(shown: &Shown<'_>) -> String {
    match shown {
        Shown::Prediction(p) => format!("prediction:{}", p.id.0),
        Shown::Authored(i, _) => format!("authored:{i}"),
    }
}

pub(crate) fn shown_text<'a>(shown: &Shown<'a>) -> (Option<&'a str>, Option<core::Representation>) {
    match shown {
        Shown::Prediction(p) => (p.observation.as_deref(), Some(p.representation)),
        Shown::Authored(_, a) => (
            Some(a.observation.text.as_str()),
            Some(a.observation.representation),
        ),
    }
}

/// The previous real observation (the parent state's), for transition F1.
fn previous_real<'a>(st: &'a StoredTrajectory, node: &core::Node) -> Option<&'a core::Observation> {
    let edge = st.trajectory.edge(node.parent_edge?)?;
    st.trajectory.node(edge.from)?.real.as_ref()
}

/// What an evaluation compares: the texts and the representation they are
/// read in.
pub(crate) struct EvalInputs<'a> {
    /// The representation compared.
    pub repr: core::Representation,
    /// The real text (the real view in `repr`, else the main text); `None`
    /// for a failed capture (an error step), which is skipped.
    pub real: Option<&'a str>,
    /// What is shown.
    pub pred: Option<&'a str>,
    /// The previous real observation in `repr`, for transition F1.
    pub prev: Option<&'a str>,
}

/// The inputs of the evaluation of what a node shows against its real
/// observation, with `prev` (the parent state's real observation) for
/// transition F1; `None` without a real observation.
pub(crate) fn eval_inputs<'a>(
    node: &'a core::Node,
    shown: &Shown<'a>,
    prev: Option<&'a core::Observation>,
) -> Option<EvalInputs<'a>> {
    let real = node.real.as_ref()?;
    let (text, pred_repr) = shown_text(shown);
    let representation = real.representation;
    // A prediction in another representation than the real main text is
    // compared with the real view of that representation, if there is one.
    let real_text = match pred_repr {
        Some(r) if r != representation && real.view(r).is_some() => real.view(r),
        _ => Some(real.text.as_str()),
    }?;
    let repr = match pred_repr {
        Some(r) if real.view(r).is_some() => r,
        _ => representation,
    };
    Some(EvalInputs {
        repr,
        real: (!real.is_error_step()).then_some(real_text),
        pred: text,
        prev: prev.and_then(|o| o.view(repr)),
    })
}

/// Evaluates `inputs` over observations whose parses the caller keeps
/// (`real` and `pred` are `inputs`' texts in `inputs.repr`, when present);
/// a real observation that does not parse gives an evaluation with no
/// figures and the reason.
pub(crate) fn evaluate_observed(
    inputs: &EvalInputs<'_>,
    real: Option<&obs::metrics::Observed<'_>>,
    pred: Option<&obs::metrics::Observed<'_>>,
) -> obs::metrics::Evaluation {
    let prev = inputs
        .prev
        .map(|t| obs::metrics::Observed::new(t.as_bytes(), inputs.repr));
    match obs::metrics::evaluate_observed(real, pred, prev.as_ref(), inputs.repr) {
        Ok(e) => e,
        Err(err) => obs::metrics::Evaluation::without_scores(
            obs::metrics::EvalStatus::Skipped,
            Some(err.to_string()),
            inputs.repr,
        ),
    }
}

/// Evaluates what the right pane shows against the real observation.
pub(crate) fn evaluate(
    st: &StoredTrajectory,
    node: &core::Node,
    shown: &Shown<'_>,
) -> Option<obs::metrics::Evaluation> {
    let inputs = eval_inputs(node, shown, previous_real(st, node))?;
    let real = inputs
        .real
        .map(|t| obs::metrics::Observed::new(t.as_bytes(), inputs.repr));
    let pred = inputs
        .pred
        .map(|t| obs::metrics::Observed::new(t.as_bytes(), inputs.repr));
    Some(evaluate_observed(&inputs, real.as_ref(), pred.as_ref()))
}

/// The stored evaluation of `subject` at `node` (the newest of this build's
/// [`METRICS_PRODUCER`]), as [`store_score`] kept it: no per-node diff, the
/// line diff's ratio without its operations.
pub(crate) fn stored_evaluation(
    ws: &Workspace,
    key: TrajectoryKey,
    node: NodeId,
    subject: &str,
) -> Result<Option<obs::metrics::Evaluation>, ApiError> {
    Ok(ws
        .metric_results(key, node)?
        .into_iter()
        .rev()
        .find(|r| r.subject == subject && r.producer == METRICS_PRODUCER)
        .and_then(|r| serde_json::from_value(r.result).ok()))
}

/// The overall score of what a node shows, from the stored results or
/// computed (and stored) now.
pub(crate) fn node_score(
    ws: &mut Workspace,
    st: &StoredTrajectory,
    node: &core::Node,
) -> Result<Option<f64>, ApiError> {
    let Some(shown) = shown(node, None)? else {
        return Ok(None);
    };
    if node.real.is_none() {
        return Ok(None);
    }
    let subject = subject_of(&shown);
    let stored = ws.metric_results(st.key, node.id)?;
    if let Some(r) = stored
        .iter()
        .rev()
        .find(|r| r.subject == subject && r.producer == METRICS_PRODUCER)
    {
        return Ok(r.score);
    }
    let Some(e) = evaluate(st, node, &shown) else {
        return Ok(None);
    };
    let score = views::overall(&e).map(|s| s.clamp(0.0, 1.0));
    store_score(ws, st.key, node.id, &subject, score, &e)?;
    Ok(score)
}

pub(crate) fn store_score(
    ws: &mut Workspace,
    key: TrajectoryKey,
    node: NodeId,
    subject: &str,
    score: Option<f64>,
    e: &obs::metrics::Evaluation,
) -> Result<(), ApiError> {
    // The stored result leaves out the per-node diff and the line diff's
    // operations (their ratio is kept), which are recomputed on display.
    let mut compact = e.clone();
    compact.nodes = None;
    compact.line_diff = e.line_diff.as_ref().map(|l| obs::diff::LineDiff {
        ops: Vec::new(),
        ratio: l.ratio,
    });
    let value =
        serde_json::to_value(&compact).map_err(|err| ApiError::internal(err.to_string()))?;
    ws.record_metric_result(key, node, subject, METRICS_PRODUCER, score, &value)?;
    Ok(())
}

/// Scores the shown prediction of each of `nodes` that has no stored score
/// yet. Only those states and their parents are read (a state without a
/// prediction or authored observation has nothing to score, so an imported
/// file of real observations alone reads nothing back).
pub(crate) fn score_nodes(
    ws: &mut Workspace,
    key: TrajectoryKey,
    nodes: &[NodeId],
) -> Result<(), ApiError> {
    if nodes.is_empty() {
        return Ok(());
    }
    let mut states: Vec<NodeId> = nodes.to_vec();
    for n in nodes {
        states.extend(ws.parent_state(key, *n)?);
    }
    states.sort();
    states.dedup();
    let st = ws.load_trajectory_states(key, &states)?;
    for id in nodes {
        if let Some(node) = st.trajectory.node(*id)
            && st.live_nodes.contains(id)
        {
            node_score(ws, &st, node)?;
        }
    }
    Ok(())
}

/// The predictions of a node with their stored overall scores.
pub(crate) fn predictions_of(
    ws: &Workspace,
    st: &StoredTrajectory,
    node: &core::Node,
) -> Result<Vec<PredictionSummary>, ApiError> {
    let stored = ws.metric_results(st.key, node.id)?;
    Ok(node
        .predictions
        .iter()
        .map(|p| {
            let subject = format!("prediction:{}", p.id.0);
            let overall = stored
                .iter()
                .rev()
                .find(|r| r.subject == subject && r.producer == METRICS_PRODUCER)
                .and_then(|r| r.score);
            views::prediction_summary(p, overall)
        })
        .collect())
}
