//! The API functions on the repository's samples (`samples/`): import, list
//! and filter, branch timeline, side-by-side turns with trees and diffs,
//! predictions, undo, export, and error classification.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use common::{
    AWB, OS, WEB, all_rows, export_native, get_turn, predictions, sample, studio, write_run_files,
};
use serde_json::json;
use worldloom_api::types::*;
use worldloom_api::{ErrorCode, Studio, commands, dispatch};

const ANDROID: &str = "android/settings_airplane-mode_trajectory";

fn import(studio: &Studio, rels: &[&str]) -> ImportFilesResponse {
    commands::import_files(
        studio,
        ImportFilesRequest {
            paths: rels.iter().map(|r| sample(r)).collect(),
        },
    )
    .expect("import")
}

fn id_of(resp: &ImportFilesResponse, rel: &str) -> String {
    resp.imported
        .iter()
        .find(|i| i.path == sample(rel))
        .map(|i| i.trajectory_id.clone())
        .expect("imported")
}

fn main_branch(studio: &Studio, id: &str) -> GetBranchResponse {
    let t = commands::get_trajectory(
        studio,
        GetTrajectoryRequest {
            trajectory_id: id.into(),
        },
    )
    .expect("trajectory");
    let branch = t
        .branches
        .iter()
        .find(|b| b.recorded)
        .expect("recorded branch")
        .id
        .clone();
    commands::get_branch(
        studio,
        GetBranchRequest {
            trajectory_id: id.into(),
            branch_id: branch,
        },
    )
    .expect("branch")
}

#[test]
fn imports_the_three_gui_samples_and_lists_them() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[WEB, OS, ANDROID]);
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    assert_eq!(resp.imported.len(), 3);
    assert!(resp.imported.iter().all(|i| i.added));

    let all = commands::list_trajectories(&studio, ListTrajectoriesRequest::default())
        .expect("list")
        .trajectories;
    assert_eq!(all.len(), 3);
    let domains: Vec<Domain> = all.iter().map(|t| t.domain).collect();
    assert_eq!(domains, vec![Domain::Web, Domain::Os, Domain::Android]);
    // The web sample has 6 steps: 5 actions from the initial state.
    assert_eq!(all[0].turn_count, 5);
    assert_eq!(all[0].branch_count, 1);
    assert_eq!(all[0].prediction_count, 5);
    // Android: 5 dumps, 4 actions.
    assert_eq!(all[2].turn_count, 4);
    // Every sample's predictions were scored on import.
    for t in &all {
        let f = t.lowest_fidelity.expect("scored");
        assert!((0.0..=1.0).contains(&f), "{f}");
    }

    let only_os = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            domain: Some(Domain::Os),
            ..Default::default()
        },
    )
    .expect("list");
    assert_eq!(only_os.trajectories.len(), 1);
    assert_eq!(only_os.trajectories[0].domain, Domain::Os);
    let query = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            query: Some("AIRPLANE".into()),
            ..Default::default()
        },
    )
    .expect("list");
    assert_eq!(query.trajectories.len(), 1);
    assert_eq!(query.trajectories[0].domain, Domain::Android);
    let branched = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            has_branches: Some(true),
            ..Default::default()
        },
    )
    .expect("list");
    assert!(branched.trajectories.is_empty());
    let sorted = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            sort: Some(TrajectorySort::LowestFidelity),
            ..Default::default()
        },
    )
    .expect("list")
    .trajectories;
    let scores: Vec<f64> = sorted.iter().filter_map(|t| t.lowest_fidelity).collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    let threshold = scores[0];
    let low = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            max_fidelity: Some(threshold),
            ..Default::default()
        },
    )
    .expect("list");
    assert!(
        low.trajectories
            .iter()
            .all(|t| t.lowest_fidelity.is_some_and(|f| f <= threshold))
    );
    assert!(!low.trajectories.is_empty());

    // Importing the same files again adds nothing.
    let again = import(&studio, &[WEB, OS]);
    assert_eq!(again.imported.len(), 2);
    assert!(again.imported.iter().all(|i| !i.added));
    assert_eq!(
        commands::list_trajectories(&studio, ListTrajectoriesRequest::default())
            .expect("list")
            .trajectories
            .len(),
        3
    );
}

#[test]
fn web_turn_shows_real_and_predicted_trees_with_a_diff() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[WEB]);
    let id = id_of(&resp, WEB);
    let branch = main_branch(&studio, &id);
    assert_eq!(branch.turns.len(), 5);
    let actions: Vec<&str> = branch.turns.iter().map(|t| t.action.raw.as_str()).collect();
    assert_eq!(actions[0], "click('32')");
    assert_eq!(actions[1], "click('39')");
    assert_eq!(actions[3], "scroll(0, 300)");
    assert!(
        branch
            .turns
            .iter()
            .all(|t| t.has_real && t.prediction_count == 1)
    );
    assert!(
        branch
            .turns
            .iter()
            .all(|t| t.fidelity.is_some_and(|f| (0.0..=1.0).contains(&f)))
    );

    let steps: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sample(WEB)).expect("read")).expect("json");
    let turn = get_turn(&studio, &id, 1);
    assert_eq!(turn.turn, 1);
    assert_eq!(
        turn.action.as_ref().map(|a| a.raw.as_str()),
        Some("click('32')")
    );
    assert_eq!(turn.predicted_kind, Some(ObservationKind::Predicted));
    assert_eq!(turn.prediction_id, Some(0));
    assert_eq!(turn.predictions.len(), 1);
    assert_eq!(turn.predictions[0].engine, "sample-author");
    let reasoning = turn.reasoning.as_deref().expect("reasoning");
    assert!(
        reasoning.starts_with("Clicking the row opens the message view"),
        "{reasoning}"
    );

    let main = turn
        .views
        .iter()
        .find(|v| v.name == "main")
        .expect("main view");
    assert_eq!(main.representation, Representation::Axtree);
    let real = main.real.as_ref().expect("real side");
    assert_eq!(
        real.text,
        steps["steps"][1]["axtree_txt"].as_str().expect("axtree")
    );
    let real_tree = real.tree.as_ref().expect("real tree");
    assert!(real_tree.nodes.len() > 10);
    assert_eq!(real_tree.nodes[0].id, NodeId(0));
    let predicted = main.predicted.as_ref().expect("predicted side");
    assert!(
        predicted
            .text
            .starts_with("RootWebArea 'Venue booking for the spring meetup - Larkmail'")
    );
    let pred_tree = predicted.tree.as_ref().expect("predicted tree");
    let diff = main.diff.as_ref().expect("diff");
    assert_eq!(diff.real.len(), real_tree.nodes.len());
    assert_eq!(diff.predicted.len(), pred_tree.nodes.len());
    assert_eq!(diff.real_changes.len(), real_tree.nodes.len());
    for (r, p) in &diff.pairs {
        assert!((*r as usize) < real_tree.nodes.len() && (*p as usize) < pred_tree.nodes.len());
        assert_ne!(diff.real[*r as usize], DiffStatus::Removed);
    }
    let line_diff = main.line_diff.as_ref().expect("line diff");
    assert!((0.0..=1.0).contains(&line_diff.ratio));
    // The sample's prediction differs from the real page somewhere.
    assert!(
        diff.real
            .iter()
            .chain(&diff.predicted)
            .any(|s| *s != DiffStatus::Unchanged)
    );

    // The other views of the step (pruned HTML) are shown on the real side.
    let html = turn
        .views
        .iter()
        .find(|v| v.representation == Representation::Html)
        .expect("html view");
    assert_eq!(
        html.real.as_ref().map(|s| s.text.as_str()),
        steps["steps"][1]["pruned_html"].as_str()
    );
    assert!(html.real.as_ref().and_then(|s| s.tree.as_ref()).is_some());

    let fidelity = turn.fidelity.as_ref().expect("fidelity");
    let overall = fidelity.overall.expect("overall");
    let node_f1 = fidelity
        .metrics
        .iter()
        .find(|m| m.name == "node_f1")
        .and_then(|m| m.value)
        .expect("node_f1");
    assert_eq!(overall, node_f1);
    assert!(fidelity.metrics.iter().any(|m| m.name == "text_f1"));
    // The timeline's sparkline value is the same number.
    assert_eq!(branch.turns[0].fidelity, Some(overall));

    // The initial state has no action and nothing predicted.
    let root = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: id,
            node_id: 0,
            prediction_id: None,
        },
    )
    .expect("root");
    assert_eq!(root.turn, 0);
    assert!(root.action.is_none());
    assert!(root.predicted_kind.is_none());
    assert!(root.fidelity.is_none());
}

