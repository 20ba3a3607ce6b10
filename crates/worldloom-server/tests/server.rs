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
    /// Asserts the status and that the JSON error message contains `needle`.
    fn assert_error(&self, status: u16, needle: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert!(
            self.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(needle)),
            "{}",
            self.body
        );
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
    let mut stream = connect(addr, 20);
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
    read_reply(stream)
}

/// A connection to `addr` whose reads time out after `secs` seconds.
fn connect(addr: SocketAddr, secs: u64) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(secs)))
        .expect("timeout");
    stream
}

/// The reply read to the end of `stream`.
fn read_reply(mut stream: TcpStream) -> Reply {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    parse_reply(&raw)
}

/// A reply read whole from the connection.
fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).to_string();
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

/// Options for port 0 and a fresh token, with no built UI (in `dir`).
fn no_ui(dir: &Path) -> ServeOptions {
    ServeOptions {
        port: 0,
        ui_dir: Some(dir.join("no-ui")),
        token: None,
        ..ServeOptions::default()
    }
}

/// A runtime, a temporary folder, and a server over a new workspace in it
/// (dropped in that order: the server first).
fn serve_in_tempdir(
    options: ServeOptions,
) -> (tokio::runtime::Runtime, tempfile::TempDir, RunningServer) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(&rt, dir.path(), options);
    (rt, dir, server)
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
    let (status, reader) = open_events(addr, token);
    assert_eq!(status, 200);
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
    let options = no_ui(dir.path());
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
    assert_eq!(r.json()["schema_version"], 8);
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
        ..ServeOptions::default()
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
    let (_rt, _dir, server) = serve_in_tempdir(ServeOptions::default());
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
    let (_rt, _dir, server) = serve_in_tempdir(ServeOptions::default());
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

/// The status line and the raw rest of a `GET /api/events` opened on a new
/// connection (the stream is kept open while the reader lives).
fn open_events(addr: SocketAddr, token: &str) -> (u16, BufReader<TcpStream>) {
    let mut stream = connect(addr, 20);
    write!(stream, "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n")
        .expect("write");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    (status, reader)
}

