//! How many observation parses a Step and the turn shown after it cost,
//! counted by `worldloom_obs::parse::parses_so_far` (a process-wide count:
//! this file holds one test, so nothing else parses while it counts).

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use std::sync::Mutex;
use std::sync::mpsc::channel;
use std::time::Duration;

use common::{WEB, sample, studio};
use worldloom_api::types::*;
use worldloom_api::{Studio, StudioEvent, commands};
use worldloom_obs::parse::parses_so_far;

fn turn(studio: &Studio, trajectory_id: &str, node_id: u32) -> TurnDetail {
    commands::get_turn(
        studio,
        GetTurnRequest {
            trajectory_id: trajectory_id.to_string(),
            node_id,
            prediction_id: None,
        },
    )
    .expect("get_turn")
}

#[test]
fn a_step_and_the_turn_after_it_parse_each_side_once() {
    let (_dir, studio) = studio();
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    studio.add_event_sink(Box::new(move |e: &StudioEvent| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(e.clone());
        }
    }));
    let imported = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![sample(WEB)],
        },
    )
    .expect("import");
    let id = imported.imported[0].trajectory_id.clone();
    let trajectory = commands::get_trajectory(
        &studio,
        GetTrajectoryRequest {
            trajectory_id: id.clone(),
        },
    )
    .expect("trajectory");
    let branch = commands::get_branch(
        &studio,
        GetBranchRequest {
            trajectory_id: id.clone(),
            branch_id: trajectory.branches[0].id.clone(),
        },
    )
    .expect("branch");
    let node = branch.turns[1].node_id;

    let start = parses_so_far();
    let job = commands::step(
        &studio,
        StepRequest {
            trajectory_id: id.clone(),
            node_id: node,
            context: ContextMode::TeacherForced,
        },
    )
    .expect("step")
    .job_id;
    loop {
        match rx
            .recv_timeout(Duration::from_secs(120))
            .expect("step event")
        {
            StudioEvent::StepFinished { job_id, error, .. } if job_id == job => {
                assert_eq!(error, None);
                break;
            }
            _ => {}
        }
    }
    let stepped = parses_so_far();
    // The Step scores its prediction (the copy baseline: the state before,
    // an accessibility tree) and stores the evaluation: the real
    // observation, the prediction and the real observation before (for
    // transition F1), each parsed once.
    assert_eq!(stepped - start, 3, "parses in the Step");

    let first = turn(&studio, &id, node);
    let shown = parses_so_far();
    // The turn reuses the stored evaluation: only the sides it shows are
    // parsed, once each: the prediction and the real observation's views
    // (the accessibility tree it is compared with, and the page's HTML
    // texts). Before, the evaluation was made again too: three parses more
    // (real, predicted, previous), the pair diffed twice.
    let sides: u64 = first
        .views
        .iter()
        .filter(|v| v.representation.is_tree())
        .map(|v| u64::from(v.real.is_some()) + u64::from(v.predicted.is_some()))
        .sum();
    assert_eq!(
        sides,
        4,
        "{:?}",
        first.views.iter().map(|v| &v.name).collect::<Vec<_>>()
    );
    assert_eq!(shown - stepped, sides, "parses in get_turn after the Step");
    let fidelity = first.fidelity.as_ref().expect("scored");
    assert!(fidelity.overall.is_some());
    assert!(
        fidelity
            .metrics
            .iter()
            .any(|m| m.name == "transition_f1" && m.value.is_some()),
        "the stored evaluation keeps transition F1: {:?}",
        fidelity.metrics
    );
    assert!(
        fidelity.metrics.iter().any(|m| m.name == "line_ratio"),
        "the stored evaluation keeps the line ratio: {:?}",
        fidelity.metrics
    );
    let view = &first.views[0];
    assert!(view.diff.is_some() && view.line_diff.is_some());
    assert!(view.real.as_ref().is_some_and(|d| d.tree.is_some()));
    assert!(view.predicted.as_ref().is_some_and(|d| d.tree.is_some()));

    // The same turn again at the same revision, and a window of its rows:
    // answered from the kept turn, nothing parsed.
    let again = turn(&studio, &id, node);
    assert_eq!(again, first);
    commands::get_tree_rows(
        &studio,
        GetTreeRowsRequest {
            trajectory_id: id.clone(),
            node_id: node,
            prediction_id: first.prediction_id,
            view_index: 0,
            side: PaneSide::Predicted,
            offset: 0,
            limit: 10,
            collapsed: Vec::new(),
            reveal: None,
        },
    )
    .expect("rows");
    assert_eq!(parses_so_far(), shown, "parses in a second get_turn");
}
