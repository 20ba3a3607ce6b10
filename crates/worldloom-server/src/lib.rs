//! The Worldloom studio over HTTP: the `worldloom-api` commands as
//! `POST /api/<command>` (JSON in, JSON out), events as server-sent events
//! on `GET /api/events`, and the built user interface as static files.
//!
//! The user interface is the `ui/dist` folder of the checkout, embedded in
//! the binary when it is built (`build.rs`), so a `worldloom` copied or
//! installed on its own serves the studio. A folder on disk overrides it for
//! development (`--ui-dir DIR` or `$WORLDLOOM_UI_DIR`); a binary built before
//! the front end answers with a page that says how to build it.
//!
//! Security model (the server runs on a researcher's machine and shows
//! hostile model output):
//! - it binds `127.0.0.1` only;
//! - every `/api/` request needs the run's random token (`Authorization:
//!   Bearer <token>` or `?token=<token>`), compared in constant time; the
//!   token is printed in the URL at start-up;
//! - the `Host` header must name the loopback address and port (a DNS
//!   rebinding page cannot talk to it), and a cross-origin `Origin` is refused;
//! - every response carries a strict Content-Security-Policy
//!   ([`APP_CSP`]: scripts, styles, fonts, connections and frames from the
//!   app's own origin only; no plugins, no `<base>`, no form posts, no
//!   framing by other sites), `X-Content-Type-Options: nosniff`,
//!   `Referrer-Policy: no-referrer` (the token never leaks in a referrer) and
//!   `Cache-Control: no-store` for API replies.
//!
//! Error replies are `{"error": {"code", "message"}}` with the
//! [`worldloom_api::ErrorCode`] and an HTTP status from [`status_of`].
//!
//! Limits (each in [`ServeOptions`]): request bodies of at most
//! [`DEFAULT_BODY_LIMIT`] bytes, except `POST /api/upload` (up to
//! [`DEFAULT_UPLOAD_LIMIT`]: each file written once, as it arrives); a
//! larger body is answered `413` with the JSON error body. At most
//! [`DEFAULT_MAX_EVENT_STREAMS`] open `/api/events` streams (beyond: `503`);
//! a connection that has not sent a complete request head within
//! [`DEFAULT_HEADER_READ_TIMEOUT`] is closed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use futures_util::stream::{self, Stream};
use tokio::sync::{Semaphore, broadcast};
use worldloom_api::{ApiError, ErrorCode, Studio, StudioEvent};

mod screenshots;

/// The Content-Security-Policy sent with every response. It matches the
/// policy the UI build puts in its `<meta>` tag and adds `frame-ancestors`,
/// which only a header can carry.
pub const APP_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; frame-src 'self'; object-src 'none'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Errors of starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (0 = any free port).
        port: u16,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// No random token could be made.
    #[error("cannot make an access token: {0}")]
    Token(String),
}

/// How to run the server.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// A built UI folder on disk to serve instead of the embedded one
    /// (development); `None` takes [`default_ui`]. A folder without
    /// `index.html` serves the "not built" page.
    pub ui_dir: Option<PathBuf>,
    /// The access token; `None` makes a random one (32 bytes, hex).
    pub token: Option<String>,
    /// The largest `POST /api/upload` body in bytes; `None` takes
    /// [`DEFAULT_UPLOAD_LIMIT`].
    pub upload_limit: Option<u64>,
    /// How many `/api/events` streams may be open at once; `None` takes
    /// [`DEFAULT_MAX_EVENT_STREAMS`].
    pub max_event_streams: Option<usize>,
    /// How long a connection may take to send a complete request head
    /// (request line and headers); `None` takes
    /// [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Option<Duration>,
}

/// The largest body of an API command: 2 MiB.
pub const DEFAULT_BODY_LIMIT: u64 = 2 * 1024 * 1024;

/// The default largest `POST /api/upload` body: 1 GiB (trajectory files,
/// each written to a temporary folder as it arrives).
pub const DEFAULT_UPLOAD_LIMIT: u64 = 1024 * 1024 * 1024;