#[test]
fn os_and_android_turns_carry_bounds() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[OS, ANDROID]);
    for rel in [OS, ANDROID] {
        let id = id_of(&resp, rel);
        let branch = main_branch(&studio, &id);
        let turn = get_turn(&studio, &id, branch.turns[0].node_id);
        let main = turn.views.iter().find(|v| v.name == "main").expect("main");
        let tree = main
            .real
            .as_ref()
            .and_then(|s| s.tree.as_ref())
            .expect("real tree");
        let with_bounds = tree.nodes.iter().filter(|n| n.bounds_px.is_some()).count();
        assert!(with_bounds > 3, "{rel}: {with_bounds} nodes with bounds");
        assert!(
            main.predicted
                .as_ref()
                .and_then(|s| s.tree.as_ref())
                .is_some(),
            "{rel}: predicted tree"
        );
        assert!(main.diff.is_some());
        if rel == ANDROID {
            assert_eq!(main.representation, Representation::AndroidXml);
            assert_eq!(
                turn.action.as_ref().map(|a| a.format),
                Some(ActionFormat::AndroidJson)
            );
            let parsed = turn
                .action
                .as_ref()
                .and_then(|a| a.parsed.clone())
                .expect("parsed action");
            assert!(
                matches!(
                    parsed,
                    ParsedAction::Android {
                        action: AndroidAction::Click { .. }
                    }
                ),
                "{parsed:?}"
            );
        } else {
            assert_eq!(main.representation, Representation::OsXml);
        }
    }
}

#[test]
fn the_action_lands_on_its_element_in_both_panes() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[WEB, OS, ANDROID]);
    // (sample, the action's target, the label of the node it lands on in the
    // first turn's real tree)
    let cases = [
        (
            WEB,
            json!({"kind": "bid", "verb": "click", "bid": "32"}),
            "article \"Message from Odile Marchetti\"",
        ),
        (
            OS,
            json!({"kind": "point", "verb": "pyautogui.doubleClick", "x_px": 785.0, "y_px": 307.0}),
            "icon \"draft_budget.ods\"",
        ),
        (
            ANDROID,
            json!({"kind": "point", "verb": "click", "x_px": 540.0, "y_px": 559.0}),
            "android.widget.LinearLayout",
        ),
    ];
    for (rel, target, label) in cases {
        let id = id_of(&resp, rel);
        let node_id = main_branch(&studio, &id).turns[0].node_id;
        let turn = commands::get_turn(
            &studio,
            GetTurnRequest {
                trajectory_id: id.clone(),
                node_id,
                prediction_id: None,
            },
        )
        .expect("turn");
        assert_eq!(
            serde_json::to_value(&turn.action_target).unwrap(),
            target,
            "{rel}"
        );
        let main = &turn.views[0];
        for (side, doc) in [
            (PaneSide::Real, main.real.as_ref().expect("real")),
            (
                PaneSide::Predicted,
                main.predicted.as_ref().expect("predicted"),
            ),
        ] {
            let landing = doc.landing.as_ref().expect("landing");
            assert_eq!(landing.reason, None, "{rel} {side:?}");
            assert_eq!(landing.label.as_deref(), Some(label), "{rel} {side:?}");
            let tree = doc.tree.as_ref().expect("tree");
            let node = &tree.nodes[landing.node_id.expect("node") as usize];
            // The path is the node's ancestors, root first; the line is its own.
            let mut up = Vec::new();
            let mut p = node.parent;
            while let Some(a) = p {
                up.push(a.0);
                p = tree.nodes[a.0 as usize].parent;
            }
            up.reverse();
            assert_eq!(landing.path, up, "{rel} {side:?}");
            assert_eq!(landing.line, node.span.map(|s| s.line), "{rel} {side:?}");
            let span = landing.span.expect("span");
            assert_eq!(Some(span), node.span, "{rel} {side:?}");
            assert!(span.end_byte <= doc.text.len() && span.start_byte < span.end_byte);
            if let Some(ActionTarget::Point { x_px, y_px, .. }) = &turn.action_target {
                let b = node.bounds_px.as_ref().expect("bounds");
                assert!(
                    (b.left as f64) <= *x_px
                        && *x_px < b.right as f64
                        && (b.top as f64) <= *y_px
                        && *y_px < b.bottom as f64,
                    "{rel} {side:?}: {b:?}"
                );
            }
            // A tree view reveals it through its window of rows.
            let window = commands::get_tree_rows(
                &studio,
                GetTreeRowsRequest {
                    trajectory_id: id.clone(),
                    node_id,
                    prediction_id: turn.prediction_id,
                    view_index: 0,
                    side,
                    offset: 0,
                    limit: 0,
                    collapsed: up.clone(),
                    reveal: landing.node_id,
                },
            )
            .expect("rows");
            assert!(window.collapsed.is_empty(), "{rel} {side:?}");
            assert!(window.revealed_row.is_some(), "{rel} {side:?}");
        }
    }
    // A turn whose action names no element has no target and no landing.
    let id = id_of(&resp, OS);
    let press = main_branch(&studio, &id).turns[2].node_id;
    let turn = get_turn(&studio, &id, press);
    assert_eq!(
        turn.action.as_ref().map(|a| a.raw.as_str()),
        Some("pyautogui.press('f2')")
    );
    assert_eq!(turn.action_target, None);
    assert!(
        turn.views
            .iter()
            .all(|v| v.real.as_ref().is_none_or(|d| d.landing.is_none()))
    );
}

