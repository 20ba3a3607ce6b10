//! Loading Qwen3.5-MoE checkpoints from local Hugging Face model directories
//! and GGUF files.
//!
//! A model directory holds `config.json` and the weights as safetensors
//! (one file or shards, read through [`crate::weights`]). A GGUF file (or
//! the first part of a split one, recognised by its `.gguf` extension)
//! holds the config in its metadata and the weights, quantized or not
//! ([`crate::qwen3_5_moe::gguf`]); wherever a path is taken here, either
//! form is accepted. Before any tensor is
//! allocated, [`load_model`] estimates the memory the model needs
//! ([`MemoryEstimate`]) and fails with [`LoadError::InsufficientMemory`]
//! ("needed X GiB, available Y GiB") rather than letting the allocator abort
//! the process; then [`Qwen3_5Moe::load`] asks the weights for its tensors by
//! name.
//!
//! Devices are named `cpu`, `cuda`, `cuda:N`, `metal` or `metal:N`
//! ([`parse_device`]); the GPU ones need the crate's `cuda` / `metal`
//! features.
//!
//! The weight sources, [`LoadError`] and the memory check live in
//! [`crate::weights`] and are re-exported here.

use std::path::Path;

use candle_core::{DType, Device};

use crate::qwen3_5_moe::gguf::Qwen35MoeGguf;
use crate::qwen3_5_moe::{Config, Qwen3_5Moe};
pub use crate::weights::gguf::is_gguf_path;
pub use crate::weights::{
    BYTES_PER_GIB, LoadError, MemoryEstimate, RandomWeights, SafetensorsWeights, TensorRequest,
    TensorSource, Weights, available_memory_bytes, device_name,
};
use crate::weights::{ensure_fits, read_text};

/// Reads and validates `config.json` of a model directory (flat ForCausalLM
/// form or released form with `text_config`), or the metadata of a GGUF
/// file.
///
/// # Errors
/// [`LoadError::Io`], [`LoadError::BadJson`] (names a missing or mistyped
/// field with its line), [`LoadError::InvalidConfig`] (for GGUF: naming the
/// metadata key), [`LoadError::BadGguf`].
pub fn read_config(dir: &Path) -> Result<Config, LoadError> {
    if is_gguf_path(dir) {
        return Ok(Qwen35MoeGguf::open(dir)?.config().clone());
    }
    let path = dir.join("config.json");
    let text = read_text(&path)?;
    let config = Config::from_json(&text).map_err(|e| LoadError::BadJson {
        path: path.clone(),
        message: e.to_string(),
    })?;
    config
        .validate()
        .map_err(|(field, message)| LoadError::InvalidConfig {
            path,
            field,
            message,
        })?;
    Ok(config)
}

/// CUDA device `ordinal` with cudarc's event tracking off (the engine uses
/// one stream per device, where the events are pure cost).
#[cfg(feature = "cuda")]
fn cuda_device(ordinal: usize) -> candle_core::Result<Device> {
    crate::kernels::cuda::new_device(ordinal)
}

#[cfg(not(feature = "cuda"))]
fn cuda_device(ordinal: usize) -> candle_core::Result<Device> {
    Device::new_cuda(ordinal)
}

/// Parses a device name: `cpu`, `cuda`, `cuda:N`, `metal`, `metal:N`.
/// A CUDA device is opened with cudarc's event tracking off.
///
/// # Errors
/// [`LoadError::BadDevice`] for an unknown name, or when the device cannot be
/// opened (e.g. the binary was built without the `cuda` feature).
pub fn parse_device(spec: &str) -> Result<Device, LoadError> {
    let bad = |message: String| LoadError::BadDevice {
        spec: spec.to_string(),
        message,
    };
    let (kind, ordinal) = match spec.split_once(':') {
        Some((kind, n)) => (
            kind,
            n.parse::<usize>()
                .map_err(|_| bad(format!("`{n}` is not a device ordinal")))?,
        ),
        None => (spec, 0),
    };
    match kind {
        "cpu" => Ok(Device::Cpu),
        "cuda" => {
            if !candle_core::utils::cuda_is_available() {
                return Err(bad(
                    "this build has no CUDA support (build with `--features cuda`)".into(),
                ));
            }
            cuda_device(ordinal).map_err(|e| bad(e.to_string()))
        }
        "metal" => {
            if !candle_core::utils::metal_is_available() {
                return Err(bad(
                    "this build has no Metal support (build with `--features metal`)".into(),
                ));
            }
            Device::new_metal(ordinal).map_err(|e| bad(e.to_string()))
        }
        _ => Err(bad("expected cpu, cuda, cuda:N, metal or metal:N".into())),
    }
}

/// Parses a dtype name: `bf16`, `f16`, `f32` (also `bfloat16`, `float16`,
/// `float32`).
///
/// # Errors
/// [`LoadError::BadDtype`].
pub fn parse_dtype(spec: &str) -> Result<DType, LoadError> {
    match spec {
        "bf16" | "bfloat16" => Ok(DType::BF16),
        "f16" | "fp16" | "float16" => Ok(DType::F16),
        "f32" | "fp32" | "float32" => Ok(DType::F32),
        _ => Err(LoadError::BadDtype(spec.to_string())),
    }
}

