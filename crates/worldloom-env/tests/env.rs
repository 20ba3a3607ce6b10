//! `serve-env` over HTTP and WebSocket with the `copy` baseline: the
//! OpenEnv shapes, errors that leave the server serving, sessions, and the
//! recorded episodes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use worldloom_engine::baseline::CopyEngine;
use worldloom_engine::{
    CancelToken, EngineError, EngineEvent, PredictRequest, PredictionStream, WorldModel,
};
use worldloom_env::{
    EPISODE_SOURCE_FORMAT, EnvConfig, Environment, LIVE_EPISODE_TAG, Recorder, RunningEnvServer,
    ServeEnvOptions, TaskSet, spawn,
};
use worldloom_store::Workspace;

mod common;

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl")
}

fn start(
    engine: Arc<dyn WorldModel>,
    workspace: Option<&Path>,
    options: ServeEnvOptions,
) -> RunningEnvServer {
    let env = environment(engine, workspace, EnvConfig::default());
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    spawn(Arc::new(env), options, addr).expect("server")
}

/// An environment over the sample's tasks, recording into `workspace` when given.
fn environment(
    engine: Arc<dyn WorldModel>,
    workspace: Option<&Path>,
    config: EnvConfig,
) -> Environment {
    let tasks = TaskSet::load(&sample()).expect("tasks");
    let recorder = workspace.map(|p| Recorder::open(p).expect("workspace"));
    Environment::new(tasks, engine, recorder, config)
}

/// A prediction stream that has already ended with `text` parsed as the
/// whole output (no thinking block opened).
fn answered(text: &str) -> PredictionStream {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut parser = worldloom_core::OutputParser::new(false);
    let _ = parser.push(text);
    let _ = parser.flush();
    let _ = tx.send(EngineEvent::Done {
        stats: worldloom_engine::GenerationStats::default(),
        output: parser.finish_output(),
    });
    PredictionStream {
        events: rx,
        cancel: CancelToken::new(),
    }
}

/// Web-domain reset parameters, with `seed` when given.
fn web_reset(seed: Option<u64>) -> worldloom_env::ResetParams {
    worldloom_env::ResetParams {
        domain: Some(worldloom_core::Domain::Web),
        seed,
        ..Default::default()
    }
}

/// `env.step` with `action`, which must succeed.
fn step_ok(
    env: &Environment,
    episode: &mut worldloom_env::Episode,
    action: &Value,
) -> worldloom_env::StepAnswer {
    env.step(episode, action, &CancelToken::new())
        .expect("step")
}

/// Asserts that one of trajectory `key`'s notes contains `needle`.
fn assert_noted(ws: &Workspace, key: worldloom_store::TrajectoryKey, needle: &str) {
    let notes = ws.notes(key).expect("notes");
    assert!(
        notes.iter().any(|n| n.text.contains(needle)),
        "{needle}: {notes:?}"
    );
}

