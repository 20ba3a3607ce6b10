//! Runs started in the studio and judging a run, through the API: the
//! `copy` baseline over the AgentWorldBench sample (teacher-forced and
//! free-running), cancel and resume against a slow OpenAI-compatible
//! endpoint, and a mock judge endpoint whose scores attach to the rows.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{AWB, events, sample, serve, studio};
use worldloom_api::types::*;
use worldloom_api::{ErrorCode, Studio, StudioEvent, commands};
use worldloom_store::{RunId, TrajectoryKey};

/// Waits for a progress event of `job` for which `enough` holds, then
/// cancels the job.
fn cancel_once(
    studio: &Studio,
    rx: &Receiver<StudioEvent>,
    job: &str,
    enough: impl Fn(&RunJobView) -> bool,
) -> RunJobView {
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(StudioEvent::RunJobProgress { job: v }) if v.job_id == job && enough(&v) => {
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("no progress: {e}"),
        }
    }
    commands::cancel_run_job(studio, CancelRunJobRequest { job_id: job.into() }).expect("cancel")
}

/// Imports the AgentWorldBench sample; its trajectory ids.
fn import_sample(studio: &Studio) -> Vec<String> {
    let resp = commands::import_files(
        studio,
        ImportFilesRequest {
            paths: vec![sample(AWB)],
        },
    )
    .expect("import");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    resp.imported
        .iter()
        .map(|i| i.trajectory_id.clone())
        .collect()
}

/// Waits for the job's last progress event (state not `running`),
/// returning every progress event of the job seen.
fn wait_end(rx: &Receiver<StudioEvent>, job: &str) -> (Vec<RunJobView>, RunJobView) {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(StudioEvent::RunJobProgress { job: v }) if v.job_id == job => {
                seen.push(v.clone());
                if v.state != RunJobState::Running {
                    return (seen, v);
                }
            }
            Ok(_) => {}
            Err(e) => panic!("no end of job {job}: {e}"),
        }
    }
}

fn copy() -> EngineSettings {
    EngineSettings::Baseline {
        name: "copy".into(),
    }
}

fn start(
    studio: &Studio,
    ids: &[String],
    engine: EngineSettings,
    concurrency: u32,
    context: ContextMode,
) -> RunJobView {
    commands::start_run(
        studio,
        StartRunRequest {
            name: None,
            engine: Some(engine),
            input: RunInput::Trajectories {
                trajectory_ids: ids.to_vec(),
            },
            concurrency,
            context,
        },
    )
    .expect("start_run")
}

fn run_id(view: &RunJobView) -> RunId {
    RunId(view.run_id.parse().expect("run id"))
}

/// The observation text of a state in the workspace: real.
fn real_text(studio: &Studio, key: TrajectoryKey, node: worldloom_core::NodeId) -> Option<String> {
    let ws = studio.lock().expect("lock");
    let st = ws.load_trajectory(key).expect("trajectory");
    st.trajectory
        .node(node)
        .and_then(|n| n.real.as_ref())
        .map(|o| o.text.trim().to_owned())
}

/// The row's stored prediction.
fn prediction_of(
    studio: &Studio,
    row: &worldloom_store::StoredRunRow,
) -> worldloom_core::Prediction {
    let ws = studio.lock().expect("lock");
    let st = ws.load_trajectory(row.trajectory).expect("trajectory");
    st.trajectory
        .node(row.node)
        .and_then(|n| n.predictions.iter().find(|p| p.id == row.prediction))
        .cloned()
        .expect("prediction")
}

fn parent_of(studio: &Studio, row: &worldloom_store::StoredRunRow) -> worldloom_core::NodeId {
    let ws = studio.lock().expect("lock");
    let st = ws.load_trajectory(row.trajectory).expect("trajectory");
    let t = &st.trajectory;
    let e = t.node(row.node).and_then(|n| n.parent_edge).expect("edge");
    t.edge(e).expect("edge").from
}

