//! Engine settings and the engine instance of a studio.
//!
//! The settings and generation parameters are saved in the workspace's
//! `workspace_meta` table under [`ENGINE_META_KEY`] as JSON
//! (`{"settings": EngineSettings, "params": GenerationParamsView}`). No secret
//! is ever saved: an endpoint's API key is read from the environment variable
//! the settings name, when the engine is created.
//!
//! One engine instance is kept per studio and reused by every step until the
//! settings change, so a local model keeps its state snapshots (stepping turn
//! k+1 after turn k re-reads only the new tokens).

use std::path::Path;
use std::sync::Arc;

use worldloom_engine::loading::{
    available_memory_bytes, estimate_memory, estimate_memory_gguf, is_gguf_path, parse_device,
    parse_dtype, read_config,
};
use worldloom_engine::local_model::{TokenizerSource, gguf_has_tokenizer, tokenizer_source};
use worldloom_engine::openai::OpenAiConfig;
use worldloom_engine::qwen3_5_moe::gguf::Qwen35MoeGguf;
use worldloom_engine::{GenerationParams, WorldModel};
use worldloom_predict::engines::{EngineSpec, OpenAiSpec, build_engine};

use crate::error::{ApiError, ErrorCode};
use crate::keys::{KEYRING_SERVICE, KeyStore};
use crate::types::*;
use crate::{Studio, StudioEvent};

/// The `workspace_meta` key holding the studio's engine settings.
pub const ENGINE_META_KEY: &str = "studio.engine";

pub use worldloom_engine::local_model::{
    ESTIMATE_CONTEXT_TOKENS, LocalModel, architecture, load_local_model, local_engine_name,
    pin_rayon_threads,
};

/// A created engine and what it was made from.
pub(crate) struct LoadedEngine {
    pub settings: EngineSettings,
    pub model: Arc<dyn WorldModel>,
    pub name: String,
    pub description: String,
    pub memory_estimate_bytes: Option<u64>,
}

/// The studio's engine: the instance (if created) and the last creation
/// error.
#[derive(Default)]
pub(crate) struct EngineSlot {
    pub loaded: Option<Arc<LoadedEngine>>,
    pub error: Option<(EngineSettings, String)>,
}

/// What is saved in the workspace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct SavedEngine {
    settings: EngineSettings,
    params: GenerationParamsView,
}

/// The model card's generation parameters (`worldloom-engine` defaults).
pub fn default_params() -> GenerationParamsView {
    params_view(&GenerationParams::default())
}

/// The default engine: the `copy` baseline.
pub fn default_settings() -> EngineSettings {
    EngineSettings::Baseline {
        name: "copy".into(),
    }
}

/// An `f32` parameter as the decimal it was written as: the shortest text
/// that reads back as the same `f32` (`0.6`, not `0.6000000238418579`).
fn f32_as_written(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

pub(crate) fn params_view(p: &GenerationParams) -> GenerationParamsView {
    GenerationParamsView {
        temperature: f32_as_written(p.temperature),
        top_p: f32_as_written(p.top_p),
        top_k: p.top_k.min(u32::MAX as usize) as u32,
        seed: p.seed.to_string(),
        max_new_tokens: p.max_new_tokens.min(u32::MAX as usize) as u32,
        enable_thinking: p.enable_thinking,
        logprobs: p.logprobs,
        stop_after_observation: p.stop_after_observation,
    }
}

/// The engine parameters of a view.
///
/// # Errors
/// [`ErrorCode::BadRequest`] naming the field: a negative or non-finite
/// temperature, `top_p` outside (0, 1], a seed that is not a u64, zero
/// `max_new_tokens`.
pub(crate) fn engine_params(v: &GenerationParamsView) -> Result<GenerationParams, ApiError> {
    if !v.temperature.is_finite() || v.temperature < 0.0 {
        return Err(ApiError::bad_request(format!(
            "params.temperature: {} is not a number ≥ 0",
            v.temperature
        )));
    }
    if !(v.top_p > 0.0 && v.top_p <= 1.0) {
        return Err(ApiError::bad_request(format!(
            "params.top_p: {} is not in (0, 1]",
            v.top_p
        )));
    }
    if v.max_new_tokens == 0 {
        return Err(ApiError::bad_request(
            "params.max_new_tokens: must be at least 1",
        ));
    }
    let seed = v.seed.trim().parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "params.seed: `{}` is not an unsigned 64-bit decimal number",
            v.seed
        ))
    })?;
    Ok(GenerationParams {
        temperature: v.temperature as f32,
        top_p: v.top_p as f32,
        top_k: v.top_k as usize,
        seed,
        max_new_tokens: v.max_new_tokens as usize,
        stop: Vec::new(),
        stop_after_observation: v.stop_after_observation,
        enable_thinking: v.enable_thinking,
        logprobs: v.logprobs,
        ..GenerationParams::default()
    })
}

