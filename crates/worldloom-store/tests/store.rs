//! Integration tests of the workspace store: round trips, undo/redo, branches,
//! notes and tags, migrations from a committed old file, and crash safety.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use worldloom_core::action::ActionFormat;
use worldloom_core::{
    Action, AuthoredObservation, Domain, EdgeId, NodeId, Observation, Prediction, PredictionId,
    Representation, Trajectory,
};
use worldloom_store::{
    AppendTurn, ChangeState, StoreError, Workspace, is_workspace_file, sha256_hex,
};

fn sample(id: &str, turns: usize) -> Trajectory {
    let mut t = Trajectory::new(
        id,
        Domain::Web,
        Some(Observation::new(
            Representation::Axtree,
            "[1] RootWebArea 'Start'",
        )),
    );
    t.goal = Some(format!("goal of {id}"));
    let mut at = t.root();
    for k in 1..=turns {
        let obs = Observation::new(
            Representation::Axtree,
            format!("[1] RootWebArea 'Page {k}'\n\t[{k}0] button 'Next'"),
        );
        let (_, n) = t
            .add_step(
                at,
                Action::new(format!("click('{k}0')"), ActionFormat::Browsergym),
                Some(obs),
            )
            .expect("step");
        at = n;
    }
    t
}

fn temp_ws() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("test.worldloom");
    (dir, path)
}

#[test]
fn import_and_load_round_trip() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let mut t = sample("traj-a", 3);
    t.add_prediction(
        NodeId(2),
        Prediction::from_output("copy", "<predicted_observation>x</predicted_observation>"),
    )
    .expect("prediction");
    let key = ws.import_trajectory(&t, Some("abc")).expect("import");
    let stored = ws.load_trajectory(key).expect("load");
    assert_eq!(stored.trajectory, t);
    assert_eq!(stored.live_nodes.len(), 4);
    assert_eq!(stored.live_edges.len(), 3);
    assert_eq!(ws.find_imported("abc", "traj-a").expect("find"), Some(key));
    assert_eq!(ws.find_imported("abc", "other").expect("find"), None);
    let rows = ws.list_trajectories().expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].ext_id, "traj-a");
    assert_eq!(rows[0].domain, Domain::Web);
    assert_eq!(rows[0].prediction_count, 1);
    assert_eq!(rows[0].goal.as_deref(), Some("goal of traj-a"));
    assert!(is_workspace_file(&path));
    assert_eq!(
        ws.schema_version().expect("version"),
        worldloom_store::SCHEMA_VERSION
    );
    assert_eq!(ws.integrity_check().ok(), Some(()));
}