#[test]
fn choosing_predictions_and_undo() {
    let (dir, studio) = studio();
    // A terminal trajectory in the native format with two predictions.
    let native = json!({
        "format": "worldloom-trajectory",
        "version": 1,
        "trajectories": [{
            "id": "shell-demo",
            "domain": "terminal",
            "source": {"format": "manual"},
            "nodes": [
                {"id": 0, "real": {"representation": "text", "text": "$ "}},
                {"id": 1, "parent_edge": 0,
                 "real": {"representation": "text", "text": "a.txt\nb.txt\n$ "},
                 "predictions": [
                    {"id": 0, "engine": "copy", "raw_output": "<predicted_observation>a.txt\n$ </predicted_observation>", "status": "ok", "observation": "a.txt\n$ ", "representation": "text"},
                    {"id": 1, "engine": "replay", "raw_output": "<predicted_observation>a.txt\nb.txt\n$ </predicted_observation>", "status": "ok", "observation": "a.txt\nb.txt\n$ ", "representation": "text"}
                 ]}
            ],
            "edges": [{"id": 0, "from": 0, "to": 1, "action": {"raw": "ls", "format": "shell"}}]
        }]
    });
    let path = dir.path().join("shell.json");
    std::fs::write(&path, serde_json::to_string_pretty(&native).expect("json")).expect("write");
    let resp = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![path.display().to_string()],
        },
    )
    .expect("import");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    let id = resp.imported[0].trajectory_id.clone();

    // Without a choice the newest prediction shows.
    let turn = get_turn(&studio, &id, 1);
    assert_eq!(turn.prediction_id, Some(1));
    let main = &turn.views[0];
    assert_eq!(main.representation, Representation::Text);
    assert!(main.diff.is_none());
    assert!(main.real.as_ref().is_some_and(|s| s.tree.is_none()));
    assert_eq!(main.line_diff.as_ref().map(|d| d.ratio), Some(1.0));
    assert_eq!(turn.fidelity.as_ref().and_then(|f| f.overall), Some(1.0));

    // Asking for prediction 0 shows it without choosing it.
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: id.clone(),
            node_id: 1,
            prediction_id: Some(0),
        },
    )
    .expect("turn");
    assert_eq!(turn.prediction_id, Some(0));
    assert_eq!(turn.chosen_prediction_id, None);
    let ops: Vec<LineTag> = turn.views[0]
        .line_diff
        .as_ref()
        .expect("diff")
        .ops
        .iter()
        .map(|o| o.tag)
        .collect();
    assert_eq!(ops, vec![LineTag::Equal, LineTag::Delete, LineTag::Equal]);

    let change = commands::choose_prediction(
        &studio,
        ChoosePredictionRequest {
            trajectory_id: id.clone(),
            node_id: 1,
            prediction_id: Some(0),
        },
    )
    .expect("choose");
    assert_eq!(
        change.change.as_ref().map(|c| c.kind),
        Some(ChangeKind::ChoosePrediction)
    );
    let listed = predictions(&studio, &id, 1);
    assert_eq!(listed.chosen_prediction_id, Some(0));
    assert_eq!(
        listed
            .predictions
            .iter()
            .map(|p| p.engine.as_str())
            .collect::<Vec<_>>(),
        vec!["copy", "replay"]
    );
    let turn = get_turn(&studio, &id, 1);
    assert_eq!(turn.prediction_id, Some(0));
    assert!(
        turn.fidelity
            .as_ref()
            .and_then(|f| f.overall)
            .is_some_and(|f| f < 1.0)
    );

    let undone = commands::undo(&studio, EmptyRequest {}).expect("undo");
    assert_eq!(
        undone.change.as_ref().map(|c| c.state),
        Some(ChangeState::Undone)
    );
    let listed = predictions(&studio, &id, 1);
    assert_eq!(listed.chosen_prediction_id, None);
    commands::redo(&studio, EmptyRequest {}).expect("redo");
    let listed = predictions(&studio, &id, 1);
    assert_eq!(listed.chosen_prediction_id, Some(0));
    let info = commands::workspace_info(&studio, WorkspaceInfoRequest {}).expect("info");
    assert!(info.can_undo && !info.can_redo);
    assert_eq!(info.trajectory_count, 1);
}

#[test]
fn export_round_trips_through_import() {
    let (dir, studio) = studio();
    let resp = import(&studio, &[ANDROID]);
    let id = id_of(&resp, ANDROID);
    let out = dir.path().join("out.worldloom.json");
    let native = export_native(&studio, &id, &out);
    assert_eq!(native.record_count, 1);
    assert_eq!(std::fs::read_to_string(&out).expect("read"), native.content);
    assert!(native.file_name.ends_with(".worldloom.json"));

    let (_dir2, other) = self::studio();
    let back = commands::import_files(
        &other,
        ImportFilesRequest {
            paths: vec![out.display().to_string()],
        },
    )
    .expect("import");
    assert!(back.failed.is_empty(), "{:?}", back.failed);
    let a = main_branch(&studio, &id);
    let b = main_branch(&other, &back.imported[0].trajectory_id);
    assert_eq!(a.turns, b.turns);

    let awb = commands::export(
        &studio,
        ExportRequest {
            trajectory_id: id.clone(),
            branch_id: None,
            format: ExportFormat::Agentworldbench,
            path: None,
        },
    )
    .expect("awb");
    assert_eq!(awb.record_count, 4, "one AgentWorldBench row per turn");
    for line in awb.content.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("row");
        assert!(row["prompt"].is_array() && row["response"].is_array());
    }
    let sft = commands::export(
        &studio,
        ExportRequest {
            trajectory_id: id,
            branch_id: None,
            format: ExportFormat::Sft,
            path: None,
        },
    )
    .expect("sft");
    assert_eq!(sft.record_count, 4);
    let first: serde_json::Value =
        serde_json::from_str(sft.content.lines().next().expect("line")).expect("json");
    assert_eq!(first["messages"][0]["role"], json!("system"));
}

#[test]
fn errors_are_classified() {
    let (dir, studio) = studio();
    let err = dispatch(&studio, "no_such_command", json!({})).expect_err("unknown");
    assert_eq!(err.code, ErrorCode::UnknownCommand);
    let err = dispatch(
        &studio,
        "get_turn",
        json!({"trajectory_id": "x", "node_id": 0}),
    )
    .expect_err("bad id");
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(err.message.contains("trajectory_id `x`"), "{}", err.message);
    let err = dispatch(&studio, "get_turn", json!({"trajectory_id": 5})).expect_err("bad shape");
    assert_eq!(err.code, ErrorCode::BadRequest);
    let err =
        dispatch(&studio, "get_trajectory", json!({"trajectory_id": "99"})).expect_err("missing");
    assert_eq!(err.code, ErrorCode::NotFound);

    let resp = import(&studio, &[WEB]);
    let id = id_of(&resp, WEB);
    let err = dispatch(
        &studio,
        "get_turn",
        json!({"trajectory_id": id, "node_id": 77}),
    )
    .expect_err("no node");
    assert_eq!(err.code, ErrorCode::NotFound);
    let err = dispatch(
        &studio,
        "get_turn",
        json!({"trajectory_id": id, "node_id": 1, "prediction_id": 9}),
    )
    .expect_err("no pred");
    assert_eq!(err.code, ErrorCode::NotFound);
    let err = dispatch(
        &studio,
        "get_branch",
        json!({"trajectory_id": id, "branch_id": "2"}),
    )
    .expect_err("not a leaf");
    assert_eq!(err.code, ErrorCode::NotFound);

    // A bad file is reported per file, naming it; the others still import.
    let bad = dir.path().join("broken.jsonl");
    std::fs::write(&bad, "{\"prompt\": [\n").expect("write");
    let resp = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![bad.display().to_string(), sample(OS)],
        },
    )
    .expect("import");
    assert_eq!(resp.failed.len(), 1);
    assert!(
        resp.failed[0].message.contains("broken.jsonl"),
        "{}",
        resp.failed[0].message
    );
    assert_eq!(resp.imported.len(), 1);

    // Null requests are read as empty objects.
    let info = dispatch(&studio, "workspace_info", serde_json::Value::Null).expect("info");
    assert_eq!(info["trajectory_count"], json!(2));
}

