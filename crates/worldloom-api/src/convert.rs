//! Conversions from `worldloom-core` and `worldloom-obs` values to the API's
//! view types.

use worldloom_core as core;
use worldloom_obs as obs;

use crate::types::{
    ActionView, Anchor, AnchorStatus, Attribute, BoundsPx, ContextMode, DiffStatus, Domain,
    Fidelity, FieldChange, JudgeScores, LineDiff, LineOp, Metric, NodeStates, ObservationMetaView,
    Representation, ScreenSize, SourceSpan, TreeDiff, UiNode, UiTree,
};

pub(crate) fn domain(d: core::Domain) -> Domain {
    match d {
        core::Domain::Mcp => Domain::Mcp,
        core::Domain::Search => Domain::Search,
        core::Domain::Terminal => Domain::Terminal,
        core::Domain::Swe => Domain::Swe,
        core::Domain::Web => Domain::Web,
        core::Domain::Os => Domain::Os,
        core::Domain::Android => Domain::Android,
    }
}

pub(crate) fn core_domain(d: Domain) -> core::Domain {
    match d {
        Domain::Mcp => core::Domain::Mcp,
        Domain::Search => core::Domain::Search,
        Domain::Terminal => core::Domain::Terminal,
        Domain::Swe => core::Domain::Swe,
        Domain::Web => core::Domain::Web,
        Domain::Os => core::Domain::Os,
        Domain::Android => core::Domain::Android,
    }
}

pub(crate) fn representation(r: core::Representation) -> Representation {
    match r {
        core::Representation::Html => Representation::Html,
        core::Representation::Axtree => Representation::Axtree,
        core::Representation::OsXml => Representation::OsXml,
        core::Representation::OsTable => Representation::OsTable,
        core::Representation::AndroidXml => Representation::AndroidXml,
        core::Representation::Json => Representation::Json,
        core::Representation::Text => Representation::Text,
    }
}

pub(crate) fn core_representation(r: Representation) -> core::Representation {
    match r {
        Representation::Html => core::Representation::Html,
        Representation::Axtree => core::Representation::Axtree,
        Representation::OsXml => core::Representation::OsXml,
        Representation::OsTable => core::Representation::OsTable,
        Representation::AndroidXml => core::Representation::AndroidXml,
        Representation::Json => core::Representation::Json,
        Representation::Text => core::Representation::Text,
    }
}

pub(crate) fn core_context(c: ContextMode) -> core::ContextMode {
    match c {
        ContextMode::TeacherForced => core::ContextMode::TeacherForced,
        ContextMode::FreeRunning => core::ContextMode::FreeRunning,
    }
}

pub(crate) fn context(c: core::ContextMode) -> ContextMode {
    match c {
        core::ContextMode::TeacherForced => ContextMode::TeacherForced,
        core::ContextMode::FreeRunning => ContextMode::FreeRunning,
    }
}

pub(crate) fn action(a: &core::Action) -> ActionView {
    let format = serde_json::to_value(a.format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    ActionView {
        raw: a.raw.clone(),
        format,
        summary: a.summary(),
        parsed: a.parsed.as_ref().and_then(|p| serde_json::to_value(p).ok()),
    }
}

pub(crate) fn meta(m: &core::ObservationMeta) -> ObservationMetaView {
    ObservationMetaView {
        url: m.url.clone(),
        title: m.title.clone(),
        focused_bid: m.focused_bid.clone(),
        screen: m.screen.map(|s| ScreenSize {
            width_px: s.width_px,
            height_px: s.height_px,
        }),
        package: m.package.clone(),
    }
}

pub(crate) fn tree(t: &obs::UiTree) -> UiTree {
    UiTree {
        representation: representation(t.representation),
        nodes: t
            .nodes
            .iter()
            .map(|n| UiNode {
                id: n.id.0,
                parent: n.parent.map(|p| p.0),
                children: n.children.iter().map(|c| c.0).collect(),
                depth: n.depth,
                role: n.role.clone(),
                name: n.name.clone(),
                value: n.value.clone(),
                key: n.key.clone(),
                attributes: n
                    .attributes
                    .iter()
                    .map(|a| Attribute {
                        name: a.name.clone(),
                        value: a.value.clone(),
                    })
                    .collect(),
                states: NodeStates {
                    checked: n.states.checked,
                    selected: n.states.selected,
                    focused: n.states.focused,
                    enabled: n.states.enabled,
                    expanded: n.states.expanded,
                    editable: n.states.editable,
                },
                bounds_px: n.bounds_px.as_ref().map(|b| BoundsPx {
                    left: b.left as f64,
                    top: b.top as f64,
                    right: b.right as f64,
                    bottom: b.bottom as f64,
                    anomalies: b
                        .anomalies
                        .iter()
                        .map(|a| match a {
                            obs::BoundsAnomaly::Negative => "negative".to_string(),
                            obs::BoundsAnomaly::Empty => "empty".to_string(),
                            obs::BoundsAnomaly::Inverted => "inverted".to_string(),
                        })
                        .collect(),
                }),
                span: n.span.map(|s| SourceSpan {
                    start_byte: s.start_byte,
                    end_byte: s.end_byte,
                    line: s.line,
                }),
                synthetic: n.synthetic,
            })
            .collect(),
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
        real_changes: d
            .real
            .iter()
            .map(|s| {
                s.changes()
                    .iter()
                    .map(|c| FieldChange {
                        field: c.field.clone(),
                        real: c.real.clone(),
                        predicted: c.pred.clone(),
                    })
                    .collect()
            })
            .collect(),
    }
}

pub(crate) fn line_diff(d: &obs::diff::LineDiff) -> LineDiff {
    LineDiff {
        ops: d
            .ops
            .iter()
            .map(|o| LineOp {
                tag: o.tag.clone(),
                real_start: o.real_start,
                real_end: o.real_end,
                predicted_start: o.pred_start,
                predicted_end: o.pred_end,
            })
            .collect(),
        ratio: d.ratio,
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
    let anchors = e
        .anchors
        .iter()
        .map(|a| Anchor {
            kind: a.anchor.clone(),
            key: a.anchor.clone(),
            status: match a.status {
                obs::metrics::AnchorStatus::Matched => AnchorStatus::Matched,
                obs::metrics::AnchorStatus::Mismatched => AnchorStatus::Mismatched,
                obs::metrics::AnchorStatus::Absent => AnchorStatus::Absent,
            },
            real: a.real.clone(),
            predicted: a.pred.clone(),
        })
        .collect();
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
/// AgentWorldBench `judge` step): `format`, `factuality`, `consistency`,
/// `realism`, `quality` (1–5), `strengths` / `weaknesses` as the rationale,
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
            .filter(|x| (1.0..=5.0).contains(x))
    };
    let scores = JudgeScores {
        format: score("format"),
        factuality: score("factuality"),
        consistency: score("consistency"),
        realism: score("realism"),
        quality: score("quality"),
        rationale: None,
        judge: model.map(str::to_owned).or_else(|| {
            row.get("judge_model")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }),
    };
    if [
        scores.format,
        scores.factuality,
        scores.consistency,
        scores.realism,
        scores.quality,
    ]
    .iter()
    .all(Option::is_none)
    {
        return None;
    }
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
        rationale: (!rationale.is_empty()).then(|| rationale.join("\n")),
        ..scores
    })
}
