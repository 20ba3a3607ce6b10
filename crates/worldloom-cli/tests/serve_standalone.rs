//! `worldloom serve` from a binary copied out of the build folder: the built
//! user interface travels inside the binary.
//!
//! Needs the front end built before the binary (`ui/dist`, as
//! `scripts/test.sh` does). Without it the test fails under CI (`CI=true`)
//! and is skipped, with a message, elsewhere.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `worldloom serve` child process; killed on drop.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` over plain HTTP/1.1; the status and the body bytes.
fn get(port: u16, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "expected a sized body: {head}"
    );
    (status, raw[split + 4..].to_vec())
}

/// The checkout's built front end, or `None` (with the reason) when there is
/// none.
fn built_ui() -> Result<PathBuf, String> {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist");
    match std::fs::read_to_string(dist.join("index.html")) {
        Ok(html) if !html.contains("user interface not built") => Ok(dist),
        Ok(_) => Err("ui/dist/index.html is the \"not built\" placeholder".into()),
        Err(e) => Err(format!("ui/dist/index.html: {e}")),
    }
}

#[test]
fn serve_from_a_copied_binary_serves_the_embedded_ui() {
    let dist = match built_ui() {
        Ok(dist) => dist,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI builds the front end before cargo (scripts/test.sh), but {why}")
        }
        Err(why) => {
            eprintln!(
                "skipped: {why}; build the front end (npm --prefix ui ci && npm --prefix ui run build) and rerun"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir
        .path()
        .join(format!("worldloom{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(env!("CARGO_BIN_EXE_worldloom"), &bin).expect("copy the binary");
    let mut child = Command::new(&bin)
        .args(["serve", "--port", "0", "--workspace", "ws.worldloom"])
        .current_dir(dir.path())
        .env_remove("WORLDLOOM_UI_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run serve");
    let stdout = child.stdout.take().expect("stdout");
    let served = Served(child);
    let mut ui_line = String::new();
    let mut url = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("stdout line");
        if let Some(rest) = line.strip_prefix("user interface: ") {
            ui_line = rest.to_string();
        }
        if let Some(rest) = line.strip_prefix("Worldloom studio: ") {
            url = Some(rest.to_string());
            break;
        }
    }
    let url = url.expect("serve prints its URL");
    assert!(
        ui_line.starts_with("built in ("),
        "user interface: {ui_line:?}"
    );
    let rest = url.strip_prefix("http://127.0.0.1:").expect("loopback URL");
    let (port, query) = rest.split_once('/').expect("port and path");
    let port: u16 = port.parse().expect("port");
    let token = query.strip_prefix("?token=").expect("token in the URL");
    assert_eq!(token.len(), 64);

    let (status, index) = get(port, &format!("/?token={token}"));
    let index = String::from_utf8(index).expect("utf-8 page");
    assert_eq!(status, 200, "{index}");
    assert!(!index.contains("not built"), "{index}");
    let expected = std::fs::read_to_string(dist.join("index.html")).expect("index.html");
    assert_eq!(index, expected);

    // The script the page loads, byte for byte as built.
    let script = index
        .split("src=\"./assets/")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the page loads a script from ./assets/");
    let (status, body) = get(port, &format!("/assets/{script}?token={token}"));
    assert_eq!(status, 200);
    let built = std::fs::read(dist.join("assets").join(script)).expect("built asset");
    assert_eq!(body.len(), built.len());
    assert!(
        body == built,
        "the served asset differs from ui/dist/assets/{script}"
    );
    drop(served);
}