#[test]
fn a_copy_run_over_the_sample_predicts_every_turn_and_shows_in_the_runs() {
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let ids = import_sample(&studio);
    let job = start(&studio, &ids, copy(), 3, ContextMode::TeacherForced);
    assert_eq!(job.kind, RunJobKind::Run);
    assert_eq!(
        job.total, 17,
        "every row of the sample is a turn to predict"
    );
    assert_eq!(job.already_done, 0);
    let (_, end) = wait_end(&rx, &job.job_id);
    assert_eq!(end.state, RunJobState::Finished, "{end:?}");
    // The first turn of each of the 7 trajectories has nothing to copy: its
    // initial state lives only inside the prompt (as `worldloom eval
    // --engine copy` writes an `error` row).
    assert_eq!((end.done, end.total, end.failed), (17, 17, 7));
    assert!(end.rows_per_sec.is_some_and(|r| r > 0.0));
    assert_eq!(end.eta_s, None);

    // The run is listed like an imported one, on the sample's trajectories.
    let runs = commands::list_runs(&studio, EmptyRequest::default()).expect("runs");
    let run = runs
        .runs
        .iter()
        .find(|r| r.run_id == end.run_id)
        .expect("listed");
    assert_eq!(run.engine, "copy");
    assert_eq!(run.mode, ContextMode::TeacherForced);
    assert_eq!(run.row_count, 17);
    assert!(
        run.name
            .starts_with("copy · teacher-forced · 7 trajectories"),
        "{}",
        run.name
    );
    let rows = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows");
    assert_eq!(rows.len(), 17);
    let keys: BTreeSet<i64> = ids.iter().map(|i| i.parse().expect("id")).collect();
    let mut states = BTreeSet::new();
    for row in &rows {
        assert!(keys.contains(&row.trajectory.0), "attached to the sample");
        assert!(
            states.insert((row.trajectory.0, row.node.0)),
            "one row per state"
        );
        let p = prediction_of(&studio, row);
        assert_eq!(p.engine, "copy");
        if row.turn == 1 {
            assert_eq!(row.status, "error");
            let error = row.error.as_deref().unwrap_or("");
            assert!(error.contains("copy baseline"), "{error}");
            continue;
        }
        // Teacher-forced copy: each prediction is the state the action was
        // taken from, as recorded.
        let from = parent_of(&studio, row);
        let expected = real_text(&studio, row.trajectory, from).expect("the state acted on");
        assert_eq!(row.status, "ok", "row {} turn {}", row.ext_id, row.turn);
        assert_eq!(p.context, ContextMode::TeacherForced);
        assert_eq!(
            p.observation.as_deref().map(str::trim),
            Some(expected.as_str())
        );
        assert!(
            row.metrics.text_f1.is_some(),
            "scored against the real state"
        );
    }
    // The dashboard reads it.
    let dash = commands::get_run_dashboard(
        &studio,
        RunRequest {
            run_id: end.run_id.clone(),
        },
    )
    .expect("dashboard");
    assert_eq!(dash.run.row_count, 17);
    // One undo removes the whole run, rows and predictions.
    commands::undo(&studio, EmptyRequest::default()).expect("undo");
    let runs = commands::list_runs(&studio, EmptyRequest::default()).expect("runs");
    assert!(runs.runs.iter().all(|r| r.run_id != end.run_id));
}

#[test]
fn a_free_running_copy_run_keeps_copying_its_own_first_prediction() {
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let resp = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![sample(common::WEB)],
        },
    )
    .expect("import");
    let ids: Vec<String> = resp
        .imported
        .iter()
        .map(|i| i.trajectory_id.clone())
        .collect();
    assert_eq!(ids.len(), 1);
    let job = start(&studio, &ids, copy(), 2, ContextMode::FreeRunning);
    assert_eq!(
        job.total, 5,
        "six steps, five of them with a recorded state after"
    );
    let (_, end) = wait_end(&rx, &job.job_id);
    assert_eq!(
        (end.state, end.failed),
        (RunJobState::Finished, 0),
        "{end:?}"
    );
    let rows = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows");
    assert_eq!(
        rows.iter().map(|r| r.turn).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    let key = rows[0].trajectory;
    let root = studio
        .lock()
        .expect("lock")
        .load_trajectory(key)
        .expect("trajectory")
        .trajectory
        .root();
    let first = real_text(&studio, key, root).expect("initial state");
    for row in &rows {
        // The history is the run's own predictions: copying them, every
        // turn predicts the first state again.
        let p = prediction_of(&studio, row);
        assert_eq!(p.context, ContextMode::FreeRunning);
        assert_eq!(row.status, "ok");
        assert_eq!(
            p.observation.as_deref().map(str::trim),
            Some(first.as_str()),
            "turn {}",
            row.turn
        );
    }
    // Teacher-forced, the same engine copies each recorded state instead.
    let job = start(&studio, &ids, copy(), 2, ContextMode::TeacherForced);
    let (_, end) = wait_end(&rx, &job.job_id);
    let rows = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows");
    let differing = rows
        .iter()
        .filter(|r| {
            prediction_of(&studio, r)
                .observation
                .as_deref()
                .map(str::trim)
                != Some(first.as_str())
        })
        .count();
    assert!(
        differing >= 3,
        "teacher-forced copies follow the recorded states ({differing})"
    );
    let runs = commands::list_runs(&studio, EmptyRequest::default()).expect("runs");
    assert_eq!(
        runs.runs.iter().map(|r| r.mode).collect::<Vec<_>>(),
        [ContextMode::FreeRunning, ContextMode::TeacherForced]
    );
}