/// Waits (10 s at most) until a `Hanging` model has been cancelled.
fn wait_until_cancelled(cancelled: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cancelled.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the prediction was not cancelled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn post(server: &RunningEnvServer, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", server.base_url()))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

async fn get(server: &RunningEnvServer, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{}{path}", server.base_url()))
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(server: &RunningEnvServer) -> Socket {
    let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
        .await
        .expect("ws connect");
    socket
}

async fn recv(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("answer in time")
        {
            Some(Ok(Message::Text(t))) => {
                return Some(serde_json::from_str(t.as_str()).expect("json"));
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            _ => return None,
        }
    }
}

async fn ask(socket: &mut Socket, message: Value) -> Value {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .expect("send");
    recv(socket).await.expect("an answer")
}

#[test]
fn http_episode_is_validated_predicted_and_recorded() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws_path = dir.path().join("episodes.worldloom");
    let server = start(
        Arc::new(CopyEngine),
        Some(&ws_path),
        ServeEnvOptions::default(),
    );
    runtime().block_on(async {
        let (status, health) = get(&server, "/health").await;
        assert_eq!((status, health), (200, json!({"status": "healthy"})));
        let (_, schema) = get(&server, "/schema").await;
        assert!(
            schema["action"].is_object()
                && schema["observation"].is_object()
                && schema["state"].is_object()
        );
        let (status, mcp) = post(&server, "/mcp", json!({})).await;
        assert_eq!(
            (
                status,
                mcp["jsonrpc"].as_str(),
                mcp["error"]["code"].as_i64()
            ),
            (200, Some("2.0"), Some(-32600))
        );
        let (_, tools) = post(
            &server,
            "/mcp",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
        assert_eq!(
            (tools["result"]["tools"].clone(), tools["id"].clone()),
            (json!([]), json!(1))
        );
        let (_, meta) = get(&server, "/metadata").await;
        assert_eq!(meta["name"], "worldloom");
        assert!(
            meta["description"]
                .as_str()
                .is_some_and(|d| d.contains("copy") && d.contains("7 task(s)")),
            "{meta}"
        );

        let (status, reset) = post(&server, "/reset", json!({"seed": 7, "domain": "web"})).await;
        assert_eq!(status, 200, "{reset}");
        assert_eq!(reset["done"], false);
        assert_eq!(reset["reward"], Value::Null);
        let obs = &reset["observation"];
        assert_eq!(obs["domain"], "web");
        assert_eq!(obs["representation"], "axtree");
        assert_eq!(obs["goal"], "Buy two stoneware mugs.");
        assert!(
            obs["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("RootWebArea 'Mugs")),
            "{obs}"
        );
        assert!(
            obs["action_space"]
                .as_str()
                .is_some_and(|a| a.contains("send_msg_to_user"))
        );
        let id = obs["episode_id"].as_str().expect("episode id").to_owned();
        let first = obs["text"].clone();

        // A malformed action: 422, the episode goes on.
        let (status, bad) = post(
            &server,
            "/step",
            json!({"episode_id": id, "action": {"action": "click('33'"}}),
        )
        .await;
        assert_eq!(status, 422, "{bad}");
        assert_eq!(bad["code"], "VALIDATION_ERROR");
        assert!(
            bad["detail"]
                .as_str()
                .is_some_and(|d| d.contains("not BrowserGym call syntax")),
            "{bad}"
        );
        let (status, missing) = post(
            &server,
            "/step",
            json!({"action": {"action": "click('33')"}}),
        )
        .await;
        assert_eq!(status, 422);
        assert!(
            missing["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("episode_id: required"))
        );

        let (status, step) = post(
            &server,
            "/step",
            json!({"episode_id": id, "action": {"action": "fill('33', '2')"}}),
        )
        .await;
        assert_eq!(status, 200, "{step}");
        assert_eq!(step["done"], false);
        assert_eq!(step["reward"], 0.0);
        assert_eq!(
            step["observation"]["text"], first,
            "the copy baseline predicts the state unchanged"
        );
        assert_eq!(step["observation"]["status"], "ok");
        assert_eq!(step["observation"]["turn"], 1);

        let (_, state) = get(&server, &format!("/state?episode_id={id}")).await;
        assert_eq!(state["step_count"], 1);
        assert_eq!(state["episode_id"], id.as_str());
        assert_eq!(state["seed"], 7);
        let (_, blank) = get(&server, "/state").await;
        assert_eq!(blank, json!({"episode_id": null, "step_count": 0}));

        let (status, end) = post(
            &server,
            "/step",
            json!({"episode_id": id, "action": {"action": "send_msg_to_user('bought')"}}),
        )
        .await;
        assert_eq!(status, 200, "{end}");
        assert_eq!(end["done"], true);
        assert_eq!(end["observation"]["done_reason"], "terminal_action");
        let (status, after) = post(
            &server,
            "/step",
            json!({"episode_id": id, "action": {"action": "click('21')"}}),
        )
        .await;
        assert_eq!(status, 409, "{after}");
        assert_eq!(after["code"], "SESSION_ERROR");

        let (_, metrics) = get(&server, "/metrics").await;
        assert_eq!(metrics["steps"], 2);
        assert_eq!(metrics["errors"]["invalid_actions"], 1);
        assert_eq!(
            metrics["active_sessions"], 0,
            "an ended HTTP episode frees its slot"
        );
    });
    server.stop();

    let ws = Workspace::open(&ws_path).expect("workspace");
    let rows = ws.list_trajectories().expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].source.format, EPISODE_SOURCE_FORMAT);
    assert_eq!(rows[0].goal.as_deref(), Some("Buy two stoneware mugs."));
    assert_eq!(rows[0].prediction_count, 1);
    let stored = ws.load_trajectory(rows[0].key).expect("load");
    let t = &stored.trajectory;
    let actions: Vec<&str> = t.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(actions, ["fill('33', '2')", "send_msg_to_user('bought')"]);
    let predicted = t.nodes[1].preferred_prediction().expect("prediction");
    assert_eq!(predicted.engine, "copy");
    assert_eq!(predicted.seed, Some(8), "episode seed + turn");
    assert!(predicted.total_ms.is_some());
    assert!(
        predicted
            .observation
            .as_deref()
            .is_some_and(|o| o.starts_with("RootWebArea 'Mugs"))
    );
    let tags = ws.tags().expect("tags");
    assert!(
        tags.iter()
            .any(|t| t.tag == LIVE_EPISODE_TAG && t.trajectory == rows[0].key),
        "{tags:?}"
    );
    assert_noted(&ws, rows[0].key, "ended: terminal_action after 2 step(s)");
}

#[test]
fn websocket_protocol_and_its_errors() {
    let server = start(Arc::new(CopyEngine), None, ServeEnvOptions::default());
    runtime().block_on(async {
        let mut s = connect(&server).await;
        let e = ask(&mut s, json!({"type": "step", "data": {"action": "ls"}})).await;
        assert_eq!((e["type"].as_str(), e["data"]["code"].as_str()), (Some("error"), Some("SESSION_ERROR")), "{e}");
        s.send(Message::Text("{not json".into())).await.expect("send");
        let e = recv(&mut s).await.expect("answer");
        assert_eq!(e["data"]["code"], "INVALID_JSON");
        let e = ask(&mut s, json!({"type": "dance"})).await;
        assert_eq!(e["data"], json!({"message": "Unknown message type: dance", "code": "UNKNOWN_TYPE"}));
        let e = ask(&mut s, json!({"type": "reset", "data": {"domain": "moon"}})).await;
        assert_eq!(e["data"]["code"], "VALIDATION_ERROR");
        let e = ask(&mut s, json!({"type": "state", "extra": 1})).await;
        assert_eq!(e["data"]["code"], "VALIDATION_ERROR");

        let r = ask(&mut s, json!({"type": "reset", "data": {"domain": "android", "seed": 3}})).await;
        assert_eq!(r["type"], "observation", "{r}");
        assert_eq!(r["data"]["observation"]["representation"], "android-xml");
        let e = ask(&mut s, json!({"type": "step", "data": {"action": "tap the switch"}})).await;
        assert_eq!(e["data"]["code"], "VALIDATION_ERROR");
        assert!(e["data"]["message"].as_str().is_some_and(|m| m.contains("not JSON")), "{e}");
        let o = ask(&mut s, json!({"type": "step", "data": {"action": {"action_type": "click", "x": 976, "y": 450}}})).await;
        assert_eq!(o["type"], "observation", "{o}");
        assert_eq!(o["data"]["done"], false);
        assert_eq!(o["data"]["observation"]["turn"], 1);
        let st = ask(&mut s, json!({"type": "state"})).await;
        assert_eq!((st["type"].as_str(), st["data"]["step_count"].as_u64()), (Some("state"), Some(1)));
        s.send(Message::Text(json!({"type": "close"}).to_string().into())).await.expect("close");
        assert!(recv(&mut s).await.is_none(), "the server closes after `close`");
    });
}

#[test]
fn more_sessions_than_allowed_are_refused_and_slots_come_back() {
    let options = ServeEnvOptions {
        max_sessions: 1,
        ..ServeEnvOptions::default()
    };
    let server = start(Arc::new(CopyEngine), None, options);
    runtime().block_on(async {
        let mut first = connect(&server).await;
        let r = ask(&mut first, json!({"type": "reset", "data": {}})).await;
        assert_eq!(r["type"], "observation");
        let mut second = connect(&server).await;
        let e = recv(&mut second).await.expect("a refusal");
        assert_eq!(e["data"]["code"], "CAPACITY_REACHED", "{e}");
        assert_eq!(
            (
                e["data"]["active_sessions"].as_u64(),
                e["data"]["max_sessions"].as_u64()
            ),
            (Some(1), Some(1))
        );
        assert!(recv(&mut second).await.is_none(), "then it closes");
        let (status, body) = post(&server, "/reset", json!({})).await;
        assert_eq!(status, 503, "{body}");
        drop(first);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, m) = get(&server, "/metrics").await;
            if m["active_sessions"] == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the slot never came back: {m}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut third = connect(&server).await;
        let r = ask(&mut third, json!({"type": "reset", "data": {}})).await;
        assert_eq!(r["type"], "observation");
    });
}

/// An endpoint that is down.
struct Failing;
impl WorldModel for Failing {
    fn name(&self) -> String {
        "failing".into()
    }
    fn predict(&self, _: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let _ = tx.send(EngineEvent::Error {
            error: EngineError::Remote("connection refused (127.0.0.1:9)".into()),
        });
        Ok(PredictionStream {
            events: rx,
            cancel: CancelToken::new(),
        })
    }
}

/// A model that never answers until cancelled.
struct Hanging(Arc<AtomicBool>);
impl WorldModel for Hanging {
    fn name(&self) -> String {
        "hanging".into()
    }
    fn predict(&self, _: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel::<EngineEvent>();
        let cancel = CancelToken::new();
        let (seen, flag) = (cancel.clone(), self.0.clone());
        std::thread::spawn(move || {
            while !seen.is_cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            flag.store(true, Ordering::SeqCst);
            drop(tx);
        });
        Ok(PredictionStream { events: rx, cancel })
    }
}

#[test]
fn a_failing_model_gets_an_error_and_the_episode_stays() {
    let server = start(Arc::new(Failing), None, ServeEnvOptions::default());
    runtime().block_on(async {
        let mut s = connect(&server).await;
        ask(&mut s, json!({"type": "reset", "data": {"domain": "web"}})).await;
        let e = ask(
            &mut s,
            json!({"type": "step", "data": {"action": "click('21')"}}),
        )
        .await;
        assert_eq!(e["data"]["code"], "EXECUTION_ERROR", "{e}");
        assert!(
            e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("connection refused")),
            "{e}"
        );
        let st = ask(&mut s, json!({"type": "state"})).await;
        assert_eq!(st["data"]["step_count"], 0);
        assert_eq!(st["data"]["done"], false);
        let (status, _) = get(&server, "/health").await;
        assert_eq!(status, 200);
        let (_, m) = get(&server, "/metrics").await;
        assert_eq!(m["errors"]["engine"], 1);
    });
}

#[test]
fn a_socket_closed_mid_step_cancels_the_prediction_and_is_recorded() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws_path = dir.path().join("e.worldloom");
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = start(
        Arc::new(Hanging(cancelled.clone())),
        Some(&ws_path),
        ServeEnvOptions::default(),
    );
    runtime().block_on(async {
        let mut s = connect(&server).await;
        ask(&mut s, json!({"type": "reset", "data": {"domain": "web"}})).await;
        s.send(Message::Text(
            json!({"type": "step", "data": {"action": "click('21')"}})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(s);
        wait_until_cancelled(&cancelled);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, m) = get(&server, "/metrics").await;
            if m["active_sessions"] == 0 && m["episodes_finished"] == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "{m}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut again = connect(&server).await;
        let r = ask(&mut again, json!({"type": "reset", "data": {}})).await;
        assert_eq!(r["type"], "observation", "the server keeps serving");
    });
    server.stop();
    let ws = Workspace::open(&ws_path).expect("ws");
    let rows = ws.list_trajectories().expect("rows");
    assert_noted(&ws, rows[0].key, "ended: closed after 0 step(s)");
}

/// Over HTTP too: a client that disconnects during `POST /step` cancels
/// the prediction, the episode stays at its state and can step again.
#[test]
fn an_http_client_gone_mid_step_cancels_the_prediction() {
    use std::io::Write;
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = start(
        Arc::new(Hanging(cancelled.clone())),
        None,
        ServeEnvOptions::default(),
    );
    let id = runtime().block_on(async {
        let (_, reset) = post(&server, "/reset", json!({"domain": "web"})).await;
        reset["observation"]["episode_id"]
            .as_str()
            .expect("id")
            .to_owned()
    });
    let body = json!({"episode_id": id, "action": {"action": "click('21')"}}).to_string();
    let mut s = std::net::TcpStream::connect(server.addr).expect("connect");
    write!(
        s,
        "POST /step HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    )
    .expect("send");
    std::thread::sleep(Duration::from_millis(200));
    drop(s);
    wait_until_cancelled(&cancelled);
    runtime().block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, state) = get(&server, &format!("/state?episode_id={id}")).await;
            assert_eq!(status, 200, "{state}");
            if state["step_count"] == 0 && state["done"] == false {
                break;
            }
            assert!(Instant::now() < deadline, "{state}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

#[test]
fn idle_sessions_are_closed_and_the_door_holds() {
    let options = ServeEnvOptions {
        idle_timeout: Duration::from_millis(300),
        ..ServeEnvOptions::default()
    };
    let server = start(Arc::new(CopyEngine), None, options);
    runtime().block_on(async {
        let mut s = connect(&server).await;
        let e = recv(&mut s).await.expect("an idle notice");
        assert_eq!(e["data"]["code"], "SESSION_ERROR");
        assert!(
            e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("idle timeout")),
            "{e}"
        );
        assert!(recv(&mut s).await.is_none());

        let client = reqwest::Client::new();
        let r = client
            .get(format!("{}/health", server.base_url()))
            .header("Host", "evil.example:80")
            .send()
            .await
            .expect("req");
        assert_eq!(r.status().as_u16(), 403);
        let r = client
            .post(format!("{}/reset", server.base_url()))
            .body("{}")
            .send()
            .await
            .expect("req");
        assert_eq!(r.status().as_u16(), 415);
    });
    let env = Arc::new(environment(
        Arc::new(CopyEngine),
        None,
        EnvConfig::default(),
    ));
    let locked = ServeEnvOptions {
        token: Some("s3cret".into()),
        ..ServeEnvOptions::default()
    };
    let server = spawn(env.clone(), locked, "127.0.0.1:0".parse().expect("addr")).expect("server");
    runtime().block_on(async {
        let client = reqwest::Client::new();
        let r = client
            .post(format!("{}/reset", server.base_url()))
            .json(&json!({}))
            .send()
            .await
            .expect("req");
        assert_eq!(r.status().as_u16(), 401);
        let r = client
            .post(format!("{}/reset", server.base_url()))
            .bearer_auth("s3cret")
            .json(&json!({}))
            .send()
            .await
            .expect("req");
        assert_eq!(r.status().as_u16(), 200);
    });
    let open = spawn(
        env,
        ServeEnvOptions::default(),
        "0.0.0.0:0".parse().expect("addr"),
    );
    assert!(
        open.err()
            .is_some_and(|e| e.to_string().contains("a token is required"))
    );
}

#[test]
fn official_openenv_client() {
    let Some(python) =
        common::openenv::openenv_python("official_openenv_client", "pip install openenv-core")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let ws_path = dir.path().join("episodes.worldloom");
    let server = start(
        Arc::new(CopyEngine),
        Some(&ws_path),
        ServeEnvOptions {
            max_sessions: 2,
            ..ServeEnvOptions::default()
        },
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openenv_client.py");
    let output = std::process::Command::new(&python)
        .args([script, &server.base_url(), "2"])
        .output()
        .expect("python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("openenv client: OK"), "{stdout}");
    server.stop();
    let ws = Workspace::open(&ws_path).expect("ws");
    let rows = ws.list_trajectories().expect("rows");
    assert_eq!(
        rows.len(),
        5,
        "one episode over /ws, one over HTTP, three in the capacity check"
    );
    // The terminal episode's first step was refused (the copy baseline had
    // no state to copy) and not recorded; its `exit` was.
    let edges: Vec<usize> = rows[..2]
        .iter()
        .map(|row| {
            ws.load_trajectory(row.key)
                .expect("load")
                .trajectory
                .edges
                .len()
        })
        .collect();
    assert_eq!(edges, [2, 1]);
}

/// The copy baseline predicts the observation of the state the action is
/// taken from (the use-case layer's one rule): the first state, then its own
/// earlier prediction; a task whose first state lives only inside its
/// prompt (a terminal task of the sample) has nothing to copy, so the step
/// is refused and the episode stays where it was.
#[test]
fn the_copy_baseline_copies_the_state_acted_on_or_refuses() {
    let env = environment(Arc::new(CopyEngine), None, EnvConfig::default());
    let web = web_reset(Some(4));
    let (mut episode, reset) = env.reset(&web).expect("reset");
    let first = reset.observation["text"].clone();
    assert!(first.as_str().is_some_and(|t| !t.is_empty()), "{first}");
    for turn in 1..=2 {
        let answer = env
            .step(
                &mut episode,
                &json!({"action": "click('21')"}),
                &CancelToken::new(),
            )
            .expect("step");
        assert_eq!(answer.observation["text"], first, "turn {turn}");
    }
    let terminal = worldloom_env::ResetParams {
        domain: Some(worldloom_core::Domain::Terminal),
        seed: Some(4),
        ..Default::default()
    };
    let (mut episode, reset) = env.reset(&terminal).expect("reset");
    assert_eq!(reset.observation["text"], "");
    let err = env
        .step(&mut episode, &json!({"action": "ls"}), &CancelToken::new())
        .expect_err("nothing to copy")
        .to_string();
    assert!(err.contains("copy baseline"), "{err}");
    assert_eq!(episode.step_count, 0);
}

/// A model whose output has no observation block.
struct Babbling;
impl WorldModel for Babbling {
    fn name(&self) -> String {
        "babbling".into()
    }
    fn predict(&self, _: PredictRequest) -> Result<PredictionStream, EngineError> {
        Ok(answered("the page probably changed"))
    }
}

#[test]
fn perturbations_turn_limit_and_unparseable_predictions() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws_path = dir.path().join("e.worldloom");
    let config = EnvConfig {
        max_turns: 2,
        perturbations: worldloom_env::Perturbations {
            instructions: vec!["The server answers with an error page.".into()],
            probability: 1.0,
        },
        ..EnvConfig::default()
    };
    let env = environment(Arc::new(CopyEngine), Some(&ws_path), config);
    let params = web_reset(Some(11));
    let (mut episode, _) = env.reset(&params).expect("reset");
    let step = json!({"action": "click('21')"});
    let first = step_ok(&env, &mut episode, &step);
    assert_eq!(
        first.observation["perturbation"],
        "The server answers with an error page."
    );
    assert!(!first.done);
    let second = step_ok(&env, &mut episode, &step);
    assert!(second.done);
    assert_eq!(second.observation["done_reason"], "turn_limit");
    let ws = Workspace::open(&ws_path).expect("ws");
    let key = ws.list_trajectories().expect("rows")[0].key;
    let recorded = ws.perturbations(key).expect("perturbations");
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert!(
        recorded
            .values()
            .all(|p| p == "The server answers with an error page.")
    );
    drop(ws);

    let env = environment(Arc::new(Babbling), None, EnvConfig::default());
    let (mut episode, _) = env.reset(&params).expect("reset");
    let answer = step_ok(&env, &mut episode, &step);
    assert!(answer.done);
    assert_eq!(answer.observation["done_reason"], "unparseable_prediction");
    assert_eq!(answer.observation["status"], "no_observation");
    assert!(
        answer.observation["error"]
            .as_str()
            .is_some_and(|e| e.contains("no_observation"))
    );
    assert_eq!(
        env.metrics.to_json(0, 1)["errors"]["unparseable_predictions"],
        1
    );
}

/// A judge that answers a fixed verdict, and keeps the chat it was sent.
struct Judge(std::sync::Mutex<Vec<worldloom_core::ChatMessage>>);
impl WorldModel for Judge {
    fn name(&self) -> String {
        "judge".into()
    }
    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        if let Ok(mut seen) = self.0.lock() {
            *seen = request.messages;
        }
        Ok(answered(
            r#"{"achieved": 1, "rationale": "the quantity field shows 2"}"#,
        ))
    }
}

#[test]
fn an_llm_judge_rewards_the_end_of_the_episode() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws_path = dir.path().join("e.worldloom");
    let judge = Arc::new(Judge(std::sync::Mutex::new(Vec::new())));
    let config = EnvConfig {
        reward: Arc::new(worldloom_env::LlmJudgeReward::new(
            judge.clone(),
            512,
            Duration::from_secs(10),
        )),
        ..EnvConfig::default()
    };
    let env = environment(Arc::new(CopyEngine), Some(&ws_path), config);
    let params = web_reset(None);
    let (mut episode, _) = env.reset(&params).expect("reset");
    let step = |a: &str| json!({ "action": a });
    let first = env
        .step(&mut episode, &step("fill('33', '2')"), &CancelToken::new())
        .expect("step");
    assert_eq!(first.reward, Some(0.0));
    let last = env
        .step(
            &mut episode,
            &step("send_msg_to_user('done')"),
            &CancelToken::new(),
        )
        .expect("step");
    assert_eq!((last.reward, last.done), (Some(1.0), true));
    assert!(
        last.observation["reward_rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("the quantity field shows 2 (judge judge;")),
        "{}",
        last.observation
    );
    let sent = judge.0.lock().expect("lock").clone();
    assert_eq!(sent.len(), 2);
    assert!(sent[1].content.contains("## Task\nBuy two stoneware mugs."));
    assert!(
        sent[1]
            .content
            .contains("## Step 2\nAction:\nsend_msg_to_user('done')")
    );
    let ws = Workspace::open(&ws_path).expect("ws");
    let key = ws.list_trajectories().expect("rows")[0].key;
    let notes = ws.notes(key).expect("notes");
    assert!(
        notes
            .iter()
            .any(|n| n.text.contains("reward 1 (llm-judge(judge))")
                && n.text.contains("rationale: the quantity field shows 2")),
        "{notes:?}"
    );
    // The judge's call is kept with the episode: the messages sent, its answer.
    let kept = notes
        .iter()
        .find_map(|n| n.text.strip_prefix(worldloom_env::JUDGE_NOTE_HEADER))
        .expect("the judge's call");
    let call: worldloom_env::JudgeCall = serde_json::from_str(kept.trim()).expect("JSON");
    assert_eq!(call.judge, "judge");
    assert_eq!(call.messages, sent, "the full chat sent");
    assert_eq!(
        call.answer.as_deref(),
        Some(r#"{"achieved": 1, "rationale": "the quantity field shows 2"}"#)
    );
    assert_eq!(call.verdict, Some(1.0));
    assert_eq!(
        call.rationale.as_deref(),
        Some("the quantity field shows 2")
    );
    assert_eq!(call.error, None);
}

#[test]
fn reaching_the_target_state_is_rewarded_and_ends_the_episode() {
    let web = TaskSet::load(&sample())
        .expect("tasks")
        .tasks()
        .iter()
        .find(|t| t.domain == worldloom_core::Domain::Web)
        .cloned()
        .expect("a web task");
    let mut reached = web.clone();
    reached.target = web.initial.clone();
    let mut elsewhere = web.clone();
    elsewhere.id = "elsewhere".into();
    elsewhere.target = Some(worldloom_core::Observation::new(
        worldloom_core::Representation::Axtree,
        "RootWebArea 'Checkout', focused\n\t[90] button 'Pay now', clickable",
    ));
    let env = Environment::new(
        TaskSet::new(vec![reached.clone(), elsewhere]),
        Arc::new(CopyEngine),
        None,
        EnvConfig {
            reward: Arc::new(worldloom_env::TargetStateReward { threshold: 0.9 }),
            ..EnvConfig::default()
        },
    );
    let step = json!({"action": "click('21')"});
    let reset = |id: &str| worldloom_env::ResetParams {
        task_id: Some(id.into()),
        ..Default::default()
    };
    // The copy baseline keeps the first state, which is this task's target.
    let (mut episode, _) = env.reset(&reset(&reached.id)).expect("reset");
    let answer = step_ok(&env, &mut episode, &step);
    assert_eq!((answer.reward, answer.done), (Some(1.0), true));
    assert_eq!(answer.observation["done_reason"], "target_reached");
    assert!(
        answer.observation["reward_rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("turn 1 reached the target state (exact 1.000")),
        "{}",
        answer.observation
    );
    let (mut episode, _) = env.reset(&reset("elsewhere")).expect("reset");
    let answer = step_ok(&env, &mut episode, &step);
    assert_eq!((answer.reward, answer.done), (Some(0.0), false));
    assert!(
        answer.observation["reward_rationale"]
            .as_str()
            .is_some_and(|r| r.contains("below the target: node F1")),
        "{}",
        answer.observation
    );
}

/// The copy baseline, keeping the chats it was sent and the current
/// observations they came with.
struct Capturing(std::sync::Mutex<Vec<(Vec<worldloom_core::ChatMessage>, Option<String>)>>);
impl WorldModel for Capturing {
    fn name(&self) -> String {
        "copy".into()
    }
    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((
                request.messages.clone(),
                request.current_observation.clone(),
            ));
        }
        CopyEngine.predict(request)
    }
}

/// A workspace made here: the web trajectory, branched at turn 1 (a new
/// action from turn 1's state) and tagged. Served, a reset starts at turn
/// 1's state with the trajectory's system prompt and goal, the prompt of
/// the first step carries the history (turn 1's action), and the recorded
/// episode holds that history and then its own step.
#[test]
fn a_tagged_branch_starts_at_its_fork_point() {
    use worldloom_core::{Action, Domain, EdgeId, ImportOptions, NodeId, import_path};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("curriculum.worldloom");
    let imported = import_path(&sample(), &ImportOptions::default()).expect("import");
    let web = imported
        .trajectories
        .iter()
        .find(|t| t.domain == Domain::Web)
        .expect("web")
        .clone();
    let turn1 = web.nodes[1].real.clone().expect("turn 1's state");
    let first_action = web.edges[0].action.raw.clone();
    {
        let mut ws = Workspace::open(&path).expect("ws");
        let key = ws.import_trajectory(&web, None).expect("import");
        // Another trajectory, untagged, is not served.
        ws.import_trajectory(&imported.trajectories[0], None)
            .expect("import");
        let (_, node) = ws
            .add_branch(
                key,
                EdgeId(1),
                Action::for_domain(Domain::Web, "click('99')"),
            )
            .expect("branch at turn 1");
        ws.set_tag(key, Some(node), "curriculum", true)
            .expect("tag");
    }
    let tasks = TaskSet::load_tagged(&path, Some("curriculum")).expect("tasks");
    assert_eq!(tasks.tasks().len(), 1);
    let task = &tasks.tasks()[0];
    assert_eq!(task.start_turn(), 1);
    assert!(
        task.initial
            .as_ref()
            .is_some_and(|o| o.text.starts_with("RootWebArea 'Mugs")),
        "the first state stays the trajectory's: {:?}",
        task.initial
    );
    let engine = Arc::new(Capturing(std::sync::Mutex::new(Vec::new())));
    let env = Environment::new(
        tasks,
        engine.clone(),
        Some(Recorder::open(&path).expect("record into the same workspace")),
        EnvConfig::default(),
    );
    let server = spawn(
        Arc::new(env),
        ServeEnvOptions::default(),
        "127.0.0.1:0".parse().expect("addr"),
    )
    .expect("server");
    let id = runtime().block_on(async {
        let (status, reset) = post(&server, "/reset", json!({"seed": 3})).await;
        assert_eq!(status, 200, "{reset}");
        let obs = &reset["observation"];
        assert_eq!(obs["text"], turn1.text.as_str(), "turn 1's state");
        assert_eq!(obs["representation"], turn1.representation.as_str());
        assert_eq!(
            (obs["turn"].as_u64(), obs["start_turn"].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(obs["goal"], "Buy two stoneware mugs.");
        assert_eq!(obs["system_prompt"].as_str(), web.system_prompt.as_deref());
        let id = obs["episode_id"].as_str().expect("id").to_owned();
        let (status, step) = post(
            &server,
            "/step",
            json!({"episode_id": id, "action": {"action": "click('21')"}}),
        )
        .await;
        assert_eq!(status, 200, "{step}");
        assert_eq!(step["observation"]["text"], turn1.text.as_str());
        assert_eq!(step["observation"]["turn"], 1);
        let (_, state) = get(&server, &format!("/state?episode_id={id}")).await;
        assert_eq!(
            (state["step_count"].as_u64(), state["start_turn"].as_u64()),
            (Some(1), Some(1)),
            "{state}"
        );
        id
    });
    server.stop();
    let sent = engine.0.lock().expect("lock").clone();
    assert_eq!(sent.len(), 1);
    // The current observation: the state the action is taken from (turn
    // 1's, where the episode started), as the history shows it.
    assert_eq!(sent[0].1.as_deref(), Some(turn1.text.as_str()));
    let sent: Vec<Vec<worldloom_core::ChatMessage>> =
        sent.into_iter().map(|(chat, _)| chat).collect();
    assert_eq!(
        sent[0][0].content.as_str(),
        web.system_prompt.as_deref().expect("a system prompt")
    );
    let chat: String = sent[0].iter().map(|m| m.content.as_str()).collect();
    assert!(
        chat.contains(&first_action),
        "the history is in the prompt: {chat}"
    );
    assert!(chat.contains("click('21')"), "{chat}");

    let ws = Workspace::open(&path).expect("ws");
    let row = ws
        .list_trajectories()
        .expect("rows")
        .into_iter()
        .find(|r| r.source.format == EPISODE_SOURCE_FORMAT)
        .expect("the recorded episode");
    assert_eq!(row.ext_id, id);
    let t = ws.load_trajectory(row.key).expect("load").trajectory;
    let actions: Vec<&str> = t.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(actions, [first_action.as_str(), "click('21')"]);
    assert_eq!(t.nodes[1].real.as_ref(), Some(&turn1));
    assert!(
        t.nodes[0]
            .real
            .as_ref()
            .is_some_and(|o| o.text.starts_with("RootWebArea 'Mugs")),
        "the first state, read from the first prompt, is the root's"
    );
    assert_eq!(t.edges[1].from, NodeId(1));
    assert!(t.nodes[2].preferred_prediction().is_some());
    assert_eq!(t.system_prompt, web.system_prompt);
}

/// Recording appends: many sessions stepping at once each get their turns
/// in order with their chosen predictions, and a turn the studio adds to a
/// live episode (another connection) does not misplace the next step.
#[test]
fn steps_are_appended_to_the_recording_while_the_studio_edits_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("e.worldloom");
    let env = Arc::new(environment(
        Arc::new(CopyEngine),
        Some(&path),
        EnvConfig::default(),
    ));
    let params = web_reset(None);
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let env = env.clone();
            let params = params.clone();
            std::thread::spawn(move || {
                let (mut episode, _) = env.reset(&params).expect("reset");
                for k in 0..12 {
                    let action = json!({"action": format!("click('{}')", i * 100 + k)});
                    env.step(&mut episode, &action, &CancelToken::new())
                        .expect("step");
                }
                episode.recorded.expect("recorded")
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let key = t.join().expect("thread");
        let ws = Workspace::open(&path).expect("ws");
        let stored = ws.load_trajectory(key).expect("load").trajectory;
        let main = stored.main_path();
        assert_eq!(main.edges.len(), 12);
        for (k, edge) in main.edges.iter().enumerate() {
            let e = stored.edge(*edge).expect("edge");
            assert_eq!(e.action.raw, format!("click('{}')", i * 100 + k));
            let node = stored.node(e.to).expect("node");
            assert!(node.preferred_prediction().is_some());
        }
    }

    let (mut episode, _) = env.reset(&params).expect("reset");
    let step = |a: &str| json!({ "action": a });
    env.step(&mut episode, &step("click('1')"), &CancelToken::new())
        .expect("step");
    let key = episode.recorded.expect("recorded");
    {
        let mut studio = Workspace::open(&path).expect("ws");
        studio
            .add_turn(
                key,
                worldloom_core::NodeId(0),
                worldloom_core::Action::for_domain(worldloom_core::Domain::Web, "click('7')"),
            )
            .expect("a branch made in the studio");
    }
    env.step(&mut episode, &step("click('2')"), &CancelToken::new())
        .expect("step");
    let ws = Workspace::open(&path).expect("ws");
    let t = ws.load_trajectory(key).expect("load").trajectory;
    let main: Vec<&str> = t
        .main_path()
        .edges
        .iter()
        .map(|e| t.edges[e.0 as usize].action.raw.as_str())
        .collect();
    assert_eq!(main, ["click('1')", "click('2')"]);
    assert_eq!(t.edges.len(), 3);
}

/// The next close frame's code, reading past anything else (the server
/// may answer before it closes); `None` when the connection ends without one.
async fn close_code<S>(socket: &mut S) -> Option<u16>
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("the server closes in time")
        {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
}

#[test]
fn what_the_socket_cannot_read_closes_it_with_its_code_and_bad_fields_say_what_was_given() {
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

    let options = ServeEnvOptions::default();
    let limit = options.max_message_bytes;
    assert_eq!(limit, 16 * 1024 * 1024);
    let server = start(Arc::new(CopyEngine), None, options);
    runtime().block_on(async {
        let mut s = connect(&server).await;
        let e = ask(&mut s, json!({"type": 5})).await;
        assert_eq!(e["data"]["code"], "UNKNOWN_TYPE");
        assert_eq!(
            e["data"]["message"],
            "Unknown message type: `type` must be a string (reset, step, state, close), got a number (5)"
        );
        let e = ask(&mut s, json!({"data": {}})).await;
        assert_eq!(
            e["data"]["message"],
            "Unknown message type: the message has no `type` (known: reset, step, state, close)"
        );
        let e = ask(&mut s, json!({"type": "dance"})).await;
        assert_eq!(e["data"]["message"], "Unknown message type: dance");

        // A text frame that is not UTF-8: 1007.
        let bad = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
        s.send(Message::Frame(bad)).await.expect("send");
        assert_eq!(close_code(&mut s).await, Some(1007));

        // One byte over the limit: 1009, read while the message is still
        // being written (the server stops reading it at its header).
        let s = connect(&server).await;
        let (mut sink, mut stream) = s.split();
        let writer = tokio::spawn(async move {
            let big = "x".repeat(limit + 1);
            let _ = sink.send(Message::Text(big.into())).await;
            sink
        });
        assert_eq!(close_code(&mut stream).await, Some(1009));
        writer.abort();

        // The server goes on serving.
        let mut s = connect(&server).await;
        let r = ask(&mut s, json!({"type": "reset", "data": {"domain": "web"}})).await;
        assert_eq!(r["type"], "observation", "{r}");

        // An episode id of the wrong type says what was given.
        let (status, e) = post(
            &server,
            "/step",
            json!({"episode_id": 5, "action": {"action": "click('33')"}}),
        )
        .await;
        assert_eq!(status, 422);
        let detail = e["detail"].as_str().expect("detail");
        assert!(
            detail.starts_with("episode_id: expected a string") && detail.ends_with("got a number (5)"),
            "{detail}"
        );
    });
}