#[test]
fn notes_and_tags() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[WEB, ANDROID]);
    let web = id_of(&resp, WEB);
    let note = commands::add_note(
        &studio,
        AddNoteRequest {
            trajectory_id: web.clone(),
            node_id: Some(2),
            text: "reply box missing".into(),
        },
    )
    .expect("note");
    assert_eq!(note.node_id, Some(2));
    let notes = commands::list_notes(
        &studio,
        ListNotesRequest {
            trajectory_id: web.clone(),
        },
    )
    .expect("notes")
    .notes;
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].text, "reply box missing");
    commands::set_tag(
        &studio,
        SetTagRequest {
            trajectory_id: web.clone(),
            node_id: None,
            tag: "curriculum".into(),
            present: true,
        },
    )
    .expect("tag");
    let tagged = commands::list_trajectories(
        &studio,
        ListTrajectoriesRequest {
            query: Some("curriculum".into()),
            ..Default::default()
        },
    )
    .expect("list");
    assert_eq!(tagged.trajectories.len(), 1);
    assert_eq!(tagged.trajectories[0].id, web);
    assert_eq!(tagged.trajectories[0].tags, vec!["curriculum".to_string()]);
}

fn import_paths(studio: &Studio, paths: &[&std::path::Path]) -> ImportFilesResponse {
    commands::import_files(
        studio,
        ImportFilesRequest {
            paths: paths.iter().map(|p| p.display().to_string()).collect(),
        },
    )
    .expect("import")
}