/// An OpenAI-compatible endpoint answering every chat after `delay`, as a
/// stream: a judge verdict when the system prompt is a judge's, else an
/// observation block. Counts the requests.
fn endpoint(delay: Duration) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    use axum::routing::post;
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    let (addr, _server) = serve(axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: String| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let judging = body.contains("# Real observation");
                let content = if judging {
                    r#"<final_evaluation>{"strengths": ["same layout"], "weaknesses": ["stale"], "scores": {"format": 5, "factuality": 4, "consistency": 4, "realism": 5, "quality": 4}}</final_evaluation>"#.to_owned()
                } else {
                    "<predicted_observation>\nthe endpoint's guess\n</predicted_observation>".to_owned()
                };
                let chunk = serde_json::json!({
                    "choices": [{"index": 0, "delta": {"content": content}}]
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(axum::body::Body::from(format!(
                        "data: {chunk}\n\ndata: [DONE]\n\n"
                    )))
                    .expect("response")
            }
        }),
    ));
    (addr, count)
}

fn openai(addr: std::net::SocketAddr, model: &str) -> EngineSettings {
    EngineSettings::Openai {
        base_url: format!("http://{addr}/v1"),
        model: model.into(),
        api_key_env: None,
        step_deadline_s: None,
        key_source: None,
        keyring_account: None,
    }
}

#[test]
fn cancel_keeps_the_rows_done_and_resume_does_only_the_missing_ones() {
    let (addr, requests) = endpoint(Duration::from_millis(150));
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let ids = import_sample(&studio);
    let job = start(
        &studio,
        &ids,
        openai(addr, "slow"),
        1,
        ContextMode::TeacherForced,
    );
    // Cancel once a few rows are in.
    let answer = cancel_once(&studio, &rx, &job.job_id, |v| v.done >= 3);
    assert_eq!(answer.job_id, job.job_id);
    let (_, end) = wait_end(&rx, &job.job_id);
    assert_eq!(end.state, RunJobState::Cancelled, "{end:?}");
    assert!(end.done >= 3 && end.done < 17, "{end:?}");
    let run = run_id(&end);
    let kept = studio.lock().expect("lock").run_rows(run).expect("rows");
    assert_eq!(
        kept.len() as u32,
        end.done,
        "every row done is stored, nothing else"
    );
    // No prediction is made once the job has ended. A request the cancelled
    // prediction had already sent may reach the mock endpoint a little after
    // the end on a loaded machine: let it arrive before counting.
    std::thread::sleep(Duration::from_millis(400));
    let asked = requests.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(requests.load(Ordering::SeqCst), asked);

    // The run can be resumed.
    let jobs = commands::list_run_jobs(&studio, EmptyRequest::default()).expect("jobs");
    assert_eq!(jobs.jobs[0].job_id, job.job_id);
    assert_eq!(jobs.jobs[0].state, RunJobState::Cancelled);
    assert_eq!(
        jobs.resumable,
        vec![ResumableRun {
            run_id: end.run_id.clone(),
            name: jobs.resumable[0].name.clone(),
            done: end.done,
            total: 17,
        }]
    );
    let before = requests.load(Ordering::SeqCst);
    let resumed = commands::resume_run(
        &studio,
        ResumeRunRequest {
            run_id: end.run_id.clone(),
            concurrency: Some(4),
        },
    )
    .expect("resume");
    assert_eq!(resumed.already_done, end.done);
    assert_eq!(resumed.total, 17);
    let (_, done) = wait_end(&rx, &resumed.job_id);
    assert_eq!(done.state, RunJobState::Finished, "{done:?}");
    assert_eq!(done.done, 17);
    assert_eq!(
        requests.load(Ordering::SeqCst) - before,
        (17 - end.done) as usize,
        "only the missing rows were predicted"
    );
    let rows = studio.lock().expect("lock").run_rows(run).expect("rows");
    assert_eq!(rows.len(), 17);
    let states: BTreeSet<(i64, u32)> = rows.iter().map(|r| (r.trajectory.0, r.node.0)).collect();
    assert_eq!(states.len(), 17, "no state predicted twice");
    // The rows kept from before the cancel are the same rows.
    for k in &kept {
        assert!(
            rows.iter()
                .any(|r| r.id == k.id && r.prediction == k.prediction)
        );
    }
    for row in &rows {
        assert_eq!(row.status, "ok");
        let p = prediction_of(&studio, row);
        assert_eq!(p.observation.as_deref(), Some("the endpoint's guess"));
        assert_eq!(p.engine, "openai:slow");
    }
    let jobs = commands::list_run_jobs(&studio, EmptyRequest::default()).expect("jobs");
    assert!(jobs.resumable.is_empty());
    // An imported run has no plan to resume.
    let err = commands::resume_run(
        &studio,
        ResumeRunRequest {
            run_id: "999".into(),
            concurrency: None,
        },
    )
    .expect_err("unknown run");
    assert_eq!(err.code, ErrorCode::NotFound);
}

