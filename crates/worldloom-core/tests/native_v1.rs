//! The committed version-1 native file stays readable and round-trips byte for byte.

use std::path::Path;

use worldloom_core::{
    ActionFormat, CoreError, Domain, EdgeId, NodeId, OutputStatus, ParsedAction, PredictionId,
    Representation, StepErrorKind, TrajectoryFile,
};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/native_v1.json");

#[test]
fn v1_fixture_reads_with_its_values() {
    let file = TrajectoryFile::read(Path::new(FIXTURE)).expect("v1 fixture reads");
    assert_eq!(file.version, 1);
    assert_eq!(file.trajectories.len(), 3);

    let web = &file.trajectories[0];
    assert_eq!(web.id, "checkout-demo");
    assert_eq!(web.domain, Domain::Web);
    assert_eq!(web.nodes.len(), 4);
    assert_eq!(web.edges.len(), 3);
    let root = web
        .node(NodeId(0))
        .and_then(|n| n.real.as_ref())
        .expect("root observation");
    assert_eq!(root.representation, Representation::Axtree);
    assert_eq!(root.metadata.focused_bid.as_deref(), Some("12"));
    assert_eq!(
        root.view(Representation::Html),
        Some("<input bid=\"12\" type=\"email\"/>\n<button bid=\"15\">Pay</button>")
    );
    let fill = &web.edges[0].action;
    assert_eq!(fill.format, ActionFormat::Browsergym);
    let Some(ParsedAction::Browsergym { calls }) = &fill.parsed else {
        panic!("fill not parsed")
    };
    assert_eq!(calls[0].args[1], serde_json::json!("ana@example.com"));
    let n1 = web.node(NodeId(1)).expect("node 1");
    assert_eq!(n1.predictions.len(), 1);
    assert_eq!(n1.chosen_prediction, Some(PredictionId(0)));
    assert_eq!(n1.predictions[0].status, OutputStatus::Ok);
    assert_eq!(n1.predictions[0].seed, Some(7));
    assert_eq!(n1.predictions[0].prompt_tokens, Some(812));
    let detached = web
        .node(NodeId(2))
        .and_then(|n| n.real.as_ref())
        .expect("error step");
    assert!(detached.is_error_step());
    assert_eq!(
        detached
            .error
            .as_ref()
            .map(|e| (e.kind, e.message.as_str())),
        Some((StepErrorKind::Action, "Frame has been detached."))
    );
    assert_eq!(web.edges[2].edited_from, Some(EdgeId(0)));
    assert_eq!(web.branches().len(), 2);
    assert_eq!(
        web.node(NodeId(3))
            .and_then(|n| n.current_authored())
            .and_then(|a| a.author.as_deref()),
        Some("reviewer")
    );

    let android = &file.trajectories[1];
    assert_eq!(android.domain, Domain::Android);
    let failed = android
        .node(NodeId(1))
        .and_then(|n| n.real.as_ref())
        .and_then(|o| o.error.as_ref())
        .expect("capture error");
    assert_eq!(failed.kind, StepErrorKind::Capture);
    assert_eq!(failed.message, "ERROR: could not get idle state.");

    let mcp = &file.trajectories[2];
    let row = mcp.edges[0].awb_row.as_ref().expect("awb row info");
    assert_eq!(
        row.fields.get("id"),
        Some(&serde_json::json!(145256090131919u64))
    );
    let obs = mcp
        .node(NodeId(1))
        .and_then(|n| n.real.as_ref())
        .expect("mcp observation");
    assert_eq!(
        obs.as_awb_response(),
        "**Environment Observation:**\n{\"events\": []}"
    );
}

#[test]
fn v1_fixture_round_trips_byte_for_byte() {
    let bytes = std::fs::read_to_string(FIXTURE).expect("fixture");
    let file = TrajectoryFile::from_json_str(Path::new(FIXTURE), &bytes).expect("parses");
    assert_eq!(file.to_json_string(), bytes);
}

#[test]
fn newer_versions_and_other_formats_are_refused_with_the_field() {
    let newer = r#"{"format": "worldloom-trajectory", "version": 99, "trajectories": []}"#;
    let err = TrajectoryFile::from_json_str(Path::new("new.json"), newer).expect_err("refused");
    assert!(
        matches!(
            err,
            CoreError::UnsupportedVersion {
                found: 99,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    let other = r#"{"format": "something-else", "version": 1}"#;
    let err = TrajectoryFile::from_json_str(Path::new("o.json"), other).expect_err("refused");
    assert!(err.to_string().contains("o.json: field `format`"), "{err}");
    let broken =
        "{\n  \"format\": \"worldloom-trajectory\",\n  \"version\": 1,\n  \"trajectories\": [,]\n}";
    let err = TrajectoryFile::from_json_str(Path::new("b.json"), broken).expect_err("refused");
    assert!(err.to_string().starts_with("b.json:4:"), "{err}");
}

#[test]
fn inconsistent_tree_is_refused() {
    let text = std::fs::read_to_string(FIXTURE).expect("fixture").replacen(
        "\"parent_edge\": 0,",
        "\"parent_edge\": 2,",
        1,
    );
    let err = TrajectoryFile::from_json_str(Path::new("x.json"), &text).expect_err("refused");
    assert!(
        err.to_string()
            .contains("trajectories[0] (`checkout-demo`)"),
        "{err}"
    );
}