/// The default number of `/api/events` streams open at once: 32.
pub const DEFAULT_MAX_EVENT_STREAMS: usize = 32;

/// The default time a connection has to send a complete request head: 30 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The limits the router enforces ([`router_with_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest body of a command, in bytes.
    pub body: u64,
    /// The largest `POST /api/upload` body, in bytes.
    pub upload: u64,
    /// How many `/api/events` streams may be open at once.
    pub event_streams: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body: DEFAULT_BODY_LIMIT,
            upload: DEFAULT_UPLOAD_LIMIT,
            event_streams: DEFAULT_MAX_EVENT_STREAMS,
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct RunningServer {
    /// The bound address (127.0.0.1 and the actual port).
    pub addr: SocketAddr,
    /// The access token.
    pub token: String,
    /// Where the UI is served from; `None` when there is none (the pages
    /// then say how to build it).
    pub ui: Option<UiSource>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// The URL to open: `http://127.0.0.1:<port>/?token=<token>`.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    /// Stops accepting connections and waits for the server task to end.
    ///
    /// # Errors
    /// The server task's I/O error, if it failed.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }

    /// Waits until the server task ends (it does not, unless it fails).
    ///
    /// # Errors
    /// The server task's I/O error.
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }
}

/// A random token: 32 bytes from the operating system, lowercase hex.
///
/// # Errors
/// [`ServerError::Token`] when the system has no randomness to give.
pub fn random_token() -> Result<String, ServerError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServerError::Token(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_ui.rs"));
}

/// Where the served user interface comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiSource {
    /// The `ui/dist` folder embedded in this binary when it was built.
    Embedded {
        /// How many files it holds.
        files: usize,
    },
    /// A built UI folder on disk (`--ui-dir`, `$WORLDLOOM_UI_DIR`), read on
    /// each request: the development override.
    Dir(PathBuf),
}

impl std::fmt::Display for UiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UiSource::Embedded { files } => write!(f, "built in ({files} files)"),
            UiSource::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// The UI embedded in this binary; `None` when it was built before the
/// front end (no `ui/dist/index.html` then).
pub fn embedded_ui() -> Option<UiSource> {
    embedded_file("index.html").map(|_| UiSource::Embedded {
        files: embedded::EMBEDDED_UI.len(),
    })
}

/// The UI served when no folder is given: the folder `$WORLDLOOM_UI_DIR`
/// names (when it holds `index.html`), else the embedded one.
pub fn default_ui() -> Option<UiSource> {
    std::env::var_os("WORLDLOOM_UI_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("index.html").is_file())
        .map(UiSource::Dir)
        .or_else(embedded_ui)
}

/// The embedded file at `rel` (relative to `ui/dist`, `/`-separated).
fn embedded_file(rel: &str) -> Option<&'static [u8]> {
    let files = embedded::EMBEDDED_UI;
    files
        .binary_search_by(|(path, _)| (*path).cmp(rel))
        .ok()
        .map(|i| files[i].1)
}

#[derive(Clone)]
struct AppState {
    studio: Arc<Studio>,
    token: Arc<str>,
    port: u16,
    ui: Option<Arc<UiSource>>,
    events: broadcast::Sender<String>,
    limits: Limits,
    streams: Arc<Semaphore>,
}

/// The HTTP status of an API error code.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        ErrorCode::UnknownCommand | ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::ImportFailed => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::Unsupported => StatusCode::NOT_IMPLEMENTED,
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::ExportFailed | ErrorCode::Storage | ErrorCode::Internal => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

