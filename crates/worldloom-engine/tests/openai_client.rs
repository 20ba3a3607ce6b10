//! The OpenAI-compatible client against a local server that behaves well or
//! misbehaves on purpose (slow first byte, dropped connection, malformed SSE,
//! 429 then success, 500 forever, reasoning-only answers, cancellation).
//! Everything listens on 127.0.0.1 only.

#![allow(clippy::unwrap_used)] // helpers outside #[test] functions unwrap too

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::{
    EngineError, EngineEvent, GenerationParams, PredictRequest, StopReason, Token, WorldModel,
};

#[derive(Default)]
struct Counters {
    flaky: AtomicUsize,
    down: AtomicUsize,
    endless_closed: AtomicBool,
    last_auth: std::sync::Mutex<Option<String>>,
    last_body: std::sync::Mutex<Option<Value>>,
}

type Shared = Arc<Counters>;

fn chunk(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

fn usage(prompt: u64, completion: u64) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
               "prompt_tokens_details": {"cached_tokens": 2}}})
    )
}

fn sse(parts: Vec<String>) -> Response {
    let stream = futures_util::stream::iter(parts).then(|p| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok::<Bytes, std::io::Error>(Bytes::from(p))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A well-behaved answer: reasoning in `field`, then the observation.
fn good_stream(field: &str) -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant"})),
        chunk(json!({ field: "the file " })),
        chunk(json!({ field: "is created" })),
        chunk(json!({"content": "<predicted_observation>"})),
        chunk(json!({"content": "ok"})),
        chunk(json!({"content": "</predicted_observation>"})),
        finish("stop"),
        usage(12, 6),
        "data: [DONE]\n\n".to_owned(),
    ]
}

async fn models(Path(scenario): Path<String>) -> impl IntoResponse {
    if scenario == "silent" {
        // Never answers within any test's limits (the server dies with the test).
        tokio::time::sleep(Duration::from_secs(120)).await;
    }
    axum::Json(json!({"object": "list", "data": [{"id": "test-model", "object": "model"}]}))
}

struct EndlessGuard(Shared);

impl Drop for EndlessGuard {
    fn drop(&mut self) {
        self.0.endless_closed.store(true, Ordering::SeqCst);
    }
}

