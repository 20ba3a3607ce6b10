//! The laboratory through the API: branching semantics (edited actions are
//! siblings, appended turns), the exact teacher-forced and free-running
//! prompts, perturbations in the prompt, undo of every edit, streaming steps
//! with the `copy` baseline, a slow OpenAI-compatible endpoint (cancel) and
//! the tiny local checkpoint (snapshot reuse), curriculum exports against
//! committed expected files and their re-import, and browser uploads.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::{OS, WEB, events, get_turn, predictions, repo, sample, serve, studio};
use worldloom_api::types::*;
use worldloom_api::{ApiError, ErrorCode, Studio, StudioEvent, commands};
use worldloom_core::action::ActionFormat;
use worldloom_core::{
    Action, Domain as CoreDomain, NodeId, Observation, Prediction,
    Representation as CoreRepresentation, Trajectory, TrajectoryFile,
};

fn import_paths(studio: &Studio, paths: Vec<String>) -> Vec<String> {
    let resp = commands::import_files(studio, ImportFilesRequest { paths }).expect("import");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    resp.imported
        .iter()
        .map(|i| i.trajectory_id.clone())
        .collect()
}

/// A three-turn web trajectory: S0 -click('3')-> S1 -fill('4','wool')-> S2
/// -click('5')-> S3, with a chosen prediction P1 of S1.
fn small_web(dir: &Path) -> String {
    let mut t = Trajectory::new(
        "socks",
        CoreDomain::Web,
        Some(Observation::new(
            CoreRepresentation::Axtree,
            "[1] RootWebArea 'S0'",
        )),
    );
    t.goal = Some("Buy socks".into());
    let mut at = t.root();
    for (raw, obs) in [
        ("click('3')", "[1] RootWebArea 'S1'"),
        ("fill('4', 'wool')", "[1] RootWebArea 'S2'"),
        ("click('5')", "[1] RootWebArea 'S3'"),
    ] {
        let (_, n) = t
            .add_step(
                at,
                Action::new(raw, ActionFormat::Browsergym),
                Some(Observation::new(CoreRepresentation::Axtree, obs)),
            )
            .expect("step");
        at = n;
    }
    let mut p = Prediction::from_output(
        "m",
        "<predicted_observation>[1] RootWebArea 'P1'</predicted_observation>",
    );
    p.representation = CoreRepresentation::Axtree;
    let id = t.add_prediction(NodeId(1), p).expect("prediction");
    t.choose_prediction(NodeId(1), Some(id)).expect("choose");
    let path = dir.join("socks.worldloom.json");
    TrajectoryFile::new(vec![t]).write(&path).expect("write");
    path.display().to_string()
}

fn preview(studio: &Studio, id: &str, node: u32, context: ContextMode) -> Vec<ChatMessage> {
    commands::preview_prompt(
        studio,
        PreviewPromptRequest {
            trajectory_id: id.into(),
            node_id: node,
            context,
            perturbation: None,
        },
    )
    .expect("preview")
    .messages
}

fn msg(role: ChatRole, content: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: content.into(),
    }
}

/// Starts a step of `node` of trajectory `id`.
fn step(studio: &Studio, id: &str, node: u32, context: ContextMode) -> StepResponse {
    commands::step(
        studio,
        StepRequest {
            trajectory_id: id.into(),
            node_id: node,
            context,
        },
    )
    .expect("step")
}

/// Edits the action of `edge` of trajectory `id` to `raw`.
fn edit_action(studio: &Studio, id: &str, edge: u32, raw: &str) -> BranchCreated {
    commands::edit_action(
        studio,
        EditActionRequest {
            trajectory_id: id.into(),
            edge_id: edge,
            raw: raw.into(),
        },
    )
    .expect("edit")
}

/// An OpenAI-compatible endpoint at `addr` serving `model`, its key from no
/// variable.
fn openai(addr: std::net::SocketAddr, model: &str, step_deadline_s: Option<u32>) -> EngineSettings {
    EngineSettings::Openai {
        base_url: format!("http://{addr}/v1"),
        model: model.into(),
        api_key_env: None,
        step_deadline_s,
        key_source: None,
        keyring_account: None,
    }
}

/// Sets the studio's engine.
fn set_engine(
    studio: &Studio,
    settings: EngineSettings,
    params: GenerationParamsView,
) -> Result<EngineStatus, worldloom_api::ApiError> {
    commands::set_engine(studio, SetEngineRequest { settings, params })
}

fn default_params() -> GenerationParamsView {
    worldloom_api::engine::default_params()
}

/// Greedy parameters without thinking, at most `max_new_tokens` tokens a
/// turn.
fn greedy_params(max_new_tokens: u32) -> GenerationParamsView {
    let mut params = default_params();
    params.max_new_tokens = max_new_tokens;
    params.temperature = 0.0;
    params.enable_thinking = false;
    params
}

/// Sets the local checkpoint or GGUF file at `model_dir` on the CPU in f32
/// as the engine; it is ready.
fn set_local_engine(
    studio: &Studio,
    model_dir: &Path,
    params: GenerationParamsView,
) -> EngineStatus {
    let settings = EngineSettings::Local {
        model_dir: model_dir.display().to_string(),
        device: "cpu".into(),
        dtype: ModelDtype::F32,
        draft: None,
    };
    let status = set_engine(studio, settings, params).expect("set engine");
    assert!(status.ready, "{status:?}");
    status
}

/// Steps turns 1 and 2 of trajectory `id` teacher-forced, one after the
/// other; each ends without an error. Returns each turn's stored prediction
/// and statistics.
fn step_turns_1_and_2(
    studio: &Studio,
    rx: &Receiver<StudioEvent>,
    id: &str,
) -> Vec<(Option<u32>, StepStats)> {
    let mut out = Vec::new();
    for node in [1, 2] {
        let resp = step(studio, id, node, ContextMode::TeacherForced);
        let (_, fin) = wait_finished(rx, &resp.job_id);
        match fin {
            StudioEvent::StepFinished {
                prediction_id,
                error: None,
                stats: Some(stats),
                ..
            } => out.push((prediction_id, stats)),
            other => panic!("turn {node} failed or has no statistics: {other:?}"),
        }
    }
    out
}

