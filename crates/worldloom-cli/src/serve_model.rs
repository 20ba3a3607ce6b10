//! `worldloom serve-model`: serve a world model as an OpenAI-compatible
//! endpoint (see the `worldloom-model-server` crate for the protocol).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use worldloom_model_server::{ServerOptions, check_exposure, serve};
use worldloom_predict::engines::EngineSpec;

use crate::engines::{DraftKind, build, local_spec};

/// Engines `serve-model` can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServedEngine {
    /// The Qwen3.5-MoE model of `--model-dir`, on candle.
    Local,
    /// The stale-state baseline (predicts the current state unchanged).
    Copy,
}

/// Arguments of `worldloom serve-model`.
#[derive(Debug, Args)]
pub struct ServeModelArgs {
    /// Model directory (config.json, *.safetensors, tokenizer.json, chat
    /// template) or GGUF file (tokenizer files beside it); required for
    /// `--engine local`.
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// Which engine to serve.
    #[arg(long, value_enum, default_value = "local")]
    pub engine: ServedEngine,
    /// Address to listen on. Anything but a loopback address exposes the
    /// model to the network and needs an API key (`--api-key`).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model id listed at /v1/models and required in requests (default: the
    /// model directory's name, or `copy`).
    #[arg(long)]
    pub model_name: Option<String>,
    /// Device for the local engine: `cpu`, `cuda`, `cuda:N` or `metal`.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Speculative decoding on the local engine
    /// (`observation`: drafted from the current observation; `prompt-lookup`;
    /// `off`): the same greedy output (sampled: the same distribution),
    /// fewer forward passes where drafts hold. A request turns it off for
    /// itself with `"speculative": false`.
    #[arg(long, value_enum, default_value = "observation")]
    pub draft: DraftKind,
    /// Predictions run at once; further requests wait in a first-come
    /// queue and run one after another.
    #[arg(long, default_value_t = 1)]
    pub max_concurrent: usize,
    /// API key clients must send as `Authorization: Bearer KEY` (default:
    /// the `WORLDLOOM_API_KEY` environment variable). Required when `--host`
    /// is not a loopback address.
    #[arg(long)]
    pub api_key: Option<String>,
    /// Largest request body in bytes (default: what the model's context can
    /// hold, 16 bytes per token plus 1 MiB, at least 4 MiB; 32 MiB when the
    /// context is unknown).
    #[arg(long)]
    pub max_body_bytes: Option<usize>,
}

/// The environment variable `--api-key` defaults to.
pub const API_KEY_ENV: &str = "WORLDLOOM_API_KEY";

/// Runs `worldloom serve-model` until Ctrl-C.
pub fn run(args: &ServeModelArgs) -> anyhow::Result<()> {
    // Through the one engine builder (`worldloom_predict::engines`).
    let (spec, default_name) = match args.engine {
        ServedEngine::Copy => (EngineSpec::Copy, "copy".to_owned()),
        ServedEngine::Local => {
            let Some(dir) = &args.model_dir else {
                bail!("--engine local needs --model-dir DIR")
            };
            let name = dir
                .canonicalize()
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "local".to_owned());
            (local_spec(dir, &args.device, args.draft), name)
        }
    };
    let built = build(spec)?;
    let default_params = built.default_params.unwrap_or_default();
    let engine = built.model;
    let model_id = args.model_name.clone().unwrap_or(default_name);
    let ip: std::net::IpAddr = args
        .host
        .parse()
        .with_context(|| format!("--host {} is not an IP address", args.host))?;
    let api_key = args
        .api_key
        .clone()
        .or_else(|| std::env::var(API_KEY_ENV).ok())
        .filter(|k| !k.is_empty());
    let addr = SocketAddr::new(ip, args.port);
    let options = ServerOptions {
        model_id,
        max_concurrent: args.max_concurrent,
        default_params,
        api_key,
        max_body_bytes: args.max_body_bytes,
        ..ServerOptions::default()
    };
    check_exposure(addr, &options)?;
    let (model_id, name) = (options.model_id.clone(), engine.name());
    serve_until_ctrl_c(
        addr,
        |bound| outln!("serving `{model_id}` ({name}) at http://{bound}/v1"),
        |listener, shutdown| serve(listener, engine, options, shutdown),
    )
}

/// Serves on a new multi-threaded Tokio runtime until Ctrl-C: warns on
/// stderr when `addr` is off loopback, binds it, calls `announce` with the
/// bound address (it prints the first stdout line, which tests and scripts
/// read), then runs `serve` with the listener and the Ctrl-C shutdown future.
/// Shared by `serve-model` and `serve-env`.
///
/// Errors: the runtime cannot start; `addr` cannot be bound; the server
/// stops with an error.
pub(crate) fn serve_until_ctrl_c<Fut>(
    addr: SocketAddr,
    announce: impl FnOnce(SocketAddr),
    serve: impl FnOnce(tokio::net::TcpListener, Pin<Box<dyn Future<Output = ()> + Send>>) -> Fut,
) -> anyhow::Result<()>
where
    Fut: Future<Output = std::io::Result<()>>,
{
    let ip = addr.ip();
    if !ip.is_loopback() {
        eprintln!("warning: listening on {ip}, which is reachable from other machines");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        announce(listener.local_addr()?);
        serve(
            listener,
            Box::pin(async {
                let _ = tokio::signal::ctrl_c().await;
            }),
        )
        .await
        .context("server stopped")
    })
}
