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

impl SlowMock {
    /// A mock that reasons for `steps` words (20 ms each) before answering.
    fn with_steps(steps: usize) -> Self {
        SlowMock {
            steps,
            ..SlowMock::default()
        }
    }
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

/// `wl-test` served one prediction at a time.
fn serve(engine: Arc<dyn WorldModel>) -> RunningServer {
    serve_with(
        engine,
        ServerOptions {
            max_concurrent: 1,
            ..ServerOptions::default()
        },
    )
}

fn client(server: &RunningServer, stream: bool) -> OpenAiEngine {
    client_with_timeout(server, stream, 20_000)
}

/// Our OpenAI-compatible client of `wl-test` on `server`.
fn client_with_timeout(server: &RunningServer, stream: bool, read_timeout_ms: u64) -> OpenAiEngine {
    OpenAiEngine::new(OpenAiConfig {
        base_url: server.base_url(),
        model: "wl-test".into(),
        stream,
        read_timeout_ms,
        ..OpenAiConfig::default()
    })
    .unwrap()
}

/// `n` chats (the shell chat, then `echo i`) sent at once through `engine`:
/// each answer is its own last message.
fn assert_each_echoed(engine: Arc<OpenAiEngine>, n: usize) {
    let handles: Vec<_> = (0..n)
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
    let expected: Vec<String> = (0..n)
        .map(|i| format!("<predicted_observation>echo {i}</predicted_observation>"))
        .collect();
    assert_eq!(outputs, expected);
}

/// A streamed prediction of the shell chat on `server`, its first event
/// (reasoning) read; the client is returned with it.
fn started_prediction(server: &RunningServer) -> (OpenAiEngine, PredictionStream) {
    let engine = client(server, true);
    let stream = engine
        .predict(PredictRequest::new(
            shell_chat(),
            GenerationParams::default(),
        ))
        .unwrap();
    let first = stream.events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(first, EngineEvent::Reasoning { .. }), "{first:?}");
    (engine, stream)
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
    let mock = SlowMock::with_steps(3);
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
    let mock = SlowMock::with_steps(5);
    let max_running = mock.max_running.clone();
    let server = serve(Arc::new(mock));
    let engine = Arc::new(client(&server, true));
    assert_each_echoed(engine, 4);
    assert_eq!(max_running.load(Ordering::SeqCst), 1);
}

#[test]
fn client_cancel_cancels_the_engine() {
    let mock = SlowMock::with_steps(500);
    let cancelled = mock.cancelled.clone();
    let server = serve(Arc::new(mock));
    let (_engine, stream) = started_prediction(&server);
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
    let mock = SlowMock::with_steps(2_000);
    let cancelled = mock.cancelled.clone();
    let server = serve(Arc::new(mock));
    let (_engine, stream) = started_prediction(&server);
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

/// A mock that knows its context (64 tokens, one token per word) and scores
/// its tokens: the answer names the seed, one `Token` per word with
/// log-probability and `top_logprobs` alternatives.
#[derive(Default)]
struct ScoringMock {
    /// `max_new_tokens` of the last request.
    last_max_tokens: Arc<AtomicUsize>,
}

const MOCK_CONTEXT: usize = 64;

fn words(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| m.content.split_whitespace().count())
        .sum()
}

impl WorldModel for ScoringMock {
    fn name(&self) -> String {
        "scoring-mock".into()
    }

    fn context_tokens(&self) -> Option<usize> {
        Some(MOCK_CONTEXT)
    }