#[test]
fn teacher_forced_and_free_running_prompts_hold_the_right_observations() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let system = worldloom_core::prompt::default_system_prompt(CoreDomain::Web);
    let turn1 = "### Turn 1\n**Task Instruction:**\nBuy socks\n\n**Current State:**\n[1] RootWebArea 'S0'\n\n**Action:**\n```python\nclick('3')\n```";
    let tf = preview(&studio, &id, 2, ContextMode::TeacherForced);
    assert_eq!(
        tf,
        vec![
            msg(ChatRole::System, &system),
            msg(ChatRole::User, turn1),
            msg(
                ChatRole::Assistant,
                "**Environment Observation:**\n[1] RootWebArea 'S1'"
            ),
            msg(
                ChatRole::User,
                "### Turn 2\n**Task Instruction:**\nBuy socks\n\n**Current State:**\n[1] RootWebArea 'S1'\n\n**Action:**\n```python\nfill('4', 'wool')\n```"
            ),
        ]
    );
    let fr = preview(&studio, &id, 2, ContextMode::FreeRunning);
    assert_eq!(
        fr,
        vec![
            msg(ChatRole::System, &system),
            msg(ChatRole::User, turn1),
            msg(
                ChatRole::Assistant,
                "**Environment Observation:**\n[1] RootWebArea 'P1'"
            ),
            msg(
                ChatRole::User,
                "### Turn 2\n**Task Instruction:**\nBuy socks\n\n**Current State:**\n[1] RootWebArea 'P1'\n\n**Action:**\n```python\nfill('4', 'wool')\n```"
            ),
        ]
    );
    // The initial state has no turn.
    let err = commands::preview_prompt(
        &studio,
        PreviewPromptRequest {
            trajectory_id: id.clone(),
            node_id: 0,
            context: ContextMode::TeacherForced,
            perturbation: None,
        },
    )
    .expect_err("root");
    assert_eq!(err.code, ErrorCode::BadRequest);
}

#[test]
fn perturbations_reach_the_prompt_and_undo_restores_every_edit() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let before = preview(&studio, &id, 2, ContextMode::TeacherForced);

    // Perturbation on turn 2 (edge 1).
    commands::set_perturbation(
        &studio,
        SetPerturbationRequest {
            trajectory_id: id.clone(),
            edge_id: 1,
            instruction: Some("the login session has expired".into()),
        },
    )
    .expect("perturb");
    let with = preview(&studio, &id, 2, ContextMode::TeacherForced);
    assert_eq!(with[..3], before[..3]);
    assert_eq!(
        with[3].content,
        format!(
            "{}\n\n**Control Instruction:**\nthe login session has expired",
            before[3].content
        )
    );
    // It stays in the history of the next turn.
    let next = preview(&studio, &id, 3, ContextMode::TeacherForced);
    assert_eq!(next[3].content, with[3].content);
    // A preview override replaces it; "" removes it.
    let over = commands::preview_prompt(
        &studio,
        PreviewPromptRequest {
            trajectory_id: id.clone(),
            node_id: 2,
            context: ContextMode::TeacherForced,
            perturbation: Some(String::new()),
        },
    )
    .expect("preview");
    assert_eq!(over.messages, before);
    let turn = get_turn(&studio, &id, 2);
    assert_eq!(
        turn.perturbation.as_deref(),
        Some("the login session has expired")
    );

    // Edit the action of turn 2: a sibling of edge 1 from node 1.
    let branch = edit_action(&studio, &id, 1, "fill('4', 'cotton')");
    assert_eq!((branch.edge_id, branch.node_id), (3, 4));
    assert_eq!(branch.branch_id, "4");
    let t = commands::get_trajectory(
        &studio,
        GetTrajectoryRequest {
            trajectory_id: id.clone(),
        },
    )
    .expect("trajectory");
    let from_1: Vec<(u32, &str)> = t
        .edges
        .iter()
        .filter(|e| e.from == 1)
        .map(|e| (e.edge_id, e.action.raw.as_str()))
        .collect();
    assert_eq!(
        from_1,
        vec![(1, "fill('4', 'wool')"), (3, "fill('4', 'cotton')")]
    );
    assert_eq!(t.edges[3].edited_from, Some(1));
    assert_eq!(t.branches.len(), 2);
    assert_eq!(t.branches[1].forks_at_turn, Some(2));
    // The original is unchanged.
    assert_eq!(t.edges[1].action.raw, "fill('4', 'wool')");
    // The tree carries each edge's control instruction; the edited sibling has none.
    let perturbed: Vec<(u32, &str)> = t
        .edges
        .iter()
        .filter_map(|e| Some((e.edge_id, e.perturbation.as_deref()?)))
        .collect();
    assert_eq!(perturbed, vec![(1, "the login session has expired")]);
    // Empty actions and unknown edges are refused.
    let err = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: id.clone(),
            edge_id: 1,
            raw: "  ".into(),
        },
    )
    .expect_err("empty");
    assert_eq!(err.code, ErrorCode::BadRequest);
    let err = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: id.clone(),
            edge_id: 40,
            raw: "click('1')".into(),
        },
    )
    .expect_err("unknown");
    assert_eq!(err.code, ErrorCode::NotFound);

    // Author the new state (a syntax problem is stored but reported).
    let authored = commands::author_observation(
        &studio,
        AuthorObservationRequest {
            trajectory_id: id.clone(),
            node_id: 4,
            representation: Representation::AndroidXml,
            text: "<hierarchy><node text='a'></hierarchy>".into(),
            based_on_prediction: None,
            note: Some("curriculum step".into()),
        },
    )
    .expect("author");
    assert!(!authored.validation.ok);
    assert_eq!(authored.validation.problems[0].line, Some(1));
    assert!(authored.validation.problems[0].column.is_some());
    assert_eq!(authored.change.kind, ChangeKind::SetAuthored);
    let turn = get_turn(&studio, &id, 4);
    assert_eq!(turn.predicted_kind, Some(ObservationKind::Authored));

    // Continue the branch past its leaf.
    let appended = commands::append_turn(
        &studio,
        AppendTurnRequest {
            trajectory_id: id.clone(),
            node_id: 4,
            raw: "click('9')".into(),
        },
    )
    .expect("append");
    assert_eq!((appended.edge_id, appended.node_id), (4, 5));

    // Compare the recorded branch and the new one.
    let cmp = commands::compare_branches(
        &studio,
        CompareBranchesRequest {
            trajectory_id: id.clone(),
            left: "3".into(),
            right: "5".into(),
        },
    )
    .expect("compare");
    assert_eq!(cmp.rows.len(), 3);
    assert!(cmp.rows[0].same_action);
    assert!(!cmp.rows[1].same_action);
    assert_eq!(
        cmp.rows[1].left_text.as_deref(),
        Some("[1] RootWebArea 'S2'")
    );
    assert_eq!(
        cmp.rows[1].right_text.as_deref(),
        Some("<hierarchy><node text='a'></hierarchy>")
    );
    assert_eq!(cmp.rows[2].right_text, None);
    assert_eq!(
        cmp.rows[1].right.as_ref().map(|t| t.has_authored),
        Some(true)
    );

    // Undo: appended turn, authored observation, branch, perturbation.
    let history: Vec<ChangeKind> = commands::history(&studio, EmptyRequest {})
        .expect("history")
        .changes
        .iter()
        .take(4)
        .map(|c| c.kind)
        .collect();
    assert_eq!(
        history,
        vec![
            ChangeKind::AddTurn,
            ChangeKind::SetAuthored,
            ChangeKind::AddBranch,
            ChangeKind::SetPerturbation
        ]
    );
    for _ in 0..2 {
        commands::undo(&studio, EmptyRequest {}).expect("undo");
    }
    let turn = get_turn(&studio, &id, 4);
    assert_eq!(
        turn.predicted_kind, None,
        "the authored observation is undone"
    );
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    let t = commands::get_trajectory(
        &studio,
        GetTrajectoryRequest {
            trajectory_id: id.clone(),
        },
    )
    .expect("trajectory");
    assert_eq!(t.branches.len(), 1, "the branch is undone");
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    assert_eq!(preview(&studio, &id, 2, ContextMode::TeacherForced), before);
    // Redo brings the perturbation back.
    commands::redo(&studio, EmptyRequest {}).expect("redo");
    assert_eq!(preview(&studio, &id, 2, ContextMode::TeacherForced), with);
}