#[test]
fn eval_outputs_import_as_runs_paired_on_the_datasets_trajectories() {
    let (dir, studio) = studio();
    let [copy, predictions, judged] = write_run_files(dir.path());
    let dataset = import(&studio, &[AWB]);
    assert_eq!(dataset.imported.len(), 7);
    assert!(dataset.runs.is_empty());

    let ours = import_paths(&studio, &[&copy]);
    assert!(ours.failed.is_empty(), "{:?}", ours.failed);
    assert_eq!(ours.runs.len(), 1);
    assert_eq!(
        (
            ours.runs[0].name.as_str(),
            ours.runs[0].rows,
            ours.runs[0].added
        ),
        ("copy.jsonl", 17, true)
    );
    assert!(
        ours.imported.iter().all(|t| !t.added),
        "rows attach to the dataset's trajectories"
    );
    // The official script's two files, a folder apart from ours.
    let official = import_paths(&studio, &[&predictions, &judged]);
    assert!(official.failed.is_empty(), "{:?}", official.failed);
    let names: Vec<&str> = official.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["model-b/predictions.jsonl", "model-b/judged.jsonl"]);
    // The same file again adds nothing.
    let again = import_paths(&studio, &[&copy]);
    assert!(!again.runs[0].added);
    let listed =
        commands::list_trajectories(&studio, ListTrajectoriesRequest::default()).expect("list");
    assert_eq!(listed.trajectories.len(), 7);

    let runs = commands::list_runs(&studio, EmptyRequest::default())
        .expect("runs")
        .runs;
    assert_eq!(runs.len(), 3);
    let (a, p, j) = (&runs[0], &runs[1], &runs[2]);
    assert_eq!((a.engine.as_str(), a.judged_count), ("copy", 0));
    assert_eq!(
        (p.engine.as_str(), p.judged_count),
        ("agentworldbench:gen", 0)
    );
    assert_eq!(j.judged_count, 17);
    assert_eq!(a.overall_score, None);
    // Judged: 8 valid even rows total 4.8 → 95 (the last, even, failed),
    // 8 odd rows total 2 → 25.
    let overall = j.overall_score.expect("score");
    assert!((overall - 60.0).abs() < 1e-9, "{overall}");

    // Dashboard of the judged run.
    let d = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: j.run_id.clone(),
        },
    )
    .expect("dashboard");
    assert_eq!(
        d.dimensions,
        [
            "format",
            "factuality",
            "consistency",
            "realism",
            "quality",
            "total"
        ]
    );
    assert_eq!(d.overall.rows, 17);
    assert_eq!(d.overall.valid, 16);
    let web = d
        .domains
        .iter()
        .find(|s| s.domain == Some(Domain::Web))
        .expect("web");
    assert_eq!(web.rows, 2);
    assert_eq!(
        d.judge,
        vec![
            StatusCount {
                status: "judged".into(),
                count: 16
            },
            StatusCount {
                status: "judge_failed".into(),
                count: 1
            },
        ]
    );
    // Our run: statuses and metric distributions from `wl_*`… computed here,
    // since our file has no `wl_metrics`: the copy of the previous state.
    let d = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: a.run_id.clone(),
        },
    )
    .expect("dashboard");
    assert_eq!(
        d.statuses,
        vec![
            StatusCount {
                status: "ok".into(),
                count: 10
            },
            StatusCount {
                status: "error".into(),
                count: 7
            },
        ]
    );
    let text_f1 = d
        .metrics
        .iter()
        .find(|m| m.metric == "text_f1")
        .expect("text_f1");
    assert_eq!(text_f1.count, 10);
    assert_eq!(text_f1.bins.iter().sum::<u32>(), 10);
    assert!(d.overall.scores.iter().all(Option::is_none));

    // The row table: search, filter, sort, page.
    let rows = |req: ListRunRowsRequest| commands::list_run_rows(&studio, req).expect("rows");
    let base = all_rows(&j.run_id);
    let all = rows(base.clone());
    assert_eq!(all.total, 17);
    let by_score = rows(ListRunRowsRequest {
        sort: Some(RunRowSort::Score),
        descending: true,
        limit: Some(3),
        ..base.clone()
    });
    assert_eq!(by_score.total, 17);
    assert_eq!(
        by_score.rows.iter().map(|r| r.score).collect::<Vec<_>>(),
        vec![Some(95.0); 3]
    );
    let low = rows(ListRunRowsRequest {
        max_score: Some(50.0),
        ..base.clone()
    });
    assert_eq!(low.total, 8);
    let invented = rows(ListRunRowsRequest {
        query: Some("not there".into()),
        search_in: Some(SearchIn::Predicted),
        ..base.clone()
    });
    assert_eq!(
        invented.total, 8,
        "odd rows predict an element that is not there"
    );
    let real_only = rows(ListRunRowsRequest {
        query: Some("not there".into()),
        search_in: Some(SearchIn::Real),
        ..base.clone()
    });
    assert_eq!(real_only.total, 0);
    let web_rows = rows(ListRunRowsRequest {
        domain: Some(Domain::Web),
        ..base.clone()
    });
    assert_eq!(web_rows.total, 2);
    let failed_row = all.rows.last().expect("row");
    assert!(failed_row.judge_failed && failed_row.score.is_none());
    // A row opens as a turn whose prediction carries the judge's verdict.
    let first = &all.rows[0];
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: first.trajectory_id.clone(),
            node_id: first.node_id,
            prediction_id: Some(first.prediction_id),
        },
    )
    .expect("turn");
    let judge = turn
        .fidelity
        .as_ref()
        .and_then(|f| f.judge.as_ref())
        .expect("judge scores in the turn view");
    assert_eq!(judge.format, Some(5.0));

    // Compare the judged run with ours on text F1: pairs on every state.
    let cmp = |outcome: Option<PairOutcome>| {
        commands::compare_runs(
            &studio,
            CompareRunsRequest {
                run_a: j.run_id.clone(),
                run_b: a.run_id.clone(),
                metric: Some(CompareMetric::TextF1),
                outcome,
                tie_margin: None,
                domain: None,
                offset: 0,
                limit: None,
            },
        )
        .expect("compare")
    };
    let c = cmp(None);
    assert_eq!(c.counts.paired, 17);
    assert_eq!((c.counts.only_a, c.counts.only_b), (0, 0));
    assert_eq!(
        c.counts.a_better + c.counts.b_better + c.counts.tie + c.counts.unscored,
        17
    );
    assert_eq!(
        c.scatter.len() as u32,
        c.counts.a_better + c.counts.b_better + c.counts.tie
    );
    let a_better = cmp(Some(PairOutcome::ABetter));
    assert_eq!(a_better.total, c.counts.a_better);
    // 7 first turns: the copy baseline has nothing to copy (error rows, no
    // metric), which counts 0 against A's value: A is better on 5 of them
    // and ties on the 2 where A's text F1 is 0 too. Of the 10 others, the 7
    // exact predictions and one of the 3 wrong ones beat the stale state; 2
    // wrong ones lose to it.
    assert_eq!(
        (
            c.counts.a_better,
            c.counts.b_better,
            c.counts.tie,
            c.counts.unscored
        ),
        (13, 2, 2, 0)
    );
    for pair in &a_better.pairs {
        assert_eq!(
            (pair.a.trajectory_id.as_str(), pair.a.node_id),
            (pair.b.trajectory_id.as_str(), pair.b.node_id)
        );
        assert!(pair.delta.expect("delta") > 0.5);
    }
    let deltas: Vec<f64> = a_better
        .pairs
        .iter()
        .map(|p| p.delta.expect("delta").abs())
        .collect();
    assert!(
        deltas.windows(2).all(|w| w[0] >= w[1]),
        "largest difference first"
    );

    // Search across every run.
    let hits = commands::search_runs(
        &studio,
        SearchRunsRequest {
            query: "evt_41".into(),
            search_in: Some(SearchIn::Real),
            run_id: None,
            limit: None,
        },
    )
    .expect("search");
    assert!(!hits.hits.is_empty());
    let runs_hit: std::collections::BTreeSet<&str> =
        hits.hits.iter().map(|h| h.run_id.as_str()).collect();
    assert_eq!(runs_hit.len(), 3, "the same real state in every run");
    let none = commands::search_runs(
        &studio,
        SearchRunsRequest {
            query: "zzzqqq".into(),
            search_in: None,
            run_id: Some(a.run_id.clone()),
            limit: None,
        },
    )
    .expect("search");
    assert!(none.hits.is_empty());

    // Labels: from the workspace's set, on two rows, counted, filtered, undone.
    let set = commands::label_set(&studio, EmptyRequest::default())
        .expect("labels")
        .labels;
    assert_eq!(set[0], "missed effect");
    assert_eq!(set.len(), 6);
    for (row, label) in [
        (&all.rows[1], "hallucinated element"),
        (&all.rows[3], "hallucinated element"),
        (&all.rows[3], "wrong page"),
    ] {
        commands::set_row_label(
            &studio,
            SetRowLabelRequest {
                row_id: row.row_id.clone(),
                label: label.into(),
                present: true,
            },
        )
        .expect("label");
    }
    let labelled = rows(ListRunRowsRequest {
        label: Some("hallucinated element".into()),
        ..base.clone()
    });
    assert_eq!(labelled.total, 2);
    assert_eq!(
        labelled.rows[1].labels,
        ["hallucinated element", "wrong page"]
    );
    let d = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: j.run_id.clone(),
        },
    )
    .expect("dashboard");
    assert_eq!(
        d.labels,
        vec![
            StatusCount {
                status: "hallucinated element".into(),
                count: 2
            },
            StatusCount {
                status: "wrong page".into(),
                count: 1
            },
        ]
    );
    let log = commands::history(&studio, EmptyRequest::default()).expect("history");
    assert_eq!(log.changes[0].kind, ChangeKind::SetLabel);
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    let d = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: j.run_id.clone(),
        },
    )
    .expect("dashboard");
    assert_eq!(d.labels.len(), 1);
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    let saved = commands::set_label_set(
        &studio,
        SetLabelSetRequest {
            labels: vec!["wrong page".into(), " mine ".into()],
        },
    )
    .expect("save");
    assert_eq!(saved.labels, ["wrong page", "mine"]);
    let err = commands::set_row_label(
        &studio,
        SetRowLabelRequest {
            row_id: "x".into(),
            label: "a".into(),
            present: true,
        },
    )
    .expect_err("bad id");
    assert_eq!(err.code, ErrorCode::BadRequest);

    // One undo removes the newest run; the history names it (the newest
    // applied change, after the three undone labels).
    let log = commands::history(&studio, EmptyRequest::default()).expect("history");
    let applied = log
        .changes
        .iter()
        .find(|c| c.state == ChangeState::Applied)
        .expect("applied");
    assert_eq!(applied.kind, ChangeKind::ImportRun);
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    assert_eq!(
        commands::list_runs(&studio, EmptyRequest::default())
            .expect("runs")
            .runs
            .len(),
        2
    );
    let err = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: j.run_id.clone(),
        },
    )
    .expect_err("undone");
    assert_eq!(err.code, ErrorCode::NotFound);
    let err = commands::get_run_dashboard(&studio, RunRequest { run_id: "x".into() })
        .expect_err("bad id");
    assert_eq!(err.code, ErrorCode::BadRequest);
}