    fn count_prompt_tokens(
        &self,
        messages: &[ChatMessage],
        _enable_thinking: bool,
    ) -> Option<Result<usize, EngineError>> {
        Some(Ok(words(messages)))
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let params = request.params;
        self.last_max_tokens
            .store(params.max_new_tokens, Ordering::SeqCst);
        let prompt_tokens = words(&request.messages);
        std::thread::spawn(move || {
            let mut parser = OutputParser::new(false);
            let pieces = [
                "<predicted_observation>".to_owned(),
                format!("seed {}", params.seed),
                "</predicted_observation>".to_owned(),
            ];
            for (i, piece) in pieces.iter().enumerate() {
                let top = (0..params.top_logprobs)
                    .map(|k| worldloom_engine::TopLogprob {
                        text: format!("alt{k}"),
                        id: Some(k as u32),
                        logprob: -(k as f32),
                    })
                    .collect();
                let _ = tx.send(EngineEvent::Token(worldloom_engine::Token {
                    text: piece.clone(),
                    id: Some(i as u32),
                    logprob: params.logprobs.then_some(-0.5),
                    top,
                }));
                for event in EngineEvent::from_delta(parser.push(piece)) {
                    let _ = tx.send(event);
                }
            }
            let stats = GenerationStats {
                prompt_tokens,
                completion_tokens: pieces.len(),
                stop_reason: Some(StopReason::EndOfTurn),
                ..Default::default()
            };
            let _ = tx.send(EngineEvent::Done {
                stats,
                output: parser.finish_output(),
            });
        });
        Ok(PredictionStream {
            events: rx,
            cancel: CancelToken::new(),
        })
    }
}

/// One HTTP/1.1 exchange on a fresh connection: (status, JSON body or
/// `Value::String` of a non-JSON body).
fn http(
    server: &RunningServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    let has = |name: &str| headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(name));
    if !has("host") {
        head.push_str(&format!("Host: {}\r\n", server.addr));
    }
    if !has("content-type") && method == "POST" {
        head.push_str("Content-Type: application/json\r\n");
    }
    if !has("content-length") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let value = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
    (status, value)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn post(server: &RunningServer, body: serde_json::Value) -> (u16, serde_json::Value) {
    completions(server, &[], &body.to_string())
}

/// `POST /v1/chat/completions` with `headers` and a raw `body`.
fn completions(
    server: &RunningServer,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, serde_json::Value) {
    http(server, "POST", "/v1/chat/completions", headers, body)
}

fn serve_with(engine: Arc<dyn WorldModel>, options: ServerOptions) -> RunningServer {
    spawn(
        engine,
        ServerOptions {
            model_id: "wl-test".into(),
            ..options
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap()
}

fn chat_of(n_words: usize) -> serde_json::Value {
    let text = vec!["w"; n_words].join(" ");
    serde_json::json!([{"role": "user", "content": text}])
}

fn error_of(body: &serde_json::Value) -> (&str, &str, &str) {
    let e = &body["error"];
    (
        e["type"].as_str().unwrap_or(""),
        e["param"].as_str().unwrap_or(""),
        e["code"].as_str().unwrap_or(""),
    )
}

#[test]
fn requests_longer_than_the_context_are_refused_as_vllm_does() {
    let mock = ScoringMock::default();
    let seen = mock.last_max_tokens.clone();
    let server = serve_with(Arc::new(mock), ServerOptions::default());
    // 70 prompt tokens > 64
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(70)}),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        error_of(&body),
        (
            "invalid_request_error",
            "messages",
            "context_length_exceeded"
        )
    );
    // 10 + 60 > 64
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(10), "max_tokens": 60}),
    );
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("This model's maximum context length is 64 tokens. However, you requested 70 tokens (10 in the messages, 60 in the completion)."),
        "{message}"
    );
    // 10 + 54 fits
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(10), "max_tokens": 54}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(seen.load(Ordering::SeqCst), 54);
    // Without max_tokens, generation gets what the context leaves.
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(10)}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(seen.load(Ordering::SeqCst), 54);
    // The context is published.
    let (status, body) = http(&server, "GET", "/v1/models", &[], "");
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["max_model_len"], 64);
    assert_eq!(body["data"][0]["max_concurrent_requests"], 1);
}

