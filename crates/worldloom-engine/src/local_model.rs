//! Loading a local model directory into a running [`LocalEngine`]: device
//! and dtype by name, a memory check before the weights are read, and a
//! provenance name. Shared by the studio and `worldloom step` / `rollout`.

use std::path::Path;

use crate::loading::{
    LoadOptions, estimate_memory, load_model, parse_device, parse_dtype, read_config,
};
use crate::qwen3_5_moe::Qwen3_5Moe;
use crate::{LocalEngine, LocalEngineOptions};

/// The context length memory estimates reserve decode state for, tokens.
pub const ESTIMATE_CONTEXT_TOKENS: usize = 8192;

/// Why a model directory could not be loaded; the message names the device,
/// dtype, file or tensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LocalModelError(pub String);

/// Provenance name of a local model directory: `local:<dir name>`.
pub fn local_engine_name(model_dir: &Path) -> String {
    let dir_name = model_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| model_dir.display().to_string());
    format!("local:{dir_name}")
}

/// A local model loaded from a Hugging Face directory.
pub struct LocalModel {
    /// The engine (its own thread; keeps state snapshots between requests).
    pub engine: LocalEngine<Qwen3_5Moe>,
    /// Provenance name (`local:DIRNAME`).
    pub name: String,
    /// `qwen3_5_moe, 35.1B params (3.0B active) on cpu, bf16`.
    pub description: String,
    /// Estimated device memory (weights, decode state for
    /// [`ESTIMATE_CONTEXT_TOKENS`], scratch), bytes.
    pub memory_estimate_bytes: u64,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// Loads a model directory onto a device (memory checked first) and starts
/// its engine.
///
/// `device`: `cpu`, `cuda`, `cuda:N`, `metal`; `dtype` `None` keeps the
/// stored dtype.
///
/// # Errors
/// A [`LocalModelError`] naming the device, dtype, file or tensor: bad
/// device or dtype names, `cannot load model DIR: …` (config, weights, not
/// enough memory: needed and available GiB), tokenizer / template /
/// generation-config errors.
pub fn load_local_model(
    model_dir: &Path,
    device: &str,
    dtype: Option<&str>,
) -> Result<LocalModel, LocalModelError> {
    let fail = |e: String| LocalModelError(e);
    let device_value = parse_device(device).map_err(|e| fail(e.to_string()))?;
    let dtype_value = dtype
        .map(parse_dtype)
        .transpose()
        .map_err(|e| fail(e.to_string()))?;
    let config = read_config(model_dir)
        .map_err(|e| fail(format!("cannot load model {}: {e}", model_dir.display())))?;
    let load = LoadOptions {
        device: device_value,
        dtype: dtype_value,
        ..LoadOptions::default()
    };
    let model = load_model(model_dir, &load)
        .map_err(|e| fail(format!("cannot load model {}: {e}", model_dir.display())))?;
    let name = local_engine_name(model_dir);
    let options = LocalEngineOptions {
        name: name.clone(),
        ..LocalEngineOptions::default()
    };
    let engine =
        LocalEngine::from_dir(model, model_dir, options).map_err(|e| fail(e.to_string()))?;
    let counts = config.param_counts();
    let estimate_dtype = match dtype_value {
        Some(d) => d,
        None => parse_dtype("bf16").map_err(|e| fail(e.to_string()))?,
    };
    let memory = estimate_memory(&config, estimate_dtype, ESTIMATE_CONTEXT_TOKENS).total_bytes();
    let description = format!(
        "{}, {} params ({} active) on {device}, {}",
        architecture(model_dir),
        billions(counts.total),
        billions(counts.active_per_token),
        dtype.unwrap_or("stored dtype")
    );
    Ok(LocalModel {
        engine,
        name,
        description,
        memory_estimate_bytes: memory,
    })
}

fn billions(n: u64) -> String {
    if n >= 1_000_000_000 {
        format!("{:.1}B", n as f64 / 1e9)
    } else if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else {
        format!("{:.1}K", n as f64 / 1e3)
    }
}

/// `config.json` `model_type` (the released form nests it under
/// `text_config` too); `unknown` when missing.
pub fn architecture(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("model_type")
                .or_else(|| v.get("text_config").and_then(|t| t.get("model_type")))
                .and_then(|m| m.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| "unknown".into())
}