#[test]
fn an_import_that_consumes_the_trajectory_stores_the_same() {
    // `import_trajectory_owned` releases the trajectory state by state as it
    // writes it; what it stores reads back exactly as a borrowed import.
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let mut t = sample("traj-o", 3);
    t.add_prediction(
        NodeId(2),
        Prediction::from_output("copy", "<predicted_observation>x</predicted_observation>"),
    )
    .expect("prediction");
    let borrowed = ws.import_trajectory(&t, Some("abc")).expect("import");
    let owned = ws
        .import_trajectory_owned(t.clone(), Some("def"))
        .expect("import owned");
    let a = ws.load_trajectory(borrowed).expect("load");
    let b = ws.load_trajectory(owned).expect("load");
    assert_eq!(b.trajectory, t);
    assert_eq!(a.trajectory, b.trajectory);
    assert_eq!(a.live_nodes, b.live_nodes);
    assert_eq!(a.live_edges, b.live_edges);
    assert_eq!(
        ws.find_imported("def", "traj-o").expect("find"),
        Some(owned)
    );
    let rows = ws.list_trajectories().expect("list");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].prediction_count, 1);
    assert_eq!(rows[0].goal, rows[1].goal);
    // The same fingerprint is stored for both.
    let conn = worldloom_store::rusqlite::Connection::open(&path).expect("raw");
    let prints: Vec<String> = conn
        .prepare("SELECT fingerprint FROM trajectory_fingerprints ORDER BY trajectory_id")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(prints.len(), 2);
    assert_eq!(prints[0], prints[1]);
    assert_eq!(prints[0], worldloom_store::trajectory_fingerprint(&t));
    drop(conn);
    // It is one undoable change, as an import is.
    ws.undo().expect("undo");
    assert_eq!(ws.list_trajectories().expect("list").len(), 1);
    // An invalid trajectory is refused the same way.
    let mut bad = sample("bad", 1);
    bad.edges[0].to = NodeId(99);
    assert!(matches!(
        ws.import_trajectory_owned(bad, None),
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(ws.integrity_check().ok(), Some(()));
}

#[test]
fn predictions_choices_and_undo_redo() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let key = ws.import_trajectory(&sample("t", 2), None).expect("import");
    let p0 = ws
        .add_prediction(
            key,
            NodeId(1),
            &Prediction::from_output("copy", "<predicted_observation>a</predicted_observation>"),
        )
        .expect("p0");
    let p1 = ws
        .add_prediction(
            key,
            NodeId(1),
            &Prediction::from_output("replay", "<predicted_observation>b</predicted_observation>"),
        )
        .expect("p1");
    assert_eq!((p0, p1), (PredictionId(0), PredictionId(1)));
    ws.choose_prediction(key, NodeId(1), Some(p0))
        .expect("choose");
    let node = |ws: &Workspace| ws.load_trajectory(key).expect("load").trajectory.nodes[1].clone();
    assert_eq!(node(&ws).chosen_prediction, Some(p0));
    let chosen = ws.revision().expect("revision");

    // Undo the choice, then the second prediction.
    let undone = ws.undo().expect("undo").expect("something to undo");
    let after_undo = ws.revision().expect("revision");
    assert_ne!(after_undo, chosen);
    assert_eq!(after_undo.0, chosen.0);
    assert_eq!(after_undo.1, chosen.1 + 1);
    assert_eq!(undone.kind, "choose_prediction");
    assert_eq!(undone.state, ChangeState::Undone);
    assert_eq!(node(&ws).chosen_prediction, None);
    ws.undo().expect("undo");
    assert_eq!(node(&ws).predictions.len(), 1);
    // Redo brings the prediction back first, then the choice.
    assert_eq!(
        ws.redo().expect("redo").map(|c| c.kind),
        Some("add_prediction".to_string())
    );
    assert_eq!(node(&ws).predictions.len(), 2);
    assert_eq!(node(&ws).chosen_prediction, None);
    ws.redo().expect("redo");
    assert_eq!(node(&ws).chosen_prediction, Some(p0));
    assert!(ws.redo().expect("redo").is_none());
    // The same live records, the same revision.
    assert_eq!(ws.revision().expect("revision"), chosen);

    // A new change after an undo abandons the redo history, and ids are
    // never reused.
    ws.undo().expect("undo");
    ws.undo().expect("undo");
    let p2 = ws
        .add_prediction(
            key,
            NodeId(1),
            &Prediction::from_output("copy", "<predicted_observation>c</predicted_observation>"),
        )
        .expect("p2");
    assert_eq!(p2, PredictionId(2));
    assert!(ws.redo().expect("redo").is_none());
    let newer = ws.revision().expect("revision");
    assert!(newer.0 > chosen.0);
    assert_eq!(newer.1, 0);
    let ids: Vec<u32> = node(&ws).predictions.iter().map(|p| p.id.0).collect();
    assert_eq!(ids, vec![0, 2]);
    let states: Vec<ChangeState> = ws
        .history(10)
        .expect("history")
        .iter()
        .map(|c| c.state)
        .collect();
    assert_eq!(
        states,
        vec![
            ChangeState::Applied,
            ChangeState::Abandoned,
            ChangeState::Abandoned,
            ChangeState::Applied,
            ChangeState::Applied
        ]
    );
    // Choosing a prediction that does not exist is refused.
    assert!(matches!(
        ws.choose_prediction(key, NodeId(1), Some(PredictionId(1))),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        ws.add_prediction(key, NodeId(9), &Prediction::from_output("copy", "")),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn branches_authored_and_undo_of_import() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let key = ws.import_trajectory(&sample("t", 3), None).expect("import");
    let (edge, node) = ws
        .add_branch(
            key,
            EdgeId(1),
            Action::new("click('99')", ActionFormat::Browsergym),
        )
        .expect("branch");
    assert_eq!((edge, node), (EdgeId(3), NodeId(4)));
    let stored = ws.load_trajectory(key).expect("load");
    assert_eq!(stored.live_children(NodeId(1)), vec![EdgeId(1), EdgeId(3)]);
    assert_eq!(stored.trajectory.edges[3].edited_from, Some(EdgeId(1)));
    assert_eq!(stored.trajectory.edges[3].action.raw, "click('99')");
    assert!(stored.trajectory.nodes[4].real.is_none());

    let authored = AuthoredObservation {
        observation: Observation::new(Representation::Axtree, "[1] RootWebArea 'Authored'"),
        author: Some("tester".into()),
        based_on: None,
        note: Some("curriculum step".into()),
    };
    ws.set_authored(key, node, &authored).expect("author");
    let stored = ws.load_trajectory(key).expect("load");
    assert_eq!(
        stored.trajectory.nodes[4].current_authored(),
        Some(&authored)
    );

    // Undo the authored observation and the branch: the branch node is kept
    // in the file but no longer live.
    ws.undo().expect("undo");
    ws.undo().expect("undo");
    let stored = ws.load_trajectory(key).expect("load");
    assert!(!stored.live_nodes.contains(&NodeId(4)));
    assert_eq!(stored.live_children(NodeId(1)), vec![EdgeId(1)]);
    assert!(matches!(
        ws.set_authored(key, NodeId(4), &authored),
        Err(StoreError::NotFound(_))
    ));
    // A new branch gets fresh ids.
    let (edge, node) = ws
        .add_branch(
            key,
            EdgeId(0),
            Action::new("click('7')", ActionFormat::Browsergym),
        )
        .expect("branch");
    assert_eq!((edge, node), (EdgeId(4), NodeId(5)));

    // Undoing everything hides the trajectory; redo brings it back.
    ws.undo().expect("undo");
    ws.undo().expect("undo");
    assert!(ws.list_trajectories().expect("list").is_empty());
    assert!(matches!(
        ws.load_trajectory(key),
        Err(StoreError::NotFound(_))
    ));
    ws.redo().expect("redo");
    assert_eq!(ws.list_trajectories().expect("list").len(), 1);
}

/// `append_turns`: several turns in one call (one continuing another),
/// read back like `add_turn`'s with their perturbation and chosen
/// prediction, each its own change; the ids continue past an undone turn;
/// an unknown state fails the whole call without writing.
#[test]
fn append_turns_writes_without_reading_back() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let key = ws.import_trajectory(&sample("t", 1), None).expect("import");
    let other = ws.import_trajectory(&sample("u", 2), None).expect("import");
    let predicted = Prediction::from_output(
        "copy",
        "<predicted_observation>[1] RootWebArea 'Cart'</predicted_observation>",
    );
    let turn = |key, from: u32, raw: &str, prediction: Option<&Prediction>| AppendTurn {
        key,
        from: NodeId(from),
        action: Action::new(raw, ActionFormat::Browsergym),
        perturbation: Some("  the cart is empty ".into()),
        prediction: prediction.cloned(),
    };
    let ids = ws
        .append_turns(&[
            turn(key, 1, "click('5')", Some(&predicted)),
            turn(other, 2, "click('6')", None),
            turn(key, 2, "click('7')", Some(&predicted)),
        ])
        .expect("append");
    assert_eq!(
        ids,
        [
            (EdgeId(1), NodeId(2)),
            (EdgeId(2), NodeId(3)),
            (EdgeId(2), NodeId(3))
        ]
    );
    let stored = ws.load_trajectory(key).expect("load");
    let t = &stored.trajectory;
    assert_eq!(stored.live_children(NodeId(2)), vec![EdgeId(2)]);
    assert_eq!(t.edges[2].action.raw, "click('7')");
    assert_eq!((t.edges[2].from, t.edges[2].to), (NodeId(2), NodeId(3)));
    let chosen = t.nodes[3].preferred_prediction().expect("chosen");
    assert_eq!(t.nodes[3].chosen_prediction, Some(PredictionId(0)));
    assert_eq!(
        chosen.observation.as_deref(),
        Some("[1] RootWebArea 'Cart'")
    );
    let perturbations = ws.perturbations(key).expect("read");
    assert_eq!(perturbations[&EdgeId(1)], "the cart is empty");
    assert_eq!(perturbations.len(), 2);
    let history = ws.history(10).expect("history");
    assert_eq!(
        history
            .iter()
            .take(3)
            .map(|c| c.kind.as_str())
            .collect::<Vec<_>>(),
        ["add_turn"; 3]
    );
    // One undo takes back one turn; the next turn does not reuse its ids.
    ws.undo().expect("undo");
    assert_eq!(ws.load_trajectory(key).expect("load").live_edges.len(), 2);
    let again = ws
        .append_turns(&[turn(key, 2, "click('8')", None)])
        .expect("append");
    assert_eq!(again, [(EdgeId(3), NodeId(4))]);
    assert!(matches!(
        ws.append_turns(&[turn(key, 4, "ok", None), turn(key, 40, "x", None)]),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(ws.load_trajectory(key).expect("load").live_edges.len(), 3);
    assert_eq!(ws.integrity_check().ok(), Some(()));
}

#[test]
fn appended_turns_and_perturbations_undo() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let key = ws.import_trajectory(&sample("t", 2), None).expect("import");
    // From the leaf: the branch gets longer.
    let (e, n) = ws
        .add_turn(
            key,
            NodeId(2),
            Action::new("click('5')", ActionFormat::Browsergym),
        )
        .expect("turn");
    assert_eq!((e, n), (EdgeId(2), NodeId(3)));
    // From an inner state: a second child, no `edited_from`.
    let (e2, n2) = ws
        .add_turn(
            key,
            NodeId(0),
            Action::new("click('6')", ActionFormat::Browsergym),
        )
        .expect("turn");
    assert_eq!((e2, n2), (EdgeId(3), NodeId(4)));
    let stored = ws.load_trajectory(key).expect("load");
    assert_eq!(stored.live_children(NodeId(2)), vec![EdgeId(2)]);
    assert_eq!(stored.live_children(NodeId(0)), vec![EdgeId(0), EdgeId(3)]);
    assert_eq!(stored.trajectory.edges[3].edited_from, None);
    assert!(matches!(
        ws.add_turn(key, NodeId(40), Action::new("x", ActionFormat::Text)),
        Err(StoreError::NotFound(_))
    ));

    ws.set_perturbation(key, EdgeId(1), Some("  the login session has expired "))
        .expect("set");
    ws.set_perturbation(key, EdgeId(2), Some("an error page"))
        .expect("set");
    ws.set_perturbation(key, EdgeId(2), None).expect("clear");
    let p = ws.perturbations(key).expect("read");
    assert_eq!(p.len(), 1);
    assert_eq!(p[&EdgeId(1)], "the login session has expired");
    assert!(matches!(
        ws.set_perturbation(key, EdgeId(9), Some("x")),
        Err(StoreError::NotFound(_))
    ));
    // Undo the clear: edge 2's instruction is back; undo twice more: none.
    ws.undo().expect("undo");
    assert_eq!(
        ws.perturbations(key).expect("read")[&EdgeId(2)],
        "an error page"
    );
    ws.undo().expect("undo");
    ws.undo().expect("undo");
    assert!(ws.perturbations(key).expect("read").is_empty());
    // Undo the second appended turn: its node is no longer live.
    ws.undo().expect("undo");
    let stored = ws.load_trajectory(key).expect("load");
    assert!(!stored.live_nodes.contains(&NodeId(4)));

    // A step's prediction is added and chosen in one change.
    let p = ws
        .add_chosen_prediction(
            key,
            NodeId(3),
            &Prediction::from_output("copy", "<predicted_observation>S</predicted_observation>"),
        )
        .expect("step");
    let stored = ws.load_trajectory(key).expect("load");
    assert_eq!(stored.trajectory.nodes[3].chosen_prediction, Some(p));
    ws.undo().expect("undo");
    let stored = ws.load_trajectory(key).expect("load");
    assert!(stored.trajectory.nodes[3].predictions.is_empty());
    assert_eq!(stored.trajectory.nodes[3].chosen_prediction, None);

    // Metadata is written in place.
    ws.set_meta("studio.engine", "{\"kind\":\"baseline\"}")
        .expect("meta");
    ws.set_meta("studio.engine", "{}").expect("meta");
    assert_eq!(
        ws.meta("studio.engine").expect("meta").as_deref(),
        Some("{}")
    );
}

#[test]
fn loading_one_path_reads_only_its_records() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let mut t = sample("t", 3);
    t.add_prediction(
        NodeId(2),
        Prediction::from_output("copy", "<predicted_observation>x</predicted_observation>"),
    )
    .expect("prediction");
    let key = ws.import_trajectory(&t, None).expect("import");
    let (_, branch) = ws
        .add_branch(
            key,
            EdgeId(0),
            Action::new("click('7')", ActionFormat::Browsergym),
        )
        .expect("branch");
    let full = ws.load_trajectory(key).expect("full");
    let part = ws.load_trajectory_path(key, NodeId(2)).expect("path");
    assert_eq!(part.live_nodes, full.live_nodes);
    assert_eq!(part.live_edges, full.live_edges);
    assert_eq!(part.trajectory.nodes.len(), full.trajectory.nodes.len());
    for n in [0, 1, 2] {
        assert_eq!(
            part.trajectory.nodes[n], full.trajectory.nodes[n],
            "node {n}"
        );
    }
    assert_eq!(part.trajectory.edges[..2], full.trajectory.edges[..2]);
    // Off the path: shape only.
    assert!(part.trajectory.nodes[3].real.is_none());
    assert!(full.trajectory.nodes[3].real.is_some());
    assert_eq!(part.trajectory.edges[2].action.raw, "");
    assert_eq!(part.trajectory.edges[3].to, branch);
    assert_eq!(part.trajectory.turn_of(NodeId(2)).ok(), Some(2));
    assert!(matches!(
        ws.load_trajectory_path(key, NodeId(99)),
        Err(StoreError::NotFound(_))
    ));

    // A state and its parent only: the root (an ancestor) stays empty, so
    // the records read do not grow with the state's depth.
    assert_eq!(
        ws.parent_state(key, NodeId(2)).expect("parent"),
        Some(NodeId(1))
    );
    assert_eq!(ws.parent_state(key, NodeId(0)).expect("root"), None);
    let two = ws
        .load_trajectory_states(key, &[NodeId(2), NodeId(1)])
        .expect("states");
    assert_eq!(two.live_nodes, full.live_nodes);
    assert_eq!(two.trajectory.nodes[1], full.trajectory.nodes[1]);
    assert_eq!(two.trajectory.nodes[2], full.trajectory.nodes[2]);
    assert_eq!(two.trajectory.edges[..2], full.trajectory.edges[..2]);
    assert!(full.trajectory.nodes[0].real.is_some());
    assert!(two.trajectory.nodes[0].real.is_none());
    assert!(two.trajectory.nodes[3].real.is_none());
    assert_eq!(two.trajectory.edges[2].action.raw, "");
    assert_eq!(two.trajectory.turn_of(NodeId(2)).ok(), Some(2));
    assert!(matches!(
        ws.load_trajectory_states(key, &[NodeId(2), NodeId(99)]),
        Err(StoreError::NotFound(_))
    ));
    // One state's real observation alone is the one a whole load gives.
    for n in 0..full.trajectory.nodes.len() {
        assert_eq!(
            ws.real_observation(key, NodeId(n as u32)).expect("real"),
            full.trajectory.nodes[n].real,
            "node {n}"
        );
    }
    assert_eq!(ws.real_observation(key, NodeId(99)).expect("none"), None);
}

#[test]
fn large_strings_read_back_exactly_and_prompts_can_be_left_unread() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let mut t = sample("traj-p", 2);
    // Texts full of what JSON escapes: quotes, backslashes, control
    // characters, characters outside the BMP (surrogate pairs as `\u`).
    let tricky = "<node text=\"a \\ b\" desc='\u{1F600} \u{10FFFF}'/>\n\t\u{1}\u{1f}\u{7f}é";
    for (k, e) in t.edges.iter_mut().enumerate() {
        e.prompt = Some(format!("prompt {k}: {tricky}"));
    }
    let mut real = Observation::new(Representation::AndroidXml, tricky.repeat(1000));
    real.prefix = "**Environment Observation:**\n".into();
    t.node_mut(NodeId(2)).expect("node").real = Some(real.clone());
    let key = ws.import_trajectory(&t, None).expect("import");

    let full = ws.load_trajectory(key).expect("full");
    assert_eq!(full.trajectory.nodes[2].real.as_ref(), Some(&real));
    for e in &full.trajectory.edges {
        assert_eq!(e.prompt, t.edges[e.id.0 as usize].prompt);
    }
    let with = ws
        .load_trajectory_states(key, &[NodeId(2)])
        .expect("states");
    let without = ws
        .load_trajectory_states_without_prompts(key, &[NodeId(2)])
        .expect("states without prompts");
    assert_eq!(with.trajectory.nodes, without.trajectory.nodes);
    assert_eq!(with.live_nodes, without.live_nodes);
    assert_eq!(with.live_edges, without.live_edges);
    assert_eq!(
        with.trajectory.edges[1].prompt.as_deref(),
        Some(format!("prompt 1: {tricky}").as_str())
    );
    for (a, b) in with.trajectory.edges.iter().zip(&without.trajectory.edges) {
        assert_eq!(b.prompt, None);
        let mut a = a.clone();
        a.prompt = None;
        assert_eq!(&a, b);
    }
    assert_eq!(
        ws.real_observation(key, NodeId(2)).expect("real"),
        Some(real)
    );
    assert!(matches!(
        ws.load_trajectory_states_without_prompts(key, &[NodeId(9)]),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn notes_tags_and_metrics() {
    let (_dir, path) = temp_ws();
    let mut ws = Workspace::open(&path).expect("open");
    let a = ws.import_trajectory(&sample("a", 2), None).expect("import");
    let b = ws.import_trajectory(&sample("b", 2), None).expect("import");
    let note = ws
        .add_note(a, Some(NodeId(1)), "looks wrong")
        .expect("note");
    ws.edit_note(note, "looks wrong: missing button")
        .expect("edit");
    let notes = ws.notes(a).expect("notes");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].text, "looks wrong: missing button");
    assert_eq!(notes[0].node, Some(NodeId(1)));
    ws.undo().expect("undo");
    assert_eq!(ws.notes(a).expect("notes")[0].text, "looks wrong");
    ws.edit_note(note, "").expect("remove");
    assert!(ws.notes(a).expect("notes").is_empty());

    ws.set_tag(a, None, "curriculum", true).expect("tag");
    ws.set_tag(b, Some(NodeId(2)), "curriculum", true)
        .expect("tag");
    ws.set_tag(a, None, "curriculum", false).expect("untag");
    let tags = ws.tags().expect("tags");
    assert_eq!(tags.len(), 1);
    assert_eq!(
        (tags[0].trajectory, tags[0].node, tags[0].tag.as_str()),
        (b, Some(NodeId(2)), "curriculum")
    );
    assert!(matches!(
        ws.set_tag(a, None, "  ", true),
        Err(StoreError::Invalid(_))
    ));

    let r = serde_json::json!({"tree_f1": 0.5});
    ws.record_metric_result(a, NodeId(1), "prediction:0", "worldloom-obs", Some(0.5), &r)
        .expect("metric");
    ws.record_metric_result(
        a,
        NodeId(2),
        "prediction:0",
        "worldloom-obs",
        Some(0.25),
        &r,
    )
    .expect("metric");
    // A newer result for the same subject replaces the older one in reads.
    ws.record_metric_result(
        a,
        NodeId(2),
        "prediction:0",
        "worldloom-obs",
        Some(0.75),
        &r,
    )
    .expect("metric");
    let results = ws.metric_results(a, NodeId(2)).expect("results");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].score, Some(0.75));
    let rows = ws.list_trajectories().expect("list");
    assert_eq!(rows[0].lowest_score, Some(0.5));
    assert_eq!(rows[1].lowest_score, None);
    assert!(matches!(
        ws.record_metric_result(a, NodeId(2), "x", "y", Some(1.5), &r),
        Err(StoreError::Invalid(_))
    ));
}

