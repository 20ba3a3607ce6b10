//! The engine builder: what a door says about its engine (the studio's
//! engine settings, a command line's `--engine` and its options) as one
//! [`EngineSpec`], made into a [`WorldModel`] in one place
//! ([`build_engine`]). The studio (`worldloom-api` `engine`), every
//! `worldloom` command that predicts or judges (`step`, `rollout`, `eval`,
//! `judge`, `serve-model`) and `serve-env` go through it; their own
//! settings or flags only convert into the spec.

use std::path::PathBuf;
use std::sync::Arc;

use worldloom_engine::baseline::{CopyEngine, ReplayEngine};
use worldloom_engine::local::Drafting;
use worldloom_engine::local_model::{load_local_model_named, local_engine_name};
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::pool::EnginePool;
use worldloom_engine::{EngineError, GenerationParams, WorldModel};

/// An engine to make.
#[derive(Debug, Clone)]
pub enum EngineSpec {
    /// The stale-state baseline (`copy`): predicts the current state
    /// unchanged.
    Copy,
    /// Answers recorded earlier, already read by the caller (an `eval`
    /// output: `worldloom_eval::run::replay_engine`; a replay file:
    /// `ReplayEngine::from_jsonl`).
    Replay(ReplayEngine),
    /// The local Qwen3.5-MoE model of a model directory or GGUF file, on
    /// candle (`worldloom_engine::local_model`; memory checked first).
    Local {
        /// The model directory or GGUF file.
        path: PathBuf,
        /// `cpu`, `cuda`, `cuda:N`, `metal`.
        device: String,
        /// Compute dtype (`bf16`, `f16`, `f32`); `None` keeps the stored one.
        dtype: Option<String>,
        /// The provenance name; `None`: `local:<dir or file name>`.
        name: Option<String>,
        /// Speculative decoding of greedy requests (off, or drafted from
        /// the current observation or by prompt lookup).
        drafting: Drafting,
    },
    /// One OpenAI-compatible endpoint, or several servers of the same model
    /// as one pool.
    Openai(OpenAiSpec),
}

/// OpenAI-compatible endpoints (see [`EngineSpec::Openai`]). `Debug`
/// shows no key.
#[derive(Clone)]
pub struct OpenAiSpec {
    /// Base URLs: one endpoint, or several servers of the same model spread
    /// by least outstanding requests, a request that fails before any
    /// output retried on another (`worldloom_engine::pool`). At least one.
    pub base_urls: Vec<String>,
    /// Everything else of each member's client (model, key variable,
    /// streaming, timeouts, retries, deadline); its `base_url` is replaced
    /// by each of `base_urls`.
    pub config: OpenAiConfig,
    /// An API key given directly (the studio's OS keyring); wins over
    /// `config.api_key_env`. Never stored or printed.
    pub api_key: Option<String>,
    /// Ask each server whether it lists the model (`/v1/models`) before
    /// answering: a command line fails early; the studio creates endpoints
    /// without a request.
    pub check_model: bool,
}

impl std::fmt::Debug for OpenAiSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSpec")
            .field("base_urls", &self.base_urls)
            .field("config", &self.config)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("check_model", &self.check_model)
            .finish()
    }
}

/// A made engine and what it is.
#[derive(Clone)]
pub struct BuiltEngine {
    /// The engine.
    pub model: Arc<dyn WorldModel>,
    /// Its provenance name (`copy`, `replay`, `local:DIR`, `openai:MODEL`).
    pub name: String,
    /// One line for people (`qwen3_5_moe, 35.1B params … on cpu, bf16`,
    /// `MODEL at URL`).
    pub description: String,
    /// Estimated device memory of a local model, bytes.
    pub memory_estimate_bytes: Option<u64>,
    /// The generation parameters the model recommends (a local model's
    /// `generation_config.json`); `None` for the others.
    pub default_params: Option<GenerationParams>,
}

impl std::fmt::Debug for BuiltEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltEngine")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// Why an engine could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EngineBuildError {
    /// The local model did not load (device, dtype, files, memory); the
    /// message names the file or tensor.
    #[error("{0}")]
    Local(String),
    /// An endpoint's client could not be set up (a base URL that is not
    /// one, an unset key variable), or an empty list of base URLs.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A server did not answer `/v1/models` or does not list the model.
    #[error("{base_url}: {source}")]
    Endpoint {
        /// The server's base URL as given.
        base_url: String,
        /// What went wrong.
        #[source]
        source: EngineError,
    },
}

