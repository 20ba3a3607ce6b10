//! Loading a local model directory or GGUF file into a running
//! [`LocalEngine`]: device and dtype by name, a memory check before the
//! weights are read, and a provenance name. Shared by the studio,
//! `worldloom step` / `rollout`, `serve-model` and `eval --engine local`.

use std::path::{Path, PathBuf};

use crate::chat_template::ChatTemplate;
use crate::loading::{
    LoadOptions, estimate_memory, estimate_memory_gguf, is_gguf_path, load_model, parse_device,
    parse_dtype, read_config,
};
use crate::local::Drafting;
use crate::qwen3_5_moe::Qwen3_5Moe;
use crate::qwen3_5_moe::gguf::{Qwen35MoeGguf, type_table};
use crate::sampling::GenerationConfig;
use crate::tokenizer::Tokenizer;
use crate::tokenizer::gguf::GgufSpecialIds;
use crate::weights::TensorSource;
use crate::{LocalEngine, LocalEngineOptions};

/// The context length memory estimates reserve decode state for, tokens.
pub const ESTIMATE_CONTEXT_TOKENS: usize = 8192;

/// Sets `RAYON_NUM_THREADS` when it is unset, so that the local engine's
/// CPU matmuls do not count the machine's cores again on every call; a
/// value already set (the user's choice) stands.
///
/// candle 0.11 asks for its thread count on every CPU matmul and, when
/// `RAYON_NUM_THREADS` is unset, counts physical cores by reading and
/// parsing `/proc/cpuinfo` each time (a file that grows with the core
/// count). On the bundled trained model that was half of a decode step:
/// 6,310 greedy tokens decoded in 20.0 s unset, 9.5 s set
/// (docs/benchmarks.md). The value is the count candle picks, one thread
/// per physical core (llama.cpp's default too); rayon's pool, which the
/// engine's own kernels run on and which otherwise takes every logical
/// CPU, is then as large.
///
/// # Safety
/// It writes the environment, which is sound only while no other thread
/// may read it: call it first thing in `main`, before any thread starts.
#[allow(unsafe_code)]
pub unsafe fn pin_rayon_threads() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let threads = candle_core::utils::get_num_threads().to_string();
        // SAFETY: the caller guarantees no other thread exists.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads) };
    }
}

/// Why a model directory could not be loaded; the message names the device,
/// dtype, file or tensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LocalModelError(pub String);

/// Where a local model's tokenizer, chat template and end-of-turn ids are
/// read from ([`tokenizer_source`] decides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizerSource {
    /// A Hugging Face directory: `tokenizer.json`, the chat template of
    /// `chat_template.jinja` or `tokenizer_config.json`, and
    /// `generation_config.json` when present.
    Dir(PathBuf),
    /// A GGUF file's metadata: `tokenizer.ggml.*` (tokens, merges, types,
    /// special ids; `eos_token_id` ends a turn) and
    /// `tokenizer.chat_template`.
    GgufMetadata(PathBuf),
}

/// Decides where the tokenizer of a model directory or GGUF file comes
/// from: a directory is its own source; for a GGUF file (the first part of
/// a split one) an HF `tokenizer.json` beside it wins when present, else
/// the file's own tokenizer metadata.
///
/// # Errors
/// For a GGUF file with no `tokenizer.json` beside it: the file cannot be
/// opened, or its metadata has no tokenizer (`tokenizer.ggml.model`
/// missing or `none`) — `no tokenizer beside FILE.gguf nor in its
/// metadata`.
pub fn tokenizer_source(model_path: &Path) -> Result<TokenizerSource, LocalModelError> {
    if !is_gguf_path(model_path) {
        return Ok(TokenizerSource::Dir(model_path.to_path_buf()));
    }
    let dir = model_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if dir.join("tokenizer.json").is_file() {
        return Ok(TokenizerSource::Dir(dir.to_path_buf()));
    }
    let file = crate::weights::GgufFile::open(model_path)
        .map_err(|e| LocalModelError(format!("cannot load model {}: {e}", model_path.display())))?;
    if gguf_has_tokenizer(file.metadata()) {
        Ok(TokenizerSource::GgufMetadata(model_path.to_path_buf()))
    } else {
        Err(LocalModelError(format!(
            "no tokenizer beside {} nor in its metadata (`tokenizer.ggml.model` is missing or \
             `none`; put the model's tokenizer.json, tokenizer_config.json and \
             generation_config.json in {}, or write the file with `worldloom model quantize` \
             from a directory that has them)",
            model_path.display(),
            dir.display()
        )))
    }
}

/// Whether GGUF metadata holds a tokenizer: `tokenizer.ggml.model` present
/// and not `none`.
pub fn gguf_has_tokenizer(
    metadata: &std::collections::HashMap<String, candle_core::quantized::gguf_file::Value>,
) -> bool {
    metadata
        .get("tokenizer.ggml.model")
        .and_then(|v| v.to_string().ok())
        .is_some_and(|m| m != "none")
}

