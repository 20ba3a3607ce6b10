//! Throughput and latency of `serve-env` with concurrent WebSocket
//! sessions (a benchmark, not a test): steps/s and p50/p99 step latency for
//! 1, 8 and 32 sessions, against the `copy` baseline and against a pool of
//! three mock OpenAI-compatible endpoints on 127.0.0.1. Every episode is
//! recorded into a temporary workspace, as the server does; a last run
//! leaves recording out, to show its cost.
//!
//! `cargo run -p worldloom-env --example bench_sessions [SECONDS_PER_RUN]`

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use worldloom_engine::WorldModel;
use worldloom_engine::baseline::CopyEngine;
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::pool::EnginePool;
use worldloom_env::{EnvConfig, Environment, Recorder, ServeEnvOptions, TaskSet, spawn};

/// A mock endpoint answering every chat completion at once (non-streaming).
fn mock_endpoint(stop: Arc<AtomicBool>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    listener.set_nonblocking(true).expect("nonblocking");
    let completion = json!({"id": "c", "object": "chat.completion", "created": 0, "model": "mock",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
        "content": "<predicted_observation>\nRootWebArea 'Mugs', focused\n\t[21] link 'Cart (1)'\n</predicted_observation>"}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    .to_string();
    let models = json!({"object": "list", "data": [{"id": "mock", "object": "model"}]}).to_string();
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            };
            let (completion, models) = (completion.clone(), models.clone());
            std::thread::spawn(move || {
                let _ = s.set_nonblocking(false);
                // Keep-alive: answer requests on this connection until it closes.
                let mut buf: Vec<u8> = Vec::new();
                let mut chunk = [0u8; 16384];
                loop {
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break Some(i + 4);
                        }
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => break None,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let Some(head_end) = head_end else { return };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = if head.starts_with("get /v1/models") {
                        &models
                    } else {
                        &completion
                    };
                    buf.drain(..head_end + len);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

struct Run {
    steps: usize,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
}

async fn session(addr: SocketAddr, until: Instant, seed: u64) -> Vec<f64> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("connect");
    let mut latencies = Vec::new();
    let ask = |message: Value| Message::Text(message.to_string().into());
    let mut need_reset = true;
    while Instant::now() < until {
        if need_reset {
            ws.send(ask(
                json!({"type": "reset", "data": {"domain": "web", "seed": seed}}),
            ))
            .await
            .expect("send");
            let _ = ws.next().await;
        }
        let started = Instant::now();
        ws.send(ask(
            json!({"type": "step", "data": {"action": "click('21')"}}),
        ))
        .await
        .expect("send");
        let Some(Ok(Message::Text(answer))) = ws.next().await else {
            panic!("no answer")
        };
        latencies.push(started.elapsed().as_secs_f64() * 1e3);
        let answer: Value = serde_json::from_str(answer.as_str()).expect("json");
        assert_eq!(answer["type"], "observation", "{answer}");
        need_reset = answer["data"]["done"] == true;
    }
    let _ = ws.send(ask(json!({"type": "close"}))).await;
    latencies
}

fn run(engine: Arc<dyn WorldModel>, sessions: usize, seconds: f64, dir: Option<&Path>) -> Run {
    let tasks = TaskSet::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl"),
    )
    .expect("tasks");
    let recorder = dir.map(|d| {
        let name = format!("bench-{sessions}-{}.worldloom", engine.name().len());
        Recorder::open(&d.join(name)).expect("workspace")
    });
    let env = Environment::new(tasks, engine, recorder, EnvConfig::default());
    let options = ServeEnvOptions {
        max_sessions: sessions,
        ..ServeEnvOptions::default()
    };
    let server =
        spawn(Arc::new(env), options, "127.0.0.1:0".parse().expect("addr")).expect("server");
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let mut all: Vec<f64> = runtime.block_on(async {
        let tasks: Vec<_> = (0..sessions)
            .map(|i| tokio::spawn(session(addr, until, i as u64)))
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("session"));
        }
        all
    });
    let elapsed = started.elapsed().as_secs_f64();
    server.stop();
    all.sort_by(f64::total_cmp);
    let pct = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize];
    Run {
        steps: all.len(),
        seconds: elapsed,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
    }
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let dir = tempfile::tempdir().expect("tmp");
    let stop = Arc::new(AtomicBool::new(false));
    let pool: Vec<Arc<dyn WorldModel>> = (0..3)
        .map(|_| {
            let config = OpenAiConfig {
                base_url: mock_endpoint(stop.clone()),
                model: "mock".into(),
                stream: false,
                ..OpenAiConfig::default()
            };
            Arc::new(OpenAiEngine::new(config).expect("client")) as Arc<dyn WorldModel>
        })
        .collect();
    let pool: Arc<dyn WorldModel> = Arc::new(EnginePool::new(pool).expect("pool"));
    println!("| engine | sessions | steps | steps/s | p50 step (ms) | p99 step (ms) |");
    println!("|---|---|---|---|---|---|");
    let copy: Arc<dyn WorldModel> = Arc::new(CopyEngine);
    let runs = [
        ("copy", copy.clone(), true),
        ("mock OpenAI pool of 3", pool, true),
        ("copy, not recorded", copy, false),
    ];
    for (label, engine, recorded) in runs {
        for sessions in [1, 8, 32] {
            let r = run(
                engine.clone(),
                sessions,
                seconds,
                recorded.then(|| dir.path()),
            );
            println!(
                "| {label} | {sessions} | {} | {:.0} | {:.2} | {:.2} |",
                r.steps,
                r.steps as f64 / r.seconds,
                r.p50_ms,
                r.p99_ms
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
}