#[test]
fn a_judge_endpoint_grades_the_rows_and_a_second_start_judges_nothing_again() {
    let (addr, requests) = endpoint(Duration::from_millis(5));
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let ids = import_sample(&studio);
    let job = start(&studio, &ids, copy(), 4, ContextMode::TeacherForced);
    let (_, end) = wait_end(&rx, &job.job_id);
    assert_eq!(end.state, RunJobState::Finished);
    // Only an endpoint can judge.
    let err = commands::start_judge(
        &studio,
        StartJudgeRequest {
            run_id: end.run_id.clone(),
            judge: copy(),
            concurrency: 2,
        },
    )
    .expect_err("copy is no judge");
    assert_eq!(err.code, ErrorCode::BadRequest);
    let judging = commands::start_judge(
        &studio,
        StartJudgeRequest {
            run_id: end.run_id.clone(),
            judge: openai(addr, "judge"),
            concurrency: 3,
        },
    )
    .expect("start_judge");
    assert_eq!(judging.kind, RunJobKind::Judge);
    assert_eq!((judging.total, judging.already_done), (17, 0));
    let (_, judged) = wait_end(&rx, &judging.job_id);
    assert_eq!(judged.state, RunJobState::Finished, "{judged:?}");
    // The 7 first-turn rows have no generation: failed without a call.
    assert_eq!((judged.done, judged.failed), (17, 7));
    assert_eq!(requests.load(Ordering::SeqCst), 10);
    let rows = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows");
    for row in &rows {
        let v = row.judge.as_ref().expect("judged");
        if row.status == "error" {
            assert!(v.failed);
            assert_eq!(v.error.as_deref(), Some("No model generation"));
            continue;
        }
        assert!(!v.failed);
        assert_eq!(
            v.scores,
            [Some(5.0), Some(4.0), Some(4.0), Some(5.0), Some(4.0)]
        );
        assert!((v.total_score.expect("total") - 4.4).abs() < 1e-9);
        assert_eq!(v.strengths.as_deref(), Some("same layout"));
        // The turn view reads the judge's fields on the prediction.
        let p = prediction_of(&studio, row);
        assert_eq!(p.extra.get("format"), Some(&serde_json::json!(5.0)));
        assert_eq!(p.extra.get("failed"), Some(&serde_json::json!(0.0)));
    }
    let runs = commands::list_runs(&studio, EmptyRequest::default()).expect("runs");
    let run = runs
        .runs
        .iter()
        .find(|r| r.run_id == end.run_id)
        .expect("listed");
    assert_eq!(run.judged_count, 17);
    // (4.4 − 1) / 4 × 100 = 85.
    assert!(
        (run.overall_score.expect("score") - 85.0).abs() < 1e-6,
        "{run:?}"
    );
    // Judging again has nothing left to do.
    let again = commands::start_judge(
        &studio,
        StartJudgeRequest {
            run_id: end.run_id.clone(),
            judge: openai(addr, "judge"),
            concurrency: 3,
        },
    )
    .expect("start_judge");
    assert_eq!(again.already_done, 17);
    let (_, again) = wait_end(&rx, &again.job_id);
    assert_eq!(again.state, RunJobState::Finished);
    assert_eq!(requests.load(Ordering::SeqCst), 10, "no row judged twice");
}