/// The tokenizer, chat template and generation settings of a
/// [`TokenizerSource`]. From GGUF metadata the generation config holds only
/// the end-of-turn id (`tokenizer.ggml.eos_token_id`).
///
/// # Errors
/// A [`LocalModelError`] naming the file and field or metadata key.
pub fn load_tokenizer(
    source: &TokenizerSource,
) -> Result<(Tokenizer, ChatTemplate, GenerationConfig), LocalModelError> {
    let fail = |e: String| LocalModelError(e);
    match source {
        TokenizerSource::Dir(dir) => Ok((
            Tokenizer::from_dir(dir).map_err(|e| fail(e.to_string()))?,
            ChatTemplate::from_dir(dir).map_err(|e| fail(e.to_string()))?,
            GenerationConfig::from_dir(dir).map_err(|e| fail(e.to_string()))?,
        )),
        TokenizerSource::GgufMetadata(path) => {
            let file = crate::weights::GgufFile::open(path)
                .map_err(|e| fail(format!("cannot load model {}: {e}", path.display())))?;
            let metadata = file.metadata();
            let tokenizer =
                Tokenizer::from_gguf_metadata(metadata, path).map_err(|e| fail(e.to_string()))?;
            let template = ChatTemplate::from_gguf_metadata(metadata, path)
                .map_err(|e| fail(e.to_string()))?;
            let special = GgufSpecialIds::from_gguf_metadata(metadata, path)
                .map_err(|e| fail(e.to_string()))?;
            let generation = GenerationConfig {
                eos_token_ids: special.eos.into_iter().collect(),
                ..GenerationConfig::default()
            };
            Ok((tokenizer, template, generation))
        }
    }
}

/// Provenance name of a local model directory or GGUF file: `local:<dir
/// or file name>`.
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

/// Loads a model directory or GGUF file onto a device (memory checked
/// first) and starts its engine, named [`local_engine_name`].
///
/// `device`: `cpu`, `cuda`, `cuda:N`, `metal`; `dtype` `None` keeps the
/// stored dtype.
///
/// # Errors
/// A [`LocalModelError`] naming the device, dtype, file or tensor: bad
/// device or dtype names, `cannot load model DIR: …` (config, weights, not
/// enough memory: needed and available GiB), `no tokenizer beside
/// FILE.gguf nor in its metadata`, tokenizer / template / generation-config
/// errors (from the files beside a GGUF file when there is a
/// `tokenizer.json`, else from its metadata: [`tokenizer_source`]).
pub fn load_local_model(
    model_dir: &Path,
    device: &str,
    dtype: Option<&str>,
) -> Result<LocalModel, LocalModelError> {
    load_local_model_named(
        model_dir,
        device,
        dtype,
        local_engine_name(model_dir),
        Drafting::Off,
    )
}

/// [`load_local_model`] with the engine's provenance name and its
/// speculative decoding ([`Drafting`]) given.
///
/// # Errors
/// As [`load_local_model`].
pub fn load_local_model_named(
    model_dir: &Path,
    device: &str,
    dtype: Option<&str>,
    name: String,
    drafting: Drafting,
) -> Result<LocalModel, LocalModelError> {
    let fail = |e: String| LocalModelError(e);
    let device_value = parse_device(device).map_err(|e| fail(e.to_string()))?;
    let dtype_value = dtype
        .map(parse_dtype)
        .transpose()
        .map_err(|e| fail(e.to_string()))?;
    let config = read_config(model_dir)
        .map_err(|e| fail(format!("cannot load model {}: {e}", model_dir.display())))?;
    let (tokenizer, template, generation) = load_tokenizer(&tokenizer_source(model_dir)?)?;
    let load = LoadOptions {
        device: device_value,
        dtype: dtype_value,
        ..LoadOptions::default()
    };
    let model = load_model(model_dir, &load)
        .map_err(|e| fail(format!("cannot load model {}: {e}", model_dir.display())))?;
    let gguf = is_gguf_path(model_dir);
    let options = LocalEngineOptions {
        name: name.clone(),
        // A GGUF file's context length is its metadata's; a directory's
        // is `config.json`'s field when it has one (no limit otherwise).
        context_tokens: if gguf {
            Some(config.max_position_embeddings)
        } else {
            crate::local::context_of_dir(model_dir)
        },
        drafting,
        ..LocalEngineOptions::default()
    };
    let engine = LocalEngine::new(model, tokenizer, template, &generation, options)
        .map_err(|e| fail(e.to_string()))?;
    let counts = config.param_counts();
    let (memory, stored) = if gguf {
        let file = Qwen35MoeGguf::open(model_dir)
            .map_err(|e| fail(format!("cannot load model {}: {e}", model_dir.display())))?;
        let compute = dtype_value
            .or(file.stored_dtype())
            .unwrap_or(candle_core::DType::F32);
        let types: Vec<String> = type_table(file.file())
            .into_iter()
            .map(|(t, n, _)| format!("{n} {t}"))
            .collect();
        (
            estimate_memory_gguf(&file, compute, ESTIMATE_CONTEXT_TOKENS).total_bytes(),
            format!("GGUF ({})", types.join(", ")),
        )
    } else {
        let estimate_dtype = match dtype_value {
            Some(d) => d,
            None => parse_dtype("bf16").map_err(|e| fail(e.to_string()))?,
        };
        (
            estimate_memory(&config, estimate_dtype, ESTIMATE_CONTEXT_TOKENS).total_bytes(),
            "stored dtype".to_string(),
        )
    };
    let description = format!(
        "{}, {} params ({} active) on {device}, {}",
        architecture(model_dir),
        billions(counts.total),
        billions(counts.active_per_token),
        dtype.map_or(stored, str::to_string)
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
/// `text_config` too), or a GGUF file's `general.architecture`; `unknown`
/// when missing.
pub fn architecture(dir: &Path) -> String {
    if is_gguf_path(dir) {
        return crate::weights::GgufFile::open(dir)
            .ok()
            .and_then(|f| f.architecture().map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
    }
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