/// The saved settings and parameters (defaults when none are saved or the
/// saved JSON does not read).
pub(crate) fn saved(studio: &Studio) -> Result<(EngineSettings, GenerationParamsView), ApiError> {
    let text = studio.lock()?.meta(ENGINE_META_KEY)?;
    Ok(text
        .and_then(|t| serde_json::from_str::<SavedEngine>(&t).ok())
        .map(|s| (s.settings, s.params))
        .unwrap_or_else(|| (default_settings(), default_params())))
}

fn dtype_name(d: ModelDtype) -> &'static str {
    match d {
        ModelDtype::F32 => "f32",
        ModelDtype::Bf16 => "bf16",
        ModelDtype::F16 => "f16",
    }
}

/// The keyring account of an endpoint: `keyring_account` trimmed, or the base
/// URL trimmed when that is absent or blank.
pub(crate) fn keyring_account_of<'a>(
    base_url: &'a str,
    keyring_account: Option<&'a str>,
) -> &'a str {
    keyring_account
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| base_url.trim())
}

fn account_of(account: &str) -> Result<&str, ApiError> {
    let account = account.trim();
    if account.is_empty() {
        return Err(ApiError::bad_request("account: empty"));
    }
    Ok(account)
}

/// `set_endpoint_key`: stores an endpoint's API key in the studio's key store
/// (the OS keyring unless [`Studio::set_key_store`] replaced it) under
/// service [`KEYRING_SERVICE`] and the trimmed `account`; an empty key
/// deletes it. The key is never returned, logged or written to the
/// workspace. Returns whether a key is now stored.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a blank account;
/// [`crate::ErrorCode::Internal`] when the keyring cannot be reached.
pub fn set_endpoint_key(
    studio: &Studio,
    req: SetEndpointKeyRequest,
) -> Result<EndpointKeyStatus, ApiError> {
    let account = account_of(&req.account)?;
    let store = studio.key_store();
    if req.key.is_empty() {
        store.delete(account).map_err(ApiError::internal)?;
    } else {
        store.set(account, &req.key).map_err(ApiError::internal)?;
    }
    forget(studio);
    Ok(EndpointKeyStatus {
        account: account.to_owned(),
        stored: !req.key.is_empty(),
    })
}

/// `endpoint_key_status`: whether the studio's key store holds a non-empty
/// key for the trimmed `account` (the key itself is never returned).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a blank account;
/// [`crate::ErrorCode::Internal`] when the keyring cannot be reached.
pub fn endpoint_key_status(
    studio: &Studio,
    req: EndpointKeyStatusRequest,
) -> Result<EndpointKeyStatus, ApiError> {
    let account = account_of(&req.account)?;
    let stored = studio
        .key_store()
        .get(account)
        .map_err(ApiError::internal)?
        .is_some_and(|k| !k.is_empty());
    Ok(EndpointKeyStatus {
        account: account.to_owned(),
        stored,
    })
}

/// Drops the cached engine so the next one is created afresh (after a key
/// changed in the key store); running jobs keep their own handle.
fn forget(studio: &Studio) {
    if let Ok(mut slot) = lock_slot(studio) {
        slot.loaded = None;
    }
}

/// The engine builder's spec of `settings` (`worldloom_predict::engines`):
/// an endpoint's key is read from the key store here when the settings say
/// so (never from or into the workspace).
///
/// # Errors
/// A baseline this studio does not run; no key in the key store.
pub(crate) fn spec(settings: &EngineSettings, keys: &dyn KeyStore) -> Result<EngineSpec, String> {
    match settings {
        EngineSettings::Baseline { name } => match name.as_str() {
            "copy" => Ok(EngineSpec::Copy),
            other => Err(format!(
                "settings.name: `{other}` is not a baseline this studio runs (known: copy)"
            )),
        },
        EngineSettings::Openai {
            base_url,
            model,
            api_key_env,
            step_deadline_s,
            key_source,
            keyring_account,
        } => {
            let from_keyring = *key_source == Some(KeySource::Keyring);
            let api_key = if from_keyring {
                let account = keyring_account_of(base_url, keyring_account.as_deref());
                match keys.get(account)? {
                    Some(key) if !key.is_empty() => Some(key),
                    _ => {
                        return Err(format!(
                            "no API key in the OS keyring for account `{account}` (service `{KEYRING_SERVICE}`): store one with set_endpoint_key"
                        ));
                    }
                }
            } else {
                None
            };
            Ok(EngineSpec::Openai(OpenAiSpec {
                base_urls: vec![base_url.clone()],
                config: OpenAiConfig {
                    model: model.clone(),
                    api_key_env: if from_keyring {
                        None
                    } else {
                        api_key_env.clone().filter(|v| !v.trim().is_empty())
                    },
                    deadline_ms: step_deadline_s.map(|s| u64::from(s) * 1000),
                    ..OpenAiConfig::default()
                },
                api_key,
                check_model: false,
            }))
        }
        EngineSettings::Local {
            model_dir,
            device,
            dtype,
            draft,
        } => Ok(EngineSpec::Local {
            path: Path::new(model_dir).to_path_buf(),
            device: device.clone(),
            dtype: Some(dtype_name(*dtype).to_owned()),
            name: None,
            drafting: drafting_of(draft.unwrap_or(DraftMode::Observation)),
        }),
    }
}

