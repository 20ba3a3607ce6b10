//! The world-model engine a command asks for (`eval`, `serve-env`): one
//! place that turns `--engine copy|replay|local|openai` and its options into
//! an engine.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use worldloom_engine::WorldModel;
use worldloom_engine::baseline::CopyEngine;
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::pool::EnginePool;
use worldloom_eval::run::replay_engine;

/// Limits on talking to an OpenAI-compatible endpoint, shared by the
/// commands that do (`eval --engine openai`, `judge`); they bound the
/// `/v1/models` probe as well as every request.
#[derive(Debug, Clone, Args)]
pub struct EndpointArgs {
    /// Seconds allowed for establishing a connection.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub connect_timeout_s: f64,
    /// Longest silence, in seconds, before the response headers and then
    /// between bytes of the body.
    #[arg(long, default_value_t = 600.0, value_parser = positive_seconds)]
    pub read_timeout_s: f64,
    /// Retries after a 429 or 5xx answer (so at most this + 1 attempts).
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
}

impl EndpointArgs {
    /// `config` with these limits, the read timeout capped at `cap_ms`.
    pub fn apply(&self, config: OpenAiConfig, cap_ms: Option<u64>) -> OpenAiConfig {
        let read_timeout_ms = seconds_to_ms(self.read_timeout_s);
        OpenAiConfig {
            connect_timeout_ms: seconds_to_ms(self.connect_timeout_s),
            read_timeout_ms: cap_ms.map_or(read_timeout_ms, |cap| read_timeout_ms.min(cap)),
            max_retries: self.retries,
            ..config
        }
    }
}

/// Parses a positive, finite number of seconds.
fn positive_seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|e| format!("`{text}` is not a number of seconds: {e}"))?;
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!("`{text}`: seconds must be positive"))
    }
}

/// Seconds as whole milliseconds, at least 1.
fn seconds_to_ms(seconds: f64) -> u64 {
    ((seconds * 1000.0).round() as u64).max(1)
}

/// Engines a command can predict with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineKind {
    /// OpenAI-compatible endpoints (`--base-url`, `--model`).
    Openai,
    /// The local Qwen3.5-MoE model of `--model-dir` on candle (the engine
    /// thread runs one prediction at a time).
    Local,
    /// The stale-state baseline (predicts the current state unchanged).
    Copy,
    /// Answers recorded in an earlier predictions file (`--replay FILE`).
    Replay,
}

/// What a command line says about its engine.
#[derive(Debug, Clone, Copy)]
pub struct EngineSpec<'a> {
    /// Which engine.
    pub kind: EngineKind,
    /// `--replay FILE` (replay).
    pub replay: Option<&'a Path>,
    /// `--model-dir DIR` (local: a model directory or GGUF file).
    pub model_dir: Option<&'a Path>,
    /// `--device` (local).
    pub device: &'a str,
    /// `--base-url` (openai): one endpoint, or several servers of the same
    /// model spread by least outstanding requests ([`EnginePool`]).
    pub base_urls: &'a [String],
    /// `--model` (openai).
    pub model: Option<&'a str>,
    /// `--api-key-env` (openai).
    pub api_key_env: Option<&'a str>,
    /// Streaming requests (openai; `--no-stream` turns it off).
    pub stream: bool,
    /// Connection limits (openai).
    pub endpoint: &'a EndpointArgs,
    /// Milliseconds one request may take at most (a row's or a step's
    /// limit); caps `--read-timeout-s`.
    pub request_cap_ms: u64,
}

/// Checks the options `spec.kind` needs are there, before any slow work.
///
/// # Errors
/// Names the missing option.
pub fn check_spec(spec: &EngineSpec<'_>) -> anyhow::Result<()> {
    match spec.kind {
        EngineKind::Copy => Ok(()),
        EngineKind::Replay if spec.replay.is_none() => bail!("--engine replay needs --replay FILE"),
        EngineKind::Local if spec.model_dir.is_none() => {
            bail!("--engine local needs --model-dir DIR")
        }
        EngineKind::Openai if spec.model.is_none() || spec.base_urls.is_empty() => {
            bail!("--engine openai needs --base-url URL and --model NAME")
        }
        _ => Ok(()),
    }
}

/// Makes the engine `spec` describes. An OpenAI-compatible endpoint must
/// list the model (`/v1/models`); several base URLs become one pool.
///
/// # Errors
/// A missing option (see [`check_spec`]); a replay file or model that does
/// not load; an endpoint that does not answer or list the model (naming
/// its `--base-url`).
pub fn make_engine(spec: &EngineSpec<'_>) -> anyhow::Result<Arc<dyn WorldModel>> {
    check_spec(spec)?;
    Ok(match spec.kind {
        EngineKind::Copy => Arc::new(CopyEngine),
        EngineKind::Replay => {
            let file = spec.replay.context("--engine replay needs --replay FILE")?;
            Arc::new(replay_engine(file)?)
        }
        EngineKind::Local => {
            let dir = spec
                .model_dir
                .context("--engine local needs --model-dir DIR")?;
            crate::serve_model::local_engine(dir, spec.device)?.0
        }
        EngineKind::Openai => {
            let model = spec
                .model
                .context("--engine openai needs --base-url URL and --model NAME")?;
            let mut members: Vec<Arc<dyn WorldModel>> = Vec::new();
            for base_url in spec.base_urls {
                let config = OpenAiConfig {
                    base_url: base_url.clone(),
                    model: model.to_owned(),
                    api_key_env: spec.api_key_env.map(str::to_owned),
                    stream: spec.stream,
                    ..OpenAiConfig::default()
                };
                let engine =
                    OpenAiEngine::new(spec.endpoint.apply(config, Some(spec.request_cap_ms)))?;
                engine
                    .check_model()
                    .with_context(|| format!("--base-url {base_url}"))?;
                members.push(Arc::new(engine));
            }
            if members.len() == 1 {
                members.remove(0)
            } else {
                Arc::new(EnginePool::new(members)?)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> EndpointArgs {
        EndpointArgs {
            connect_timeout_s: 1.0,
            read_timeout_s: 1.0,
            retries: 0,
        }
    }

    #[test]
    fn missing_options_are_named_and_copy_needs_none() {
        let endpoint = endpoint();
        let spec = EngineSpec {
            kind: EngineKind::Copy,
            replay: None,
            model_dir: None,
            device: "cpu",
            base_urls: &[],
            model: None,
            api_key_env: None,
            stream: true,
            endpoint: &endpoint,
            request_cap_ms: 1000,
        };
        assert_eq!(make_engine(&spec).expect("copy").name(), "copy");
        let err = |kind| {
            make_engine(&EngineSpec { kind, ..spec })
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            err(EngineKind::Replay),
            "--engine replay needs --replay FILE"
        );
        assert_eq!(
            err(EngineKind::Local),
            "--engine local needs --model-dir DIR"
        );
        assert_eq!(
            err(EngineKind::Openai),
            "--engine openai needs --base-url URL and --model NAME"
        );
        let urls = ["http://127.0.0.1:9/v1".to_owned()];
        let no_model = EngineSpec {
            kind: EngineKind::Openai,
            base_urls: &urls,
            ..spec
        };
        assert!(check_spec(&no_model).is_err());
    }
}
