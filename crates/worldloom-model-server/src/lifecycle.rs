//! Binding, serving and stopping: the router with its door, [`serve`] until
//! a shutdown future completes (predictions in flight cancelled), and a
//! server on its own thread and runtime ([`BackgroundServer`], [`spawn`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::sync::Semaphore;
use worldloom_engine::{CancelToken, WorldModel};

use crate::door::guard;
use crate::routes::{method_not_allowed, model, models, not_found};
use crate::stream::chat_completions;
use crate::{AppState, ServerOptions, body_limit};

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// A non-loopback address was asked for without an API key.
    #[error(
        "{0} is reachable from other machines: an API key is required (--api-key or WORLDLOOM_API_KEY)"
    )]
    NeedsApiKey(SocketAddr),
    /// The server's runtime could not start or stopped with an error.
    #[error("server runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Refuses a non-loopback address without a (non-empty) API key.
///
/// # Errors
/// [`ServerError::NeedsApiKey`].
pub fn check_exposure(addr: SocketAddr, options: &ServerOptions) -> Result<(), ServerError> {
    let has_key = options.api_key.as_deref().is_some_and(|k| !k.is_empty());
    if !addr.ip().is_loopback() && !has_key {
        return Err(ServerError::NeedsApiKey(addr));
    }
    Ok(())
}

/// The routes, ready to serve on `addr` (the address the `Host` and
/// `Origin` checks expect).
pub fn router(engine: Arc<dyn WorldModel>, options: ServerOptions, addr: SocketAddr) -> Router {
    build(engine, options, addr).0
}

fn build(
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    addr: SocketAddr,
) -> (Router, Arc<AppState>) {
    let body_limit = options
        .max_body_bytes
        .unwrap_or_else(|| body_limit(engine.context_tokens()));
    let state = Arc::new(AppState {
        engine,
        model_id: options.model_id,
        default_params: options.default_params,
        max_concurrent: options.max_concurrent.max(1),
        queue: Semaphore::new(options.max_concurrent.max(1)),
        next_id: AtomicU64::new(1),
        stopping: CancelToken::new(),
        api_key: options.api_key.filter(|k| !k.is_empty()),
        body_limit,
        keepalive: Duration::from_millis(options.keepalive_ms.max(1)),
        log_requests: options.log_requests,
        addr,
    });
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/health", get(|| async { "ok" }))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state.clone());
    (router, state)
}

/// Serves on `listener` until `shutdown` completes; then cancels the
/// predictions in flight (their streams end with `finish_reason: "stop"`)
/// and returns once their responses are sent.
///
/// Errors: the listener's I/O errors; `InvalidInput` when the listener is
/// not on a loopback address and no API key is set.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    check_exposure(addr, &options)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let (router, state) = build(engine, options, addr);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            state.stopping.cancel();
        })
        .await
}

/// A server future running on its own thread and Tokio runtime, stopped
/// (shutdown signalled, thread joined) by [`BackgroundServer::stop`] or on
/// drop. Shared by `serve-model` and `serve-env` for tests and embedding.
pub struct BackgroundServer {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// Binds `addr` on a new Tokio runtime (two workers) and runs
    /// `serve(listener, shutdown)` on it in a new thread named
    /// `thread_name`; `shutdown` completes when the server is stopped.
    /// Returns the bound address (port resolved when 0 was asked for) and
    /// the server.
    ///
    /// # Errors
    /// [`ServerError::Bind`] when the address is taken or not allowed;
    /// [`ServerError::Runtime`] when the runtime or the thread cannot start.
    pub fn bind<F, Fut>(
        addr: SocketAddr,
        thread_name: &str,
        serve: F,
    ) -> Result<(SocketAddr, Self), ServerError>
    where
        F: FnOnce(
                tokio::net::TcpListener,
                std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
            ) -> Fut
            + Send
            + 'static,
        Fut: Future,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|source| ServerError::Bind { addr, source })?;
        let bound = listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(thread_name.to_owned())
            .spawn(move || {
                let shutdown = Box::pin(async move {
                    let _ = stop_rx.await;
                });
                let _ = runtime.block_on(serve(listener, shutdown));
            })?;
        let server = Self {
            stop: Some(stop_tx),
            thread: Some(thread),
        };
        Ok((bound, server))
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `serve-model` running on its own thread and runtime (for tests and
/// embedding). Dropping it stops the server.
pub struct RunningServer {
    /// The bound address (port resolved when 0 was asked for).
    pub addr: SocketAddr,
    server: BackgroundServer,
}

impl RunningServer {
    /// Base URL of the API, e.g. `http://127.0.0.1:8000/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// Binds `addr` and serves on a new thread with its own runtime.
///
/// Errors: [`ServerError::NeedsApiKey`] for a non-loopback address without
/// an API key; [`ServerError::Bind`] when the address is taken or not
/// allowed; [`ServerError::Runtime`] when the runtime cannot start.
pub fn spawn(
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    addr: SocketAddr,
) -> Result<RunningServer, ServerError> {
    check_exposure(addr, &options)?;
    let (addr, server) =
        BackgroundServer::bind(addr, "worldloom-model-server", move |listener, shutdown| {
            serve(listener, engine, options, shutdown)
        })?;
    Ok(RunningServer { addr, server })
}