/// The local engine's drafting for a settings' draft mode.
fn drafting_of(mode: DraftMode) -> worldloom_engine::local::Drafting {
    use worldloom_engine::local::Drafting;
    match mode {
        DraftMode::Off => Drafting::Off,
        DraftMode::Observation => Drafting::Observation,
        DraftMode::PromptLookup => Drafting::PromptLookup,
    }
}

/// Creates the engine for `settings` through the one engine builder
/// (`worldloom_predict::engines::build_engine`; a local model loads here:
/// slow).
pub(crate) fn create(
    settings: &EngineSettings,
    keys: &dyn KeyStore,
) -> Result<LoadedEngine, String> {
    let built = build_engine(spec(settings, keys)?).map_err(|e| e.to_string())?;
    Ok(LoadedEngine {
        settings: settings.clone(),
        model: built.model,
        name: built.name,
        description: built.description,
        memory_estimate_bytes: built.memory_estimate_bytes,
    })
}

fn lock_slot(studio: &Studio) -> Result<std::sync::MutexGuard<'_, EngineSlot>, ApiError> {
    studio
        .inner
        .engine
        .lock()
        .map_err(|_| ApiError::internal("the engine lock is poisoned by an earlier failure"))
}

/// The engine for the saved settings, created now if it is not yet (or was
/// made from other settings). The engine lock is held while a model loads,
/// so two steps never load it twice.
///
/// # Errors
/// [`ErrorCode::Unsupported`] with the creation error (memory, files,
/// unset key variable…).
pub(crate) fn ensure(studio: &Studio) -> Result<Arc<LoadedEngine>, ApiError> {
    let (settings, _) = saved(studio)?;
    let mut slot = lock_slot(studio)?;
    if let Some(loaded) = &slot.loaded
        && loaded.settings == settings
    {
        return Ok(Arc::clone(loaded));
    }
    // Drop the old engine first: a local model frees its memory.
    slot.loaded = None;
    match create(&settings, studio.key_store().as_ref()) {
        Ok(loaded) => {
            let loaded = Arc::new(loaded);
            slot.loaded = Some(Arc::clone(&loaded));
            slot.error = None;
            Ok(loaded)
        }
        Err(message) => {
            slot.error = Some((settings, message.clone()));
            Err(ApiError::new(ErrorCode::Unsupported, message))
        }
    }
}

fn status(studio: &Studio) -> Result<EngineStatus, ApiError> {
    let (settings, params) = saved(studio)?;
    let slot = lock_slot(studio)?;
    let loaded = slot.loaded.as_ref().filter(|l| l.settings == settings);
    let error = slot
        .error
        .as_ref()
        .filter(|(s, _)| *s == settings)
        .map(|(_, m)| m.clone());
    Ok(EngineStatus {
        ready: loaded.is_some(),
        name: loaded.map(|l| l.name.clone()),
        description: loaded.map(|l| l.description.clone()),
        memory_estimate_bytes: loaded.and_then(|l| l.memory_estimate_bytes),
        error,
        settings: Some(settings),
        params,
    })
}

/// `engine_status`: the saved engine and whether it is ready. Engines that
/// cost nothing to create (baselines, endpoints) are created here; a local
/// model loads only on `set_engine` or the first step.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn engine_status(studio: &Studio, _req: EmptyRequest) -> Result<EngineStatus, ApiError> {
    let (settings, _) = saved(studio)?;
    if !matches!(settings, EngineSettings::Local { .. }) {
        // A failure is reported in `error`.
        let _ = ensure(studio);
    }
    status(studio)
}