async fn completions(
    headers: HeaderMap,
    State(shared): State<Shared>,
    Path(scenario): Path<String>,
    body: String,
) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    *shared.last_auth.lock().unwrap() = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    *shared.last_body.lock().unwrap() = Some(request.clone());
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match scenario.as_str() {
        "ok" if !stream => axum::Json(json!({
            "choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "reasoning_content": "the file is created",
                            "content": "<predicted_observation>ok</predicted_observation>"},
                "logprobs": {"content": [{"token": "ok", "logprob": -0.25}, {"token": "!", "logprob": -1.5}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 6}
        }))
        .into_response(),
        "ok" => sse(good_stream("reasoning_content")),
        "reasoning-field" => sse(good_stream("reasoning")),
        "inline" => sse(vec![
            chunk(json!({"content": "<thi"})),
            chunk(json!({"content": "nk>the file is"})),
            chunk(json!({"content": " created</thi"})),
            chunk(json!({"content": "nk>\n\n<predicted_observation>ok</predicted_observation>"})),
            finish("stop"),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "logprobs" => sse(vec![
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": "ok"},
                    "logprobs": {"content": [{"token": "ok", "logprob": -0.5}]}, "finish_reason": "stop"}]})
            ),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "top-logprobs" if !stream => axum::Json(json!({
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "<predicted_observation>ok</predicted_observation>"},
                // The legacy completions shape, as some servers answer.
                "logprobs": {"tokens": ["ok", "!"], "token_logprobs": [-0.25, null],
                             "top_logprobs": [{"no": -2.5, "ok": -0.25, "fine": -1.75}, {}]}}]
        }))
        .into_response(),
        "top-logprobs" => sse(vec![
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": "<predicted_observation>o"},
                    "logprobs": {"content": [
                        {"token": "<predicted_observation>", "logprob": -0.01, "bytes": [60],
                         "top_logprobs": [{"token": "<predicted_observation>", "logprob": -0.01}, {"token": "<think>", "logprob": -4.6}]},
                        {"token": "o", "logprob": -0.7,
                         "top_logprobs": [{"token": "o", "logprob": -0.7}, {"token": "n", "logprob": -0.9}]}]},
                    "finish_reason": null}]})
            ),
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": "k</predicted_observation>"},
                    "logprobs": {"content": [
                        {"token": "k", "logprob": -0.05, "top_logprobs": [{"token": "k", "logprob": -0.05}, {"token": "x", "logprob": null}]},
                        {"token": "</predicted_observation>", "logprob": null, "top_logprobs": []}]},
                    "finish_reason": "stop"}]})
            ),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "rambling" => sse(vec![
            chunk(json!({"content": "<predicted_observation>a</predicted_"})),
            chunk(json!({"content": "observation> and then more text"})),
            chunk(json!({"content": " that should never be shown"})),
            finish("stop"),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "slow" => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            sse(good_stream("reasoning_content"))
        }
        "drop" => {
            let parts: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from(chunk(json!({"content": "<predicted_observation>par"})))),
                Ok(Bytes::from(chunk(json!({"content": "tial"})))),
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "server crashed")),
            ];
            let stream = futures_util::stream::iter(parts).then(|p| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                p
            });
            ([(header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(stream)).into_response()
        }
        "eof" => sse(vec![chunk(json!({"content": "<predicted_observation>par"}))]),
        "cut" => sse(vec![
            chunk(json!({"content": "<predicted_observation>par"})),
            "data: {\"choices\": [{\"ind".to_owned(),
        ]),
        "unknown-field" => sse(vec![
            chunk(json!({"content": "<predicted_observation>"})),
            "bogus: x\n\n".to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "long-line" => sse(vec![
            chunk(json!({"content": "<predicted_observation>"})),
            format!("data: {}", "x".repeat(200_000)),
            "\n\ndata: [DONE]\n\n".to_owned(),
        ]),
        "trickle" => {
            // One byte every 200 ms of an endless event, at most 60 s.
            let text = chunk(json!({"reasoning_content": "slowly "})).repeat(20);
            let stream = futures_util::stream::iter(text.into_bytes().into_iter().take(300))
                .then(|b| async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok::<Bytes, std::io::Error>(Bytes::from(vec![b]))
                });
            ([(header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(stream)).into_response()
        }
        "malformed" => sse(vec![
            chunk(json!({"content": "<predicted_observation>"})),
            "data: {\"choices\": [oops\n\n".to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "flaky" => {
            if shared.flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "1")], "slow down").into_response()
            } else {
                sse(good_stream("reasoning_content"))
            }
        }
        "down" => {
            shared.down.fetch_add(1, Ordering::SeqCst);
            (StatusCode::INTERNAL_SERVER_ERROR, "engine overloaded").into_response()
        }
        "reasoning-only" if !stream => axum::Json(json!({
            "choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "content": "", "reasoning_content": "I am still thinking about it"}}]
        }))
        .into_response(),
        "reasoning-only" => sse(vec![
            chunk(json!({"content": "", "reasoning_content": "I am still "})),
            chunk(json!({"content": "", "reasoning_content": "thinking about it"})),
            finish("length"),
            "data: [DONE]\n\n".to_owned(),
        ]),
        "endless" => {
            let guard = EndlessGuard(shared.clone());
            let stream = futures_util::stream::unfold(0usize, |n| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Some((Ok::<Bytes, std::io::Error>(Bytes::from(chunk(json!({"reasoning_content": "more "})))), n + 1))
            })
            .map(move |item| {
                let _keep = &guard;
                item
            });
            ([(header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(stream)).into_response()
        }
        _ => (StatusCode::NOT_FOUND, "{\"error\": {\"message\": \"The model `x` does not exist.\"}}").into_response(),
    }
}

struct TestServer {
    addr: SocketAddr,
    shared: Shared,
}

fn start_server() -> TestServer {
    let shared: Shared = Arc::default();
    let state = shared.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = Router::new()
                .route("/{scenario}/v1/models", get(models))
                .route("/{scenario}/v1/chat/completions", post(completions))
                .with_state(state);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    TestServer { addr, shared }
}

impl TestServer {
    fn engine(
        &self,
        scenario: &str,
        stream: bool,
        tweak: impl FnOnce(&mut OpenAiConfig),
    ) -> OpenAiEngine {
        let mut config = OpenAiConfig {
            base_url: format!("http://{}/{scenario}/v1", self.addr),
            model: "test-model".into(),
            stream,
            read_timeout_ms: 5_000,
            max_retries: 2,
            initial_backoff_ms: 10,
            ..OpenAiConfig::default()
        };
        tweak(&mut config);
        OpenAiEngine::new(config).unwrap()
    }
}

fn request() -> PredictRequest {
    PredictRequest::new(
        vec![
            ChatMessage::new(ChatRole::System, "You simulate a shell."),
            ChatMessage::new(ChatRole::User, "touch a"),
        ],
        GenerationParams {
            logprobs: true,
            ..GenerationParams::default()
        },
    )
}

struct Outcome {
    reasoning: String,
    content: String,
    logprobs: Vec<(String, f32)>,
    last: EngineEvent,
    elapsed: Duration,
}

fn run(engine: &OpenAiEngine) -> Outcome {
    let started = Instant::now();
    let stream = engine.predict(request()).unwrap();
    let mut reasoning = String::new();
    let mut content = String::new();
    let mut logprobs = Vec::new();
    loop {
        let event = stream
            .events
            .recv_timeout(Duration::from_secs(20))
            .expect("the engine went silent");
        match event {
            EngineEvent::Reasoning { text } => reasoning.push_str(&text),
            EngineEvent::Answer { text } => content.push_str(&text),
            EngineEvent::Observation { .. } => {}
            EngineEvent::Token(token) => {
                if let Some(lp) = token.logprob {
                    logprobs.push((token.text, lp));
                }
            }
            last @ (EngineEvent::Done { .. } | EngineEvent::Error { .. }) => {
                if let EngineEvent::Done { output, .. } = &last {
                    // the streamed answer is the finished output's
                    assert_eq!(content, output.answer);
                }
                return Outcome {
                    reasoning,
                    content,
                    logprobs,
                    last,
                    elapsed: started.elapsed(),
                };
            }
        }
    }
}

fn error_text(outcome: &Outcome) -> String {
    match &outcome.last {
        EngineEvent::Error {
            error: EngineError::Remote(message),
        } => message.clone(),
        other => panic!("expected a remote error, got {other:?}"),
    }
}

fn stop_reason(outcome: &Outcome) -> Option<StopReason> {
    match &outcome.last {
        EngineEvent::Done { stats, .. } => stats.stop_reason,
        other => panic!("expected Done, got {other:?}"),
    }
}

#[test]
fn streaming_reasoning_content_and_usage() {
    let server = start_server();
    let out = run(&server.engine("ok", true, |_| {}));
    assert_eq!(out.reasoning, "the file is created");
    assert_eq!(
        out.content,
        "<predicted_observation>ok</predicted_observation>"
    );
    let EngineEvent::Done { stats, .. } = &out.last else {
        panic!("{:?}", out.last)
    };
    // Stopped at the closing tag (stop_after_observation is on by default).
    assert_eq!(stats.stop_reason, Some(StopReason::ObservationClosed));
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "touch a"})
    );
    assert_eq!(body["top_k"], 20);
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], true);
    assert_eq!(server.shared.last_auth.lock().unwrap().clone(), None);
}

