//! What a command line says about its engine (`--engine
//! copy|replay|local|openai` and its options, the connection limits), made
//! into the one engine builder's input (`worldloom_predict::engines`) and
//! built there. `eval` and `serve-env` take the whole set; `step`,
//! `rollout`, `serve-model` and `judge` convert their own flags into the same
//! [`EngineSpec`] and call [`build`].

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use worldloom_engine::WorldModel;
use worldloom_engine::local::Drafting;
use worldloom_engine::openai::OpenAiConfig;
use worldloom_eval::run::replay_engine;
use worldloom_predict::engines::{
    BuiltEngine, EngineBuildError, EngineSpec, OpenAiSpec, build_engine,
};

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

/// Speculative decoding of the local engine's requests (`--draft`):
/// the engine drafts tokens, verifies them in one forward and keeps them by
/// the request's own rule: a greedy output is the same, a sampled one has
/// the same distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DraftKind {
    /// One token a forward.
    #[default]
    Off,
    /// Drafted from the aligned position in the current observation.
    Observation,
    /// Prompt lookup: after the latest match of the last tokens in the prompt.
    PromptLookup,
}

impl From<DraftKind> for Drafting {
    fn from(kind: DraftKind) -> Self {
        match kind {
            DraftKind::Off => Drafting::Off,
            DraftKind::Observation => Drafting::Observation,
            DraftKind::PromptLookup => Drafting::PromptLookup,
        }
    }
}

/// `--engine openai`'s options on a command line (`eval`, `serve-env`).
#[derive(Debug, Clone, Args)]
pub struct OpenaiArgs {
    /// API base URL for `--engine openai` (e.g. http://127.0.0.1:8000/v1);
    /// repeat it for several servers of the same model: each request goes
    /// to the one with the fewest requests in flight, and a request that
    /// fails before any output is retried on another.
    #[arg(long = "base-url")]
    pub base_urls: Vec<String>,
    /// Model name for `--engine openai` (must be listed by /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable holding the API key for `--engine openai`.
    #[arg(long)]
    pub api_key_env: Option<String>,
}

/// The local engine's options on a command line (`eval`, `serve-env`).
#[derive(Debug, Clone, Args)]
pub struct LocalArgs {
    /// Model directory or GGUF file for `--engine local`.
    #[arg(long)]
    pub model_dir: Option<std::path::PathBuf>,
    /// Device for `--engine local`: `cpu`, `cuda`, `cuda:N` or `metal`.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Speculative decoding on the local engine
    /// (`observation`: drafted from the current observation; `prompt-lookup`;
    /// `off`): the same greedy output (sampled: the same distribution),
    /// fewer forward passes where drafts hold.
    #[arg(long, value_enum, default_value = "off")]
    pub draft: DraftKind,
}

/// What a command line says about its engine.
#[derive(Debug, Clone, Copy)]
pub struct EngineFlags<'a> {
    /// Which engine.
    pub kind: EngineKind,
    /// `--replay FILE` (replay).
    pub replay: Option<&'a Path>,
    /// `--model-dir DIR` (local: a model directory or GGUF file).
    pub model_dir: Option<&'a Path>,
    /// `--device` (local).
    pub device: &'a str,
    /// `--draft` (local).
    pub draft: DraftKind,
    /// `--base-url` (openai): one endpoint, or several servers of the same
    /// model spread by least outstanding requests (an engine pool).
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

/// The options of every engine, for the commands that take the whole set
/// (`eval`, `serve-env`; the engine itself is their `--engine`).
#[derive(Debug, Clone, Args)]
pub struct EngineOptions {
    /// The local engine's model, device and drafting.
    #[command(flatten)]
    pub local: LocalArgs,
    /// The endpoints, model and key of `--engine openai`.
    #[command(flatten)]
    pub openai: OpenaiArgs,
    /// Use non-streaming requests for `--engine openai`.
    #[arg(long)]
    pub no_stream: bool,
    /// Connection limits for `--engine openai`.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// Earlier predictions file whose answers (`gen`) are replayed, for
    /// `--engine replay`.
    #[arg(long)]
    pub replay: Option<std::path::PathBuf>,
}

impl<'a> EngineFlags<'a> {
    /// The flags of a command line with the whole set: `--engine` and the
    /// [`EngineOptions`], a request's limit in milliseconds.
    pub fn of(kind: EngineKind, options: &'a EngineOptions, request_cap_ms: u64) -> Self {
        Self {
            kind,
            replay: options.replay.as_deref(),
            model_dir: options.local.model_dir.as_deref(),
            device: &options.local.device,
            draft: options.local.draft,
            base_urls: &options.openai.base_urls,
            model: options.openai.model.as_deref(),
            api_key_env: options.openai.api_key_env.as_deref(),
            stream: !options.no_stream,
            endpoint: &options.endpoint,
            request_cap_ms,
        }
    }
}