#[test]
fn bad_requests_are_refused_before_anything_is_created() {
    let (_dir, studio) = studio();
    let ids = import_sample(&studio);
    let refuse = |req: StartRunRequest| commands::start_run(&studio, req).expect_err("refused");
    let base = StartRunRequest {
        name: None,
        engine: Some(copy()),
        input: RunInput::Trajectories {
            trajectory_ids: ids.clone(),
        },
        concurrency: 0,
        context: ContextMode::TeacherForced,
    };
    let e = refuse(base.clone());
    assert!(
        e.message.contains("concurrency: 0 is not between 1 and 64"),
        "{}",
        e.message
    );
    let e = refuse(StartRunRequest {
        concurrency: 1,
        input: RunInput::Trajectories {
            trajectory_ids: vec![],
        },
        ..base.clone()
    });
    assert!(e.message.contains("input.trajectory_ids"), "{}", e.message);
    let e = refuse(StartRunRequest {
        concurrency: 1,
        input: RunInput::Dataset {
            path: "/no/such/file.jsonl".into(),
        },
        ..base.clone()
    });
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(e.message.contains("/no/such/file.jsonl"), "{}", e.message);
    let e = refuse(StartRunRequest {
        concurrency: 1,
        engine: Some(EngineSettings::Baseline {
            name: "oracle".into(),
        }),
        ..base
    });
    assert_eq!(e.code, ErrorCode::Unsupported);
    let runs = commands::list_runs(&studio, EmptyRequest::default()).expect("runs");
    assert!(runs.runs.is_empty(), "nothing created");
}

#[test]
fn a_dataset_file_is_imported_once_and_run() {
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let job = commands::start_run(
        &studio,
        StartRunRequest {
            name: Some("sample by copy".into()),
            engine: None,
            input: RunInput::Dataset { path: sample(AWB) },
            concurrency: 2,
            context: ContextMode::TeacherForced,
        },
    )
    .expect("start_run");
    assert_eq!(job.run_name, "sample by copy");
    let (_, end) = wait_end(&rx, &job.job_id);
    assert_eq!((end.state, end.done), (RunJobState::Finished, 17));
    // The same file again attaches to the same trajectories.
    let ids = import_sample(&studio);
    let rows = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows");
    let keys: BTreeSet<String> = rows.iter().map(|r| r.trajectory.0.to_string()).collect();
    assert_eq!(keys, ids.into_iter().collect());
}

#[test]
fn a_run_left_unfinished_is_resumable_from_a_new_studio_on_the_workspace() {
    let (addr, requests) = endpoint(Duration::from_millis(100));
    let (dir, studio) = studio();
    let rx = events(&studio);
    let ids = import_sample(&studio);
    let job = start(
        &studio,
        &ids,
        openai(addr, "slow"),
        2,
        ContextMode::TeacherForced,
    );
    cancel_once(&studio, &rx, &job.job_id, |v| v.done >= 2);
    let (_, end) = wait_end(&rx, &job.job_id);
    drop(studio);
    // Another process opens the workspace: no job of its own, the run to
    // resume from the plan saved in the workspace.
    let again = Studio::open(&dir.path().join("ws.worldloom")).expect("reopen");
    let rx = events(&again);
    let jobs = commands::list_run_jobs(&again, EmptyRequest::default()).expect("jobs");
    assert!(jobs.jobs.is_empty());
    assert_eq!(jobs.resumable.len(), 1);
    assert_eq!(
        (jobs.resumable[0].done, jobs.resumable[0].total),
        (end.done, 17)
    );
    let before = requests.load(Ordering::SeqCst);
    let resumed = commands::resume_run(
        &again,
        ResumeRunRequest {
            run_id: end.run_id.clone(),
            concurrency: None,
        },
    )
    .expect("resume");
    assert_eq!(resumed.engine, "openai:slow");
    let (_, done) = wait_end(&rx, &resumed.job_id);
    assert_eq!(
        (done.state, done.done, done.already_done),
        (RunJobState::Finished, 17, end.done)
    );
    assert_eq!(
        requests.load(Ordering::SeqCst) - before,
        (17 - end.done) as usize
    );
    // Resuming a complete run starts and ends at once, asking nothing.
    let idle = commands::resume_run(
        &again,
        ResumeRunRequest {
            run_id: end.run_id.clone(),
            concurrency: None,
        },
    )
    .expect("resume");
    assert_eq!((idle.done, idle.total, idle.already_done), (17, 17, 17));
    let (_, idle_end) = wait_end(&rx, &idle.job_id);
    assert_eq!(idle_end.state, RunJobState::Finished);
    assert_eq!(
        requests.load(Ordering::SeqCst) - before,
        (17 - end.done) as usize
    );
}

