//! The API's view types built from `worldloom-core` and `worldloom-obs`
//! values: only where the shape differs (see each type's doc in
//! [`crate::types`]); the domain types themselves travel unchanged.

use worldloom_core as core;
use worldloom_core::judge;
use worldloom_obs as obs;

use worldloom_store::ChangeRecord;

use crate::error::ApiError;
use crate::types::{
    ActionView, ChangeKind, ChangeState, ChangeSummary, DiffStatus, Fidelity, JudgeScores, Metric,
    PredictionSummary, SideWarning, TokenView, TreeDiff,
};

/// The view of one parse warning: the kind by its snake_case serde name.
pub(crate) fn side_warning(w: &obs::parse::ParseWarning) -> SideWarning {
    let kind = match serde_json::to_value(w.kind) {
        Ok(serde_json::Value::String(k)) => k,
        _ => format!("{:?}", w.kind),
    };
    SideWarning {
        kind,
        line: w.line,
        byte: w.byte,
        message: w.message.clone(),
    }
}

pub(crate) fn action(a: &core::Action) -> ActionView {
    ActionView {
        raw: a.raw.clone(),
        format: a.format,
        summary: a.summary(),
        parsed: a.parsed.clone(),
    }
}

fn status(s: &obs::diff::NodeStatus) -> DiffStatus {
    match s {
        obs::diff::NodeStatus::Unchanged { .. } => DiffStatus::Unchanged,
        obs::diff::NodeStatus::Changed { .. } => DiffStatus::Changed,
        obs::diff::NodeStatus::Moved { .. } => DiffStatus::Moved,
        obs::diff::NodeStatus::Added => DiffStatus::Added,
        obs::diff::NodeStatus::Removed => DiffStatus::Removed,
    }
}

pub(crate) fn tree_diff(d: &obs::diff::TreeDiff) -> TreeDiff {
    let mut pairs = Vec::new();
    for (i, s) in d.real.iter().enumerate() {
        let counterpart = match s {
            obs::diff::NodeStatus::Unchanged { counterpart }
            | obs::diff::NodeStatus::Changed { counterpart, .. }
            | obs::diff::NodeStatus::Moved { counterpart, .. } => Some(counterpart.0),
            _ => None,
        };
        if let Some(c) = counterpart {
            pairs.push((i as u32, c));
        }
    }
    TreeDiff {
        real: d.real.iter().map(status).collect(),
        predicted: d.pred.iter().map(status).collect(),
        pairs,
        real_changes: d.real.iter().map(|s| s.changes().to_vec()).collect(),
    }
}

const METRICS: &[(&str, &str)] = &[
    (
        "node_f1",
        "F1 of aligned nodes (precision over predicted nodes, recall over real nodes)",
    ),
    ("node_precision", "aligned nodes / predicted nodes"),
    ("node_recall", "aligned nodes / real nodes"),
    ("text_f1", "token F1 of the visible text"),
    (
        "attribute_accuracy",
        "agreement of states, value and text over aligned nodes",
    ),
    (
        "transition_f1",
        "F1 of the changes previous → real against previous → predicted",
    ),
    (
        "line_ratio",
        "2 × matching lines / (real lines + predicted lines)",
    ),
];

/// The headline score of an evaluation: node F1 for trees, text F1 for text.
pub(crate) fn overall(e: &obs::metrics::Evaluation) -> Option<f64> {
    if e.status != obs::metrics::EvalStatus::Scored {
        return None;
    }
    e.node_f1
        .or(e.text_f1)
        .or(e.line_diff.as_ref().map(|l| l.ratio))
}