#[test]
fn logprobs_and_top_logprobs_in_the_openai_shape() {
    let server = serve_with(Arc::new(ScoringMock::default()), ServerOptions::default());
    let request = serde_json::json!({"model": "wl-test", "messages": chat_of(3), "logprobs": true, "top_logprobs": 3, "seed": 1});
    let (status, body) = post(&server, request.clone());
    assert_eq!(status, 200, "{body}");
    let content = body["choices"][0]["logprobs"]["content"]
        .as_array()
        .unwrap();
    assert_eq!(content.len(), 3);
    for entry in content {
        assert_eq!(entry["logprob"], -0.5);
        assert_eq!(entry["top_logprobs"].as_array().unwrap().len(), 3);
        assert_eq!(entry["top_logprobs"][1]["token"], "alt1");
        assert_eq!(entry["top_logprobs"][1]["logprob"], -1.0);
        let bytes: Vec<u8> = entry["bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        assert_eq!(bytes, entry["token"].as_str().unwrap().as_bytes());
    }
    assert_eq!(content[1]["token"], "seed 1");
    // Streaming: the entries arrive with the chunks, all of them.
    let mut streamed = request;
    streamed["stream"] = serde_json::json!(true);
    let (status, body) = post(&server, streamed);
    assert_eq!(status, 200);
    let text = body.as_str().unwrap();
    let mut entries = 0;
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data: ")
            && data != "[DONE]"
        {
            let chunk: serde_json::Value = serde_json::from_str(data).unwrap();
            if let Some(c) = chunk["choices"][0]["logprobs"]["content"].as_array() {
                entries += c.len();
                assert!(
                    c.iter()
                        .all(|e| e["top_logprobs"].as_array().unwrap().len() == 3)
                );
            }
        }
    }
    assert_eq!(entries, 3, "{text}");
    // Without logprobs: null.
    let (_, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(3)}),
    );
    assert!(body["choices"][0]["logprobs"].is_null(), "{body}");
}

#[test]
fn n_gives_sequential_samples_and_unseeded_requests_draw_a_seed() {
    let server = serve_with(Arc::new(ScoringMock::default()), ServerOptions::default());
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(3), "n": 2, "seed": 5, "temperature": 0.7}),
    );
    assert_eq!(status, 200, "{body}");
    let choices = body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    let texts: Vec<&str> = choices
        .iter()
        .map(|c| c["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        vec![
            "<predicted_observation>seed 5</predicted_observation>",
            "<predicted_observation>seed 6</predicted_observation>"
        ]
    );
    assert_eq!(
        (choices[0]["index"].as_u64(), choices[1]["index"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(body["seed"], 5);
    assert_eq!(body["usage"]["completion_tokens"], 6);
    assert_eq!(body["usage"]["prompt_tokens"], 3);
    // Streaming n = 2: both choices, each with its finish chunk.
    let (_, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat_of(3), "n": 2, "seed": 5, "stream": true}),
    );
    let text = body.as_str().unwrap();
    let finishes = text.matches("\"finish_reason\":\"stop\"").count();
    assert_eq!(finishes, 2, "{text}");
    assert!(
        text.contains("seed 6") && text.contains("\"index\":1"),
        "{text}"
    );
    // No seed: a fresh one each time, reported.
    let seeds: Vec<u64> = (0..2)
        .map(|_| {
            let (_, body) = post(
                &server,
                serde_json::json!({"model": "wl-test", "messages": chat_of(3)}),
            );
            let seed = body["seed"].as_u64().unwrap();
            assert_eq!(
                body["choices"][0]["message"]["content"],
                format!("<predicted_observation>seed {seed}</predicted_observation>")
            );
            seed
        })
        .collect();
    assert_ne!(seeds[0], seeds[1]);
}

#[test]
fn unsupported_fields_routes_and_methods_answer_openai_errors() {
    let server = serve_with(Arc::new(ScoringMock::default()), ServerOptions::default());
    for (field, value) in [
        (
            "tools",
            serde_json::json!([{"type": "function", "function": {"name": "f"}}]),
        ),
        (
            "response_format",
            serde_json::json!({"type": "json_object"}),
        ),
        ("tool_choice", serde_json::json!("auto")),
        ("functions", serde_json::json!([])),
        ("logit_bias", serde_json::json!({"1": 5})),
        ("unknown_thing", serde_json::json!(1)),
    ] {
        let mut request = serde_json::json!({"model": "wl-test", "messages": chat_of(3)});
        request[field] = value;
        let (status, body) = post(&server, request);
        assert_eq!(status, 400, "{field}: {body}");
        assert_eq!(error_of(&body).1, field);
    }
    let (status, body) = http(&server, "GET", "/v1/models/wl-test", &[], "");
    assert_eq!((status, body["id"].as_str()), (200, Some("wl-test")));
    let (status, body) = http(&server, "GET", "/v1/models/other", &[], "");
    assert_eq!(status, 404);
    assert_eq!(
        error_of(&body),
        ("invalid_request_error", "model", "model_not_found")
    );
    let (status, body) = http(&server, "GET", "/v1/nothing", &[], "");
    assert_eq!(status, 404);
    assert_eq!(error_of(&body).2, "not_found");
    let (status, body) = http(&server, "GET", "/v1/chat/completions", &[], "");
    assert_eq!(status, 405);
    assert_eq!(error_of(&body).2, "method_not_allowed");
    let (status, body) = http(&server, "DELETE", "/v1/models", &[], "");
    assert_eq!(status, 405, "{body}");
}

