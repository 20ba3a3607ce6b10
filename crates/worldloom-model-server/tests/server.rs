//! The server over real HTTP on 127.0.0.1: driven by Worldloom's own
//! OpenAI-compatible client (streaming and not), by raw requests, and by the
//! official `openai` Python package when it is installed.

#![allow(clippy::unwrap_used)] // helpers outside #[test] functions unwrap too

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use worldloom_core::{ChatMessage, ChatRole, OutputParser};
use worldloom_engine::baseline::CopyEngine;
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    PredictionStream, StopReason, WorldModel,
};
use worldloom_model_server::{RunningServer, ServerOptions, spawn};

/// A mock engine on its own thread: reasoning, then the observation, slowly;
/// counts how many predictions run at once and whether one was cancelled.
#[derive(Default)]
struct SlowMock {
    running: Arc<AtomicUsize>,
    max_running: Arc<AtomicUsize>,
    cancelled: Arc<AtomicBool>,
    steps: usize,
}

impl WorldModel for SlowMock {
    fn name(&self) -> String {
        "mock".into()
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let cancel = CancelToken::new();
        let token = cancel.clone();
        let running = self.running.clone();
        let max_running = self.max_running.clone();
        let cancelled = self.cancelled.clone();
        let steps = self.steps;
        let last_user = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        std::thread::spawn(move || {
            // The prompt opened the think block; the parser splits the text.
            let mut parser = OutputParser::new(true);
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            max_running.fetch_max(now, Ordering::SeqCst);
            let mut stop = StopReason::EndOfTurn;
            for i in 0..steps {
                if token.is_cancelled() {
                    cancelled.store(true, Ordering::SeqCst);
                    stop = StopReason::Cancelled;
                    break;
                }
                for event in EngineEvent::from_delta(parser.push(&format!("r{i} "))) {
                    let _ = tx.send(event);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if stop != StopReason::Cancelled {
                let text =
                    format!("</think><predicted_observation>{last_user}</predicted_observation>");
                for event in EngineEvent::from_delta(parser.push(&text)) {
                    let _ = tx.send(event);
                }
            }
            running.fetch_sub(1, Ordering::SeqCst);
            let stats = GenerationStats {
                prompt_tokens: 5,
                completion_tokens: steps + 1,
                stop_reason: Some(stop),
                ..Default::default()
            };
            let output = parser.finish_output();
            let _ = tx.send(EngineEvent::Done { stats, output });
        });
        Ok(PredictionStream { events: rx, cancel })
    }
}

fn serve(engine: Arc<dyn WorldModel>) -> RunningServer {
    spawn(
        engine,
        ServerOptions {
            model_id: "wl-test".into(),
            max_concurrent: 1,
            ..ServerOptions::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap()
}

fn client(server: &RunningServer, stream: bool) -> OpenAiEngine {
    OpenAiEngine::new(OpenAiConfig {
        base_url: server.base_url(),
        model: "wl-test".into(),
        stream,
        read_timeout_ms: 20_000,
        ..OpenAiConfig::default()
    })
    .unwrap()
}

fn shell_chat() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(ChatRole::System, "You simulate a shell."),
        ChatMessage::new(ChatRole::User, "ls"),
        ChatMessage::new(ChatRole::Assistant, "notes.txt"),
        ChatMessage::new(ChatRole::User, "touch todo.txt"),
    ]
}

/// (reasoning, content, stats) of one prediction.
fn collect(
    engine: &dyn WorldModel,
    messages: Vec<ChatMessage>,
) -> (String, String, GenerationStats) {
    // Read to the end of the answer, so the usage that follows arrives too.
    let params = GenerationParams {
        stop_after_observation: false,
        ..GenerationParams::default()
    };
    let stream = engine
        .predict(PredictRequest::new(messages, params))
        .unwrap();
    let (mut reasoning, mut content) = (String::new(), String::new());
    loop {
        match stream.events.recv_timeout(Duration::from_secs(30)).unwrap() {
            EngineEvent::Reasoning { text } => reasoning.push_str(&text),
            EngineEvent::Answer { text } => content.push_str(&text),
            EngineEvent::Done { stats, .. } => return (reasoning, content, stats),
            EngineEvent::Error { error } => panic!("{error}"),
            _ => {}
        }
    }
}

#[test]
fn copy_engine_through_our_client_stream_and_not() {
    let server = serve(Arc::new(CopyEngine));
    let our = client(&server, false);
    our.check_model().unwrap();
    for stream in [true, false] {
        let (reasoning, content, stats) = collect(&client(&server, stream), shell_chat());
        assert_eq!(reasoning, "", "stream={stream}");
        assert_eq!(
            content, "<predicted_observation>\nnotes.txt\n</predicted_observation>",
            "stream={stream}"
        );
        assert_eq!(
            stats.stop_reason,
            Some(StopReason::EndOfTurn),
            "stream={stream}"
        );
    }
}

#[test]
fn reasoning_is_sent_separately() {
    let mock = SlowMock {
        steps: 3,
        ..SlowMock::default()
    };
    let server = serve(Arc::new(mock));
    for stream in [true, false] {
        let (reasoning, content, stats) = collect(&client(&server, stream), shell_chat());
        assert_eq!(reasoning, "r0 r1 r2 ", "stream={stream}");
        assert_eq!(
            content, "<predicted_observation>touch todo.txt</predicted_observation>",
            "stream={stream}"
        );
        assert_eq!(
            (stats.prompt_tokens, stats.completion_tokens),
            (5, 4),
            "stream={stream}"
        );
    }
}

#[test]
fn concurrent_requests_queue_one_at_a_time() {
    let mock = SlowMock {
        steps: 5,
        ..SlowMock::default()
    };
    let max_running = mock.max_running.clone();
    let server = serve(Arc::new(mock));
    let engine = Arc::new(client(&server, true));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut chat = shell_chat();
                chat.push(ChatMessage::new(ChatRole::User, format!("echo {i}")));
                collect(engine.as_ref(), chat).1
            })
        })
        .collect();
    let mut outputs: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    outputs.sort();
    let expected: Vec<String> = (0..4)
        .map(|i| format!("<predicted_observation>echo {i}</predicted_observation>"))
        .collect();
    assert_eq!(outputs, expected);
    assert_eq!(max_running.load(Ordering::SeqCst), 1);
}