/// `set_engine`: saves the settings and parameters (no secrets) and
/// (re)creates the engine; a local model loads now (memory checked first).
/// A creation failure is reported in the status's `error`, with the
/// settings saved.
///
/// # Errors
/// [`ErrorCode::BadRequest`] for invalid parameters or empty settings
/// fields; [`ErrorCode::Storage`].
pub fn set_engine(studio: &Studio, req: SetEngineRequest) -> Result<EngineStatus, ApiError> {
    engine_params(&req.params)?;
    match &req.settings {
        EngineSettings::Local { model_dir, .. } if model_dir.trim().is_empty() => {
            return Err(ApiError::bad_request("settings.model_dir: empty"));
        }
        EngineSettings::Openai {
            base_url, model, ..
        } if base_url.trim().is_empty() || model.trim().is_empty() => {
            return Err(ApiError::bad_request(
                "settings.base_url and settings.model must not be empty",
            ));
        }
        _ => {}
    }
    let saved = SavedEngine {
        settings: req.settings.clone(),
        params: req.params.clone(),
    };
    let json = serde_json::to_string(&saved).map_err(|e| ApiError::internal(e.to_string()))?;
    studio.lock()?.set_meta(ENGINE_META_KEY, &json)?;
    let _ = ensure(studio);
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: None,
        kind: StudioChangeKind::SetEngine.into(),
    });
    status(studio)
}

/// Devices this build can open.
fn devices() -> Vec<String> {
    let mut out = vec!["cpu".to_string()];
    if parse_device("cuda:0").is_ok() {
        out.push("cuda:0".into());
    }
    if parse_device("metal").is_ok() {
        out.push("metal".into());
    }
    out
}

/// `inspect_model_dir`: what a model directory or GGUF file holds, before
/// loading it (for a GGUF file: its metadata, memory from its tensor types,
/// the tokenizer files beside it, else the tokenizer in its metadata).
///
/// # Errors
/// [`ErrorCode::BadRequest`] naming the file: no such folder or file, a
/// `config.json` (or GGUF metadata) that is missing or invalid.
pub fn inspect_model_dir(
    _studio: &Studio,
    req: InspectModelDirRequest,
) -> Result<ModelDirInfo, ApiError> {
    let path = Path::new(&req.path);
    let gguf = is_gguf_path(path);
    if gguf && !path.is_file() {
        return Err(ApiError::bad_request(format!(
            "{}: no such file",
            path.display()
        )));
    }
    if !gguf && !path.is_dir() {
        return Err(ApiError::bad_request(format!(
            "{}: no such folder",
            path.display()
        )));
    }
    let gguf_file = if gguf {
        Some(Qwen35MoeGguf::open(path).map_err(|e| ApiError::bad_request(e.to_string()))?)
    } else {
        None
    };
    let config = match &gguf_file {
        Some(g) => g.config().clone(),
        None => read_config(path).map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    let counts = config.param_counts();
    let mut memory = Vec::new();
    for d in [ModelDtype::Bf16, ModelDtype::F16, ModelDtype::F32] {
        let dtype = parse_dtype(dtype_name(d)).map_err(|e| ApiError::internal(e.to_string()))?;
        memory.push(DtypeMemory {
            dtype: d,
            bytes: match &gguf_file {
                Some(g) => estimate_memory_gguf(g, dtype, ESTIMATE_CONTEXT_TOKENS).total_bytes(),
                None => estimate_memory(&config, dtype, ESTIMATE_CONTEXT_TOKENS).total_bytes(),
            },
        });
    }
    let cpu = parse_device("cpu").map_err(|e| ApiError::internal(e.to_string()))?;
    // The tokenizer and chat template: the directory itself, the one
    // holding the GGUF file when it has a tokenizer.json, else the GGUF
    // file's metadata (the loader's own decision, `tokenizer_source`).
    let (has_tokenizer, has_template) = match (tokenizer_source(path), &gguf_file) {
        (Ok(TokenizerSource::Dir(dir)), _) => (
            dir.join("tokenizer.json").is_file(),
            dir.join("chat_template.jinja").is_file()
                || std::fs::read_to_string(dir.join("tokenizer_config.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                    .is_some_and(|v| v.get("chat_template").is_some()),
        ),
        (Ok(TokenizerSource::GgufMetadata(_)), Some(g)) => {
            let metadata = g.file().metadata();
            (
                gguf_has_tokenizer(metadata),
                metadata.contains_key("tokenizer.chat_template"),
            )
        }
        _ => (false, false),
    };
    Ok(ModelDirInfo {
        path: req.path.clone(),
        architecture: architecture(path),
        total_params: counts.total,
        active_params: counts.active_per_token,
        memory,
        context_tokens: ESTIMATE_CONTEXT_TOKENS as u32,
        available_memory_bytes: available_memory_bytes(&cpu),
        has_tokenizer,
        has_chat_template: has_template,
        devices: devices(),
    })
}