fn error_response(err: &ApiError) -> Response {
    let body = serde_json::to_vec(&err.body())
        .unwrap_or_else(|_| b"{\"error\":{\"code\":\"internal\",\"message\":\"\"}}".to_vec());
    let mut resp = (status_of(err.code), body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Builds the router for `studio` (exposed for tests; [`start`] serves it).
/// `port` is the port the `Host` header must name; `ui` the user interface
/// to serve (`None`: the "not built" page).
pub fn router(studio: Arc<Studio>, token: String, port: u16, ui: Option<UiSource>) -> Router {
    router_with_limits(studio, token, port, ui, Limits::default())
}

/// [`router`] with the given body and stream limits.
pub fn router_with_limits(
    studio: Arc<Studio>,
    token: String,
    port: u16,
    ui: Option<UiSource>,
    limits: Limits,
) -> Router {
    // Steps stream one event per text piece: room for a burst of them
    // before a slow reader is told to refresh ("lagged").
    let (events, _) = broadcast::channel::<String>(4096);
    let sender = events.clone();
    studio.add_event_sink(Box::new(move |event: &StudioEvent| {
        if let Ok(json) = serde_json::to_string(event) {
            // No subscriber is not an error.
            let _ = sender.send(json);
        }
    }));
    let state = AppState {
        studio,
        token: token.into(),
        port,
        ui: ui.map(Arc::new),
        events,
        limits,
        streams: Arc::new(Semaphore::new(limits.event_streams)),
    };
    Router::new()
        .route("/api/events", get(events_handler))
        .route("/api/upload", post(upload_handler))
        .route(
            "/api/screenshots/{sha256}",
            get(screenshots::screenshot_handler),
        )
        .route("/api/{command}", post(api_handler))
        .fallback(static_handler)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Starts serving `studio` on 127.0.0.1.
///
/// # Errors
/// [`ServerError::Bind`] when the port is taken; [`ServerError::Token`].
pub async fn start(
    studio: Arc<Studio>,
    options: ServeOptions,
) -> Result<RunningServer, ServerError> {
    let token = match options.token {
        Some(t) => t,
        None => random_token()?,
    };
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, options.port))
        .await
        .map_err(|source| ServerError::Bind {
            port: options.port,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        port: options.port,
        source,
    })?;
    // A folder without `index.html` is no built UI: the message page shows.
    let ui = match options.ui_dir {
        Some(dir) => Some(dir)
            .filter(|d| d.join("index.html").is_file())
            .map(UiSource::Dir),
        None => default_ui(),
    };
    let limits = Limits {
        upload: options.upload_limit.unwrap_or(DEFAULT_UPLOAD_LIMIT),
        event_streams: options
            .max_event_streams
            .unwrap_or(DEFAULT_MAX_EVENT_STREAMS),
        ..Limits::default()
    };
    let header_timeout = options
        .header_read_timeout
        .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT);
    let app = router_with_limits(studio, token.clone(), addr.port(), ui.clone(), limits);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_loop(listener, app, header_timeout, rx));
    Ok(RunningServer {
        addr,
        token,
        ui,
        shutdown: Some(tx),
        task,
    })
}

/// Accepts connections and serves each with hyper's HTTP/1 connection
/// builder (axum's `serve` has no header-read timeout). On `shutdown` it
/// stops accepting, asks open connections to finish their current request,
/// and returns when they have all closed.
async fn serve_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: Duration,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(());
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                // Out of file descriptors and the like: wait, then go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut closing = closing_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = closing.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    drop(closing_rx);
    let _ = closing_tx.send(());
    closing_tx.closed().await;
    Ok(())
}

/// What a refused `/api/` request without the right token is told.
const TOKEN_MESSAGE: &str = "missing or wrong access token: open the URL `worldloom serve` printed";

/// The access token a request carries: `Authorization: Bearer TOKEN`, else
/// `?token=TOKEN`.
fn token_of(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(t) = worldloom_door::bearer(headers) {
        return Some(t.to_string());
    }
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token=").map(str::to_string))
}