#[test]
fn run_rows_carry_notes_drift_by_turn_and_export_with_labels() {
    let (dir, studio) = studio();
    let [copy, _predictions, judged] = write_run_files(dir.path());
    import(&studio, &[AWB]);
    let imported = import_paths(&studio, &[&copy, &judged]);
    assert!(imported.failed.is_empty(), "{:?}", imported.failed);
    let runs = commands::list_runs(&studio, EmptyRequest::default())
        .expect("runs")
        .runs;
    let (a, j) = (&runs[0], &runs[1]);
    let all = |run: &str| {
        commands::list_run_rows(&studio, all_rows(run))
            .expect("rows")
            .rows
    };
    let rows = all(&j.run_id);
    assert!(rows.iter().all(|r| r.note.is_none()));

    // A note, edited, is one undoable change each; an empty text clears it.
    let note = |row: &RunRowView, text: &str| {
        commands::set_row_note(
            &studio,
            SetRowNoteRequest {
                row_id: row.row_id.clone(),
                text: text.into(),
            },
        )
        .expect("note")
    };
    note(&rows[1], "invents a row");
    let change = note(&rows[1], "invents a \"Save\" button, then\nthe toast");
    assert_eq!(change.change.expect("change").kind, ChangeKind::SetRowNote);
    assert_eq!(
        all(&j.run_id)[1].note.as_deref(),
        Some("invents a \"Save\" button, then\nthe toast")
    );
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    assert_eq!(all(&j.run_id)[1].note.as_deref(), Some("invents a row"));
    note(&rows[2], "x");
    note(&rows[2], "  ");
    assert_eq!(all(&j.run_id)[2].note, None);
    commands::set_row_label(
        &studio,
        SetRowLabelRequest {
            row_id: rows[3].row_id.clone(),
            label: "wrong page".into(),
            present: true,
        },
    )
    .expect("label");
    let err = commands::set_row_note(
        &studio,
        SetRowNoteRequest {
            row_id: "999999".into(),
            text: "x".into(),
        },
    )
    .expect_err("no row");
    assert_eq!(err.code, ErrorCode::NotFound);

    // Drift: text F1 by turn of the judged run against the copy baseline.
    let drift = commands::run_drift(
        &studio,
        RunDriftRequest {
            run_a: j.run_id.clone(),
            run_b: Some(a.run_id.clone()),
            metric: None,
        },
    )
    .expect("drift");
    assert_eq!(
        drift.metric,
        CompareMetric::TextF1,
        "the copy run is not judged"
    );
    assert_eq!(drift.series.len(), 2);
    for s in &drift.series {
        assert_eq!(s.points.iter().map(|p| p.rows).sum::<u32>(), 17);
        let turns: Vec<u32> = s.points.iter().map(|p| p.turn).collect();
        assert_eq!(turns, [1, 2, 3]);
        for p in &s.points {
            if let (Some(lo), Some(m), Some(hi)) = (p.min, p.mean, p.max) {
                assert!(lo <= m && m <= hi && (0.0..=100.0).contains(&m));
            }
        }
    }
    // The copy baseline has nothing to copy at the first turn (7 rows, no
    // metric): no mean there, a mean at every later turn.
    let copy_turn_1 = &drift.series[1].points[0];
    assert_eq!(
        (copy_turn_1.rows, copy_turn_1.scored, copy_turn_1.mean),
        (7, 0, None)
    );
    assert!(drift.series[1].points[1..].iter().all(|p| p.mean.is_some()));
    // Each turn's mean is the mean of its rows' text F1 × 100.
    let turn_2: Vec<f64> = all(&j.run_id)
        .iter()
        .filter(|r| r.turn == 2)
        .filter_map(|r| r.text_f1)
        .collect();
    let want = turn_2.iter().sum::<f64>() / turn_2.len() as f64 * 100.0;
    let got = drift.series[0].points[1].mean.expect("mean");
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    let judged_only = commands::run_drift(
        &studio,
        RunDriftRequest {
            run_a: j.run_id.clone(),
            run_b: None,
            metric: None,
        },
    )
    .expect("drift");
    assert_eq!(judged_only.metric, CompareMetric::Score);

    // The labelled and noted rows as CSV and JSON Lines.
    let export = |format: RowsExportFormat, annotated_only: bool| {
        commands::export_run_rows(
            &studio,
            ExportRunRowsRequest {
                run_id: j.run_id.clone(),
                format,
                annotated_only,
                path: None,
            },
        )
        .expect("export")
    };
    let csv = export(RowsExportFormat::Csv, true);
    assert_eq!(csv.rows_total, 2);
    assert_eq!(csv.file_name, "labelled-model-b-judged-jsonl.csv");
    let text = csv.content.expect("content");
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(
        lines[0],
        "\u{feff}run,engine,row,trajectory,turn,domain,status,score,text_f1,node_f1,attribute_accuracy,transition_f1,labels,note,trajectory_id,node_id,prediction_id,row_id"
    );
    assert!(
        lines[1].starts_with("model-b/judged.jsonl,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].ends_with(&format!(
            ",,invents a row,{},{},{},{}",
            rows[1].trajectory_id, rows[1].node_id, rows[1].prediction_id, rows[1].row_id
        )),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains(",wrong page,,"), "{}", lines[2]);
    assert_eq!(lines[3], "");
    let jsonl = export(RowsExportFormat::Jsonl, true);
    let objects: Vec<serde_json::Value> = jsonl
        .content
        .expect("content")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["note"], "invents a row");
    assert_eq!(objects[0]["row"], 2);
    assert_eq!(objects[1]["labels"], json!(["wrong page"]));
    assert_eq!(objects[1]["note"], serde_json::Value::Null);
    assert_eq!(export(RowsExportFormat::Jsonl, false).rows_total, 17);
    let target = dir.path().join("rows.csv");
    let written = commands::export_run_rows(
        &studio,
        ExportRunRowsRequest {
            run_id: j.run_id.clone(),
            format: RowsExportFormat::Csv,
            annotated_only: true,
            path: Some(target.display().to_string()),
        },
    )
    .expect("written");
    assert!(written.content.is_none());
    assert_eq!(std::fs::read_to_string(&target).expect("read"), text);

    // The curriculum export carries them on the rows' turns.
    for (row, labels, note) in [
        (&rows[1], json!([]), json!("invents a row")),
        (&rows[3], json!(["wrong page"]), serde_json::Value::Null),
    ] {
        commands::set_tag(
            &studio,
            SetTagRequest {
                trajectory_id: row.trajectory_id.clone(),
                node_id: None,
                tag: "review".into(),
                present: true,
            },
        )
        .expect("tag");
        for format in [CurriculumFormat::Agentworldbench, CurriculumFormat::Sft] {
            let out = commands::export_curriculum(
                &studio,
                ExportCurriculumRequest {
                    selection: Vec::new(),
                    tag: Some("review".into()),
                    format,
                    preview_limit: 0,
                    path: None,
                },
            )
            .expect("curriculum");
            let annotated: Vec<serde_json::Value> = out
                .content
                .expect("content")
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
                .filter_map(|v| v.get("wl_annotations").cloned())
                .collect();
            assert!(
                annotated.contains(&json!([{"run": "model-b/judged.jsonl", "engine": j.engine, "labels": labels, "note": note}])),
                "{format:?}: {annotated:?}"
            );
        }
    }
}