#[test]
fn streaming_reads_usage_when_not_stopping_early() {
    let server = start_server();
    let engine = server.engine("ok", true, |_| {});
    let mut req = request();
    req.params.stop_after_observation = false;
    let stream = engine.predict(req).unwrap();
    let last = stream.events.iter().last().unwrap();
    let EngineEvent::Done { stats, .. } = last else {
        panic!("{last:?}")
    };
    assert_eq!(stats.prompt_tokens, 12);
    assert_eq!(stats.prompt_tokens_computed, 10);
    assert_eq!(stats.completion_tokens, 6);
    assert_eq!(stats.stop_reason, Some(StopReason::EndOfTurn));
}

#[test]
fn non_streaming_with_logprobs() {
    let server = start_server();
    let out = run(&server.engine("ok", false, |_| {}));
    assert_eq!(out.reasoning, "the file is created");
    assert_eq!(
        out.content,
        "<predicted_observation>ok</predicted_observation>"
    );
    assert_eq!(
        out.logprobs,
        vec![("ok".to_owned(), -0.25), ("!".to_owned(), -1.5)]
    );
    let EngineEvent::Done { stats, .. } = &out.last else {
        panic!("{:?}", out.last)
    };
    assert_eq!((stats.prompt_tokens, stats.completion_tokens), (12, 6));
    assert_eq!(stats.stop_reason, Some(StopReason::ObservationClosed));
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["stream"], false);
    assert_eq!(body["logprobs"], true);
}