#[test]
fn event_streams_are_capped_and_slots_come_back() {
    let (rt, _dir, server) = serve_in_tempdir(ServeOptions {
        max_event_streams: Some(3),
        ..ServeOptions::default()
    });
    let (addr, token) = (server.addr, server.token.clone());
    let mut open: Vec<BufReader<TcpStream>> = (0..3).map(|_| event_stream(addr, &token)).collect();
    for reader in &mut open {
        assert_eq!(next_event(reader)["type"], "hello");
    }
    // One over the cap: a 503 with the JSON error body.
    let r = request(addr, "GET", "/api/events", &[bearer(&token)], "");
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "internal");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 3")),
        "{}",
        r.body
    );
    // A client goes away: its slot is freed (when the server notices the
    // closed connection, at the latest on the next keep-alive comment).
    drop(open.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let reader = loop {
        let (status, reader) = open_events(addr, &token);
        if status == 200 {
            break reader;
        }
        assert_eq!(status, 503);
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was not freed"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut reader = reader;
    // Skip the rest of the head, then the hello event.
    assert_eq!(next_event(&mut reader)["type"], "hello");
    drop(open);
    drop(reader);
    rt.block_on(server.stop()).expect("stop");
}

#[test]
fn idle_and_half_sent_requests_are_disconnected() {
    let (rt, _dir, server) = serve_in_tempdir(ServeOptions {
        header_read_timeout: Some(Duration::from_millis(500)),
        ..ServeOptions::default()
    });
    let addr = server.addr;
    for partial in [
        "",
        "GET /api/workspace_info HT",
        "GET / HTTP/1.1\r\nHost: 127",
    ] {
        let started = std::time::Instant::now();
        let mut stream = connect(addr, 30);
        stream.write_all(partial.as_bytes()).expect("write");
        let mut rest = Vec::new();
        // The server closes the connection (EOF, or a reset); a read
        // timeout (the server waiting on) fails the test.
        match stream.read_to_end(&mut rest) {
            Ok(_) => {}
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "{partial:?}: the server kept the connection open: {e}"
            ),
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{partial:?}: closed after {:?}",
            started.elapsed()
        );
    }
    // A complete request is still served.
    let r = api(addr, &server.token, "workspace_info", "{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["schema_version"], 8);
    rt.block_on(server.stop()).expect("stop");
}

/// A JSONL file in the AgentWorldBench shape of the sample, its rows repeated
/// under new ids until it is at least `size` bytes; and how many copies.
fn big_agentworldbench(size: usize) -> (String, usize) {
    let sample = std::fs::read_to_string(sample("agentworldbench/agentworldbench_sample.jsonl"))
        .expect("sample");
    let rows: Vec<serde_json::Value> = sample
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    let mut out = String::new();
    let mut copy = 0i64;
    while out.len() < size {
        copy += 1;
        for row in &rows {
            let mut row = row.clone();
            let id = row["id"].as_i64().expect("id") + copy * 1_000_000;
            row["id"] = id.into();
            out.push_str(&row.to_string());
            out.push('\n');
        }
    }
    (out, usize::try_from(copy).expect("copies"))
}

/// A POST that declares `length` bytes and `Expect: 100-continue`, and sends
/// no body: the reply to the head alone.
fn refused_early(addr: SocketAddr, token: &str, command: &str, length: usize) -> Reply {
    let mut stream = connect(addr, 20);
    write!(
        stream,
        "POST /api/{command} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\nExpect: 100-continue\r\nContent-Length: {length}\r\n\r\n"
    )
    .expect("write");
    read_reply(stream)
}

/// A POST of `head` then spaces up to `length` bytes in 64 KiB chunks (no
/// declared length).
fn chunked_post(addr: SocketAddr, token: &str, command: &str, head: &[u8], length: usize) -> Reply {
    let mut stream = connect(addr, 20);
    let mut req = format!(
        "POST /api/{command} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    // A chunk of size 0 ends the body: an empty head sends none.
    if !head.is_empty() {
        req.extend_from_slice(format!("{:x}\r\n", head.len()).as_bytes());
        req.extend_from_slice(head);
        req.extend_from_slice(b"\r\n");
    }
    let mut left = length - head.len();
    while left > 0 {
        let n = left.min(64 * 1024);
        req.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        req.extend(std::iter::repeat_n(b' ', n));
        req.extend_from_slice(b"\r\n");
        left -= n;
    }
    req.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&req).expect("write");
    read_reply(stream)
}

/// The head of one file in a `POST /api/upload` body: its relative path,
/// a newline, its length in decimal, a newline (its bytes follow).
fn upload_head(name: &str, len: usize) -> String {
    format!("{name}\n{len}\n")
}

#[test]
fn large_uploads_import_and_bodies_over_the_limit_get_a_json_413() {
    let (rt, _dir, server) = serve_in_tempdir(ServeOptions {
        upload_limit: Some(8 * 1024 * 1024),
        ..ServeOptions::default()
    });
    let (addr, token) = (server.addr, server.token.clone());

    // The sample's trajectories, imported from its path.
    let per_copy = import_sample(addr, &token, "agentworldbench/agentworldbench_sample.jsonl")
        .json()["imported"]
        .as_array()
        .expect("imported")
        .len();
    assert!(per_copy > 0);

    // A 4 MB upload (over the 2 MiB of other commands) imports.
    let (file, copies) = big_agentworldbench(4_000_000);
    let body = format!("{}{file}", upload_head("big.jsonl", file.len()));
    assert!(body.len() > 2 * 1024 * 1024, "{}", body.len());
    let r = api(addr, &token, "upload", &body);
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(2000)]);
    let reply = r.json();
    assert_eq!(reply["failed"], serde_json::json!([]));
    let imported = reply["imported"].as_array().expect("imported");
    assert_eq!(imported.len(), per_copy * copies);
    assert!(
        imported
            .iter()
            .all(|t| t["added"] == true && t["path"] == "big.jsonl")
    );
    let listed = api(addr, &token, "list_trajectories", "{}");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.json()["trajectories"].as_array().map(Vec::len),
        Some(per_copy * (copies + 1)),
    );

    // Over the upload limit: the JSON 413 as soon as the declared length is
    // read (the client waits for `100 Continue` and sends nothing more).
    let r = refused_early(addr, &token, "upload", 8 * 1024 * 1024 + 1);
    r.assert_error(413, "larger than 8388608 bytes");
    assert_eq!(r.json()["error"]["code"], "bad_request");
    assert_eq!(r.header("content-type"), Some("application/json"));

    // Other commands keep the small limit, with the same JSON 413, whether
    // the length is declared or the body streams past it (chunked).
    let r = refused_early(addr, &token, "workspace_info", 2 * 1024 * 1024 + 1);
    r.assert_error(413, "larger than 2097152 bytes");
    assert_eq!(r.json()["error"]["code"], "bad_request");
    for command in ["workspace_info", "upload"] {
        let (limit, head) = if command == "upload" {
            let limit = 8 * 1024 * 1024;
            (limit, upload_head("big.jsonl", limit))
        } else {
            (2 * 1024 * 1024, String::new())
        };
        let r = chunked_post(addr, &token, command, head.as_bytes(), limit + 1);
        assert_eq!(r.status, 413, "{command}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "bad_request", "{command}");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    rt.block_on(server.stop()).expect("stop");
}

#[test]
fn endpoint_keys_are_stored_over_http_and_never_echoed() {
    const KEY: &str = "sk-worldloom-http-key-81c2";
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let studio = Arc::new(Studio::open(&dir.path().join("ws.worldloom")).expect("studio"));
    // CI has no OS keyring: the keys live in memory for this test.
    studio.set_key_store(Arc::new(worldloom_api::keys::MemoryKeyStore::default()));
    let options = no_ui(dir.path());
    let server = rt.block_on(start(studio, options)).expect("start");
    let (addr, token) = (server.addr, server.token.clone());
    let account = r#"{"account": "http://127.0.0.1:8000/v1"}"#;

    let r = api(addr, &token, "endpoint_key_status", account);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        serde_json::json!({"account": "http://127.0.0.1:8000/v1", "stored": false})
    );
    let body = serde_json::json!({"account": "http://127.0.0.1:8000/v1", "key": KEY}).to_string();
    let r = api(addr, &token, "set_endpoint_key", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!r.body.contains(KEY), "{}", r.body);
    assert_eq!(r.json()["stored"], true);
    let r = api(addr, &token, "endpoint_key_status", account);
    assert_eq!(r.json()["stored"], true);
    assert!(!r.body.contains(KEY), "{}", r.body);
    // The key commands need the token like every other.
    let r = request(addr, "POST", "/api/set_endpoint_key", &[], &body);
    assert_eq!(r.status, 401);
    // An empty key removes it; a blank account is a bad request.
    let r = api(
        addr,
        &token,
        "set_endpoint_key",
        r#"{"account": "http://127.0.0.1:8000/v1", "key": ""}"#,
    );
    assert_eq!(r.json()["stored"], false);
    let r = api(addr, &token, "endpoint_key_status", account);
    assert_eq!(r.json()["stored"], false);
    let r = api(
        addr,
        &token,
        "set_endpoint_key",
        r#"{"account": " ", "key": "k"}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "bad_request");
    rt.block_on(server.stop()).expect("stop");
}

/// A `POST /api/upload` body: per file, its percent-encoded path, `\n`, its
/// length, `\n`, its bytes.
fn upload_stream(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes) in files {
        let encoded: String = name
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        out.extend_from_slice(format!("{encoded}\n{}\n", bytes.len()).as_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// `POST /api/upload` with `body` (raw bytes), with or without the token.
fn post_upload(addr: SocketAddr, token: Option<&str>, body: &[u8]) -> Reply {
    let mut stream = connect(addr, 60);
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST /api/upload HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("head");
    // The body in pieces that cut headers and files anywhere.
    for piece in body.chunks(7_777) {
        stream.write_all(piece).expect("body");
    }
    read_reply(stream)
}

#[test]
fn uploads_stream_as_a_raw_body_and_import() {
    let (rt, _dir, server) = serve_in_tempdir(ServeOptions {
        upload_limit: Some(8 * 1024 * 1024),
        ..ServeOptions::default()
    });
    let (addr, token) = (server.addr, server.token.clone());

    // A 5 MiB JSONL file under a name that needs encoding, and an Android
    // trajectory folder's files under their folder.
    let (big, copies) = big_agentworldbench(4_000_000);
    let android = Path::new(&sample("android/settings_airplane-mode_trajectory")).to_path_buf();
    let mut files: Vec<(String, Vec<u8>)> = vec![("my rows.jsonl".into(), big.into_bytes())];
    let mut names: Vec<_> = std::fs::read_dir(&android)
        .expect("android")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let bytes = std::fs::read(android.join(&name)).expect("file");
        files.push((format!("airplane/{name}"), bytes));
    }
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let body = upload_stream(&refs);

    // The token is checked as for every command.
    let r = post_upload(addr, None, &upload_stream(&[("a.json", b"{}")]));
    assert_eq!(r.status, 401, "{}", r.body);

    let r = post_upload(addr, Some(&token), &body);
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(2000)]);
    let reply = r.json();
    assert_eq!(reply["failed"], serde_json::json!([]));
    let imported = reply["imported"].as_array().expect("imported");
    let rows = imported
        .iter()
        .filter(|t| t["path"] == "my rows.jsonl" && t["added"] == true)
        .count();
    assert!(
        rows > 0 && rows % copies == 0,
        "{rows} rows of {copies} copies"
    );
    assert_eq!(
        imported
            .iter()
            .filter(|t| t["path"] == "airplane" && t["added"] == true)
            .count(),
        1,
        "{reply}"
    );

    // Refused: a path out of the folder, a body cut inside a file, and a
    // declared length over the upload limit (the JSON 413).
    let r = post_upload(addr, Some(&token), &upload_stream(&[("../x.json", b"{}")]));
    r.assert_error(400, "`..`");
    let mut cut = upload_stream(&[("a.json", b"{\"format\": 1}")]);
    cut.truncate(cut.len() - 3);
    let r = post_upload(addr, Some(&token), &cut);
    r.assert_error(400, "the body ends 3 bytes before the end of a.json");
    let r = refused_early(addr, &token, "upload", 8 * 1024 * 1024 + 1);
    r.assert_error(413, "larger than 8388608 bytes");
    // A header whose length is no number.
    let r = post_upload(addr, Some(&token), b"a.json\nten\n{}");
    r.assert_error(400, "a.json: `ten` is not a length in bytes");
    rt.block_on(server.stop()).expect("stop");
}