#[test]
fn parse_and_validate_for_the_forms() {
    let (_dir, studio) = studio();
    let ok = commands::parse_action(
        &studio,
        ParseActionRequest {
            domain: CoreDomain::Web,
            raw: "click('12')".into(),
        },
    )
    .expect("parse");
    assert_eq!(ok.format, ActionFormat::Browsergym);
    assert_eq!(ok.error, None);
    let function = match ok.parsed.as_ref() {
        Some(ParsedAction::Browsergym { calls }) => calls.first().map(|c| c.function.as_str()),
        _ => None,
    };
    assert_eq!(function, Some("click"));
    let bad = commands::parse_action(
        &studio,
        ParseActionRequest {
            domain: Domain::Android,
            raw: "{\"action_type\": ".into(),
        },
    )
    .expect("parse");
    assert_eq!(bad.parsed, None);
    assert!(
        bad.error
            .as_deref()
            .is_some_and(|e| e.starts_with("line 1, column")),
        "{bad:?}"
    );
    let report = commands::validate_observation(
        &studio,
        ValidateObservationRequest {
            representation: Representation::AndroidXml,
            text: "<hierarchy>\n  <node text='x'/>\n</hierarchy>".into(),
        },
    )
    .expect("validate");
    assert!(report.ok);
    assert!(report.node_count.is_some_and(|n| n >= 1));
    let report = commands::validate_observation(
        &studio,
        ValidateObservationRequest {
            representation: Representation::Json,
            text: "{\"a\": [1,\n 2,}".into(),
        },
    )
    .expect("validate");
    assert!(!report.ok);
    assert_eq!(report.problems[0].line, Some(2));
}

/// Waits for the `StepFinished` of `job`, collecting the deltas before it.
fn wait_finished(rx: &Receiver<StudioEvent>, job: &str) -> (Vec<StudioEvent>, StudioEvent) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut deltas = Vec::new();
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(e @ StudioEvent::StepFinished { .. }) => {
                if matches!(&e, StudioEvent::StepFinished { job_id, .. } if job_id == job) {
                    return (deltas, e);
                }
            }
            Ok(e @ StudioEvent::StepDelta { .. }) => deltas.push(e),
            _ => {}
        }
    }
    panic!("no StepFinished for {job}");
}

/// The copy baseline through the studio's Step: the prediction is the
/// observation of the state the action is taken from, as the turn's history
/// shows it (the recorded S1 teacher-forced, S1's chosen prediction P1
/// free-running), and each step ends with one event, `StepFinished`.
#[test]
fn a_step_with_the_copy_baseline_copies_the_parent_state_and_sends_one_event() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let rx = events(&studio);
    for (context, parent) in [
        (ContextMode::TeacherForced, "[1] RootWebArea 'S1'"),
        (ContextMode::FreeRunning, "[1] RootWebArea 'P1'"),
    ] {
        let resp = step(&studio, &id, 2, context);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        let fin = loop {
            assert!(Instant::now() < deadline, "no StepFinished");
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(StudioEvent::StepDelta { .. }) | Err(_) => {}
                Ok(e @ StudioEvent::StepFinished { .. }) => break e,
                Ok(e) => seen.push(e),
            }
        };
        assert!(seen.is_empty(), "{context:?}: other events {seen:?}");
        let StudioEvent::StepFinished {
            job_id,
            prediction_id: Some(pid),
            status: StepStatus::Ok,
            ..
        } = fin
        else {
            panic!("{fin:?}")
        };
        assert_eq!(job_id, resp.job_id);
        let list = predictions(&studio, &id, 2);
        assert_eq!(list.chosen_prediction_id, Some(pid), "{context:?}");
        let ws = studio.lock().expect("lock");
        let key = worldloom_store::TrajectoryKey(id.parse().expect("key"));
        let st = ws.load_trajectory(key).expect("load");
        let p = st
            .trajectory
            .node(NodeId(2))
            .expect("node")
            .predictions
            .iter()
            .find(|p| p.id.0 == pid)
            .expect("stored");
        assert_eq!(p.observation.as_deref(), Some(parent), "{context:?}");
        assert_eq!(p.engine, "copy");
    }
}

#[test]
fn step_with_the_copy_baseline_stores_a_scored_chosen_prediction() {
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![sample(WEB)]).remove(0);
    let status = commands::engine_status(&studio, EmptyRequest {}).expect("status");
    assert_eq!(
        status.settings,
        Some(EngineSettings::Baseline {
            name: "copy".into()
        })
    );
    assert!(status.ready);
    assert_eq!(status.params.top_k, 20);
    assert_eq!(status.params.seed, "0");
    let branch = commands::get_branch(
        &studio,
        GetBranchRequest {
            trajectory_id: id.clone(),
            branch_id: commands::get_trajectory(
                &studio,
                GetTrajectoryRequest {
                    trajectory_id: id.clone(),
                },
            )
            .expect("t")
            .branches[0]
                .id
                .clone(),
        },
    )
    .expect("branch");
    let node = branch.turns[1].node_id;
    let before = predictions(&studio, &id, node).predictions.len();
    let resp = step(&studio, &id, node, ContextMode::TeacherForced);
    let (deltas, fin) = wait_finished(&rx, &resp.job_id);
    let StudioEvent::StepFinished {
        prediction_id,
        status,
        error,
        stats,
        ..
    } = fin
    else {
        unreachable!()
    };
    assert_eq!(error, None);
    assert_eq!(status, StepStatus::Ok);
    assert!(stats.is_some());
    let streamed: String = deltas
        .iter()
        .filter_map(|d| match d {
            StudioEvent::StepDelta { observation, .. } => Some(observation.as_str()),
            _ => None,
        })
        .collect();
    // The copy of the state the action was taken from (the turn-1 state).
    let turn1 = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: id.clone(),
            node_id: branch.turns[0].node_id,
            prediction_id: None,
        },
    )
    .expect("turn 1");
    let real1 = turn1.views[0].real.as_ref().expect("real").text.clone();
    // The observation streams without its tags.
    assert_eq!(streamed, real1.trim());
    let list = predictions(&studio, &id, node);
    assert_eq!(list.predictions.len(), before + 1);
    let new = list.predictions.last().expect("new");
    assert_eq!(Some(new.id), prediction_id);
    assert_eq!(list.chosen_prediction_id, prediction_id);
    assert_eq!(new.engine, "copy");
    assert_eq!(new.context, ContextMode::TeacherForced);
    assert_eq!(new.seed.as_deref(), Some("0"));
    // Scored against the real observation, and the result stored.
    let overall = new.overall.expect("scored");
    assert!((0.0..=1.0).contains(&overall));
    let turn = get_turn(&studio, &id, node);
    assert_eq!(turn.prediction_id, prediction_id);
    assert_eq!(turn.fidelity.and_then(|f| f.overall), Some(overall));
    // One undo removes the step.
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    let list = predictions(&studio, &id, node);
    assert_eq!(list.predictions.len(), before);
}