/// Checks the options `flags.kind` needs are there, before any slow work.
///
/// # Errors
/// Names the missing option.
pub fn check_flags(flags: &EngineFlags<'_>) -> anyhow::Result<()> {
    match flags.kind {
        EngineKind::Copy => Ok(()),
        EngineKind::Replay if flags.replay.is_none() => {
            bail!("--engine replay needs --replay FILE")
        }
        EngineKind::Local if flags.model_dir.is_none() => {
            bail!("--engine local needs --model-dir DIR")
        }
        EngineKind::Openai if flags.model.is_none() || flags.base_urls.is_empty() => {
            bail!("--engine openai needs --base-url URL and --model NAME")
        }
        _ => Ok(()),
    }
}

/// The local model of `dir` as the commands that serve or evaluate it name
/// it (`qwen3_5_moe@DIR`).
pub fn local_spec(dir: &Path, device: &str, draft: DraftKind) -> EngineSpec {
    EngineSpec::Local {
        path: dir.to_path_buf(),
        device: device.to_owned(),
        dtype: None,
        name: Some(format!("qwen3_5_moe@{}", dir.display())),
        drafting: draft.into(),
    }
}

/// An OpenAI-compatible endpoint (or several) checked for the model
/// (`/v1/models`), with `endpoint`'s limits, the read timeout capped at
/// `cap_ms`; `config` carries the rest (model, key variable, streaming).
pub fn openai_spec(
    base_urls: &[String],
    config: OpenAiConfig,
    endpoint: &EndpointArgs,
    cap_ms: Option<u64>,
) -> EngineSpec {
    EngineSpec::Openai(OpenAiSpec {
        base_urls: base_urls.to_vec(),
        config: endpoint.apply(config, cap_ms),
        api_key: None,
        check_model: true,
    })
}

/// The builder's input for `flags` (a replay file is read here).
///
/// # Errors
/// A missing option (see [`check_flags`]); a replay file that does not read.
pub fn spec(flags: &EngineFlags<'_>) -> anyhow::Result<EngineSpec> {
    check_flags(flags)?;
    Ok(match flags.kind {
        EngineKind::Copy => EngineSpec::Copy,
        EngineKind::Replay => {
            let file = flags
                .replay
                .context("--engine replay needs --replay FILE")?;
            EngineSpec::Replay(replay_engine(file)?)
        }
        EngineKind::Local => {
            let dir = flags
                .model_dir
                .context("--engine local needs --model-dir DIR")?;
            local_spec(dir, flags.device, flags.draft)
        }
        EngineKind::Openai => {
            let model = flags
                .model
                .context("--engine openai needs --base-url URL and --model NAME")?;
            let config = OpenAiConfig {
                model: model.to_owned(),
                api_key_env: flags.api_key_env.map(str::to_owned),
                stream: flags.stream,
                ..OpenAiConfig::default()
            };
            openai_spec(
                flags.base_urls,
                config,
                flags.endpoint,
                Some(flags.request_cap_ms),
            )
        }
    })
}

/// Builds `spec` with the one engine builder; errors name the flag or path
/// (`--base-url URL` for a server that does not list the model, `loading
/// the model in DIR` for a local model, `base_url_flag` naming the flag).
///
/// # Errors
/// The builder's, with that context.
pub fn build_named(spec: EngineSpec, base_url_flag: &str) -> anyhow::Result<BuiltEngine> {
    let local = match &spec {
        EngineSpec::Local { path, .. } => Some(path.clone()),
        _ => None,
    };
    build_engine(spec).map_err(|e| match e {
        EngineBuildError::Endpoint { base_url, source } => {
            anyhow::Error::new(source).context(format!("{base_url_flag} {base_url}"))
        }
        EngineBuildError::Local(message) => match &local {
            Some(dir) => {
                anyhow::anyhow!(message).context(format!("loading the model in {}", dir.display()))
            }
            None => anyhow::anyhow!(message),
        },
        other => anyhow::Error::new(other),
    })
}

/// Builds `spec` (errors naming `--base-url` or the model directory).
///
/// # Errors
/// See [`build_named`].
pub fn build(spec: EngineSpec) -> anyhow::Result<BuiltEngine> {
    build_named(spec, "--base-url")
}

/// Makes the engine `flags` describe. An OpenAI-compatible endpoint must
/// list the model (`/v1/models`); several base URLs become one pool.
///
/// # Errors
/// A missing option (see [`check_flags`]); a replay file or model that does
/// not load; an endpoint that does not answer or list the model (naming
/// its `--base-url`).
pub fn make_engine(flags: &EngineFlags<'_>) -> anyhow::Result<Arc<dyn WorldModel>> {
    Ok(build(spec(flags)?)?.model)
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
        let spec = EngineFlags {
            kind: EngineKind::Copy,
            replay: None,
            model_dir: None,
            device: "cpu",
            draft: DraftKind::Off,
            base_urls: &[],
            model: None,
            api_key_env: None,
            stream: true,
            endpoint: &endpoint,
            request_cap_ms: 1000,
        };
        assert_eq!(make_engine(&spec).expect("copy").name(), "copy");
        let err = |kind| {
            make_engine(&EngineFlags { kind, ..spec })
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
        let no_model = EngineFlags {
            kind: EngineKind::Openai,
            base_urls: &urls,
            ..spec
        };
        assert!(check_flags(&no_model).is_err());
    }
}