/// A PNG of `w`×`h` pixels of one colour (the core's fixture encoder).
fn png(w: u32, h: u32) -> Vec<u8> {
    worldloom_core::screenshot::solid_png(w, h, [200, 200, 200])
}

#[test]
fn screenshots_are_served_as_stored_behind_the_token() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(&rt, dir.path(), no_ui(dir.path()));
    let (addr, token) = (server.addr, server.token.clone());
    let folder = dir.path().join("phone");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(
        folder.join("step_00.xml"),
        "<hierarchy><node bounds=\"[0,0][40,80]\" class=\"android.widget.FrameLayout\" /></hierarchy>",
    )
    .expect("dump");
    std::fs::write(
        folder.join("actions.jsonl"),
        "{\"step\": 0, \"action\": null}\n",
    )
    .expect("actions");
    let bytes = png(40, 80);
    std::fs::write(folder.join("step_00.png"), &bytes).expect("png");
    let body = serde_json::json!({"paths": [folder.display().to_string()]}).to_string();
    let imported = api(addr, &token, "import_files", &body).json();
    let id = imported["imported"][0]["trajectory_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let turn = api(
        addr,
        &token,
        "get_turn",
        &format!("{{\"trajectory_id\": \"{id}\", \"node_id\": 0}}"),
    )
    .json();
    let shot = &turn["real_screenshot"];
    assert_eq!(shot["media_type"], "image/png");
    assert_eq!(
        (shot["width_px"].as_u64(), shot["height_px"].as_u64()),
        (Some(40), Some(80))
    );
    assert_eq!(shot["byte_length"].as_u64(), Some(bytes.len() as u64));
    let sha = shot["sha256"].as_str().expect("sha").to_owned();
    let route = format!("/api/screenshots/{sha}");

    // No token: refused like every API route.
    request(addr, "GET", &route, &[], "").assert_error(401, "access token");
    // The bytes as stored, with their type, under the same headers as the API.
    for (path, headers) in [
        (route.clone(), vec![bearer(&token)]),
        (format!("{route}?token={token}"), vec![]),
    ] {
        let r = request(addr, "GET", &path, &headers, "");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.header("content-type"), Some("image/png"));
        assert_eq!(
            r.header("content-length"),
            Some(bytes.len().to_string().as_str())
        );
        assert_eq!(r.body, String::from_utf8_lossy(&bytes));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert_eq!(r.header("content-security-policy"), Some(APP_CSP));
    }
    request(
        addr,
        "GET",
        "/api/screenshots/not-a-hash",
        &[bearer(&token)],
        "",
    )
    .assert_error(400, "is not a SHA-256");
    let unknown = "0".repeat(64);
    request(
        addr,
        "GET",
        &format!("/api/screenshots/{unknown}"),
        &[bearer(&token)],
        "",
    )
    .assert_error(404, "no screenshot");
    // The page may show images it made from fetched bytes (blob:), and
    // nothing else was opened: images from the app, data: and blob: only.
    let img_src = APP_CSP
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("img-src"));
    assert_eq!(img_src, Some("img-src 'self' data: blob:"));
}