#[test]
fn rollout_appends_and_steps_each_action_free_running() {
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let resp = commands::rollout(
        &studio,
        RolloutRequest {
            trajectory_id: id.clone(),
            node_id: 3,
            actions: vec!["click('6')".into(), "click('7')".into()],
            context: ContextMode::FreeRunning,
        },
    )
    .expect("rollout");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut progress = Vec::new();
    while Instant::now() < deadline && progress.last() != Some(&2) {
        if let Ok(StudioEvent::RolloutProgress { job_id, done, .. }) =
            rx.recv_timeout(Duration::from_millis(200))
            && job_id == resp.job_id
        {
            progress.push(done);
        }
    }
    assert_eq!(progress, vec![0, 1, 2]);
    let t = commands::get_trajectory(
        &studio,
        GetTrajectoryRequest {
            trajectory_id: id.clone(),
        },
    )
    .expect("trajectory");
    // Nodes 4 and 5 continue the recorded branch, each with a chosen copy
    // of the state before it (free-running: the previous prediction).
    assert_eq!(t.branches.len(), 1);
    assert_eq!(t.branches[0].turn_count, 5);
    let turn = get_turn(&studio, &id, 5);
    assert_eq!(turn.predicted_kind, Some(ObservationKind::Predicted));
    assert_eq!(
        turn.views[0].predicted.as_ref().map(|s| s.text.as_str()),
        Some("[1] RootWebArea 'S3'")
    );
}

/// An OpenAI-compatible endpoint that streams one content chunk every
/// 100 ms for a minute (an open `<think>` block: reasoning that never ends).
fn slow_endpoint() -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use axum::routing::post;
    serve(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let stream = futures_util::stream::unfold(0u32, |i| async move {
                if i >= 600 {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                // Reasoning that streams: `<think>` first, then words.
                let text = if i == 0 {
                    "<think>\n".to_string()
                } else {
                    format!("w{i} ")
                };
                let chunk = serde_json::json!({
                    "choices": [{"index": 0, "delta": {"content": text}}]
                });
                Some((
                    Ok::<_, std::convert::Infallible>(format!("data: {chunk}\n\n")),
                    i + 1,
                ))
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(stream))
                .expect("response")
        }),
    ))
}

#[test]
fn cancel_stops_a_slow_stream_at_once_and_stores_nothing() {
    let (addr, _server) = slow_endpoint();
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let status =
        set_engine(&studio, openai(addr, "slow", None), default_params()).expect("set engine");
    assert!(status.ready, "{status:?}");
    assert_eq!(status.name.as_deref(), Some("openai:slow"));
    let resp = step(&studio, &id, 2, ContextMode::TeacherForced);
    // Wait for streaming to start.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut streamed = false;
    let mut seen = Vec::new();
    while Instant::now() < deadline && !streamed {
        if let Ok(e) = rx.recv_timeout(Duration::from_millis(200)) {
            streamed = matches!(e, StudioEvent::StepDelta { .. });
            seen.push(e);
        }
    }
    assert!(streamed, "no StepDelta from the slow endpoint: {seen:?}");
    let cancelled = commands::cancel_step(
        &studio,
        CancelStepRequest {
            job_id: resp.job_id.clone(),
        },
    )
    .expect("cancel");
    assert!(cancelled.cancelled);
    // StepFinished(cancelled) was sent before cancel_step returned.
    let mut after = Vec::new();
    while let Ok(e) = rx.try_recv() {
        after.push(e);
    }
    let fin: Vec<&StudioEvent> = after
        .iter()
        .filter(|e| matches!(e, StudioEvent::StepFinished { .. }))
        .collect();
    assert_eq!(fin.len(), 1, "{after:?}");
    assert!(
        matches!(fin[0], StudioEvent::StepFinished { status, prediction_id: None, .. } if *status == StepStatus::Cancelled)
    );
    // Nothing more arrives, nothing is stored.
    std::thread::sleep(Duration::from_millis(600));
    let late: Vec<StudioEvent> = rx.try_iter().collect();
    assert!(
        late.iter().all(|e| !matches!(
            e,
            StudioEvent::StepDelta { .. } | StudioEvent::StepFinished { .. }
        )),
        "{late:?}"
    );
    let list = predictions(&studio, &id, 2);
    assert!(list.predictions.is_empty());
    // A second cancel has nothing to stop.
    assert!(
        !commands::cancel_step(
            &studio,
            CancelStepRequest {
                job_id: resp.job_id
            }
        )
        .expect("cancel")
        .cancelled
    );
    // The engine settings were saved without a secret and survive a reopen.
    let ws_path = dir.path().join("ws.worldloom");
    drop(studio);
    let reopened = Studio::open(&ws_path).expect("reopen");
    let status = commands::engine_status(&reopened, EmptyRequest {}).expect("status");
    assert!(
        matches!(status.settings, Some(EngineSettings::Openai { model, .. }) if model == "slow")
    );
}

#[test]
fn step_deadline_ends_a_never_ending_stream_with_an_error() {
    let (addr, _server) = slow_endpoint();
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let status =
        set_engine(&studio, openai(addr, "slow", Some(1)), default_params()).expect("set engine");
    assert!(status.ready, "{status:?}");
    step(&studio, &id, 2, ContextMode::TeacherForced);
    // The endpoint streams for a minute; the step ends after 1 s.
    let started = Instant::now();
    let mut finished = None;
    while started.elapsed() < Duration::from_secs(10) && finished.is_none() {
        if let Ok(e @ StudioEvent::StepFinished { .. }) =
            rx.recv_timeout(Duration::from_millis(200))
        {
            finished = Some(e);
        }
    }
    let Some(StudioEvent::StepFinished {
        status,
        prediction_id,
        error,
        ..
    }) = finished
    else {
        panic!("the step did not end within 10 s");
    };
    assert_eq!((status, prediction_id), (StepStatus::Error, None));
    let error = error.unwrap_or_default();
    assert!(
        error.contains(&format!(
            "http://{addr}/v1/chat/completions did not finish its answer within the step deadline of 1000 ms"
        )),
        "{error}"
    );
    // The deadline is saved with the settings.
    let status = commands::engine_status(&studio, EmptyRequest {}).expect("status");
    assert!(matches!(
        status.settings,
        Some(EngineSettings::Openai {
            step_deadline_s: Some(1),
            ..
        })
    ));
}

fn tiny_model() -> PathBuf {
    repo().join("assets/tiny-world-model")
}