#[test]
fn rejects_files_that_are_not_workspaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello, not a database at all, long enough to have a header of one hundred bytes or so......").expect("write");
    assert!(matches!(
        Workspace::open(&text),
        Err(StoreError::NotAWorkspace { .. })
    ));
    assert!(!is_workspace_file(&text));

    // Another program's SQLite database.
    let other = dir.path().join("other.db");
    let conn = worldloom_store::rusqlite::Connection::open(&other).expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .expect("sql");
    drop(conn);
    let err = Workspace::open(&other).expect_err("must refuse");
    assert!(
        err.to_string().contains("not a Worldloom workspace"),
        "{err}"
    );

    // A workspace from a newer build.
    let newer = dir.path().join("newer.worldloom");
    drop(Workspace::open(&newer).expect("create"));
    let conn = worldloom_store::rusqlite::Connection::open(&newer).expect("open");
    conn.execute_batch("PRAGMA user_version = 99;")
        .expect("sql");
    drop(conn);
    assert!(matches!(
        Workspace::open(&newer),
        Err(StoreError::NewerSchema { found: 99, .. })
    ));
}

const FIXTURE_V1: &str = "tests/fixtures/workspace-v1.worldloom";

/// Writes the version-1 fixture with the version-1 schema. Run with
/// `cargo test -p worldloom-store --test store -- --ignored write_v1_fixture`
/// only when the fixture must be rebuilt (it never should: it stands for
/// files users already have).
#[test]
#[ignore = "writes tests/fixtures/workspace-v1.worldloom"]
fn write_v1_fixture() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE_V1);
    let _ = std::fs::remove_file(&path);
    let mut ws = Workspace::open_to_version(&path, 1).expect("create v1");
    let key = ws
        .import_trajectory(&sample("fixture-web", 2), Some(&sha256_hex(b"fixture")))
        .expect("import");
    ws.add_prediction(key, NodeId(1), &Prediction::from_output("copy", "<think>same page</think><predicted_observation>[1] RootWebArea 'Page 1'</predicted_observation>"))
        .expect("prediction");
    ws.choose_prediction(key, NodeId(1), Some(PredictionId(0)))
        .expect("choose");
    // Fold the WAL into the main file so that the fixture is one file.
    drop(ws);
    let conn = worldloom_store::rusqlite::Connection::open(&path).expect("reopen");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .expect("checkpoint");
}