#[test]
fn the_door_refuses_foreign_hosts_origins_and_plain_text() {
    let server = serve_with(Arc::new(ScoringMock::default()), ServerOptions::default());
    let body = serde_json::json!({"model": "wl-test", "messages": chat_of(3)}).to_string();
    let (status, reply) = completions(&server, &[("Host", "evil.example")], &body);
    assert_eq!(status, 403);
    assert_eq!(error_of(&reply).2, "forbidden");
    let (status, _) = http(
        &server,
        "GET",
        "/v1/models",
        &[("Host", "evil.example:80")],
        "",
    );
    assert_eq!(status, 403);
    let (status, reply) = completions(&server, &[("Origin", "http://evil.example")], &body);
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = completions(
        &server,
        &[
            ("Origin", "http://evil.example"),
            ("Content-Type", "text/plain"),
        ],
        &body,
    );
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = completions(&server, &[("Content-Type", "text/plain")], &body);
    assert_eq!(status, 415, "{reply}");
    assert_eq!(error_of(&reply).0, "invalid_request_error");
    // localhost and its own origin pass
    let host = format!("localhost:{}", server.addr.port());
    let origin = format!("http://127.0.0.1:{}", server.addr.port());
    let (status, reply) = completions(
        &server,
        &[("Host", host.as_str()), ("Origin", origin.as_str())],
        &body,
    );
    assert_eq!(status, 200, "{reply}");
}

#[test]
fn the_api_key_is_checked_and_required_beyond_loopback() {
    let server = serve_with(
        Arc::new(ScoringMock::default()),
        ServerOptions {
            api_key: Some("sesame".into()),
            ..ServerOptions::default()
        },
    );
    let body = serde_json::json!({"model": "wl-test", "messages": chat_of(3)}).to_string();
    let (status, reply) = completions(&server, &[], &body);
    assert_eq!(status, 401);
    assert_eq!(error_of(&reply).2, "invalid_api_key");
    let (status, _) = http(
        &server,
        "GET",
        "/v1/models",
        &[("Authorization", "Bearer wrong")],
        "",
    );
    assert_eq!(status, 401);
    let (status, reply) = completions(&server, &[("Authorization", "Bearer sesame")], &body);
    assert_eq!(status, 200, "{reply}");
    let (status, _) = http(&server, "GET", "/health", &[], "");
    assert_eq!(status, 200);
    // Beyond loopback without a key: refused before binding.
    let refused = spawn(
        Arc::new(ScoringMock::default()),
        ServerOptions::default(),
        "0.0.0.0:0".parse().unwrap(),
    );
    assert!(
        matches!(
            refused,
            Err(worldloom_model_server::ServerError::NeedsApiKey(_))
        ),
        "{:?}",
        refused.err()
    );
}

#[test]
fn bodies_are_bounded_with_an_openai_413() {
    let server = serve_with(
        Arc::new(ScoringMock::default()),
        ServerOptions {
            max_body_bytes: Some(1000),
            ..ServerOptions::default()
        },
    );
    let big = serde_json::json!({"model": "wl-test", "messages": chat_of(600)}).to_string();
    assert!(big.len() > 1000);
    let (status, reply) = completions(&server, &[], &big);
    assert_eq!(status, 413, "{reply}");
    assert_eq!(error_of(&reply).2, "request_too_large");
    // The default bound follows the context (64 tokens: the 4 MiB floor);
    // a larger declared body is refused before it is read.
    let server = serve_with(Arc::new(ScoringMock::default()), ServerOptions::default());
    let (status, reply) = http(
        &server,
        "POST",
        "/v1/chat/completions",
        &[("Content-Length", "5000000")],
        "",
    );
    assert_eq!(status, 413, "{reply}");
}