#[test]
fn tiny_checkpoint_steps_and_reuses_state_snapshots() {
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let info = commands::inspect_model_dir(
        &studio,
        InspectModelDirRequest {
            path: tiny_model().display().to_string(),
        },
    )
    .expect("inspect");
    assert!(
        info.architecture.starts_with("qwen3_5_moe"),
        "{}",
        info.architecture
    );
    assert!(info.has_tokenizer && info.has_chat_template);
    assert!(info.active_params > 0 && info.active_params < info.total_params);
    assert_eq!(info.memory.len(), 3);
    assert!(info.devices.contains(&"cpu".to_string()));
    let mut params = greedy_params(6);
    params.logprobs = true;
    let status = set_local_engine(&studio, &tiny_model(), params);
    assert_eq!(status.name.as_deref(), Some("local:tiny-world-model"));
    assert!(status.memory_estimate_bytes.is_some_and(|b| b > 0));

    let mut stats = Vec::new();
    for (prediction_id, s) in step_turns_1_and_2(&studio, &rx, &id) {
        assert!(prediction_id.is_some());
        stats.push(s);
    }
    assert!(stats[0].prompt_tokens > 0);
    assert!(
        stats[1].prompt_tokens_reused > 0,
        "turn 2 after turn 1 reuses the snapshot: {:?}",
        stats[1]
    );
    assert_eq!(
        stats[1].prompt_tokens_reused + stats[1].prompt_tokens_computed,
        stats[1].prompt_tokens
    );
    // The engine's decoding figures reach the step's statistics (the
    // studio drafts by default; the random model's drafts rarely hold).
    for s in &stats {
        assert!(s.decode_forwards > 0, "{s:?}");
        assert!(s.accepted_tokens <= s.drafted_tokens, "{s:?}");
        assert!(
            s.decode_forwards < s.completion_tokens,
            "at most a forward a token (none after the last), a cut draft included: {s:?}"
        );
    }
    let list = predictions(&studio, &id, 2);
    let p = list.predictions.last().expect("prediction");
    assert_eq!(p.engine, "local:tiny-world-model");
    assert_eq!(p.params["max_new_tokens"], 6);
}

fn expected_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expected")
        .join(name)
}

fn check_expected(name: &str, content: &str) {
    let path = expected_file(name);
    if std::env::var_os("WORLDLOOM_UPDATE_EXPECTED").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write expected");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == content,
        "{} differs from the export; regenerate with WORLDLOOM_UPDATE_EXPECTED=1 if the change is intended",
        path.display()
    );
}

#[test]
fn curriculum_exports_match_the_expected_files_and_round_trip() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    // A branch at turn 2 with an authored state, continued by one turn that
    // has no observation (skipped).
    let b = edit_action(&studio, &id, 1, "fill('4', 'cotton')");
    commands::author_observation(
        &studio,
        AuthorObservationRequest {
            trajectory_id: id.clone(),
            node_id: b.node_id,
            representation: Representation::Axtree,
            text: "[1] RootWebArea 'Cotton socks'".into(),
            based_on_prediction: None,
            note: None,
        },
    )
    .expect("author");
    let leaf = commands::append_turn(
        &studio,
        AppendTurnRequest {
            trajectory_id: id.clone(),
            node_id: b.node_id,
            raw: "click('8')".into(),
        },
    )
    .expect("append");
    commands::set_tag(
        &studio,
        SetTagRequest {
            trajectory_id: id.clone(),
            node_id: Some(leaf.node_id),
            tag: "curriculum".into(),
            present: true,
        },
    )
    .expect("tag");
    let export = |format: CurriculumFormat| {
        commands::export_curriculum(
            &studio,
            ExportCurriculumRequest {
                selection: vec![BranchRef {
                    trajectory_id: id.clone(),
                    branch_id: "3".into(),
                }],
                tag: Some("curriculum".into()),
                format,
                preview_limit: 2,
                path: None,
            },
        )
        .expect("export")
    };
    let awb = export(CurriculumFormat::Agentworldbench);
    // 3 recorded turns + 2 branch turns; the appended turn is skipped.
    assert_eq!(awb.rows_total, 5);
    assert_eq!(awb.skipped, 1);
    assert_eq!(awb.preview.len(), 2);
    let content = awb.content.clone().expect("content");
    assert_eq!(awb.bytes, content.len() as u64);
    assert_eq!(
        export(CurriculumFormat::Agentworldbench).content,
        Some(content.clone())
    );
    check_expected("curriculum.awb.jsonl", &content);
    let sft = export(CurriculumFormat::Sft);
    assert_eq!(sft.rows_total, 5);
    let sft_text = sft.content.clone().unwrap_or_default();
    check_expected("curriculum.sft.jsonl", &sft_text);
    // The SFT file imports back (as the rows it stands for) and exports again byte for byte.
    let sft_file = dir.path().join("curriculum.sft.jsonl");
    std::fs::write(&sft_file, &sft_text).expect("write sft");
    let (_dir3, sft_studio) = self::studio();
    let sft_ids = import_paths(&sft_studio, vec![sft_file.display().to_string()]);
    assert_eq!(sft_ids.len(), 2, "the recorded path and the branch");
    for sft_id in &sft_ids {
        commands::set_tag(
            &sft_studio,
            SetTagRequest {
                trajectory_id: sft_id.clone(),
                node_id: None,
                tag: "again".into(),
                present: true,
            },
        )
        .expect("tag");
    }
    let sft_again = commands::export_curriculum(
        &sft_studio,
        ExportCurriculumRequest {
            selection: Vec::new(),
            tag: Some("again".into()),
            format: CurriculumFormat::Sft,
            preview_limit: 0,
            path: None,
        },
    )
    .expect("sft re-export");
    assert_eq!(sft_again.content.as_deref(), Some(sft_text.as_str()));

    // Written to a file and imported again: the same rows come back out.
    let file = dir.path().join("curriculum.awb.jsonl");
    let written = commands::export_curriculum(
        &studio,
        ExportCurriculumRequest {
            selection: Vec::new(),
            tag: Some("curriculum".into()),
            format: CurriculumFormat::Agentworldbench,
            preview_limit: 0,
            path: Some(file.display().to_string()),
        },
    )
    .expect("write");
    assert_eq!(written.content, None);
    let (_dir2, other) = self::studio();
    let ids = import_paths(&other, vec![file.display().to_string()]);
    assert_eq!(ids.len(), 1, "one branch trajectory");
    let reexport = commands::export_curriculum(
        &other,
        ExportCurriculumRequest {
            selection: vec![BranchRef {
                trajectory_id: ids[0].clone(),
                branch_id: "2".into(),
            }],
            tag: None,
            format: CurriculumFormat::Agentworldbench,
            preview_limit: 0,
            path: None,
        },
    )
    .expect("re-export");
    assert_eq!(
        reexport.content.as_deref(),
        std::fs::read_to_string(&file).ok().as_deref()
    );
    // No selection at all is a bad request.
    let err = commands::export_curriculum(
        &studio,
        ExportCurriculumRequest {
            selection: Vec::new(),
            tag: None,
            format: CurriculumFormat::Sft,
            preview_limit: 0,
            path: None,
        },
    )
    .expect_err("empty");
    assert_eq!(err.code, ErrorCode::BadRequest);
}

