//! The HTTP server on a real loopback socket: token, Host and Origin checks,
//! security headers, the API convention, server-sent events and static files.
//! Requests are written by hand over `TcpStream` so that every header is
//! under the test's control.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use worldloom_api::Studio;
use worldloom_server::{APP_CSP, RunningServer, ServeOptions, start};

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").expect("head");
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

fn bearer(token: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {token}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn sample(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples")
        .join(rel)
        .display()
        .to_string()
}

/// A server over a new workspace in `dir`.
fn serve(rt: &tokio::runtime::Runtime, dir: &Path, options: ServeOptions) -> RunningServer {
    let studio = Arc::new(Studio::open(&dir.join("ws.worldloom")).expect("studio"));
    rt.block_on(start(studio, options)).expect("start")
}

/// `POST /api/<command>` with the token.
fn api(addr: SocketAddr, token: &str, command: &str, body: &str) -> Reply {
    request(
        addr,
        "POST",
        &format!("/api/{command}"),
        &[bearer(token)],
        body,
    )
}

/// Imports the sample at `rel` (under samples/) through the API.
fn import_sample(addr: SocketAddr, token: &str, rel: &str) -> Reply {
    let body = serde_json::json!({"paths": [sample(rel)]}).to_string();
    let r = api(addr, token, "import_files", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r
}

/// An open `/api/events` stream, its status line read and checked.
fn event_stream(addr: SocketAddr, token: &str) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(stream, "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n")
        .expect("write");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status");
    assert!(status_line.contains(" 200 "), "{status_line}");
    reader
}

/// The JSON of the next `data:` line of an event stream.
fn next_event(reader: &mut BufReader<TcpStream>) -> serde_json::Value {
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("read event line");
        if let Some(data) = line.trim_end().strip_prefix("data:") {
            return serde_json::from_str(data.trim()).expect("event JSON");
        }
    }
}

#[test]
fn api_needs_the_token_and_answers_json() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let options = ServeOptions {
        port: 0,
        ui_dir: Some(dir.path().join("no-ui")),
        token: None,
    };
    let server = serve(&rt, dir.path(), options);
    let addr = server.addr;
    assert_ne!(addr.port(), 0, "--port 0 picks a free port");
    assert!(addr.ip().is_loopback());
    assert_eq!(server.token.len(), 64);
    assert!(
        server
            .url()
            .starts_with(&format!("http://127.0.0.1:{}/?token=", addr.port()))
    );
    let token = server.token.clone();

    // No token, a wrong token: 401 with a classified error body.
    let r = request(addr, "POST", "/api/workspace_info", &[], "{}");
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "unauthorized");
    let r = request(
        addr,
        "POST",
        "/api/workspace_info",
        &[bearer("0".repeat(64).as_str())],
        "{}",
    );
    assert_eq!(r.status, 401);
    // The token in the header or in the query.
    let r = api(addr, &token, "workspace_info", "{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["schema_version"], 3);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let r = request(
        addr,
        "POST",
        &format!("/api/workspace_info?token={token}"),
        &[],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // Every response carries the security headers, errors included.
    for reply in [&r, &request(addr, "POST", "/api/x", &[], "")] {
        assert_eq!(reply.header("content-security-policy"), Some(APP_CSP));
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(reply.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(reply.header("x-frame-options"), Some("DENY"));
    }
    assert!(APP_CSP.contains("script-src 'self'") && APP_CSP.contains("frame-ancestors 'none'"));
    assert!(
        !APP_CSP.contains("unsafe-eval") && !APP_CSP.contains("script-src 'self' 'unsafe-inline'")
    );

    // A foreign Host (DNS rebinding) or Origin is refused even with the token.
    for (header, status) in [
        (("Host", "evil.example:80".to_string()), 403),
        (("Origin", "http://evil.example".to_string()), 403),
        (("Origin", format!("http://127.0.0.1:{}", addr.port())), 200),
    ] {
        let headers = [bearer(&token), header.clone()];
        let r = request(addr, "POST", "/api/workspace_info", &headers, "{}");
        assert_eq!(r.status, status, "{header:?}");
    }

    // Errors: status and code.
    for (command, body, status, code) in [
        ("nope", "{}", 404, "unknown_command"),
        ("get_turn", "{not json", 400, "bad_request"),
        (
            "get_trajectory",
            "{\"trajectory_id\": \"42\"}",
            404,
            "not_found",
        ),
    ] {
        let r = api(addr, &token, command, body);
        assert_eq!(
            (r.status, r.json()["error"]["code"].as_str()),
            (status, Some(code)),
            "{command}"
        );
    }

    // A real command round trip: import a sample, list it.
    let r = import_sample(addr, &token, "android/settings_airplane-mode_trajectory");
    assert_eq!(r.json()["imported"][0]["added"], true);
    let r = api(addr, &token, "list_trajectories", "{}");
    assert_eq!(r.json()["trajectories"][0]["domain"], "android");

    // Without a built UI, pages explain how to build it (and the API works).
    let r = request(addr, "GET", "/", &[], "");
    assert_eq!(r.status, 503);
    assert!(r.body.contains("npm --prefix ui ci"), "{}", r.body);
    assert_eq!(r.header("content-security-policy"), Some(APP_CSP));
    rt.block_on(server.stop()).expect("stop");
}

#[test]
fn serves_the_built_ui_and_refuses_path_escapes() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = dir.path().join("dist");
    std::fs::create_dir_all(ui.join("assets")).expect("mkdir");
    std::fs::write(
        ui.join("index.html"),
        "<!doctype html><title>studio</title>",
    )
    .expect("write");
    std::fs::write(ui.join("assets/app.js"), "console.log(1)").expect("write");
    std::fs::write(dir.path().join("secret.txt"), "secret").expect("write");
    let options = ServeOptions {
        port: 0,
        ui_dir: Some(ui),
        token: Some("t".repeat(64)),
    };
    let server = serve(&rt, dir.path(), options);
    let addr = server.addr;
    let r = request(addr, "GET", "/", &[], "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "<!doctype html><title>studio</title>");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("content-security-policy"), Some(APP_CSP));
    let r = request(addr, "GET", "/assets/app.js", &[], "");
    assert_eq!((r.status, r.body.as_str()), (200, "console.log(1)"));
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    // Client-side routes get the app; missing assets are 404.
    assert_eq!(request(addr, "GET", "/trajectories/3", &[], "").status, 200);
    assert_eq!(
        request(addr, "GET", "/assets/missing.js", &[], "").status,
        404
    );
    for escape in [
        "/../secret.txt",
        "/assets/../../secret.txt",
        "/%2e%2e/secret.txt",
    ] {
        let r = request(addr, "GET", escape, &[], "");
        assert!(
            !r.body.contains("secret") || r.status == 404,
            "{escape}: {} {}",
            r.status,
            r.body
        );
        assert_ne!(r.body, "secret");
    }
    rt.block_on(server.stop()).expect("stop");
}

#[test]
fn events_stream_over_sse() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(&rt, dir.path(), ServeOptions::default());
    let addr = server.addr;
    let token = server.token.clone();

    // Without the token the stream is refused.
    assert_eq!(request(addr, "GET", "/api/events", &[], "").status, 401);

    let mut reader = event_stream(addr, &token);
    let mut data_lines = vec![next_event(&mut reader)];
    // Make a change through the API: the stream reports it.
    import_sample(addr, &token, "os/thunar_rename_trajectory");
    data_lines.push(next_event(&mut reader));
    assert_eq!(data_lines[0]["type"], "hello");
    assert_eq!(data_lines[1]["type"], "workspace_changed");
    assert_eq!(data_lines[1]["kind"], "import");
    // The open stream would hold a graceful shutdown; dropping the runtime
    // ends the server.
    drop(reader);
    drop(server);
}

