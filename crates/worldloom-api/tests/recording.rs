//! Recording an agent loop (`record_trajectory`, `record_turn`): observed
//! turns with their real observations, predictions stored as chosen and
//! scored, errors named by field.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use common::studio;
use worldloom_api::types::*;
use worldloom_api::{ErrorCode, commands};

fn start(studio: &worldloom_api::Studio) -> RecordedTurn {
    commands::record_trajectory(
        studio,
        RecordTrajectoryRequest {
            domain: Domain::Terminal,
            representation: Representation::Text,
            goal: Some("list the files".into()),
            name: Some("loop-1".into()),
            observation: Some("$ ".into()),
            screenshot: None,
        },
    )
    .expect("start")
}

fn turn(
    studio: &worldloom_api::Studio,
    from: &RecordedTurn,
    action: &str,
    observation: &str,
    predicted: Option<&str>,
) -> Result<RecordedTurn, worldloom_api::ApiError> {
    commands::record_turn(
        studio,
        RecordTurnRequest {
            trajectory_id: from.trajectory_id.clone(),
            from_node: from.node_id,
            action: action.into(),
            representation: Representation::Text,
            observation: Some(observation.into()),
            predicted: predicted.map(Into::into),
            screenshot: None,
        },
    )
}

#[test]
fn recorded_turns_hold_the_real_observation_and_a_scored_prediction() {
    let (_dir, studio) = studio();
    let root = start(&studio);
    assert_eq!((root.node_id, root.edge_id), (0, None));
    let one = turn(&studio, &root, "ls", "a.txt b.txt", Some("a.txt")).expect("turn 1");
    // A raw output with its tags is read as every model output is.
    let raw = "<think>pwd prints the folder</think>\n<predicted_observation>\n/home\n</predicted_observation>";
    let two = turn(&studio, &one, "pwd", "/home", Some(raw)).expect("turn 2");
    assert_eq!((one.node_id, one.edge_id), (1, Some(0)));
    assert_eq!((two.node_id, two.edge_id), (2, Some(1)));

    let listed = commands::list_trajectories(&studio, ListTrajectoriesRequest::default())
        .expect("list")
        .trajectories;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "loop-1");
    assert_eq!(listed[0].goal.as_deref(), Some("list the files"));
    assert_eq!(listed[0].prediction_count, 2);

    let exported = commands::workspace_trajectories(&studio).expect("trajectories");
    let t = &exported[0];
    assert_eq!(t.source.format, "recorded");
    let real: Vec<&str> = t
        .nodes
        .iter()
        .map(|n| n.real.as_ref().map_or("", |o| o.text.as_str()))
        .collect();
    assert_eq!(real, ["$ ", "a.txt b.txt", "/home"]);
    let predicted: Vec<Option<&str>> = t.nodes[1..]
        .iter()
        .map(|n| n.predictions[0].observation.as_deref())
        .collect();
    assert_eq!(predicted, [Some("a.txt"), Some("/home")]);
    assert_eq!(t.nodes[2].predictions[0].raw_output, raw);

    let detail = |node: u32| {
        commands::get_turn(
            &studio,
            GetTurnRequest {
                trajectory_id: root.trajectory_id.clone(),
                node_id: node,
                prediction_id: None,
            },
        )
        .expect("turn")
    };
    let exact = detail(2)
        .fidelity
        .expect("scored")
        .overall
        .expect("overall");
    assert_eq!(exact, 1.0);
    let partial = detail(1)
        .fidelity
        .expect("scored")
        .overall
        .expect("overall");
    assert!(partial > 0.0 && partial < 1.0, "{partial}");
}

#[test]
fn bad_recordings_are_refused_by_field() {
    let (_dir, studio) = studio();
    let root = start(&studio);
    let empty = turn(&studio, &root, "  ", "x", None).expect_err("empty action");
    assert_eq!(empty.code, ErrorCode::BadRequest);
    assert_eq!(empty.message, "action: empty");
    let mut elsewhere = root.clone();
    elsewhere.trajectory_id = "99".into();
    let unknown = turn(&studio, &elsewhere, "ls", "x", None).expect_err("unknown");
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert_eq!(unknown.message, "trajectory 99 is not in the workspace");
    let mut not_a_state = root.clone();
    not_a_state.node_id = 7;
    let missing = turn(&studio, &not_a_state, "ls", "x", None).expect_err("no state 7");
    assert_eq!(missing.code, ErrorCode::NotFound, "{}", missing.message);
    let blank = commands::record_trajectory(
        &studio,
        RecordTrajectoryRequest {
            domain: Domain::Web,
            representation: Representation::Html,
            goal: None,
            name: Some(" ".into()),
            observation: None,
            screenshot: None,
        },
    )
    .expect_err("blank name");
    assert_eq!(blank.message, "name: empty");
}

#[test]
fn a_recorded_step_keeps_its_screenshot_and_a_bad_image_refuses_the_step() {
    let (dir, studio) = studio();
    let root = start(&studio);
    let png = dir.path().join("screen.png");
    std::fs::write(
        &png,
        worldloom_core::screenshot::solid_png(4, 3, [10, 20, 30]),
    )
    .expect("png");
    let shot = |path: &std::path::Path| RecordTurnRequest {
        trajectory_id: root.trajectory_id.clone(),
        from_node: root.node_id,
        action: "ls".into(),
        representation: Representation::Text,
        observation: Some("a".into()),
        predicted: None,
        screenshot: Some(path.display().to_string()),
    };
    let one = commands::record_turn(&studio, shot(&png)).expect("turn with a screenshot");
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: root.trajectory_id.clone(),
            node_id: one.node_id,
            prediction_id: None,
        },
    )
    .expect("turn");
    let stored = turn.real_screenshot.expect("the screenshot is kept");
    assert_eq!((stored.width_px, stored.height_px), (4, 3));

    let text = dir.path().join("not-an-image.png");
    std::fs::write(&text, "hello").expect("text");
    let err = commands::record_turn(&studio, shot(&text)).expect_err("not an image");
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(err.message.starts_with("screenshot: "), "{}", err.message);
    // Nothing was written for the refused step.
    let t = &commands::workspace_trajectories(&studio).expect("trajectories")[0];
    assert_eq!(t.nodes.len(), 2);
}