#[test]
fn reasoning_field_and_inline_think_map_to_reasoning() {
    let server = start_server();
    for scenario in ["reasoning-field", "inline"] {
        let out = run(&server.engine(scenario, true, |_| {}));
        assert_eq!(out.reasoning, "the file is created", "{scenario}");
        assert!(
            out.content
                .trim_start()
                .starts_with("<predicted_observation>ok"),
            "{scenario}: {}",
            out.content
        );
    }
}

#[test]
fn streaming_logprobs() {
    let server = start_server();
    let out = run(&server.engine("logprobs", true, |_| {}));
    assert_eq!(out.logprobs, vec![("ok".to_owned(), -0.5)]);
    assert_eq!(out.content, "ok");
}

#[test]
fn output_is_cut_after_the_observation() {
    let server = start_server();
    let out = run(&server.engine("rambling", true, |_| {}));
    assert_eq!(
        out.content,
        "<predicted_observation>a</predicted_observation>"
    );
    assert_eq!(stop_reason(&out), Some(StopReason::ObservationClosed));
}

#[test]
fn slow_first_byte_times_out_or_waits() {
    let server = start_server();
    let out = run(&server.engine("slow", true, |c| c.read_timeout_ms = 300));
    let message = error_text(&out);
    assert!(
        message.contains("no response") && message.contains("300 ms"),
        "{message}"
    );
    assert!(
        out.elapsed < Duration::from_millis(1400),
        "{:?}",
        out.elapsed
    );
    let out = run(&server.engine("slow", true, |c| c.read_timeout_ms = 5_000));
    assert_eq!(
        out.content,
        "<predicted_observation>ok</predicted_observation>"
    );
}

#[test]
fn dropped_connection_mid_stream_is_an_error_after_partial_content() {
    let server = start_server();
    let out = run(&server.engine("drop", true, |_| {}));
    let message = error_text(&out);
    assert!(message.contains("dropped mid-stream"), "{message}");
    assert_eq!(out.content, "<predicted_observation>partial");
}

#[test]
fn stream_ending_without_done_is_an_error() {
    let server = start_server();
    let message = error_text(&run(&server.engine("eof", true, |_| {})));
    assert!(message.contains("closed the stream"), "{message}");
}

#[test]
fn malformed_sse_line_is_quoted() {
    let server = start_server();
    let message = error_text(&run(&server.engine("malformed", true, |_| {})));
    assert!(message.contains("malformed SSE line 3"), "{message}");
    assert!(message.contains("`data: {\"choices\": [oops`"), "{message}");
}