#[test]
fn opens_and_migrates_a_version_1_workspace() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE_V1);
    let (_dir, path) = temp_ws();
    std::fs::copy(&fixture, &path).expect("copy fixture");
    {
        let conn = worldloom_store::rusqlite::Connection::open(&path).expect("open raw");
        let v: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(v, 1, "the fixture must stay at schema version 1");
    }
    let mut ws = Workspace::open(&path).expect("open and migrate");
    assert_eq!(ws.schema_version().expect("version"), 7);
    assert_eq!(ws.integrity_check().ok(), Some(()));
    let rows = ws.list_trajectories().expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].ext_id, "fixture-web");
    assert_eq!(
        rows[0].source_sha256.as_deref(),
        Some(sha256_hex(b"fixture").as_str())
    );
    let stored = ws.load_trajectory(rows[0].key).expect("load");
    assert_eq!(stored.trajectory.edges.len(), 2);
    assert_eq!(stored.trajectory.edges[1].action.raw, "click('20')");
    let node = &stored.trajectory.nodes[1];
    assert_eq!(node.chosen_prediction, Some(PredictionId(0)));
    assert_eq!(
        node.predictions[0].observation.as_deref(),
        Some("[1] RootWebArea 'Page 1'")
    );
    assert_eq!(
        node.real.as_ref().map(|o| o.text.as_str()),
        Some("[1] RootWebArea 'Page 1'\n\t[10] button 'Next'")
    );
    // Tables from version 2 work on the migrated file.
    ws.add_note(rows[0].key, None, "migrated").expect("note");
    ws.set_tag(rows[0].key, None, "old", true).expect("tag");
    assert_eq!(ws.notes(rows[0].key).expect("notes").len(), 1);
    // And the version 3 table.
    ws.set_perturbation(
        rows[0].key,
        EdgeId(1),
        Some("the server returns an error page"),
    )
    .expect("perturbation");
    assert_eq!(
        ws.perturbations(rows[0].key)
            .expect("perturbations")
            .get(&EdgeId(1))
            .map(String::as_str),
        Some("the server returns an error page")
    );
    assert_eq!(
        ws.meta("created_by").expect("meta").as_deref(),
        Some("worldloom 0.1.0")
    );
}