#[test]
fn a_studio_turn_of_an_agentworldbench_row_is_prompted_with_the_chat_eval_sends() {
    let (_dir, studio) = studio();
    let ids = import_sample(&studio);
    let rows: Vec<worldloom_eval::bench::BenchRow> = std::fs::read_to_string(sample(AWB))
        .expect("sample")
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| worldloom_eval::bench::BenchRow {
            fields: serde_json::from_str(l).expect("row"),
            source: sample(AWB).into(),
            line: i + 1,
        })
        .collect();
    let mut compared = 0;
    for id in &ids {
        let key = TrajectoryKey(id.parse().expect("id"));
        let st = studio
            .lock()
            .expect("lock")
            .load_trajectory(key)
            .expect("trajectory");
        let path = st.trajectory.main_path();
        for (j, edge) in path.edges.iter().enumerate() {
            // The file row this turn was read from.
            let line = st
                .trajectory
                .edge(*edge)
                .and_then(|e| e.awb_row.as_ref())
                .and_then(|r| r.row)
                .expect("an AgentWorldBench row");
            let ours = commands::preview_prompt(
                &studio,
                PreviewPromptRequest {
                    trajectory_id: id.clone(),
                    node_id: path.nodes[j + 1].0,
                    context: ContextMode::TeacherForced,
                    perturbation: None,
                },
            )
            .expect("prompt")
            .messages;
            assert_eq!(ours, rows[line].messages().expect("messages"), "row {line}");
            compared += 1;
        }
    }
    assert_eq!(compared, 17);
}

#[test]
fn a_cancelled_judge_keeps_its_verdicts_and_judging_again_grades_only_the_rest() {
    let (addr, requests) = endpoint(Duration::from_millis(150));
    let (_dir, studio) = studio();
    let rx = events(&studio);
    let ids = import_sample(&studio);
    let job = start(&studio, &ids, copy(), 4, ContextMode::TeacherForced);
    let (_, end) = wait_end(&rx, &job.job_id);
    let judge = || StartJudgeRequest {
        run_id: end.run_id.clone(),
        judge: openai(addr, "judge"),
        concurrency: 1,
    };
    let first = commands::start_judge(&studio, judge()).expect("judge");
    // The 7 rows without a generation fail at once; wait for 2 graded more.
    cancel_once(&studio, &rx, &first.job_id, |v| v.done >= v.failed + 2);
    let (_, cut) = wait_end(&rx, &first.job_id);
    assert_eq!(cut.state, RunJobState::Cancelled, "{cut:?}");
    let judged = |studio: &Studio| {
        studio
            .lock()
            .expect("lock")
            .run_rows(run_id(&end))
            .expect("rows")
            .iter()
            .filter(|r| r.judge.is_some())
            .count() as u32
    };
    assert_eq!(
        judged(&studio),
        cut.done,
        "every verdict counted is stored, no other"
    );
    assert!(cut.done < 17);
    // The rows left that have a generation to send.
    let to_call = studio
        .lock()
        .expect("lock")
        .run_rows(run_id(&end))
        .expect("rows")
        .iter()
        .filter(|r| r.judge.is_none() && r.status != "error")
        .count();
    assert!(to_call > 0);
    let asked = requests.load(Ordering::SeqCst);
    let second = commands::start_judge(&studio, judge()).expect("judge again");
    assert_eq!(second.already_done, cut.done);
    let (_, done) = wait_end(&rx, &second.job_id);
    assert_eq!((done.state, done.done), (RunJobState::Finished, 17));
    assert_eq!(judged(&studio), 17);
    // Only the rows left were sent to the judge.
    assert_eq!(requests.load(Ordering::SeqCst) - asked, to_call);
}