#[test]
fn too_many_requests_then_success_honours_retry_after() {
    let server = start_server();
    let out = run(&server.engine("flaky", true, |_| {}));
    assert_eq!(
        out.content,
        "<predicted_observation>ok</predicted_observation>"
    );
    assert_eq!(server.shared.flaky.load(Ordering::SeqCst), 2);
    // Retry-After: 1 second, although the backoff alone would wait 10 ms.
    assert!(
        out.elapsed >= Duration::from_millis(950),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn server_error_forever_gives_up_after_bounded_retries() {
    let server = start_server();
    let out = run(&server.engine("down", true, |c| c.max_retries = 3));
    let message = error_text(&out);
    assert!(
        message.contains("500") && message.contains("after 4 attempts"),
        "{message}"
    );
    assert!(message.contains("engine overloaded"), "{message}");
    assert_eq!(server.shared.down.load(Ordering::SeqCst), 4);
}

#[test]
fn empty_content_with_full_reasoning() {
    let server = start_server();
    for stream in [true, false] {
        let out = run(&server.engine("reasoning-only", stream, |_| {}));
        assert_eq!(
            out.reasoning, "I am still thinking about it",
            "stream={stream}"
        );
        assert_eq!(out.content, "", "stream={stream}");
        assert_eq!(
            stop_reason(&out),
            Some(StopReason::MaxTokens),
            "stream={stream}"
        );
        // Cut at the token limit inside reasoning: truncated, the reasoning
        // kept and never taken as the observation.
        let EngineEvent::Done { output, .. } = &out.last else {
            panic!("{:?}", out.last)
        };
        assert_eq!(
            output.parsed.status,
            worldloom_core::OutputStatus::Truncated,
            "stream={stream}"
        );
        assert_eq!(output.parsed.observation, None);
        assert_eq!(output.parsed.reasoning, "I am still thinking about it");
    }
}

#[test]
fn cancel_closes_the_stream_at_once() {
    let server = start_server();
    let engine = server.engine("endless", true, |_| {});
    let stream = engine.predict(request()).unwrap();
    let first = stream.events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(first, EngineEvent::Reasoning { .. }), "{first:?}");
    let cancelled_at = Instant::now();
    stream.cancel.cancel();
    let last = loop {
        match stream.events.recv_timeout(Duration::from_secs(5)).unwrap() {
            EngineEvent::Reasoning { .. } => {}
            other => break other,
        }
    };
    assert!(
        cancelled_at.elapsed() < Duration::from_millis(500),
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(
        matches!(&last, EngineEvent::Done { stats, .. } if stats.stop_reason == Some(StopReason::Cancelled)),
        "{last:?}"
    );
    // The server notices the client went away.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !server.shared.endless_closed.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the server still streams after cancel"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn connection_refused_is_named() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let engine = OpenAiEngine::new(OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "m".into(),
        ..OpenAiConfig::default()
    })
    .unwrap();
    let message = error_text(&run(&engine));
    assert!(
        message.contains("cannot connect") && message.contains("connection refused"),
        "{message}"
    );
    let err = engine.check_model().unwrap_err().to_string();
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn unknown_model_is_reported_with_the_served_ones() {
    let server = start_server();
    server.engine("ok", true, |_| {}).check_model().unwrap();
    let err = server
        .engine("ok", true, |c| c.model = "qwen-big".into())
        .check_model()
        .unwrap_err();
    assert_eq!(
        err,
        EngineError::Setup(format!(
            "model `qwen-big` is not served by http://{}/ok/v1 (it serves: test-model)",
            server.addr
        ))
    );
    let message = error_text(&run(&server.engine("missing", true, |_| {})));
    assert!(
        message.contains("404") && message.contains("/v1/models"),
        "{message}"
    );
}

#[test]
fn api_key_comes_from_the_environment_and_stays_hidden() {
    let server = start_server();
    // Cargo sets CARGO_PKG_NAME for test processes; it stands in for a key.
    let key = std::env::var("CARGO_PKG_NAME").unwrap();
    let engine = server.engine("ok", true, |c| {
        c.api_key_env = Some("CARGO_PKG_NAME".into())
    });
    run(&engine);
    assert_eq!(
        server.shared.last_auth.lock().unwrap().clone(),
        Some(format!("Bearer {key}"))
    );
    let shown = format!("{engine:?}");
    assert!(
        !shown.contains(&key) && shown.contains("<redacted>"),
        "{shown}"
    );
    let err = OpenAiEngine::new(OpenAiConfig {
        model: "m".into(),
        api_key_env: Some("WORLDLOOM_TEST_SURELY_UNSET_KEY".into()),
        ..OpenAiConfig::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("WORLDLOOM_TEST_SURELY_UNSET_KEY"),
        "{err}"
    );
}

#[test]
fn dropping_the_engine_ends_its_predictions_with_an_error() {
    let server = start_server();
    let engine = server.engine("endless", true, |_| {});
    let stream = engine.predict(request()).unwrap();
    assert!(matches!(
        stream.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        EngineEvent::Reasoning { .. }
    ));
    drop(engine);
    let last = loop {
        match stream.events.recv_timeout(Duration::from_secs(5)).unwrap() {
            EngineEvent::Reasoning { .. } => {}
            other => break other,
        }
    };
    // Stopped, or Remote when the runtime's I/O driver closed the socket first.
    assert!(
        matches!(
            last,
            EngineEvent::Error {
                error: EngineError::Stopped(_) | EngineError::Remote(_)
            }
        ),
        "{last:?}"
    );
}

#[test]
fn silent_models_endpoint_ends_at_the_read_timeout() {
    let server = start_server();
    let engine = server.engine("silent", true, |c| c.read_timeout_ms = 300);
    let started = Instant::now();
    let err = engine.check_model().unwrap_err();
    assert_eq!(
        err,
        EngineError::Remote(format!(
            "no answer from http://{}/silent/v1/models within 300 ms (read timeout)",
            server.addr
        ))
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // the deadline bounds the probe too
    let engine = server.engine("silent", true, |c| c.deadline_ms = Some(300));
    let err = engine.check_model().unwrap_err();
    assert_eq!(
        err,
        EngineError::Remote(format!(
            "no model list from http://{}/silent/v1/models within the deadline of 300 ms",
            server.addr
        ))
    );
}

#[test]
fn trickling_stream_ends_at_the_step_deadline() {
    let server = start_server();
    let out = run(&server.engine("trickle", true, |c| c.deadline_ms = Some(1_000)));
    assert_eq!(
        error_text(&out),
        format!(
            "http://{}/trickle/v1/chat/completions did not finish its answer within the step deadline of 1000 ms; stopped",
            server.addr
        )
    );
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
}

#[test]
fn trickling_stream_ends_at_the_read_timeout_when_slower_than_it() {
    let server = start_server();
    let out = run(&server.engine("trickle", true, |c| c.read_timeout_ms = 100));
    let message = error_text(&out);
    assert_eq!(
        message,
        format!(
            "http://{}/trickle/v1/chat/completions sent nothing for 100 ms in the middle of the stream (read timeout)",
            server.addr
        )
    );
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
}

#[test]
fn connection_closed_mid_line_is_named() {
    let server = start_server();
    let out = run(&server.engine("cut", true, |_| {}));
    let message = error_text(&out);
    let first = chunk(json!({"content": "<predicted_observation>par"}));
    let cut = "data: {\"choices\": [{\"ind";
    assert_eq!(
        message,
        format!(
            "http://{}/cut/v1/chat/completions closed mid-stream after {} bytes, in the middle of SSE line 3: `data: {{\"choices\": [{{\"ind`",
            server.addr,
            first.len() + cut.len()
        )
    );
    assert_eq!(out.content, "<predicted_observation>par");
}

#[test]
fn unknown_sse_field_has_one_prefix() {
    let server = start_server();
    let out = run(&server.engine("unknown-field", true, |_| {}));
    let EngineEvent::Error { error } = &out.last else {
        panic!("expected an error, got {:?}", out.last);
    };
    assert_eq!(
        error.to_string(),
        format!(
            "remote engine error: malformed SSE line 3: `bogus: x` (from http://{}/unknown-field/v1/chat/completions)",
            server.addr
        )
    );
}

#[test]
fn sse_line_over_the_cap_ends_the_row() {
    let server = start_server();
    let out = run(&server.engine("long-line", true, |c| {
        c.max_sse_line_bytes = 65_536;
    }));
    assert_eq!(
        error_text(&out),
        format!(
            "SSE line 3 from http://{}/long-line/v1/chat/completions is longer than 65536 bytes (the SSE line cap, `max_sse_line_bytes`); stopped reading",
            server.addr
        )
    );
    // the default cap (16 MiB) reads the same line
    let out = run(&server.engine("long-line", true, |_| {}));
    let message = error_text(&out);
    assert!(message.contains("malformed SSE line 3"), "{message}");
    assert!(message.contains("is not JSON"), "{message}");
}

/// Every `Token` event of a prediction, and its last event.
fn tokens_of(engine: &OpenAiEngine, request: PredictRequest) -> (Vec<Token>, EngineEvent) {
    let stream = engine.predict(request).unwrap();
    let mut tokens = Vec::new();
    loop {
        match stream
            .events
            .recv_timeout(Duration::from_secs(20))
            .expect("the engine went silent")
        {
            EngineEvent::Token(token) => tokens.push(token),
            last @ (EngineEvent::Done { .. } | EngineEvent::Error { .. }) => return (tokens, last),
            _ => {}
        }
    }
}

fn alternatives(token: &Token) -> Vec<(&str, f32)> {
    token
        .top
        .iter()
        .map(|t| (t.text.as_str(), t.logprob))
        .collect()
}

#[test]
fn sampling_settings_reach_the_endpoint_in_the_openai_shape() {
    let server = start_server();
    let mut req = request();
    req.params.top_logprobs = 5;
    req.params.presence_penalty = 0.5;
    req.params.frequency_penalty = -0.25;
    req.params.repetition_penalty = 1.125;
    req.params.min_p = 0.05;
    req.params.stop_token_ids = vec![151645, 7];
    req.params.skip_special_tokens = false;
    req.params.stop = vec!["END".into()];
    req.params.seed = 42;
    let engine = server.engine("top-logprobs", true, |_| {});
    let (_, last) = tokens_of(&engine, req.clone());
    assert!(matches!(last, EngineEvent::Done { .. }), "{last:?}");
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["logprobs"], true);
    assert_eq!(body["top_logprobs"], 5);
    assert_eq!(body["presence_penalty"], 0.5);
    assert_eq!(body["frequency_penalty"], -0.25);
    assert_eq!(body["repetition_penalty"], 1.125);
    assert_eq!(
        body["min_p"].as_f64().map(|x| (x * 1000.0).round()),
        Some(50.0)
    );
    assert_eq!(body["stop_token_ids"], json!([151645, 7]));
    assert_eq!(body["skip_special_tokens"], false);
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!(body["seed"], 42);
    assert_eq!(body["top_k"], 20);
    assert_eq!(body["max_tokens"], 4096);

    // Without the extensions only the standard fields go.
    let plain = server.engine("top-logprobs", true, |c| c.send_extensions = false);
    tokens_of(&plain, req);
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["top_logprobs"], 5);
    assert_eq!(body["presence_penalty"], 0.5);
    assert_eq!(body["frequency_penalty"], -0.25);
    for field in [
        "repetition_penalty",
        "min_p",
        "stop_token_ids",
        "skip_special_tokens",
        "top_k",
        "chat_template_kwargs",
    ] {
        assert!(body.get(field).is_none(), "{field} sent: {body}");
    }

    // Defaults send none of the optional fields (servers keep their own).
    let (_, _) = tokens_of(
        &engine,
        PredictRequest::new(request().messages, GenerationParams::default()),
    );
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    for field in [
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "min_p",
        "stop_token_ids",
        "skip_special_tokens",
        "stop",
    ] {
        assert!(body.get(field).is_none(), "{field} sent: {body}");
    }
}

#[test]
fn streamed_top_logprobs_become_token_events() {
    let server = start_server();
    let mut req = request();
    req.params.top_logprobs = 2;
    let (tokens, last) = tokens_of(&server.engine("top-logprobs", true, |_| {}), req);
    let EngineEvent::Done { output, .. } = &last else {
        panic!("{last:?}")
    };
    assert_eq!(output.parsed.observation.as_deref(), Some("ok"));
    let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "<predicted_observation>",
            "o",
            "k",
            "</predicted_observation>"
        ]
    );
    let logprobs: Vec<Option<f32>> = tokens.iter().map(|t| t.logprob).collect();
    assert_eq!(logprobs, [Some(-0.01), Some(-0.7), Some(-0.05), None]);
    assert_eq!(
        alternatives(&tokens[0]),
        [("<predicted_observation>", -0.01), ("<think>", -4.6)]
    );
    assert_eq!(alternatives(&tokens[1]), [("o", -0.7), ("n", -0.9)]);
    // An alternative without a number is left out.
    assert_eq!(alternatives(&tokens[2]), [("k", -0.05)]);
    assert!(tokens[3].top.is_empty());
    assert!(tokens.iter().all(|t| t.id.is_none()));
}

#[test]
fn legacy_completions_logprobs_become_token_events() {
    let server = start_server();
    let mut req = request();
    req.params.top_logprobs = 3;
    let (tokens, last) = tokens_of(&server.engine("top-logprobs", false, |_| {}), req);
    assert!(matches!(last, EngineEvent::Done { .. }), "{last:?}");
    let body = server.shared.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(
        (body["logprobs"].clone(), body["top_logprobs"].clone()),
        (json!(true), json!(3))
    );
    assert_eq!(tokens.len(), 2);
    assert_eq!(
        (tokens[0].text.as_str(), tokens[0].logprob),
        ("ok", Some(-0.25))
    );
    // Alternatives come most likely first, whatever the map's order.
    assert_eq!(
        alternatives(&tokens[0]),
        [("ok", -0.25), ("fine", -1.75), ("no", -2.5)]
    );
    assert_eq!((tokens[1].text.as_str(), tokens[1].logprob), ("!", None));
    assert!(tokens[1].top.is_empty());
}