// ---------------------------------------------------------------------------
// Crash safety: a child process writes changes and is killed with SIGKILL.

const CHILD_ENV: &str = "WORLDLOOM_STORE_CRASH_CHILD";

/// The writer child. It does nothing unless started by the crash tests
/// below (with the environment variable set), which is why it is ignored.
#[test]
#[ignore = "child process of the crash-safety tests"]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, path) = spec.split_once(':').expect("mode:path");
    let mut ws = Workspace::open(Path::new(path)).expect("child open");
    let stdout = std::io::stdout();
    for i in 0.. {
        if mode == "hold" && i == 5 {
            // Start a change, write part of it, then wait to be killed.
            let _ = ws.with_change("import", None, "never committed", |tx, change| {
                tx.execute(
                    "INSERT INTO trajectories (change_id, ext_id, domain, source_format) VALUES (?1, 'uncommitted', 'web', 'test')",
                    [change.0],
                )
                .expect("insert");
                writeln!(stdout.lock(), "mid").expect("print");
                std::thread::sleep(std::time::Duration::from_secs(120));
                Ok(())
            });
            return;
        }
        ws.import_trajectory(&sample(&format!("t{i}"), 20), None)
            .expect("child import");
        writeln!(stdout.lock(), "committed {i}").expect("print");
    }
}

fn spawn_child(mode: &str, path: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{mode}:{}", path.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child")
}

fn check_after_crash(path: &Path, committed: &[String], may_have_one_more: bool) {
    let ws = Workspace::open(path).expect("reopen after crash");
    assert_eq!(ws.integrity_check().ok(), Some(()));
    let rows = ws.list_trajectories().expect("list");
    let ids: Vec<String> = rows.iter().map(|r| r.ext_id.clone()).collect();
    assert!(
        ids.len() >= committed.len(),
        "lost committed changes: have {ids:?}, committed {committed:?}"
    );
    assert_eq!(
        &ids[..committed.len()],
        committed,
        "committed changes must all be there, in order"
    );
    assert!(
        ids.len() <= committed.len() + usize::from(may_have_one_more),
        "{ids:?}"
    );
    assert!(!ids.iter().any(|i| i == "uncommitted"));
    for row in rows {
        // Every change is all-or-nothing: each trajectory has all 21 nodes.
        let stored = ws.load_trajectory(row.key).expect("load");
        assert_eq!(
            stored.trajectory.nodes.len(),
            21,
            "{} is partial",
            row.ext_id
        );
    }
}