/// Uploads `files` (relative path, bytes) as `POST /api/upload` does: each
/// written once into an [`worldloom_api::UploadFolder`], then imported from there.
fn upload(studio: &Studio, files: &[(String, Vec<u8>)]) -> Result<ImportFilesResponse, ApiError> {
    let mut folder = worldloom_api::UploadFolder::new()?;
    for (rel, bytes) in files {
        let mut file = folder.create(rel)?;
        file.write(bytes)?;
        folder.finish(file)?;
    }
    folder.import(studio)
}

#[test]
fn uploads_import_files_and_folders_and_refuse_escapes() {
    let (_dir, studio) = studio();
    let web = std::fs::read(sample(WEB)).expect("web sample");
    let mut files = vec![("agentlab_larkmail-reply_6steps.json".to_owned(), web)];
    let os_dir = PathBuf::from(sample(OS));
    let mut names: Vec<PathBuf> = std::fs::read_dir(&os_dir)
        .expect("os sample")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    for p in &names {
        files.push((
            format!(
                "thunar_rename_trajectory/{}",
                p.file_name().and_then(|n| n.to_str()).expect("name")
            ),
            std::fs::read(p).expect("read"),
        ));
    }
    // The web file's predictions sidecar travels with it.
    let sidecar =
        std::fs::read(sample(WEB).replace(".json", ".predictions.jsonl")).expect("sidecar");
    files.push((
        "agentlab_larkmail-reply_6steps.predictions.jsonl".to_owned(),
        sidecar.clone(),
    ));
    let resp = upload(&studio, &files).expect("upload");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    let web_import = resp
        .imported
        .iter()
        .find(|i| i.path.ends_with(".json"))
        .expect("web imported");
    let web_summary = commands::list_trajectories(&studio, ListTrajectoriesRequest::default())
        .expect("list")
        .trajectories
        .into_iter()
        .find(|t| t.id == web_import.trajectory_id)
        .expect("web listed");
    assert!(
        web_summary.prediction_count > 0,
        "the sidecar's predictions are attached"
    );
    // A sidecar alone is refused by name, not read as a trajectory.
    let lone = upload(
        &studio,
        &[("lonely.predictions.jsonl".to_owned(), sidecar.clone())],
    )
    .expect("upload");
    assert!(lone.imported.is_empty());
    assert_eq!(lone.failed.len(), 1);
    assert_eq!(lone.failed[0].path, "lonely.predictions.jsonl");
    assert!(
        lone.failed[0]
            .message
            .contains("a predictions sidecar, not a trajectory")
            && lone.failed[0].message.contains("`lonely.json`"),
        "{}",
        lone.failed[0].message
    );
    let mut paths: Vec<&str> = resp.imported.iter().map(|i| i.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        vec![
            "agentlab_larkmail-reply_6steps.json",
            "thunar_rename_trajectory"
        ]
    );
    let list =
        commands::list_trajectories(&studio, ListTrajectoriesRequest::default()).expect("list");
    assert_eq!(list.trajectories.len(), 2);
    assert!(
        list.trajectories.iter().all(|t| !t
            .source_path
            .as_deref()
            .unwrap_or("")
            .contains("worldloom-upload-")),
        "{:?}",
        list.trajectories
    );
    // The official eval.py's `predictions.jsonl` (rows plus `gen`), uploaded
    // on its own, imports as its rows.
    let mut rows = String::new();
    let awb = std::fs::read_to_string(
        repo().join("samples/agentworldbench/agentworldbench_sample.jsonl"),
    )
    .expect("sample");
    for line in awb.lines().filter(|l| !l.trim().is_empty()) {
        let mut row: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).expect("row");
        row.insert(
            "gen".into(),
            serde_json::json!("<predicted_observation>x</predicted_observation>"),
        );
        rows.push_str(&serde_json::to_string(&row).expect("json"));
        rows.push('\n');
    }
    let official = upload(
        &studio,
        &[("predictions.jsonl".to_owned(), rows.into_bytes())],
    )
    .expect("upload");
    assert!(official.failed.is_empty(), "{:?}", official.failed);
    assert_eq!(official.imported.len(), 7);
    assert!(
        official
            .imported
            .iter()
            .all(|i| i.path == "predictions.jsonl" && i.added)
    );
    for bad in ["../evil.json", "/etc/passwd", "a/../../b.json"] {
        let err = upload(&studio, &[(bad.to_owned(), b"{}".to_vec())]).expect_err("refused");
        assert_eq!(err.code, ErrorCode::BadRequest, "{bad}");
        assert!(err.message.contains(bad), "{}", err.message);
    }
}

#[test]
fn engine_settings_are_checked() {
    let (_dir, studio) = studio();
    let mut params = default_params();
    params.seed = "-1".into();
    let err = commands::set_engine(
        &studio,
        SetEngineRequest {
            settings: EngineSettings::Baseline {
                name: "copy".into(),
            },
            params,
        },
    )
    .expect_err("bad seed");
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(err.message.contains("params.seed"));
    // Parameters come back as written (model-card defaults), not as f32 noise.
    let defaults = commands::engine_status(&studio, EmptyRequest {}).expect("status");
    assert_eq!(
        (defaults.params.temperature, defaults.params.top_p),
        (0.6, 0.95)
    );
    // A key variable that is not set: saved, reported, not ready.
    let status = commands::set_engine(
        &studio,
        SetEngineRequest {
            settings: EngineSettings::Openai {
                base_url: "http://127.0.0.1:9/v1".into(),
                model: "m".into(),
                api_key_env: Some("WORLDLOOM_TEST_UNSET_KEY_VARIABLE".into()),
                step_deadline_s: None,
                key_source: None,
                keyring_account: None,
            },
            params: default_params(),
        },
    )
    .expect("saved");
    assert!(!status.ready);
    assert!(
        status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("WORLDLOOM_TEST_UNSET_KEY_VARIABLE")),
        "{status:?}"
    );
    let err = commands::inspect_model_dir(
        &studio,
        InspectModelDirRequest {
            path: "/nonexistent/model".into(),
        },
    )
    .expect_err("missing");
    assert!(err.message.contains("/nonexistent/model"));
}

#[test]
fn judge_scores_of_a_judged_prediction_reach_the_fidelity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut t = Trajectory::new(
        "judged",
        CoreDomain::Web,
        Some(Observation::new(
            CoreRepresentation::Axtree,
            "[1] RootWebArea 'S0'",
        )),
    );
    let (_, n1) = t
        .add_step(
            t.root(),
            Action::new("click('3')", ActionFormat::Browsergym),
            Some(Observation::new(
                CoreRepresentation::Axtree,
                "[1] RootWebArea 'S1'",
            )),
        )
        .expect("step");
    let mut p = Prediction::from_output(
        "m",
        "<predicted_observation>[1] RootWebArea 'S1'</predicted_observation>",
    );
    p.representation = CoreRepresentation::Axtree;
    // The fields `worldloom judge` adds to a predictions row.
    for (k, v) in [
        ("format", serde_json::json!(5)),
        ("factuality", serde_json::json!(4)),
        ("consistency", serde_json::json!(3)),
        ("realism", serde_json::json!(5)),
        ("quality", serde_json::json!(4)),
        ("failed", serde_json::json!(0.0)),
        ("weaknesses", serde_json::json!(["title casing"])),
    ] {
        p.extra.insert(k.into(), v);
    }
    let id = t.add_prediction(n1, p).expect("prediction");
    t.choose_prediction(n1, Some(id)).expect("choose");
    let path = dir.path().join("judged.worldloom.json");
    TrajectoryFile::new(vec![t]).write(&path).expect("write");
    let (_wdir, studio) = studio();
    let tid = import_paths(&studio, vec![path.display().to_string()]).remove(0);
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: tid,
            node_id: n1.0,
            prediction_id: None,
        },
    )
    .expect("turn");
    let judge = turn.fidelity.and_then(|f| f.judge).expect("judge scores");
    assert_eq!(
        (
            judge.format,
            judge.factuality,
            judge.consistency,
            judge.realism,
            judge.quality
        ),
        (Some(5.0), Some(4.0), Some(3.0), Some(5.0), Some(4.0))
    );
    // (mean 4.2 − 1) / 4 × 100 on AgentWorldBench's scale.
    let score = judge.score.expect("judge score");
    assert!((score - 80.0).abs() < 1e-9, "{score}");
    assert_eq!(judge.rationale.as_deref(), Some("Weaknesses: title casing"));
}