/// Estimates the memory `config` needs in `dtype` with one sequence of
/// `context_tokens` tokens.
pub fn estimate_memory(config: &Config, dtype: DType, context_tokens: usize) -> MemoryEstimate {
    let counts = config.param_counts();
    let elem = dtype.size_in_bytes() as u64;
    let weight_bytes = counts.total * elem;
    let state_bytes = config.state_bytes(context_tokens, dtype) as u64;
    // Largest transient buffers: the f32 activations of a 512-token prefill
    // chunk (the local engine's chunk; logits of its last position only),
    // ×16 for the temporaries alive at once (the DeltaNet chunk solve,
    // expert batches, quantized activations), and the f32 logits of one
    // position ×4. Measured on the bench shape (`docs/benchmarks.md`): the
    // peak lies 0.14–0.35 GiB above the steady resident size; this gives
    // 0.32 GiB there.
    let h = config.hidden_size as u64;
    let widest =
        (config.num_attention_heads * config.head_dim * 2).max(config.linear_conv_dim()) as u64;
    let scratch_bytes = 16 * 512 * (h + widest) * 4 + 4 * config.vocab_size as u64 * 4;
    MemoryEstimate {
        weight_bytes,
        state_bytes,
        scratch_bytes,
        context_tokens,
    }
}

/// Estimates the memory a GGUF model needs on the CPU in compute dtype
/// `dtype`: the weights from the file's tensor types as the CPU keeps them
/// resident ([`Qwen35MoeGguf::weight_bytes`]), the decode state and scratch
/// as [`estimate_memory`].
pub fn estimate_memory_gguf(
    gguf: &Qwen35MoeGguf,
    dtype: DType,
    context_tokens: usize,
) -> MemoryEstimate {
    estimate_memory_gguf_on(gguf, dtype, &Device::Cpu, context_tokens)
}

/// [`estimate_memory_gguf`] on `device` (on a GPU quantized tensors take
/// their stored size).
pub fn estimate_memory_gguf_on(
    gguf: &Qwen35MoeGguf,
    dtype: DType,
    device: &Device,
    context_tokens: usize,
) -> MemoryEstimate {
    MemoryEstimate {
        weight_bytes: gguf.weight_bytes_on(dtype, device),
        ..estimate_memory(gguf.config(), dtype, context_tokens)
    }
}

/// Options of [`load_model`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Where the weights and state live.
    pub device: Device,
    /// Compute dtype; `None` keeps the dtype the weights are stored in.
    pub dtype: Option<DType>,
    /// Context length the memory check reserves decode state for.
    pub context_tokens: usize,
    /// Skip the memory check (tests, or when the caller knows better).
    pub skip_memory_check: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            device: Device::Cpu,
            dtype: None,
            context_tokens: 8192,
            skip_memory_check: false,
        }
    }
}

/// Checks the estimate against the free memory of the device.
///
/// # Errors
/// [`LoadError::InsufficientMemory`] when the estimate exceeds what is free.
pub fn check_memory(
    config: &Config,
    dtype: DType,
    device: &Device,
    context_tokens: usize,
) -> Result<MemoryEstimate, LoadError> {
    let estimate = estimate_memory(config, dtype, context_tokens);
    ensure_fits(&estimate, dtype, device)?;
    Ok(estimate)
}

/// Loads a Qwen3.5-MoE model from a Hugging Face model directory or a GGUF
/// file.
///
/// Reads `config.json`, memory-maps the safetensors, checks the memory
/// estimate against the device, then builds the model tensor by tensor. A
/// GGUF file: reads the metadata, estimates from the tensor types, then
/// reads tensor by tensor (quantized ones stay quantized); its default
/// compute dtype is that of `token_embd` when it is bf16/f16, else f32.
///
/// # Errors
/// Every [`LoadError`] variant: unreadable or invalid config, missing
/// weights, a missing tensor or one of the wrong shape (both named), not
/// enough memory (needed vs available GiB).
pub fn load_model(dir: &Path, options: &LoadOptions) -> Result<Qwen3_5Moe, LoadError> {
    if is_gguf_path(dir) {
        let gguf = Qwen35MoeGguf::open(dir)?;
        let dtype = options.dtype.or(gguf.stored_dtype()).unwrap_or(DType::F32);
        if !options.skip_memory_check {
            let estimate =
                estimate_memory_gguf_on(&gguf, dtype, &options.device, options.context_tokens);
            ensure_fits(&estimate, dtype, &options.device)?;
        }
        return Qwen3_5Moe::load(gguf.config().clone(), &gguf, dtype, &options.device);
    }
    let config = read_config(dir)?;
    let weights = SafetensorsWeights::open(dir)?;
    let dtype = options
        .dtype
        .or(weights.stored_dtype())
        .unwrap_or(DType::BF16);
    if !options.skip_memory_check {
        check_memory(&config, dtype, &options.device, options.context_tokens)?;
    }
    Qwen3_5Moe::load(config, &weights, dtype, &options.device)
}