#[test]
fn queued_streams_keep_clients_waiting_without_timing_out() {
    let mock = SlowMock::with_steps(20);
    let max_running = mock.max_running.clone();
    let server = serve_with(
        Arc::new(mock),
        ServerOptions {
            keepalive_ms: 50,
            ..ServerOptions::default()
        },
    );
    // Each prediction takes ≥ 400 ms; the third waits ≥ 800 ms in the queue,
    // longer than the clients' 300 ms read timeout.
    let engine = Arc::new(client_with_timeout(&server, true, 300));
    assert_each_echoed(engine, 3);
    assert_eq!(max_running.load(Ordering::SeqCst), 1);
}

#[test]
fn the_tiny_checkpoint_samples_n_choices_with_logprobs_and_knows_its_context() {
    use worldloom_engine::loading::{LoadOptions, load_model};
    use worldloom_engine::{LocalEngine, LocalEngineOptions};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model");
    let model = load_model(&dir, &LoadOptions::default()).unwrap();
    let engine = LocalEngine::from_dir(model, &dir, LocalEngineOptions::default()).unwrap();
    let server = serve_with(Arc::new(engine), ServerOptions::default());
    let (status, body) = http(&server, "GET", "/v1/models/wl-test", &[], "");
    assert_eq!(status, 200);
    assert_eq!(body["max_model_len"], 4096);
    let chat = serde_json::json!([{"role": "user", "content": "$ ls"}]);
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat, "n": 2, "seed": 3, "temperature": 1.0,
            "top_p": 1.0, "top_k": 0, "max_tokens": 8, "logprobs": true, "top_logprobs": 2,
            "stop_after_observation": false, "chat_template_kwargs": {"enable_thinking": false}}),
    );
    assert_eq!(status, 200, "{body}");
    let choices = body["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    let mut scored = 0;
    let mut texts = Vec::new();
    for c in choices {
        let content = c["logprobs"]["content"].as_array().unwrap();
        assert!(!content.is_empty() && content.len() <= 8, "{c}");
        for entry in content {
            let lp = entry["logprob"].as_f64().unwrap();
            assert!(lp <= 0.0, "{entry}");
            let top = entry["top_logprobs"].as_array().unwrap();
            assert_eq!(top.len(), 2, "{entry}");
            assert!(top[0]["logprob"].as_f64().unwrap() >= top[1]["logprob"].as_f64().unwrap());
        }
        scored += content.len();
        texts.push(
            content
                .iter()
                .map(|e| e["token"].as_str().unwrap())
                .collect::<String>(),
        );
    }
    assert_eq!(
        body["usage"]["completion_tokens"].as_u64().unwrap() as usize,
        scored
    );
    assert_ne!(texts[0], texts[1], "seeds 3 and 4 sample differently");
    // prompt + 5000 > 4096
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": [{"role": "user", "content": "$ ls"}], "max_tokens": 5000}),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body).2, "context_length_exceeded");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("maximum context length is 4096 tokens"),
        "{message}"
    );
}