fn security_headers(headers: &mut HeaderMap, api: bool) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(APP_CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "permissions-policy",
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), usb=(), payment=()"),
    );
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// The door (`worldloom-door`: Host, Origin, and the token on `/api/`,
/// compared in constant time) for every request, and security headers on
/// every response.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let api = path.starts_with("/api/");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, state.port));
    let headers = request.headers();
    let refusal = worldloom_door::check_host(addr, headers)
        .and_then(|()| worldloom_door::check_origin(addr, headers))
        .and_then(|()| {
            if api {
                let token = token_of(headers, request.uri().query());
                worldloom_door::check_key(token.as_deref(), &state.token, TOKEN_MESSAGE)
            } else {
                Ok(())
            }
        })
        .err();
    let mut response = match refusal {
        Some(refusal) => {
            let mut r = error_response(&ApiError::new(ErrorCode::Unauthorized, refusal.message));
            *r.status_mut() = refusal.status;
            r
        }
        None => next.run(request).await,
    };
    security_headers(response.headers_mut(), api);
    response
}

/// The `413` JSON error for a body over `limit` bytes.
fn too_large(command: &str, limit: u64) -> Response {
    let mut r = error_response(&ApiError::bad_request(format!(
        "{command}: the request body is larger than {limit} bytes"
    )));
    *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    r
}

/// Why a body could not be read.
enum BodyError {
    /// Over the limit.
    TooLarge,
    /// The connection failed or the temporary file could not be written.
    Io(String),
}

/// The declared `Content-Length`, if any.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// Reads `body` into memory, at most `limit` bytes.
async fn read_small(body: Body, limit: u64) -> Result<Vec<u8>, BodyError> {
    let mut data = Vec::new();
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk: Bytes = chunk.map_err(|e| BodyError::Io(e.to_string()))?;
        if (data.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLarge);
        }
        data.extend_from_slice(&chunk);
    }
    Ok(data)
}

/// Parses a command body: empty (whitespace only) is `null`.
fn parse_body(command: &str, body: &[u8]) -> Result<serde_json::Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("{command}: body is not JSON: {e}")))
}