/// A step with the `copy` baseline over HTTP: `POST /api/step` answers at
/// once with a job id, and `/api/events` carries its `step_delta` events and
/// one `step_finished` with the stored prediction.
#[test]
fn a_step_streams_deltas_and_its_end_over_sse() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(&rt, dir.path(), ServeOptions::default());
    let addr = server.addr;
    let token = server.token.clone();
    let r = import_sample(addr, &token, "web/agentlab_larkmail-reply_6steps.json");
    let id = r.json()["imported"][0]["trajectory_id"]
        .as_str()
        .expect("id")
        .to_string();

    let mut reader = event_stream(addr, &token);
    let mut events: Vec<serde_json::Value> = Vec::new();
    let mut job = None;
    while !events.iter().any(|e| e["type"] == "step_finished") {
        let event = next_event(&mut reader);
        if event["type"] == "hello" && job.is_none() {
            let body =
                serde_json::json!({"trajectory_id": id, "node_id": 2, "context": "teacher-forced"})
                    .to_string();
            let r = api(addr, &token, "step", &body);
            assert_eq!(r.status, 200, "{}", r.body);
            job = r.json()["job_id"].as_str().map(str::to_string);
        }
        events.push(event);
    }
    let job = job.expect("job id");
    let deltas: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "step_delta" && e["job_id"] == job.as_str())
        .collect();
    assert!(!deltas.is_empty());
    let text: String = deltas
        .iter()
        .filter_map(|d| d["observation"].as_str())
        .collect();
    // The observation streams without its tags: the copy of the state the
    // action was taken from (node 1's real observation).
    let body =
        serde_json::json!({"trajectory_id": id, "node_id": 1, "prediction_id": null}).to_string();
    let r = request(addr, "POST", "/api/get_turn", &[bearer(&token)], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let real = r.json()["views"][0]["real"]["text"]
        .as_str()
        .expect("real text")
        .to_string();
    assert_eq!(text, real.trim());
    let fin = events
        .iter()
        .find(|e| e["type"] == "step_finished")
        .expect("finished");
    assert_eq!(fin["job_id"], job.as_str());
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["node_id"], 2);
    let prediction = fin["prediction_id"].as_u64().expect("stored prediction");
    // The stored prediction is the node's chosen one.
    let body = serde_json::json!({"trajectory_id": id, "node_id": 2}).to_string();
    let r = api(addr, &token, "list_predictions", &body);
    assert_eq!(r.json()["chosen_prediction_id"].as_u64(), Some(prediction));
    drop(reader);
    drop(server);
}