#[test]
fn a_drafting_server_answers_the_same_with_speculation_on_or_off_and_counts_the_drafts() {
    use worldloom_engine::draft::Drafter;
    use worldloom_engine::loading::{LoadOptions, load_model};
    use worldloom_engine::local::{DrafterFactory, Drafting};
    use worldloom_engine::{LocalEngine, LocalEngineOptions};
    /// Proposes the same three tokens every time (the random model's
    /// output matches nothing a real drafter would propose).
    struct Fixed;
    impl Drafter for Fixed {
        fn draft(&mut self, _output: &[u32], max: usize) -> Vec<u32> {
            [5u32, 6, 7].into_iter().take(max).collect()
        }
        fn accepted(&mut self, _proposed: usize, _accepted: usize) {}
    }
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model");
    let model = load_model(&dir, &LoadOptions::default()).unwrap();
    let fixed: DrafterFactory =
        Arc::new(|_: &[u32], _: &[u32]| Box::new(Fixed) as Box<dyn Drafter>);
    let options = LocalEngineOptions {
        drafting: Drafting::Custom(fixed),
        ..LocalEngineOptions::default()
    };
    let engine = LocalEngine::from_dir(model, &dir, options).unwrap();
    let server = serve_with(Arc::new(engine), ServerOptions::default());
    let chat = serde_json::json!([
        {"role": "user", "content": "$ ls"},
        {"role": "assistant", "content": "src README.md notes.txt src README.md notes.txt"},
        {"role": "user", "content": "$ ls"},
    ]);
    let ask = |speculative: Option<bool>| {
        let mut request = serde_json::json!({"model": "wl-test", "messages": chat, "temperature": 0.0,
            "max_tokens": 24, "stop_after_observation": false});
        if let Some(on) = speculative {
            request["speculative"] = serde_json::json!(on);
        }
        let (status, body) = post(&server, request);
        assert_eq!(status, 200, "{body}");
        body
    };
    let drafted = ask(None);
    let plain = ask(Some(false));
    assert_eq!(
        drafted["choices"][0]["message"], plain["choices"][0]["message"],
        "greedy output is the same with and without drafts"
    );
    let details = &drafted["usage"]["completion_tokens_details"];
    let accepted = details["accepted_prediction_tokens"].as_u64().unwrap();
    let rejected = details["rejected_prediction_tokens"].as_u64().unwrap();
    assert!(accepted + rejected > 0, "{details}");
    assert!(
        plain["usage"].get("completion_tokens_details").is_none(),
        "{}",
        plain["usage"]
    );
    let (status, body) = post(
        &server,
        serde_json::json!({"model": "wl-test", "messages": chat, "speculative": "yes"}),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body).1, "speculative");
}

/// An engine whose answer is cut by the token limit inside the reasoning
/// the prompt opened (it settles nothing itself).
struct CutAtLimit;

impl WorldModel for CutAtLimit {
    fn name(&self) -> String {
        "cut".into()
    }

    fn predict(&self, _request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut parser = OutputParser::new(true);
        for event in EngineEvent::from_delta(parser.push("The file is created. <predicted_")) {
            tx.send(event).unwrap();
        }
        for event in EngineEvent::from_delta(parser.flush()) {
            tx.send(event).unwrap();
        }
        let stats = GenerationStats {
            completion_tokens: 8,
            stop_reason: Some(StopReason::MaxTokens),
            ..Default::default()
        };
        tx.send(EngineEvent::Done {
            stats,
            output: parser.finish_output(),
        })
        .unwrap();
        Ok(PredictionStream {
            events: rx,
            cancel: CancelToken::new(),
        })
    }
}

/// `request` predicted by `engine` and drained as every caller drains it.
fn drained(engine: &dyn WorldModel, request: PredictRequest) -> worldloom_engine::Collected {
    worldloom_engine::collect(
        engine.predict(request).unwrap(),
        &CancelToken::new(),
        None,
        |_| {},
    )
    .unwrap()
}

#[test]
fn an_answer_cut_inside_reasoning_has_the_same_status_through_the_server() {
    use worldloom_core::OutputStatus;
    let request = || PredictRequest::new(shell_chat(), GenerationParams::default());
    // The engine itself, drained as every caller drains it.
    let direct = drained(&CutAtLimit, request());
    assert_eq!(direct.output.parsed.status, OutputStatus::Truncated);
    assert_eq!(direct.output.parsed.observation, None);
    let server = serve(Arc::new(CutAtLimit));
    for stream in [true, false] {
        let served = drained(&client(&server, stream), request());
        let at = format!("stream={stream}");
        assert_eq!(
            served.stats.stop_reason,
            Some(StopReason::MaxTokens),
            "{at}"
        );
        assert_eq!(served.output.parsed.status, OutputStatus::Truncated, "{at}");
        assert_eq!(served.output.parsed.observation, None, "{at}");
        assert_eq!(
            served.output.parsed.reasoning, direct.output.parsed.reasoning,
            "{at}"
        );
        assert_eq!(served.output.answer, "", "{at}");
    }
}