/// Makes the engine `spec` describes (a local model loads here: slow).
///
/// # Errors
/// [`EngineBuildError`]: a model that does not load, an endpoint that
/// cannot be set up or (with `check_model`) does not list the model.
pub fn build_engine(spec: EngineSpec) -> Result<BuiltEngine, EngineBuildError> {
    Ok(match spec {
        EngineSpec::Copy => BuiltEngine {
            model: Arc::new(CopyEngine),
            name: "copy".into(),
            description: "copy baseline: predicts the current state unchanged".into(),
            memory_estimate_bytes: None,
            default_params: None,
        },
        EngineSpec::Replay(replay) => BuiltEngine {
            description: format!("replay baseline: {} recorded answers", replay.len()),
            name: replay.name(),
            model: Arc::new(replay),
            memory_estimate_bytes: None,
            default_params: None,
        },
        EngineSpec::Local {
            path,
            device,
            dtype,
            name,
            drafting,
        } => {
            let name = name.unwrap_or_else(|| local_engine_name(&path));
            let local = load_local_model_named(&path, &device, dtype.as_deref(), name, drafting)
                .map_err(|e| EngineBuildError::Local(e.to_string()))?;
            BuiltEngine {
                default_params: Some(local.engine.default_params().clone()),
                name: local.name,
                description: local.description,
                memory_estimate_bytes: Some(local.memory_estimate_bytes),
                model: Arc::new(local.engine),
            }
        }
        EngineSpec::Openai(spec) => openai(spec)?,
    })
}

fn openai(spec: OpenAiSpec) -> Result<BuiltEngine, EngineBuildError> {
    let mut members: Vec<Arc<dyn WorldModel>> = Vec::new();
    let mut bases = Vec::new();
    for base_url in &spec.base_urls {
        let config = OpenAiConfig {
            base_url: base_url.clone(),
            ..spec.config.clone()
        };
        let mut engine = OpenAiEngine::new(config)?;
        if let Some(key) = &spec.api_key {
            engine = engine.with_api_key(key.clone());
        }
        if spec.check_model {
            engine
                .check_model()
                .map_err(|source| EngineBuildError::Endpoint {
                    base_url: base_url.clone(),
                    source,
                })?;
        }
        bases.push(engine.api_base().to_owned());
        members.push(Arc::new(engine));
    }
    let model = &spec.config.model;
    if members.len() == 1 {
        let member = members.remove(0);
        return Ok(BuiltEngine {
            name: member.name(),
            model: member,
            description: format!("{model} at {}", bases[0]),
            memory_estimate_bytes: None,
            default_params: None,
        });
    }
    let pool = EnginePool::new(members)?;
    Ok(BuiltEngine {
        name: pool.name(),
        model: Arc::new(pool),
        description: format!("{model} at {} servers: {}", bases.len(), bases.join(", ")),
        memory_estimate_bytes: None,
        default_params: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_need_nothing_and_endpoints_are_made_without_a_request() {
        let copy = build_engine(EngineSpec::Copy).expect("copy");
        assert_eq!(
            (copy.name.as_str(), copy.model.name()),
            ("copy", "copy".into())
        );
        let replay = build_engine(EngineSpec::Replay(ReplayEngine::new())).expect("replay");
        assert_eq!(replay.model.name(), replay.name);
        let one = build_engine(EngineSpec::Openai(OpenAiSpec {
            base_urls: vec!["http://127.0.0.1:9".into()],
            config: OpenAiConfig {
                model: "m".into(),
                ..OpenAiConfig::default()
            },
            api_key: Some("secret".into()),
            check_model: false,
        }))
        .expect("endpoint");
        assert_eq!(one.name, "openai:m");
        let spec = OpenAiSpec {
            base_urls: Vec::new(),
            config: OpenAiConfig::default(),
            api_key: Some("secret".into()),
            check_model: false,
        };
        assert!(!format!("{spec:?}").contains("secret"));
        assert_eq!(one.description, "m at http://127.0.0.1:9/v1");
        let two = build_engine(EngineSpec::Openai(OpenAiSpec {
            base_urls: vec!["http://127.0.0.1:9".into(), "http://127.0.0.1:10/v1".into()],
            config: OpenAiConfig {
                model: "m".into(),
                ..OpenAiConfig::default()
            },
            api_key: None,
            check_model: false,
        }))
        .expect("pool");
        assert!(
            two.description.starts_with("m at 2 servers:"),
            "{}",
            two.description
        );
        let none = build_engine(EngineSpec::Openai(OpenAiSpec {
            base_urls: Vec::new(),
            config: OpenAiConfig::default(),
            api_key: None,
            check_model: false,
        }));
        assert!(none.is_err());
    }

    #[test]
    fn a_server_that_does_not_answer_is_named() {
        let err = build_engine(EngineSpec::Openai(OpenAiSpec {
            // Port 9 (discard) on loopback: refused.
            base_urls: vec!["http://127.0.0.1:9/v1".into()],
            config: OpenAiConfig {
                model: "m".into(),
                connect_timeout_ms: 500,
                max_retries: 0,
                ..OpenAiConfig::default()
            },
            api_key: None,
            check_model: true,
        }))
        .expect_err("nothing listens");
        assert!(
            matches!(&err, EngineBuildError::Endpoint { base_url, .. } if base_url == "http://127.0.0.1:9/v1"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_model_directory_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("no-model");
        let err = build_engine(EngineSpec::Local {
            path: missing.clone(),
            device: "cpu".into(),
            dtype: None,
            name: None,
            drafting: Drafting::Off,
        })
        .expect_err("no model");
        assert!(err.to_string().contains("no-model"), "{err}");
    }
}