#[test]
fn killed_mid_transaction_loses_nothing_committed() {
    let (_dir, path) = temp_ws();
    drop(Workspace::open(&path).expect("create"));
    let mut child = spawn_child("hold", &path);
    let reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut committed = Vec::new();
    for line in reader.lines() {
        let line = line.expect("line");
        // libtest may print `test crash_child ... ` before the first line.
        if let Some(pos) = line.find("committed ") {
            committed.push(format!("t{}", &line[pos + "committed ".len()..]));
        } else if line.ends_with("mid") {
            break;
        }
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert_eq!(committed.len(), 5);
    check_after_crash(&path, &committed, false);
}

#[test]
fn killed_at_arbitrary_points_loses_nothing_committed() {
    for round in 0..5u64 {
        let (_dir, path) = temp_ws();
        drop(Workspace::open(&path).expect("create"));
        let mut child = spawn_child("loop", &path);
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut committed = Vec::new();
        let stop_after = 3 + round as usize * 2;
        let record = |line: String, committed: &mut Vec<String>| {
            // libtest may print `test crash_child ... ` before the first line.
            if let Some(pos) = line.find("committed ") {
                committed.push(format!("t{}", &line[pos + "committed ".len()..]));
            }
        };
        while committed.len() < stop_after {
            let line = lines.next().expect("child ended early").expect("line");
            record(line, &mut committed);
        }
        // Let the next import get under way, then kill at a varying point.
        std::thread::sleep(std::time::Duration::from_micros(200 + round * 700));
        child.kill().expect("kill");
        child.wait().expect("wait");
        // Lines the child printed before it died are commits too.
        for line in lines {
            record(line.expect("line"), &mut committed);
        }
        check_after_crash(&path, &committed, true);
        // Reopening is also a writer: the workspace is usable after a crash.
        let mut ws = Workspace::open(&path).expect("reopen");
        let key = ws
            .import_trajectory(&sample("after", 1), None)
            .expect("write after crash");
        assert!(ws.load_trajectory(key).is_ok());
    }
}

/// Runs: eval outputs imported as runs, rows of two runs on the same states,
/// the full-text index.
mod runs {
    use std::collections::BTreeSet;

    use serde_json::{Value, json};
    use worldloom_core::formats::run::take_rows;
    use worldloom_core::{ContextMode, ImportOptions, Trajectory, import_path};
    use worldloom_store::{NewRun, SearchField, Workspace};

    use super::temp_ws;

    fn sample_rows() -> Vec<serde_json::Map<String, Value>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
        std::fs::read_to_string(path)
            .expect("sample")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("row"))
            .collect()
    }

    /// Writes the sample rows with `extra(i)` merged into row `i` and reads
    /// the file back as a run.
    fn run_file(
        dir: &std::path::Path,
        name: &str,
        extra: &dyn Fn(usize) -> Value,
    ) -> Vec<(Trajectory, Vec<worldloom_core::formats::run::RunRow>)> {
        let mut text = String::new();
        for (i, mut row) in sample_rows().into_iter().enumerate() {
            if let Value::Object(more) = extra(i) {
                row.extend(more);
            }
            text.push_str(&serde_json::to_string(&row).expect("json"));
            text.push('\n');
        }
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        let imported = import_path(&path, &ImportOptions::default()).expect("imports");
        imported
            .trajectories
            .into_iter()
            .map(|mut t| {
                let rows = take_rows(&mut t);
                (t, rows)
            })
            .collect()
    }

    fn new_run(name: &str, engine: &str) -> NewRun {
        NewRun {
            name: name.into(),
            engine: engine.into(),
            source_path: Some(name.into()),
            source_sha256: Some(format!("sha-{name}")),
            mode: ContextMode::TeacherForced,
        }
    }

    #[test]
    fn two_runs_of_one_dataset_share_trajectories_and_search_finds_rows() {
        let (dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        // The dataset itself first, as a user imports it.
        let dataset = run_file(dir.path(), "dataset.jsonl", &|_| Value::Null);
        assert!(dataset.iter().all(|(_, rows)| rows.is_empty()));
        for (t, _) in &dataset {
            ws.import_trajectory(t, Some("dataset")).expect("import");
        }
        let ours = run_file(dir.path(), "copy.jsonl", &|i| {
            json!({
                "gen": format!("<predicted_observation>copied zebra{i}</predicted_observation>"),
                "wl_engine": "copy",
                "wl_status": if i == 0 { "error" } else { "ok" },
                "wl_error": if i == 0 { Value::from("no state") } else { Value::Null },
                "wl_metrics": {"status": "scored", "exact": false, "text_f1": i as f64 / 20.0, "node_f1": null},
            })
        });
        let official = run_file(dir.path(), "judged.jsonl", &|i| {
            json!({
                "gen": format!("<predicted_observation>official giraffe{i}</predicted_observation>"),
                "format": 5, "factuality": 4, "consistency": 3, "realism": 2, "quality": 1,
                "total_score": 3.0, "failed": if i == 1 { 1.0 } else { 0.0 },
                "strengths": "kept the ids", "weaknesses": "", "error_message": null,
            })
        });
        let rows_total: usize = ours.iter().map(|(_, r)| r.len()).sum();
        assert_eq!(rows_total, 17);
        assert!(ours[0].1[0].judge.is_none());
        assert_eq!(ours[0].1[0].prediction.engine, "copy");
        assert!(
            ours.iter()
                .all(|(t, _)| t.nodes.iter().all(|n| n.predictions.is_empty())),
            "the run's predictions are taken out of the trajectories"
        );

        let a = ws
            .import_run(&new_run("copy.jsonl", "copy"), &ours)
            .expect("run a");
        let b = ws
            .import_run(&new_run("judged.jsonl", "agentworldbench:gen"), &official)
            .expect("run b");
        assert_eq!(a.rows, 17);
        assert!(
            a.trajectories.iter().all(|(_, added)| !added),
            "attached to the dataset's trajectories"
        );
        assert_eq!(
            a.trajectories.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            b.trajectories.iter().map(|(k, _)| *k).collect::<Vec<_>>()
        );
        assert_eq!(ws.list_trajectories().expect("list").len(), dataset.len());

        let runs = ws.list_runs().expect("runs");
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].row_count, runs[0].judged_count), (17, 0));
        assert_eq!((runs[1].row_count, runs[1].judged_count), (17, 17));

        // Pairing: every row of A has exactly one row of B on the same state.
        let rows_a = ws.run_rows(a.run).expect("rows a");
        let rows_b = ws.run_rows(b.run).expect("rows b");
        for ra in &rows_a {
            let paired: Vec<_> = rows_b
                .iter()
                .filter(|rb| (rb.trajectory, rb.node) == (ra.trajectory, ra.node))
                .collect();
            assert_eq!(paired.len(), 1, "row {} of A", ra.row_index);
            assert_eq!(paired[0].turn, ra.turn);
            assert_ne!(
                paired[0].prediction, ra.prediction,
                "two predictions of one state"
            );
            let on_node = ws
                .run_rows_of_node(ra.trajectory, ra.node)
                .expect("node rows");
            assert_eq!(on_node.len(), 2);
        }
        assert_eq!(rows_a[0].status, "error");
        assert_eq!(rows_a[0].error.as_deref(), Some("no state"));
        assert_eq!(rows_a[5].metrics.text_f1, Some(0.25));
        let judged = rows_b[0].judge.as_ref().expect("judged");
        assert_eq!(judged.scores[0], Some(5.0));
        assert_eq!(judged.strengths.as_deref(), Some("kept the ids"));
        assert!(rows_b[1].judge.as_ref().expect("judged").failed);
        // The predictions are the state's predictions, shown by the turn view.
        let st = ws.load_trajectory(rows_a[3].trajectory).expect("load");
        let node = st.trajectory.node(rows_a[3].node).expect("node");
        assert_eq!(node.predictions.len(), 2);
        assert_eq!(
            node.predictions[0].observation.as_deref(),
            Some("copied zebra3")
        );

        // Full-text search: predicted words, prefixes, real words, per run.
        let hit = ws
            .search_run_rows("zebra7", SearchField::All, None, 100)
            .expect("search");
        assert_eq!(hit, vec![rows_a[7].id]);
        let prefix = ws
            .search_run_rows("giraf", SearchField::Predicted, Some(b.run), 100)
            .expect("search");
        assert_eq!(prefix.len(), 17);
        assert!(
            ws.search_run_rows("giraffe3", SearchField::Real, None, 100)
                .expect("search")
                .is_empty()
        );
        let real_word = ws
            .search_run_rows("evt_41", SearchField::All, Some(a.run), 100)
            .expect("search");
        assert!(!real_word.is_empty());
        assert!(
            real_word
                .iter()
                .all(|id| rows_a.iter().any(|r| r.id == *id))
        );

        // A file already imported is found by its hash; undo removes the run
        // and its predictions, redo brings them back.
        assert_eq!(ws.find_run("sha-judged.jsonl").expect("find"), Some(b.run));
        ws.undo().expect("undo");
        assert_eq!(ws.list_runs().expect("runs").len(), 1);
        assert!(ws.run_rows(b.run).is_err());
        assert!(
            ws.search_run_rows("giraffe3", SearchField::All, None, 100)
                .expect("search")
                .is_empty()
        );
        let st = ws.load_trajectory(rows_a[3].trajectory).expect("load");
        assert_eq!(
            st.trajectory
                .node(rows_a[3].node)
                .expect("node")
                .predictions
                .len(),
            1
        );
        ws.redo().expect("redo");
        assert_eq!(ws.run_rows(b.run).expect("rows").len(), 17);
    }

    #[test]
    fn a_run_without_its_dataset_adds_the_trajectories_once() {
        let (dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        let first = run_file(
            dir.path(),
            "predictions.jsonl",
            &|_| json!({"gen": "<predicted_observation>x</predicted_observation>"}),
        );
        let second = run_file(dir.path(), "other.jsonl", &|_| json!({"gen": "y"}));
        let a = ws
            .import_run(&new_run("a", "agentworldbench:gen"), &first)
            .expect("a");
        let b = ws
            .import_run(&new_run("b", "agentworldbench:gen"), &second)
            .expect("b");
        assert!(a.trajectories.iter().all(|(_, added)| *added));
        assert!(b.trajectories.iter().all(|(_, added)| !added));
        assert_eq!(ws.list_trajectories().expect("list").len(), first.len());
        let rows = ws.run_rows(b.run).expect("rows");
        assert_eq!(rows[0].status, "no_observation");
        // The trajectories kept no run fields on their rows.
        let st = ws.load_trajectory(a.trajectories[0].0).expect("load");
        for e in &st.trajectory.edges {
            let fields = &e.awb_row.as_ref().expect("row").fields;
            assert!(!fields.contains_key("gen"));
        }
    }

    #[test]
    fn trajectories_imported_by_older_builds_are_fingerprinted_on_demand() {
        let (dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        let dataset = run_file(dir.path(), "dataset.jsonl", &|_| Value::Null);
        for (t, _) in &dataset {
            ws.import_trajectory(t, Some("dataset")).expect("import");
        }
        // As a workspace migrated from version 3 has them: no fingerprints.
        drop(ws);
        let conn = worldloom_store::rusqlite::Connection::open(&path).expect("raw");
        conn.execute("DELETE FROM trajectory_fingerprints", [])
            .expect("delete");
        drop(conn);
        let mut ws = Workspace::open(&path).expect("open");
        let run = run_file(dir.path(), "p.jsonl", &|_| json!({"gen": "z"}));
        let ids: BTreeSet<String> = run.iter().map(|(t, _)| t.id.clone()).collect();
        ws.fingerprint_trajectories(&ids).expect("fingerprint");
        let imported = ws.import_run(&new_run("p", "g"), &run).expect("run");
        assert!(imported.trajectories.iter().all(|(_, added)| !added));
    }

    /// 20,000 rows (2,000 trajectories of 10 turns): a search answers in
    /// well under a second (figures in `docs/api.md`).
    #[test]
    fn searching_twenty_thousand_rows_is_fast() {
        use worldloom_core::action::ActionFormat;
        use worldloom_core::formats::run::RunRow;
        use worldloom_core::{Action, Domain, Observation, Prediction, Representation};
        let (_dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        let mut items = Vec::new();
        for i in 0..2000 {
            let mut t = Trajectory::new(format!("t{i}"), Domain::Web, None);
            let mut at = t.root();
            let mut rows = Vec::new();
            for k in 1..=10u32 {
                let real = Observation::new(
                    Representation::Axtree,
                    format!(
                        "[1] RootWebArea 'Shop page {k}'\n\t[{k}0] button 'Add item{i}x{k} to cart'"
                    ),
                );
                let (_, n) = t
                    .add_step(
                        at,
                        Action::new(format!("click('{k}0')"), ActionFormat::Browsergym),
                        Some(real),
                    )
                    .expect("step");
                at = n;
                rows.push(RunRow {
                    node: n,
                    turn: k,
                    row_index: None,
                    prediction: Prediction::from_output(
                        "copy",
                        format!("<predicted_observation>[1] RootWebArea 'Shop page {k}' guess{i}x{k}</predicted_observation>"),
                    ),
                    status: "ok".into(),
                    error: None,
                    metrics: Default::default(),
                    judge: None,
                    latency_ms: None,
                });
            }
            items.push((t, rows));
        }
        let started = std::time::Instant::now();
        let run = ws
            .import_run(&new_run("big", "copy"), &items)
            .expect("import");
        let import_s = started.elapsed().as_secs_f64();
        assert_eq!(run.rows, 20_000);
        let started = std::time::Instant::now();
        let one = ws
            .search_run_rows("item1234x7", SearchField::All, None, 100)
            .expect("search");
        let many = ws
            .search_run_rows("shop page", SearchField::Real, Some(run.run), 20_000)
            .expect("search");
        let search_s = started.elapsed().as_secs_f64();
        eprintln!("20,000 rows: import {import_s:.2} s, two searches {search_s:.3} s");
        assert_eq!(one.len(), 1);
        assert_eq!(many.len(), 20_000);
        assert!(search_s < 1.0, "two searches took {search_s:.3} s");
    }

    #[test]
    fn labels_on_rows_are_undoable_and_the_label_set_has_defaults() {
        let (dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        let run = run_file(dir.path(), "p.jsonl", &|_| json!({"gen": "z"}));
        let a = ws.import_run(&new_run("p", "g"), &run).expect("run");
        let rows = ws.run_rows(a.run).expect("rows");
        assert_eq!(
            ws.label_set().expect("labels"),
            worldloom_store::DEFAULT_LABELS.map(String::from).to_vec()
        );
        let saved = ws
            .set_label_set(&[
                " wrong page ".into(),
                "".into(),
                "mine".into(),
                "mine".into(),
            ])
            .expect("save");
        assert_eq!(saved, ["wrong page", "mine"]);
        assert_eq!(ws.label_set().expect("labels"), saved);

        ws.set_row_label(rows[0].id, "wrong page", true)
            .expect("label");
        ws.set_row_label(rows[0].id, "stale copy", true)
            .expect("label");
        ws.set_row_label(rows[2].id, "mine", true).expect("label");
        ws.set_row_label(rows[0].id, "wrong page", false)
            .expect("clear");
        let labels = ws.row_labels(Some(a.run)).expect("labels");
        assert_eq!(
            labels.get(&rows[0].id).map(Vec::as_slice),
            Some(&["stale copy".to_owned()][..])
        );
        assert_eq!(
            labels.get(&rows[2].id).map(Vec::as_slice),
            Some(&["mine".to_owned()][..])
        );
        assert_eq!(labels.len(), 2);
        // Undo brings the cleared label back; undo again removes `mine`.
        ws.undo().expect("undo");
        let labels = ws.row_labels(None).expect("labels");
        assert_eq!(labels[&rows[0].id], ["wrong page", "stale copy"]);
        ws.undo().expect("undo");
        assert!(
            !ws.row_labels(None)
                .expect("labels")
                .contains_key(&rows[2].id)
        );
        ws.redo().expect("redo");
        assert_eq!(ws.row_labels(None).expect("labels")[&rows[2].id], ["mine"]);
        assert!(ws.set_row_label(rows[0].id, "  ", true).is_err());
        assert!(matches!(
            ws.set_row_label(999_999, "x", true),
            Err(worldloom_store::StoreError::NotFound(_))
        ));
    }

    #[test]
    fn notes_on_rows_are_undoable_and_cleared_by_an_empty_text() {
        let (dir, path) = temp_ws();
        let mut ws = Workspace::open(&path).expect("open");
        let run = run_file(dir.path(), "p.jsonl", &|_| json!({"gen": "z"}));
        let a = ws.import_run(&new_run("p", "g"), &run).expect("run");
        let rows = ws.run_rows(a.run).expect("rows");
        assert!(ws.row_notes(Some(a.run)).expect("notes").is_empty());
        ws.set_row_note(rows[1].id, "  forgot the toast  ")
            .expect("note");
        ws.set_row_note(rows[1].id, "forgot the toast after saving")
            .expect("edit");
        ws.set_row_note(rows[0].id, "ok").expect("note");
        let notes = ws.row_notes(Some(a.run)).expect("notes");
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[&rows[1].id], "forgot the toast after saving");
        assert_eq!(notes[&rows[0].id], "ok");
        ws.set_row_note(rows[0].id, "   ").expect("clear");
        assert!(!ws.row_notes(None).expect("notes").contains_key(&rows[0].id));
        // Undo the clear, then the edit: the first text comes back.
        ws.undo().expect("undo");
        assert_eq!(ws.row_notes(None).expect("notes")[&rows[0].id], "ok");
        ws.undo().expect("undo");
        ws.undo().expect("undo");
        assert_eq!(
            ws.row_notes(None).expect("notes")[&rows[1].id],
            "forgot the toast"
        );
        ws.redo().expect("redo");
        assert_eq!(
            ws.row_notes(None).expect("notes")[&rows[1].id],
            "forgot the toast after saving"
        );
        assert!(matches!(
            ws.set_row_note(999_999, "x"),
            Err(worldloom_store::StoreError::NotFound(_))
        ));
        let history = ws.history(20).expect("history");
        assert!(history.iter().any(|c| c.kind == "set_row_note"));
    }
}