fn rows_request(
    id: &str,
    node: u32,
    prediction: Option<u32>,
    side: PaneSide,
) -> GetTreeRowsRequest {
    GetTreeRowsRequest {
        trajectory_id: id.into(),
        node_id: node,
        prediction_id: prediction,
        view_index: 0,
        side,
        offset: 0,
        limit: 10_000,
        collapsed: Vec::new(),
        reveal: None,
    }
}

#[test]
fn tree_windows_match_the_turn_and_carry_diff_marks_search_and_reveal() {
    let (_dir, studio) = studio();
    let resp = import(&studio, &[WEB]);
    let id = id_of(&resp, WEB);
    let turn = get_turn(&studio, &id, 2);
    let view = &turn.views[0];
    let diff = view.diff.as_ref().expect("diff");
    for (side, doc, statuses) in [
        (
            PaneSide::Real,
            view.real.as_ref().expect("real"),
            &diff.real,
        ),
        (
            PaneSide::Predicted,
            view.predicted.as_ref().expect("pred"),
            &diff.predicted,
        ),
    ] {
        let tree = doc.tree.as_ref().expect("small trees come whole");
        let first = doc.rows.as_ref().expect("first window");
        assert_eq!(first.node_count as usize, tree.nodes.len());
        assert_eq!(first.visible_count as usize, tree.nodes.len());
        let w = commands::get_tree_rows(&studio, rows_request(&id, 2, turn.prediction_id, side))
            .expect("rows");
        assert_eq!(w.node_count as usize, tree.nodes.len());
        assert_eq!(w.rows.len(), tree.nodes.len());
        assert_eq!(&w.rows[..first.rows.len()], &first.rows[..]);
        // Each row is its node (less the child list) with the diff's marks.
        for r in &w.rows {
            let node = &tree.nodes[r.node.id.index()];
            assert_eq!(r.node.name, node.name);
            assert_eq!(r.child_count as usize, node.children.len());
            assert_eq!(r.status, Some(statuses[r.node.id.index()]));
        }
        let counts = w.status_counts.expect("counts");
        let count = |s: DiffStatus| statuses.iter().filter(|x| **x == s).count() as u32;
        assert_eq!(counts.changed, count(DiffStatus::Changed));
        assert_eq!(counts.added, count(DiffStatus::Added));
        assert_eq!(counts.removed, count(DiffStatus::Removed));
    }
    // Marks agree with the pairs, and changes ride on both sides.
    let real = commands::get_tree_rows(
        &studio,
        rows_request(&id, 2, turn.prediction_id, PaneSide::Real),
    )
    .expect("rows");
    let pred = commands::get_tree_rows(
        &studio,
        rows_request(&id, 2, turn.prediction_id, PaneSide::Predicted),
    )
    .expect("rows");
    for (r, p) in &diff.pairs {
        assert_eq!(real.rows[*r as usize].counterpart, Some(*p));
        assert_eq!(pred.rows[*p as usize].counterpart, Some(*r));
        assert_eq!(
            real.rows[*r as usize].changes,
            diff.real_changes[*r as usize]
        );
        assert_eq!(
            pred.rows[*p as usize].changes,
            diff.real_changes[*r as usize]
        );
    }

    // Search runs on the server: every word, any case, over role, name,
    // value, key and attributes.
    let predicted = view
        .predicted
        .as_ref()
        .and_then(|d| d.tree.as_ref())
        .expect("tree");
    let text_of = |n: &UiNode| {
        let mut parts = vec![
            n.role.clone(),
            n.name.clone(),
            n.value.clone().unwrap_or_default(),
            n.key.clone().unwrap_or_default(),
        ];
        parts.extend(
            n.attributes
                .iter()
                .map(|a| format!("{}={}", a.name, a.value)),
        );
        parts.join(" ").to_lowercase()
    };
    let target = predicted
        .nodes
        .iter()
        .rev()
        .find(|n| n.name.split_whitespace().count() >= 2)
        .expect("a named node");
    let words: Vec<String> = target
        .name
        .split_whitespace()
        .take(2)
        .map(str::to_uppercase)
        .collect();
    let query = words.join("  ");
    let expected: Vec<u32> = predicted
        .nodes
        .iter()
        .filter(|n| {
            let t = text_of(n);
            words.iter().all(|w| t.contains(&w.to_lowercase()))
        })
        .map(|n| n.id.0)
        .collect();
    let found = commands::search_tree(
        &studio,
        SearchTreeRequest {
            trajectory_id: id.clone(),
            node_id: 2,
            prediction_id: turn.prediction_id,
            view_index: 0,
            side: PaneSide::Predicted,
            query,
            limit: 100,
        },
    )
    .expect("search");
    assert!(found.matches.contains(&target.id.0));
    assert_eq!(found.matches, expected);
    assert_eq!(found.total as usize, expected.len());

    // Collapsing the root leaves one row; revealing a match expands it again.
    let mut req = rows_request(&id, 2, turn.prediction_id, PaneSide::Predicted);
    req.collapsed = vec![0];
    let one = commands::get_tree_rows(&studio, req.clone()).expect("rows");
    assert_eq!(one.visible_count, 1);
    assert_eq!(one.collapsed, vec![0]);
    req.reveal = Some(target.id.0);
    let revealed = commands::get_tree_rows(&studio, req.clone()).expect("rows");
    assert!(revealed.collapsed.is_empty());
    assert_eq!(revealed.revealed_row, Some(target.id.0));

    // Through the dispatcher too, and after a change (a new revision) the
    // trees are read again rather than served stale.
    let v = dispatch(
        &studio,
        "get_tree_rows",
        json!({"trajectory_id": id, "node_id": 2, "prediction_id": turn.prediction_id,
               "view_index": 0, "side": "real", "offset": 3, "limit": 2}),
    )
    .expect("dispatch");
    assert_eq!(v["offset"], 3);
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["rows"][0]["row"], 3);
    commands::add_note(
        &studio,
        AddNoteRequest {
            trajectory_id: id.clone(),
            node_id: Some(2),
            text: "look".into(),
        },
    )
    .expect("note");
    let again = commands::get_tree_rows(
        &studio,
        rows_request(&id, 2, turn.prediction_id, PaneSide::Real),
    )
    .expect("rows");
    assert_eq!(again, real);
    // Bad references are errors, not panics.
    let mut bad = rows_request(&id, 2, turn.prediction_id, PaneSide::Real);
    bad.view_index = 9;
    assert_eq!(
        commands::get_tree_rows(&studio, bad).unwrap_err().code,
        ErrorCode::NotFound
    );
    let mut bad = rows_request(&id, 2, turn.prediction_id, PaneSide::Real);
    bad.reveal = Some(1_000_000);
    assert_eq!(
        commands::get_tree_rows(&studio, bad).unwrap_err().code,
        ErrorCode::BadRequest
    );
    assert_eq!(
        commands::get_tree_rows(&studio, rows_request(&id, 99, None, PaneSide::Real))
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
}

