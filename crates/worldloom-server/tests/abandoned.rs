//! An import whose client goes away stops reading: the server marks the
//! request abandoned when the connection closes, instead of keeping a core
//! busy for nobody. Measured by this process's CPU time, so this file holds
//! one test (nothing else runs in the process while it measures).

#![cfg(target_os = "linux")]

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use worldloom_api::Studio;
use worldloom_server::{ServeOptions, start};

/// This process's CPU time (user + system), in seconds, from `/proc`.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
    // The fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    // Clock ticks are 100 a second on Linux.
    ticks / 100.0
}

#[test]
fn an_import_stops_when_its_client_goes_away() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    // 3 GiB, sparse: seconds of reading and hashing, none of disk.
    let huge = dir.path().join("huge.jsonl");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(3 << 30))
        .expect("huge");
    let studio = Arc::new(Studio::open(&dir.path().join("ws.worldloom")).expect("studio"));
    let options = ServeOptions {
        port: 0,
        ui_dir: Some(dir.path().join("no-ui")),
        ..ServeOptions::default()
    };
    let server = rt.block_on(start(studio, options)).expect("start");
    let addr = server.addr;
    let body = serde_json::json!({"paths": [huge.display().to_string()]}).to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "POST /api/import_files HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.token,
        body.len()
    )
    .expect("request");
    // The import is under way; the client goes away.
    std::thread::sleep(Duration::from_millis(300));
    drop(stream);
    std::thread::sleep(Duration::from_millis(700));
    let before = cpu_secs();
    std::thread::sleep(Duration::from_secs(1));
    let busy = cpu_secs() - before;
    assert!(
        busy < 0.3,
        "the import kept reading after its client went away: {busy:.2} s of CPU in 1 s"
    );
    rt.block_on(server.stop()).expect("stop");
}