#[test]
fn client_cancel_cancels_the_engine() {
    let mock = SlowMock {
        steps: 500,
        ..SlowMock::default()
    };
    let cancelled = mock.cancelled.clone();
    let server = serve(Arc::new(mock));
    let engine = client(&server, true);
    let stream = engine
        .predict(PredictRequest::new(
            shell_chat(),
            GenerationParams::default(),
        ))
        .unwrap();
    let first = stream.events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(first, EngineEvent::Reasoning { .. }), "{first:?}");
    stream.cancel.cancel();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !cancelled.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the engine was not cancelled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The queue slot is free again: a new request is served.
    let (_, content, _) = collect(&client(&server, false), shell_chat());
    assert!(content.ends_with("</predicted_observation>"), "{content}");
}

#[test]
fn errors_use_the_openai_shape() {
    let server = serve(Arc::new(CopyEngine));
    let wrong = OpenAiEngine::new(OpenAiConfig {
        base_url: server.base_url(),
        model: "nope".into(),
        ..OpenAiConfig::default()
    })
    .unwrap();
    let err = wrong.check_model().unwrap_err().to_string();
    assert!(err.contains("it serves: wl-test"), "{err}");
    // The copy engine refuses a chat without a state; the server answers 400.
    let ours = client(&server, false);
    let stream = ours
        .predict(PredictRequest::new(
            vec![ChatMessage::new(ChatRole::User, "go")],
            GenerationParams::default(),
        ))
        .unwrap();
    let last = stream.events.iter().last().unwrap();
    let EngineEvent::Error {
        error: EngineError::Remote(message),
    } = last
    else {
        panic!("{last:?}")
    };
    assert!(
        message.contains("400") && message.contains("no current_observation"),
        "{message}"
    );
}

#[test]
fn official_openai_python_package() {
    let have_openai = std::process::Command::new("python3")
        .args(["-c", "import openai"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have_openai {
        println!(
            "SKIPPED official_openai_python_package: python3 cannot import `openai` (pip install openai)"
        );
        return;
    }
    let server = serve(Arc::new(CopyEngine));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openai_compat.py");
    let output = std::process::Command::new("python3")
        .args([script, &server.base_url(), "wl-test"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("openai package: OK"), "{stdout}");
}

#[test]
fn stopping_the_server_cancels_predictions_in_flight() {
    let mock = SlowMock {
        steps: 2_000,
        ..SlowMock::default()
    };
    let cancelled = mock.cancelled.clone();
    let server = serve(Arc::new(mock));
    let engine = client(&server, true);
    let stream = engine
        .predict(PredictRequest::new(
            shell_chat(),
            GenerationParams::default(),
        ))
        .unwrap();
    let first = stream.events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(first, EngineEvent::Reasoning { .. }), "{first:?}");
    let started = std::time::Instant::now();
    server.stop();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        started.elapsed()
    );
    assert!(
        cancelled.load(Ordering::SeqCst),
        "the engine was not cancelled"
    );
    let last = loop {
        match stream.events.recv_timeout(Duration::from_secs(5)).unwrap() {
            EngineEvent::Reasoning { .. } => {}
            other => break other,
        }
    };
    assert!(matches!(last, EngineEvent::Done { .. }), "{last:?}");
}