#[test]
fn an_authored_observation_is_shown_over_the_chosen_prediction_until_undone() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let before = get_turn(&studio, &id, 1);
    assert_eq!(before.predicted_kind, Some(ObservationKind::Predicted));
    assert_eq!(before.chosen_prediction_id, Some(0));
    commands::author_observation(
        &studio,
        AuthorObservationRequest {
            trajectory_id: id.clone(),
            node_id: 1,
            representation: Representation::Axtree,
            text: "[1] RootWebArea 'A1'".into(),
            based_on_prediction: Some(0),
            note: None,
        },
    )
    .expect("author");
    let after = get_turn(&studio, &id, 1);
    assert_eq!(after.predicted_kind, Some(ObservationKind::Authored));
    assert_eq!(after.chosen_prediction_id, None);
    // One change: one undo brings back the chosen prediction.
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    let undone = get_turn(&studio, &id, 1);
    assert_eq!(undone.predicted_kind, Some(ObservationKind::Predicted));
    assert_eq!(undone.chosen_prediction_id, Some(0));
}

#[test]
fn a_rollout_after_a_state_with_no_observation_is_refused_and_appends_nothing() {
    let (dir, studio) = studio();
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    // An edited action at turn 2 leads to a state with nothing recorded yet.
    let b = edit_action(&studio, &id, 1, "click('9')");
    let count_nodes = || {
        commands::get_trajectory(
            &studio,
            GetTrajectoryRequest {
                trajectory_id: id.clone(),
            },
        )
        .expect("trajectory")
        .nodes
        .len()
    };
    let before = count_nodes();
    let err = commands::rollout(
        &studio,
        RolloutRequest {
            trajectory_id: id.clone(),
            node_id: b.node_id,
            actions: vec!["click('6')".into()],
            context: ContextMode::FreeRunning,
        },
    )
    .expect_err("refused");
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(
        err.message.contains(&format!(
            "after state {} (turn 2), which has no observation",
            b.node_id
        )),
        "{}",
        err.message
    );
    assert_eq!(count_nodes(), before, "nothing appended");
}

/// A loopback OpenAI-compatible endpoint that answers 401 unless the request
/// carries `Authorization: Bearer {key}`, and streams "hello" otherwise.
fn keyed_endpoint(key: &'static str) -> std::net::SocketAddr {
    use axum::routing::post;
    serve(axum::Router::new().route(
        "/v1/chat/completions",
        post(move |headers: axum::http::HeaderMap| async move {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if auth != format!("Bearer {key}") {
                return axum::response::Response::builder()
                    .status(401)
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(r#"{"error":{"message":"bad key"}}"#))
                    .expect("response");
            }
            let chunk = serde_json::json!({
                "choices": [{"index": 0, "delta": {"content": "hello"}}]
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from(format!(
                    "data: {chunk}\n\ndata: [DONE]\n\n"
                )))
                .expect("response")
        }),
    ))
    .0
}

#[test]
fn an_api_key_from_the_keyring_reaches_the_endpoint_and_never_the_workspace() {
    const KEY: &str = "sk-worldloom-keyring-test-5d1f";
    let addr = keyed_endpoint(KEY);
    let (dir, studio) = studio();
    studio.set_key_store(std::sync::Arc::new(
        worldloom_api::keys::MemoryKeyStore::default(),
    ));
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let base_url = format!("http://{addr}/v1");
    let settings = |account: Option<&str>| EngineSettings::Openai {
        base_url: base_url.clone(),
        model: "m".into(),
        api_key_env: None,
        step_deadline_s: None,
        key_source: Some(KeySource::Keyring),
        keyring_account: account.map(str::to_owned),
    };

    // No key stored: the engine is not ready and the error names the account.
    let status = set_engine(&studio, settings(None), default_params()).expect("saved");
    assert!(!status.ready);
    let error = status.error.expect("error");
    assert!(error.contains(&format!("account `{base_url}`")), "{error}");
    assert!(error.contains("service `worldloom`"), "{error}");
    let stored = commands::endpoint_key_status(
        &studio,
        EndpointKeyStatusRequest {
            account: base_url.clone(),
        },
    )
    .expect("key status");
    assert!(!stored.stored);

    // A blank account is refused.
    let err = commands::set_endpoint_key(
        &studio,
        SetEndpointKeyRequest {
            account: "  ".into(),
            key: KEY.into(),
        },
    )
    .expect_err("blank account");
    assert_eq!(err.code, ErrorCode::BadRequest);

    // Store the key under a named account; the reply never holds the key.
    let reply = worldloom_api::dispatch(
        &studio,
        "set_endpoint_key",
        serde_json::json!({"account": " lab endpoint ", "key": KEY}),
    )
    .expect("set key");
    assert_eq!(
        reply,
        serde_json::json!({"account": "lab endpoint", "stored": true})
    );
    let status =
        set_engine(&studio, settings(Some("lab endpoint")), default_params()).expect("set engine");
    assert!(status.ready, "{status:?}");
    let resp = step(&studio, &id, 2, ContextMode::TeacherForced);
    let (_, fin) = wait_finished(&rx, &resp.job_id);
    assert!(
        matches!(
            &fin,
            StudioEvent::StepFinished {
                prediction_id: Some(_),
                error: None,
                ..
            }
        ),
        "{fin:?}"
    );

    // A wrong key is refused by the endpoint: the key stored is the one sent.
    commands::set_endpoint_key(
        &studio,
        SetEndpointKeyRequest {
            account: "lab endpoint".into(),
            key: "sk-wrong".into(),
        },
    )
    .expect("replace key");
    let resp = step(&studio, &id, 2, ContextMode::TeacherForced);
    let (_, fin) = wait_finished(&rx, &resp.job_id);
    assert!(
        matches!(
            &fin,
            StudioEvent::StepFinished {
                status: StepStatus::Error,
                prediction_id: None,
                ..
            }
        ),
        "{fin:?}"
    );

    // Neither key is anywhere in the workspace file (nor its journal).
    drop(studio);
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            let bytes = std::fs::read(&path).expect("read");
            for key in [KEY, "sk-wrong"] {
                assert!(
                    !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                    "{key} found in {}",
                    path.display()
                );
            }
        }
    }
    // The account name is saved (it is not a secret); the settings load.
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("reopen");
    let status = commands::engine_status(&studio, EmptyRequest {}).expect("status");
    assert_eq!(status.settings, Some(settings(Some("lab endpoint"))));
}