pub(crate) fn fidelity(e: &obs::metrics::Evaluation) -> Fidelity {
    let values = [
        e.node_f1,
        e.node_precision,
        e.node_recall,
        e.text_f1,
        e.attribute_accuracy,
        e.transition_f1,
        e.line_diff.as_ref().map(|l| l.ratio),
    ];
    let mut metrics: Vec<Metric> = METRICS
        .iter()
        .zip(values)
        .filter_map(|((name, description), value)| {
            value.map(|v| Metric {
                name: (*name).to_string(),
                value: Some(v),
                unit: None,
                description: Some((*description).to_string()),
            })
        })
        .collect();
    if let Some(exact) = e.exact {
        metrics.push(Metric {
            name: "exact".into(),
            value: Some(if exact { 1.0 } else { 0.0 }),
            unit: None,
            description: Some("identical after whitespace normalisation".into()),
        });
    }
    let anchors = e.anchors.clone();
    let note = match e.status {
        obs::metrics::EvalStatus::Scored => e.reason.clone(),
        _ => Some(e.reason.clone().unwrap_or_else(|| "not scored".into())),
    };
    Fidelity {
        overall: overall(e),
        metrics,
        anchors,
        judge: None,
        note,
    }
}

/// Judge scores from a judged row (`worldloom judge` output, official
/// AgentWorldBench `judge` step): the dimensions of [`judge::DIMENSIONS`]
/// (1–5), `strengths` / `weaknesses` as the rationale,
/// and the judge model (`judge_model` field, else `model`). `None` when no
/// dimension is present or the row is marked `failed`.
pub(crate) fn judge_scores(
    row: &serde_json::Map<String, serde_json::Value>,
    model: Option<&str>,
) -> Option<JudgeScores> {
    if row.get("failed").and_then(serde_json::Value::as_f64) == Some(1.0) {
        return None;
    }
    let score = |name: &str| {
        row.get(name)
            .and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
            .filter(|x| judge::in_range(*x))
    };
    let [format, factuality, consistency, realism, quality] = judge::DIMENSIONS.map(score);
    let scores = JudgeScores {
        format,
        factuality,
        consistency,
        realism,
        quality,
        score: None,
        rationale: None,
        judge: model.map(str::to_owned).or_else(|| {
            row.get("judge_model")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }),
    };
    let present: Vec<f64> = [
        scores.format,
        scores.factuality,
        scores.consistency,
        scores.realism,
        scores.quality,
    ]
    .into_iter()
    .flatten()
    .collect();
    if present.is_empty() {
        return None;
    }
    let mean = present.iter().sum::<f64>() / present.len() as f64;
    let list = |name: &str| -> Vec<String> {
        row.get(name)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (strengths, weaknesses) = (list("strengths"), list("weaknesses"));
    let mut rationale = Vec::new();
    if !strengths.is_empty() {
        rationale.push(format!("Strengths: {}", strengths.join("; ")));
    }
    if !weaknesses.is_empty() {
        rationale.push(format!("Weaknesses: {}", weaknesses.join("; ")));
    }
    Some(JudgeScores {
        score: Some(judge::scale(mean)),
        rationale: (!rationale.is_empty()).then(|| rationale.join("\n")),
        ..scores
    })
}

/// The API's view of an undo-log record.
///
/// # Errors
/// [`ErrorCode::Internal`] for a change kind this build does not know.
pub(crate) fn change_summary(c: &ChangeRecord) -> Result<ChangeSummary, ApiError> {
    Ok(ChangeSummary {
        id: c.id.0.to_string(),
        kind: ChangeKind::from_store(&c.kind)?,
        trajectory_id: c.trajectory.map(|t| t.0.to_string()),
        summary: c.summary.clone(),
        state: match c.state {
            worldloom_store::ChangeState::Applied => ChangeState::Applied,
            worldloom_store::ChangeState::Undone => ChangeState::Undone,
            worldloom_store::ChangeState::Abandoned => ChangeState::Abandoned,
        },
        created_at: c.created_at.clone(),
    })
}

/// The picker row of a prediction with its stored overall score.
pub(crate) fn prediction_summary(p: &core::Prediction, overall: Option<f64>) -> PredictionSummary {
    PredictionSummary {
        id: p.id.0,
        engine: p.engine.clone(),
        seed: p.seed.map(|s| s.to_string()),
        context: p.context,
        status: p.status,
        params: serde_json::Value::Object(p.params.clone()),
        prompt_tokens: p.prompt_tokens.map(|t| t.min(u32::MAX as u64) as u32),
        completion_tokens: p.completion_tokens.map(|t| t.min(u32::MAX as u64) as u32),
        total_ms: p.total_ms,
        created_at: p.created_at.clone(),
        overall,
    }
}

/// The `Prediction::extra` field holding the observation tokens
/// (`[{text, logprob, entropy}]`, [`TokenView`]; their texts concatenate to
/// the streamed observation).
pub const TOKENS_FIELD: &str = "tokens";

/// The `Prediction::extra` field holding the engine settings (no secrets).
pub const SETTINGS_FIELD: &str = "engine_settings";

/// Stored observation tokens as the studio shows them: tokens stored with
/// the text around the observation (the whole answer, as before the
/// observation was split out) are cut to their share of the observation
/// (`worldloom_core::output::observation_shares`); others are returned
/// unchanged.
pub fn stored_observation_tokens(tokens: Vec<TokenView>) -> Vec<TokenView> {
    let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    let Some(shares) = core::output::observation_shares(&texts) else {
        return tokens;
    };
    tokens
        .into_iter()
        .zip(shares)
        .filter(|(_, share)| !share.is_empty())
        .map(|(token, text)| TokenView { text, ..token })
        .collect()
}

/// The API's view of a stored run row. The judge score is the row's total
/// (else the mean of its dimensions) on [`judge::scale`]; a failed row has
/// none.
pub(crate) fn run_row_view(row: &worldloom_store::StoredRunRow) -> crate::types::RunRowView {
    let judge = row.judge.as_ref();
    let valid = judge.filter(|j| !j.failed);
    let score = valid.and_then(|j| {
        let present: Vec<f64> = j.scores.iter().flatten().copied().collect();
        let total = j.total_score.filter(|t| *t > 0.0).or_else(|| {
            (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
        })?;
        Some(judge::scale(total))
    });
    crate::types::RunRowView {
        row_id: row.id.to_string(),
        run_id: row.run.0.to_string(),
        row_index: row.row_index,
        trajectory_id: row.trajectory.0.to_string(),
        trajectory_name: row.ext_id.clone(),
        node_id: row.node.0,
        prediction_id: row.prediction.0,
        turn: row.turn,
        domain: row.domain,
        status: row.status.clone(),
        error: row.error.clone(),
        judged: judge.is_some(),
        judge_failed: judge.is_some_and(|j| j.failed),
        judge_scores: valid.map(|j| j.scores.to_vec()).unwrap_or_default(),
        score,
        exact: row.metrics.exact,
        text_f1: row.metrics.text_f1,
        node_f1: row.metrics.node_f1,
        attribute_accuracy: row.metrics.attribute_accuracy,
        transition_f1: row.metrics.transition_f1,
        latency_ms: row.latency_ms,
        labels: Vec::new(),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obs::diff::{DiffSummary, FieldChange, NodeStatus};
    use obs::metrics::{Anchor, AnchorStatus, EvalStatus, Evaluation};
    use obs::tree::NodeId;

    #[test]
    fn a_tree_diff_becomes_status_lists_aligned_pairs_and_real_changes() {
        let change = FieldChange {
            field: "name".into(),
            real: Some("Off".into()),
            pred: Some("On".into()),
        };
        let d = obs::diff::TreeDiff {
            real: vec![
                NodeStatus::Unchanged {
                    counterpart: NodeId(0),
                },
                NodeStatus::Changed {
                    counterpart: NodeId(2),
                    changes: vec![change.clone()],
                },
                NodeStatus::Removed,
            ],
            pred: vec![
                NodeStatus::Unchanged {
                    counterpart: NodeId(0),
                },
                NodeStatus::Added,
                NodeStatus::Changed {
                    counterpart: NodeId(1),
                    changes: vec![change.clone()],
                },
            ],
            summary: DiffSummary::default(),
        };
        let v = tree_diff(&d);
        assert_eq!(
            v.real,
            vec![
                DiffStatus::Unchanged,
                DiffStatus::Changed,
                DiffStatus::Removed
            ]
        );
        assert_eq!(
            v.predicted,
            vec![
                DiffStatus::Unchanged,
                DiffStatus::Added,
                DiffStatus::Changed
            ]
        );
        assert_eq!(v.pairs, vec![(0, 0), (1, 2)]);
        assert_eq!(v.real_changes, vec![vec![], vec![change], vec![]]);
    }

    fn evaluation(status: EvalStatus, reason: Option<&str>) -> Evaluation {
        Evaluation::without_scores(
            status,
            reason.map(str::to_owned),
            core::Representation::Axtree,
        )
    }

    #[test]
    fn fidelity_lists_the_metrics_with_descriptions_and_headlines_node_f1() {
        let anchor = Anchor {
            anchor: "url".into(),
            status: AnchorStatus::Mismatched,
            real: Some("https://a.example/".into()),
            pred: Some("https://b.example/".into()),
        };
        let e = Evaluation {
            exact: Some(false),
            text_f1: Some(0.8),
            node_f1: Some(0.9),
            node_precision: Some(0.95),
            node_recall: Some(0.85),
            transition_f1: Some(0.5),
            anchors: vec![anchor.clone()],
            line_diff: Some(obs::diff::LineDiff {
                ops: Vec::new(),
                ratio: 0.7,
            }),
            ..evaluation(EvalStatus::Scored, None)
        };
        let f = fidelity(&e);
        assert_eq!(f.overall, Some(0.9));
        let named: Vec<(&str, Option<f64>)> = f
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.value))
            .collect();
        assert_eq!(
            named,
            vec![
                ("node_f1", Some(0.9)),
                ("node_precision", Some(0.95)),
                ("node_recall", Some(0.85)),
                ("text_f1", Some(0.8)),
                ("transition_f1", Some(0.5)),
                ("line_ratio", Some(0.7)),
                ("exact", Some(0.0)),
            ]
        );
        assert!(f.metrics.iter().all(|m| m.description.is_some()));
        assert_eq!(f.anchors, vec![anchor]);
        assert_eq!(f.note, None);
    }

    #[test]
    fn fidelity_falls_back_to_text_f1_then_the_line_ratio() {
        let text = Evaluation {
            text_f1: Some(0.6),
            ..evaluation(EvalStatus::Scored, None)
        };
        assert_eq!(fidelity(&text).overall, Some(0.6));
        let lines = Evaluation {
            line_diff: Some(obs::diff::LineDiff {
                ops: Vec::new(),
                ratio: 0.4,
            }),
            ..evaluation(EvalStatus::Scored, None)
        };
        assert_eq!(fidelity(&lines).overall, Some(0.4));
    }

    #[test]
    fn skipped_or_missing_evaluations_have_no_headline_and_say_why() {
        let skipped = fidelity(&evaluation(
            EvalStatus::Skipped,
            Some("failed capture: ERROR: could not get idle state."),
        ));
        assert_eq!(skipped.overall, None);
        assert_eq!(
            skipped.note.as_deref(),
            Some("failed capture: ERROR: could not get idle state.")
        );
        let missing = fidelity(&evaluation(EvalStatus::Missing, None));
        assert_eq!(missing.overall, None);
        assert_eq!(missing.note.as_deref(), Some("not scored"));
    }

    #[test]
    fn judge_scores_carry_the_agentworldbench_scale() {
        let row =
            serde_json::json!({"format": 5, "factuality": "3", "quality": 1, "judge_model": "j"});
        let j = judge_scores(row.as_object().expect("object"), None).expect("scores");
        assert_eq!(j.score, Some(50.0));
        assert_eq!(j.judge.as_deref(), Some("j"));
        assert_eq!(judge::scale(1.0), 0.0);
        assert_eq!(judge::scale(5.0), 100.0);
    }
}