#[test]
fn a_tree_past_the_whole_tree_cap_travels_only_in_windows() {
    let (dir, studio) = studio();
    // An Android dump of WHOLE_TREE_MAX_NODES + 1 nodes (root + children).
    let n = commands::WHOLE_TREE_MAX_NODES;
    let mut xml = String::from(
        "<hierarchy rotation=\"0\"><node class=\"android.widget.FrameLayout\" bounds=\"[0,0][1080,2400]\">",
    );
    for i in 0..n - 1 {
        xml.push_str(&format!(
            "<node class=\"android.widget.TextView\" text=\"Item x{i}x\" bounds=\"[0,{i}][1080,{}]\"/>",
            i + 1
        ));
    }
    xml.push_str("</node></hierarchy>");
    let native = json!({
        "format": "worldloom-trajectory",
        "version": 1,
        "trajectories": [{
            "id": "big", "domain": "android", "source": {"format": "manual"},
            "nodes": [{"id": 0, "real": {"representation": "android-xml", "text": xml}}],
            "edges": []
        }]
    });
    let path = dir.path().join("big.json");
    std::fs::write(&path, native.to_string()).expect("write");
    let resp = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![path.display().to_string()],
        },
    )
    .expect("import");
    let id = resp.imported[0].trajectory_id.clone();
    let turn = get_turn(&studio, &id, 0);
    let doc = turn.views[0].real.as_ref().expect("real");
    assert!(doc.tree.is_none());
    assert_eq!(doc.text_bytes, None);
    let first = doc.rows.as_ref().expect("rows");
    assert_eq!(first.node_count as usize, n + 1);
    assert_eq!(first.rows.len() as u32, commands::FIRST_WINDOW_ROWS);
    assert_eq!(first.status_counts, None);
    let mut req = rows_request(&id, 0, None, PaneSide::Real);
    req.offset = n as u32 - 5;
    req.limit = 100;
    let tail = commands::get_tree_rows(&studio, req).expect("rows");
    assert_eq!(tail.rows.len(), 6);
    assert_eq!(
        tail.rows.last().map(|r| r.node.name.as_str()),
        Some(format!("Item x{}x", n - 2).as_str())
    );
    // A window never exceeds its cap.
    let mut req = rows_request(&id, 0, None, PaneSide::Real);
    req.limit = u32::MAX;
    let capped = commands::get_tree_rows(&studio, req).expect("rows");
    assert_eq!(capped.rows.len() as u32, commands::TREE_WINDOW_MAX_ROWS);
    let found = commands::search_tree(
        &studio,
        SearchTreeRequest {
            trajectory_id: id,
            node_id: 0,
            prediction_id: None,
            view_index: 0,
            side: PaneSide::Real,
            query: "ITEM x1999".into(),
            limit: 5,
        },
    )
    .expect("search");
    // "Item x1999x" and "Item x19990x".."Item x19998x", the first five listed.
    assert_eq!(found.total, 10);
    assert_eq!(found.matches, vec![2001, 19992, 19993, 19994, 19995]);
}

/// Runs `import_files` on another thread, failing (instead of hanging) when
/// it does not answer within `secs`.
fn import_within(
    studio: &std::sync::Arc<Studio>,
    paths: Vec<String>,
    secs: u64,
) -> ImportFilesResponse {
    let (tx, rx) = std::sync::mpsc::channel();
    let studio = studio.clone();
    std::thread::spawn(move || {
        let _ = tx.send(commands::import_files(
            &studio,
            ImportFilesRequest { paths },
        ));
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("the import did not end")
        .expect("import")
}

#[cfg(unix)]
#[test]
fn imports_read_regular_files_only_and_at_most_the_limit() {
    let dir = tempfile::tempdir().expect("dir");
    let studio = std::sync::Arc::new(Studio::open(&dir.path().join("ws.worldloom")).expect("open"));
    let mkfifo = |p: &std::path::Path| {
        let status = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .expect("mkfifo");
        assert!(status.success());
    };
    // A FIFO never ends (nobody writes to it): reading it blocks for ever.
    let fifo = dir.path().join("rows.jsonl");
    mkfifo(&fifo);
    // A folder holding one, under a name the folder importers read.
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).expect("dumps");
    mkfifo(&dumps.join("step_01.xml"));
    // Over the limit, sparse (no disk used).
    let big = dir.path().join("big.jsonl");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(worldloom_api::IMPORT_MAX_BYTES + 1))
        .expect("big");
    let shown = |p: &std::path::Path| p.display().to_string();
    let resp = import_within(
        &studio,
        vec!["/dev/zero".into(), shown(&fifo), shown(&dumps), shown(&big)],
        30,
    );
    assert!(resp.imported.is_empty());
    let failed: Vec<(&str, &str)> = resp
        .failed
        .iter()
        .map(|f| (f.path.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (
                "/dev/zero",
                "not a regular file (a character device); only regular files and folders are imported"
            ),
            (
                shown(&fifo).as_str(),
                "not a regular file (a FIFO); only regular files and folders are imported"
            ),
            (
                shown(&dumps).as_str(),
                &*format!(
                    "{}: not a regular file (a FIFO); only regular files and folders are imported",
                    dumps.join("step_01.xml").display()
                )
            ),
            (
                shown(&big).as_str(),
                "over the import limit of 4294967296 bytes (4 GiB); split the file or import its parts"
            ),
        ]
    );
}

#[test]
fn an_abandoned_import_stops_reading() {
    let dir = tempfile::tempdir().expect("dir");
    let studio = std::sync::Arc::new(Studio::open(&dir.path().join("ws.worldloom")).expect("open"));
    // 3 GiB, sparse: seconds of reading, none of disk.
    let huge = dir.path().join("huge.jsonl");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(3 << 30))
        .expect("huge");
    let abandoned = worldloom_api::Abandoned::new();
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (studio, abandoned) = (studio.clone(), abandoned.clone());
        let paths = vec![huge.display().to_string()];
        std::thread::spawn(move || {
            let resp =
                abandoned.run(|| commands::import_files(&studio, ImportFilesRequest { paths }));
            let _ = tx.send(resp);
        });
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    abandoned.set();
    let resp = rx
        .recv_timeout(std::time::Duration::from_secs(2))
        .expect("the import ends soon after it is abandoned")
        .expect("import");
    assert!(resp.imported.is_empty());
    assert_eq!(resp.failed.len(), 1);
    assert!(
        resp.failed[0]
            .message
            .starts_with("the import was abandoned (the client went away)"),
        "{:?}",
        resp.failed
    );
}

#[test]
fn an_upload_hashed_while_written_matches_the_same_file_imported_from_its_path() {
    let (_dir, studio) = studio();
    let bytes = std::fs::read(sample(WEB)).expect("sample");
    let name = std::path::Path::new(WEB)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let mut folder = worldloom_api::UploadFolder::new().expect("folder");
    let mut file = folder.create(&name).expect("create");
    file.write(&bytes).expect("write");
    folder.finish(file).expect("finish");
    let uploaded = folder.import(&studio).expect("upload");
    assert_eq!(uploaded.failed, vec![]);
    assert!(uploaded.imported.iter().all(|t| t.added && t.path == name));
    // The same bytes from the path: recognised by their hash, not added.
    let again = import(&studio, &[WEB]);
    assert!(!again.imported.is_empty());
    assert!(again.imported.iter().all(|t| !t.added), "{again:?}");
}