#[test]
fn saved_engine_settings_without_a_key_source_read_the_environment() {
    let json =
        r#"{"kind":"openai","base_url":"http://127.0.0.1:8000/v1","model":"m","api_key_env":"K"}"#;
    let settings: EngineSettings = serde_json::from_str(json).expect("old settings");
    assert_eq!(
        settings,
        EngineSettings::Openai {
            base_url: "http://127.0.0.1:8000/v1".into(),
            model: "m".into(),
            api_key_env: Some("K".into()),
            step_deadline_s: None,
            key_source: None,
            keyring_account: None,
        }
    );
    assert_eq!(serde_json::to_string(&settings).expect("json"), json);
}

/// An OpenAI-compatible endpoint whose answer is reasoning only, cut by the
/// token limit (`finish_reason: "length"`), streamed.
fn reasoning_cut_endpoint() -> std::net::SocketAddr {
    use axum::routing::post;
    serve(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let chunks = [
                serde_json::json!({"choices": [{"index": 0,
                    "delta": {"reasoning_content": "The page reloads. <predicted_observation>draft"}}]}),
                serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
            ];
            let body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from(format!("{body}data: [DONE]\n\n")))
                .expect("response")
        }),
    ))
    .0
}

#[test]
fn a_step_cut_by_the_token_limit_inside_reasoning_is_truncated() {
    let addr = reasoning_cut_endpoint();
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let status =
        set_engine(&studio, openai(addr, "m", None), default_params()).expect("set engine");
    assert!(status.ready, "{status:?}");
    let resp = step(&studio, &id, 2, ContextMode::TeacherForced);
    let (deltas, fin) = wait_finished(&rx, &resp.job_id);
    let StudioEvent::StepFinished {
        prediction_id,
        status,
        error,
        stats,
        ..
    } = fin
    else {
        unreachable!()
    };
    assert_eq!(error, None);
    assert_eq!(status, StepStatus::Truncated);
    assert_eq!(
        stats.expect("stats").stop_reason,
        Some(StopReason::MaxTokens)
    );
    // Reasoning streamed; no observation did.
    assert!(deltas.iter().all(|d| !matches!(
        d,
        StudioEvent::StepDelta { observation, .. } if !observation.is_empty()
    )));
    let list = predictions(&studio, &id, 2);
    let stored = list
        .predictions
        .iter()
        .find(|p| Some(p.id) == prediction_id)
        .expect("stored");
    assert_eq!(stored.status, OutputStatus::Truncated);
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: id,
            node_id: 2,
            prediction_id,
        },
    )
    .expect("turn");
    assert_eq!(
        turn.reasoning.as_deref(),
        Some("The page reloads. <predicted_observation>draft")
    );
}

/// The studio's engine takes a GGUF file (written from the tiny checkpoint,
/// its tokenizer files beside it): inspected before loading, loaded, and
/// stepped with the second turn reusing the first turn's state snapshot.
#[test]
fn gguf_model_inspects_loads_and_reuses_snapshots() {
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let models = tempfile::tempdir().expect("tempdir");
    let gguf = models.path().join("tiny-q8_0.gguf");
    worldloom_engine::qwen3_5_moe::gguf::write_gguf(
        &tiny_model(),
        &gguf,
        worldloom_engine::qwen3_5_moe::gguf::WriteOptions {
            dtype: worldloom_engine::weights::gguf_writer::parse_file_type("q8_0").expect("type"),
            max_tensors_per_file: None,
        },
    )
    .expect("write gguf");
    let inspect = |path: &Path| {
        commands::inspect_model_dir(
            &studio,
            InspectModelDirRequest {
                path: path.display().to_string(),
            },
        )
    };
    let lone = inspect(&gguf).expect("inspect");
    assert_eq!(lone.architecture, "qwen35moe");
    // The writer copied the directory's tokenizer and template into the
    // file's metadata.
    assert!(lone.has_tokenizer && lone.has_chat_template, "{lone:?}");
    for name in [
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "generation_config.json",
    ] {
        std::fs::copy(tiny_model().join(name), models.path().join(name)).expect("copy");
    }
    let info = inspect(&gguf).expect("inspect");
    assert!(info.has_tokenizer && info.has_chat_template);
    let from_dir = inspect(&tiny_model()).expect("inspect dir");
    assert_eq!(info.total_params, from_dir.total_params);
    // Quantized weights count at their stored size: less than f32.
    assert!(info.memory[2].bytes < from_dir.memory[2].bytes, "{info:?}");
    let missing = inspect(&models.path().join("absent.gguf")).expect_err("missing");
    assert!(missing.message.contains("absent.gguf: no such file"));

    let status = set_local_engine(&studio, &gguf, greedy_params(4));
    assert_eq!(status.name.as_deref(), Some("local:tiny-q8_0.gguf"));
    let stats: Vec<StepStats> = step_turns_1_and_2(&studio, &rx, &id)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert!(
        stats[1].prompt_tokens_reused > 0,
        "turn 2 reuses turn 1's snapshot: {:?}",
        stats[1]
    );
}

/// A GGUF file made by llama.cpp's converter (the tiny world model's BF16
/// fixture), alone in its folder: inspected (tokenizer and template from its
/// metadata), loaded, and stepped, the second turn reusing the first turn's
/// state snapshot.
#[test]
fn lone_llama_cpp_gguf_file_loads_and_steps() {
    let (dir, studio) = studio();
    let rx = events(&studio);
    let id = import_paths(&studio, vec![small_web(dir.path())]).remove(0);
    let models = tempfile::tempdir().expect("tempdir");
    let gguf = models.path().join("tiny-world-bf16.gguf");
    std::fs::copy(
        repo().join("crates/worldloom-engine/tests/fixtures/gguf/tiny-world-bf16.gguf"),
        &gguf,
    )
    .expect("copy fixture");
    let info = commands::inspect_model_dir(
        &studio,
        InspectModelDirRequest {
            path: gguf.display().to_string(),
        },
    )
    .expect("inspect");
    assert_eq!(info.architecture, "qwen35moe");
    assert!(info.has_tokenizer && info.has_chat_template, "{info:?}");

    let status = set_local_engine(&studio, &gguf, greedy_params(4));
    assert_eq!(status.name.as_deref(), Some("local:tiny-world-bf16.gguf"));
    let stats: Vec<StepStats> = step_turns_1_and_2(&studio, &rx, &id)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert!(
        (1..=4).contains(&stats[0].completion_tokens),
        "{:?}",
        stats[0]
    );
    assert!(
        stats[1].prompt_tokens_reused > 0,
        "turn 2 reuses turn 1's snapshot: {:?}",
        stats[1]
    );
}