async fn api_handler(
    State(state): State<AppState>,
    UrlPath(command): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let limit = state.limits.body;
    if content_length(&headers).is_some_and(|n| n > limit) {
        return too_large(&command, limit);
    }
    let parsed = match read_small(body, limit).await {
        Ok(bytes) => parse_body(&command, &bytes),
        Err(BodyError::TooLarge) => return too_large(&command, limit),
        Err(BodyError::Io(e)) => Err(ApiError::bad_request(format!(
            "{command}: reading the body: {e}"
        ))),
    };
    let request = match parsed {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    let studio = state.studio.clone();
    // Set when this handler is dropped before the command ends (the client
    // went away): an import then stops reading.
    let abandoned = AbandonOnDrop::default();
    let flag = abandoned.0.clone();
    let result = tokio::task::spawn_blocking(move || {
        flag.run(|| worldloom_api::dispatch(&studio, &command, request))
    })
    .await;
    drop(abandoned);
    match result {
        Ok(Ok(value)) => {
            let mut resp = axum::Json(value).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        Ok(Err(err)) => error_response(&err),
        Err(join) => error_response(&ApiError::internal(format!("the command failed: {join}"))),
    }
}

/// Marks a request abandoned when dropped: the handler's future is dropped
/// when its client goes away, and the blocking command it started reads the
/// flag ([`worldloom_api::Abandoned`]).
#[derive(Default)]
struct AbandonOnDrop(worldloom_api::Abandoned);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Most bytes of one file's header in a `POST /api/upload` body.
const UPLOAD_HEADER_MAX_BYTES: usize = 16 * 1024;

/// Why an upload body was refused.
enum UploadError {
    /// Over the upload limit.
    TooLarge,
    /// Malformed, or a file that could not be written.
    Bad(ApiError),
}

/// Decodes `%XX` escapes (what `encodeURIComponent` writes).
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Writes the files of an upload body into `folder` as they arrive (each
/// file's bytes are written once and hashed on the way, never held whole;
/// the import reads each file once, to parse it), at most `limit` bytes
/// of body in all. The body is, per file: its relative path percent-encoded
/// (`encodeURIComponent`), `\n`, its length in bytes in decimal, `\n`, then
/// exactly that many bytes.
async fn receive_upload(
    body: Body,
    limit: u64,
    folder: &mut worldloom_api::UploadFolder,
) -> Result<(), UploadError> {
    let bad = |m: String| UploadError::Bad(ApiError::bad_request(format!("upload: {m}")));
    let mut header: Vec<u8> = Vec::new();
    // The file being written (hashed on the way) and the bytes it still
    // expects. Its writes are plain file writes of a body chunk each (into
    // the page cache), made on this task.
    let mut current: Option<(worldloom_api::UploadFile, u64)> = None;
    let mut received = 0u64;
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk: Bytes = chunk.map_err(|e| bad(format!("reading the body: {e}")))?;
        received += chunk.len() as u64;
        if received > limit {
            return Err(UploadError::TooLarge);
        }
        let mut rest: &[u8] = &chunk;
        while !rest.is_empty() {
            if let Some((file, left)) = current.as_mut() {
                let n = rest.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                file.write(&rest[..n]).map_err(UploadError::Bad)?;
                *left -= n as u64;
                rest = &rest[n..];
                if *left == 0
                    && let Some((file, _)) = current.take()
                {
                    folder.finish(file).map_err(UploadError::Bad)?;
                }
                continue;
            }
            // A header: the path line, then the length line.
            let newlines = header.iter().filter(|&&b| b == b'\n').count();
            let end = rest
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .nth(1 - newlines.min(1))
                .map(|(i, _)| i + 1);
            let take = end.unwrap_or(rest.len());
            header.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if header.len() > UPLOAD_HEADER_MAX_BYTES {
                return Err(bad(format!(
                    "a file's header is longer than {UPLOAD_HEADER_MAX_BYTES} bytes"
                )));
            }
            if end.is_none() {
                continue;
            }
            let text = String::from_utf8(std::mem::take(&mut header))
                .map_err(|_| bad("a file's header is not UTF-8".into()))?;
            let mut lines = text.lines();
            let (encoded, length) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
            let name = percent_decode(encoded)
                .ok_or_else(|| bad(format!("`{encoded}`: not a percent-encoded path")))?;
            let length: u64 = length
                .trim()
                .parse()
                .map_err(|_| bad(format!("{name}: `{length}` is not a length in bytes")))?;
            let file = folder.create(&name).map_err(UploadError::Bad)?;
            if length > 0 {
                current = Some((file, length));
            } else {
                folder.finish(file).map_err(UploadError::Bad)?;
            }
        }
    }
    if let Some((file, left)) = current {
        let name = file.relative_path().to_owned();
        return Err(bad(format!(
            "the body ends {left} bytes before the end of {name}"
        )));
    }
    if !header.is_empty() {
        return Err(bad("the body ends inside a file's header".into()));
    }
    Ok(())
}

/// `POST /api/upload`: a browser's files as one streamed body (see
/// [`receive_upload`] for its layout), each written once under a private
/// temporary folder as it arrives and then imported from there
/// ([`worldloom_api::UploadFolder`]); the reply is `import_files`'. The
/// token applies as to every command; the body may be up to
/// [`Limits::upload`] bytes.
async fn upload_handler(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let limit = state.limits.upload;
    if content_length(&headers).is_some_and(|n| n > limit) {
        return too_large("upload", limit);
    }
    let mut folder = match tokio::task::spawn_blocking(worldloom_api::UploadFolder::new).await {
        Ok(Ok(folder)) => folder,
        Ok(Err(e)) => return error_response(&e),
        Err(e) => return error_response(&ApiError::internal(format!("upload: {e}"))),
    };
    match receive_upload(body, limit, &mut folder).await {
        Ok(()) => {}
        Err(UploadError::TooLarge) => return too_large("upload", limit),
        Err(UploadError::Bad(e)) => return error_response(&e),
    }
    let studio = state.studio.clone();
    let abandoned = AbandonOnDrop::default();
    let flag = abandoned.0.clone();
    let result = tokio::task::spawn_blocking(move || flag.run(|| folder.import(&studio))).await;
    drop(abandoned);
    match result {
        Ok(Ok(reply)) => axum::Json(reply).into_response(),
        Ok(Err(err)) => error_response(&err),
        Err(join) => error_response(&ApiError::internal(format!("upload: {join}"))),
    }
}

async fn events_handler(State(state): State<AppState>) -> Response {
    // The slot is held by the stream and freed when it is dropped (the
    // client went away or the server stops).
    let Ok(permit) = state.streams.clone().try_acquire_owned() else {
        let mut r = error_response(&ApiError::new(
            ErrorCode::Internal,
            format!(
                "too many open event streams (at most {}); close another studio tab",
                state.limits.event_streams
            ),
        ));
        *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        return r;
    };
    event_stream(state, permit).into_response()
}

fn event_stream(
    state: AppState,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>> {
    let hello = serde_json::to_string(&StudioEvent::Hello {
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
    .unwrap_or_default();
    let rx = state.events.subscribe();
    let first = stream::once(async move { Ok(Event::default().data(hello)) });
    let rest = stream::unfold((rx, permit), |(mut rx, permit)| async move {
        match rx.recv().await {
            Ok(json) => Some((Ok(Event::default().data(json)), (rx, permit))),
            // A slow reader missed events: tell it to refresh everything.
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let json = serde_json::to_string(&StudioEvent::WorkspaceChanged {
                    trajectory_id: None,
                    kind: worldloom_api::types::StudioChangeKind::Lagged.into(),
                })
                .unwrap_or_default();
                Some((Ok(Event::default().data(json)), (rx, permit)))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    });
    Sse::new(futures_util::StreamExt::chain(first, rest)).keep_alive(KeepAlive::default())
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The page served when there is no built UI: the binary was built before
/// the front end, or the folder given instead has no `index.html`.
pub const MISSING_UI_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Worldloom studio: user interface not built</title></head>\n<body>\n\
<h1>The Worldloom user interface is not built</h1>\n\
<p>The server and its API are running, but this <code>worldloom</code> was built before the front end \
(<code>ui/dist/index.html</code>), or the folder given with <code>--ui-dir</code> has no <code>index.html</code>.</p>\n\
<p>Build the front end with <code>npm --prefix ui ci &amp;&amp; npm --prefix ui run build</code> in the Worldloom checkout \
and rebuild <code>worldloom</code> (it embeds <code>ui/dist</code>), \
or point <code>worldloom serve --ui-dir DIR</code> (or <code>WORLDLOOM_UI_DIR</code>) at a built copy, then reload this page.</p>\n\
</body></html>\n";

async fn static_handler(
    State(state): State<AppState>,
    method: Method,
    uri: axum::http::Uri,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return error_response(&ApiError::bad_request("only GET serves files"));
    }
    let Some(ui) = state.ui.as_deref() else {
        let mut r = (StatusCode::SERVICE_UNAVAILABLE, MISSING_UI_PAGE).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        return r;
    };
    let rel = uri.path().trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    let rel_path = Path::new(rel);
    if rel_path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return error_response(&ApiError::not_found(format!("no file {rel}")));
    }
    // Client-side routes (no extension) load the app.
    let fallback = rel_path.extension().is_none();
    let found = match ui {
        UiSource::Embedded { .. } => embedded_file(rel)
            .map(|bytes| (rel, bytes))
            .or_else(|| {
                embedded_file("index.html")
                    .filter(|_| fallback)
                    .map(|b| ("index.html", b))
            })
            .map(|(name, bytes)| (PathBuf::from(name), Body::from(bytes))),
        UiSource::Dir(dir) => {
            let mut file = dir.join(rel_path);
            if !file.is_file() && fallback {
                file = dir.join("index.html");
            }
            tokio::fs::read(&file)
                .await
                .ok()
                .map(|bytes| (file, Body::from(bytes)))
        }
    };
    match found {
        Some((file, body)) => {
            let mut r = Response::new(body);
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(&file)),
            );
            r
        }
        None => error_response(&ApiError::not_found(format!("no file {rel}"))),
    }
}
