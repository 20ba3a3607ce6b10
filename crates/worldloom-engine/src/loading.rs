//! Loading Qwen3.5-MoE checkpoints from local Hugging Face model directories.
//!
//! A model directory holds `config.json` and the weights as safetensors:
//! either one `model.safetensors` or shards listed by
//! `model.safetensors.index.json` (the Hugging Face sharding format: a
//! `weight_map` from tensor name to shard file). Shards are memory-mapped and
//! each tensor is read, converted to the requested dtype and placed on the
//! device one at a time, so the peak memory is the model plus one tensor.
//!
//! Before any tensor is allocated, [`load_model`] estimates the memory the
//! model needs ([`MemoryEstimate`]) and fails with
//! [`LoadError::InsufficientMemory`] ("needed X GiB, available Y GiB") rather
//! than letting the allocator abort the process.
//!
//! Devices are named `cpu`, `cuda`, `cuda:N`, `metal` or `metal:N`
//! ([`parse_device`]); the GPU ones need the crate's `cuda` / `metal`
//! features.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use crate::qwen3_5_moe::{Config, Qwen3_5Moe};

/// Bytes in one GiB (2^30), the unit of memory messages.
pub const BYTES_PER_GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Everything that can go wrong while reading a model directory.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `config.json` (or the shard index) is not valid JSON or misses a
    /// required field; the message names the field and line.
    #[error("{path}: {message}")]
    BadJson {
        /// The file.
        path: PathBuf,
        /// serde_json's message (names the field, line and column).
        message: String,
    },
    /// A config field holds a value the model cannot use.
    #[error("{path}: field `{field}`: {message}")]
    InvalidConfig {
        /// The config file.
        path: PathBuf,
        /// The offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// No weights file in the directory.
    #[error("{dir}: no weights found (expected model.safetensors or model.safetensors.index.json)")]
    NoWeights {
        /// The model directory.
        dir: PathBuf,
    },
    /// A safetensors file could not be opened or parsed.
    #[error("{path}: {message}")]
    BadSafetensors {
        /// The shard.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A tensor the architecture needs is absent from every shard.
    #[error("{dir}: missing tensor `{name}`")]
    MissingTensor {
        /// The model directory.
        dir: PathBuf,
        /// Full tensor name, e.g. `model.layers.3.self_attn.q_proj.weight`.
        name: String,
    },
    /// A tensor has a shape other than the config implies.
    #[error("{dir}: tensor `{name}` has shape {found:?}, expected {expected:?} from config.json")]
    ShapeMismatch {
        /// The model directory.
        dir: PathBuf,
        /// Full tensor name.
        name: String,
        /// Shape implied by the config.
        expected: Vec<usize>,
        /// Shape stored in the file.
        found: Vec<usize>,
    },
    /// A tensor is stored in a dtype this loader does not read.
    #[error("{dir}: tensor `{name}` has unsupported dtype {dtype} (bf16, f16 and f32 are read)")]
    UnsupportedDtype {
        /// The model directory.
        dir: PathBuf,
        /// Full tensor name.
        name: String,
        /// The stored dtype as safetensors names it.
        dtype: String,
    },
    /// The model does not fit in the memory of the device.
    #[error(
        "not enough memory on {device} for this model in {dtype:?}: needed {needed_gib:.2} GiB, available {available_gib:.2} GiB"
    )]
    InsufficientMemory {
        /// Device name (`cpu`, `cuda:0`, …).
        device: String,
        /// Requested dtype.
        dtype: DType,
        /// Estimated need in GiB.
        needed_gib: f64,
        /// Free memory in GiB.
        available_gib: f64,
    },
    /// The `--device` string is not understood or the device is unavailable.
    #[error("device `{spec}`: {message}")]
    BadDevice {
        /// The device string.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// The `--dtype` string is not one of bf16, f16, f32.
    #[error("dtype `{0}`: expected bf16, f16 or f32")]
    BadDtype(String),
    /// An error from candle while converting or placing a tensor.
    #[error("tensor `{name}`: {source}")]
    Tensor {
        /// Full tensor name.
        name: String,
        /// candle's error.
        source: candle_core::Error,
    },
}

/// A provider of named weight tensors: a model directory on disk, or random
/// weights built in memory (the benchmark).
pub trait TensorSource {
    /// Whether a tensor of that full name exists.
    fn contains(&self, name: &str) -> bool;

    /// Loads tensor `name`, checks it has `shape`, converts it to `dtype` and
    /// places it on `device`.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`], [`LoadError::ShapeMismatch`],
    /// [`LoadError::UnsupportedDtype`] or [`LoadError::Tensor`].
    fn tensor(
        &self,
        name: &str,
        shape: &[usize],
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor, LoadError>;

    /// The dtype the weights are stored in, if known (used as the default
    /// compute dtype).
    fn stored_dtype(&self) -> Option<DType>;
}

/// `model.safetensors.index.json` (only the part we read).
#[derive(Deserialize)]
struct ShardIndex {
    weight_map: HashMap<String, String>,
}

/// The memory-mapped safetensors of one model directory.
pub struct SafetensorsWeights {
    dir: PathBuf,
    mmaped: MmapedSafetensors,
    names: BTreeSet<String>,
    stored_dtype: Option<DType>,
}

impl SafetensorsWeights {
    /// Opens `model.safetensors` or the shards listed by
    /// `model.safetensors.index.json` in `dir` and memory-maps them.
    ///
    /// # Errors
    /// [`LoadError::NoWeights`], [`LoadError::Io`], [`LoadError::BadJson`]
    /// (index), [`LoadError::BadSafetensors`].
    pub fn open(dir: &Path) -> Result<Self, LoadError> {
        let index_path = dir.join("model.safetensors.index.json");
        let single = dir.join("model.safetensors");
        let files: Vec<PathBuf> = if index_path.is_file() {
            let text = read_text(&index_path)?;
            let index: ShardIndex =
                serde_json::from_str(&text).map_err(|e| LoadError::BadJson {
                    path: index_path.clone(),
                    message: e.to_string(),
                })?;
            let shard_names: BTreeSet<&String> = index.weight_map.values().collect();
            let mut files = Vec::new();
            for shard in shard_names {
                let path = dir.join(shard);
                if !path.is_file() {
                    return Err(LoadError::Io {
                        path,
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "shard listed in model.safetensors.index.json is missing",
                        ),
                    });
                }
                files.push(path);
            }
            files
        } else if single.is_file() {
            vec![single]
        } else {
            return Err(LoadError::NoWeights {
                dir: dir.to_path_buf(),
            });
        };
        // Open each shard alone first so a broken one is named in the error.
        for file in &files {
            map_safetensors(std::slice::from_ref(file)).map_err(|e| LoadError::BadSafetensors {
                path: file.clone(),
                message: e.to_string(),
            })?;
        }
        let mmaped = map_safetensors(&files).map_err(|e| LoadError::BadSafetensors {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let names: BTreeSet<String> = mmaped.tensors().into_iter().map(|(n, _)| n).collect();
        let stored_dtype = names
            .iter()
            .find(|n| n.ends_with("embed_tokens.weight"))
            .and_then(|n| mmaped.get(n).ok())
            .and_then(|view| safetensors_dtype(view.dtype()));
        Ok(Self {
            dir: dir.to_path_buf(),
            mmaped,
            names,
            stored_dtype,
        })
    }

    /// All tensor names in the directory, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

/// Memory-maps safetensors files.
#[allow(unsafe_code)]
fn map_safetensors(files: &[PathBuf]) -> candle_core::Result<MmapedSafetensors> {
    // SAFETY: the mapping is read-only; the only hazard memmap2 documents is
    // another process truncating or rewriting the file while it is mapped,
    // which a model directory in use is not expected to suffer. Each tensor
    // is copied out of the mapping when loaded.
    unsafe { MmapedSafetensors::multi(files) }
}

fn safetensors_dtype(dtype: safetensors::Dtype) -> Option<DType> {
    match dtype {
        safetensors::Dtype::BF16 => Some(DType::BF16),
        safetensors::Dtype::F16 => Some(DType::F16),
        safetensors::Dtype::F32 => Some(DType::F32),
        _ => None,
    }
}

impl TensorSource for SafetensorsWeights {
    fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    fn tensor(
        &self,
        name: &str,
        shape: &[usize],
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor, LoadError> {
        if !self.names.contains(name) {
            return Err(LoadError::MissingTensor {
                dir: self.dir.clone(),
                name: name.to_string(),
            });
        }
        let view = self.mmaped.get(name).map_err(|source| LoadError::Tensor {
            name: name.to_string(),
            source,
        })?;
        if view.shape() != shape {
            return Err(LoadError::ShapeMismatch {
                dir: self.dir.clone(),
                name: name.to_string(),
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        if safetensors_dtype(view.dtype()).is_none() {
            return Err(LoadError::UnsupportedDtype {
                dir: self.dir.clone(),
                name: name.to_string(),
                dtype: format!("{:?}", view.dtype()),
            });
        }
        let wrap = |source| LoadError::Tensor {
            name: name.to_string(),
            source,
        };
        // Convert on the CPU, then move: one host copy, one device copy.
        let tensor = candle_core::safetensors::Load::load(&view, &Device::Cpu).map_err(wrap)?;
        let tensor = tensor.to_dtype(dtype).map_err(wrap)?;
        tensor.to_device(device).map_err(wrap)
    }

    fn stored_dtype(&self) -> Option<DType> {
        self.stored_dtype
    }
}

fn read_text(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads and validates `config.json` of a model directory (flat ForCausalLM
/// form or released form with `text_config`).
///
/// # Errors
/// [`LoadError::Io`], [`LoadError::BadJson`] (names a missing or mistyped
/// field with its line), [`LoadError::InvalidConfig`].
pub fn read_config(dir: &Path) -> Result<Config, LoadError> {
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

/// Parses a device name: `cpu`, `cuda`, `cuda:N`, `metal`, `metal:N`.
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
            Device::new_cuda(ordinal).map_err(|e| bad(e.to_string()))
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

/// A device's display name (`cpu`, `cuda:0`, `metal:0`).
pub fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".to_string(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

/// The memory a model needs on its device, estimated from the config before
/// any tensor is allocated.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MemoryEstimate {
    /// Weights in the compute dtype (norm weights count in f32).
    pub weight_bytes: u64,
    /// Decode state of one sequence at `context_tokens` tokens (KV cache of
    /// the attention layers in the compute dtype, f32 recurrent state and
    /// conv state of the DeltaNet layers).
    pub state_bytes: u64,
    /// Activations and scratch buffers of a prefill chunk (an allowance).
    pub scratch_bytes: u64,
    /// The context length `state_bytes` is computed for.
    pub context_tokens: usize,
}

impl MemoryEstimate {
    /// Weights, state and scratch together.
    pub fn total_bytes(&self) -> u64 {
        self.weight_bytes + self.state_bytes + self.scratch_bytes
    }

    /// [`Self::total_bytes`] in GiB.
    pub fn total_gib(&self) -> f64 {
        self.total_bytes() as f64 / BYTES_PER_GIB
    }
}

/// Estimates the memory `config` needs in `dtype` with one sequence of
/// `context_tokens` tokens.
pub fn estimate_memory(config: &Config, dtype: DType, context_tokens: usize) -> MemoryEstimate {
    let counts = config.param_counts();
    let elem = dtype.size_in_bytes() as u64;
    let weight_bytes = counts.total * elem;
    let state_bytes = config.state_bytes(context_tokens, dtype) as u64;
    // Largest transient buffers: the f32 logits of one position and the
    // projections of a 512-token prefill chunk, with headroom ×4.
    let h = config.hidden_size as u64;
    let widest = (config.num_attention_heads * config.head_dim * 2)
        .max(config.linear_conv_dim())
        .max(config.vocab_size) as u64;
    let scratch_bytes = 4 * (512 * (h + widest) * 4 + config.vocab_size as u64 * 4);
    MemoryEstimate {
        weight_bytes,
        state_bytes,
        scratch_bytes,
        context_tokens,
    }
}

/// Free memory on `device` in bytes, if it can be read: `MemAvailable` of
/// `/proc/meminfo` for the CPU (and Metal's unified memory), the driver's
/// free-memory query for CUDA.
pub fn available_memory_bytes(device: &Device) -> Option<u64> {
    match device {
        Device::Cuda(_) => cuda_free_bytes(device),
        _ => {
            let text = std::fs::read_to_string("/proc/meminfo").ok()?;
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_free_bytes(device: &Device) -> Option<u64> {
    let cuda = device.as_cuda_device().ok()?;
    cuda.cuda_stream().context().bind_to_thread().ok()?;
    let (free, _total) = candle_core::cuda_backend::cudarc::driver::result::mem_get_info().ok()?;
    Some(free as u64)
}

#[cfg(not(feature = "cuda"))]
fn cuda_free_bytes(_device: &Device) -> Option<u64> {
    None
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
    if let Some(available) = available_memory_bytes(device)
        && estimate.total_bytes() > available
    {
        return Err(LoadError::InsufficientMemory {
            device: device_name(device),
            dtype,
            needed_gib: estimate.total_gib(),
            available_gib: available as f64 / BYTES_PER_GIB,
        });
    }
    Ok(estimate)
}

/// Loads a Qwen3.5-MoE model from a Hugging Face model directory.
///
/// Reads `config.json`, memory-maps the safetensors, checks the memory
/// estimate against the device, then builds the model tensor by tensor.
///
/// # Errors
/// Every [`LoadError`] variant: unreadable or invalid config, missing
/// weights, a missing tensor or one of the wrong shape (both named), not
/// enough memory (needed vs available GiB).
pub fn load_model(dir: &Path, options: &LoadOptions) -> Result<Qwen3_5Moe, LoadError> {
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

/// Random weights for a config, built in memory: the benchmark's model at
/// real widths without a checkpoint on disk.
///
/// Names follow the flat `model.` layout with stacked experts. Matrices are
/// drawn from N(0, 1/fan_in), vectors (norms, `A_log`, `dt_bias`) from
/// N(0, 0.1²). Tensors above 32 Mi elements repeat one random block 16 times
/// along their first dimension to keep generation fast; the arithmetic per
/// token is unchanged.
pub struct RandomWeights {
    seed: u64,
}

impl RandomWeights {
    /// Random weights; `seed` seeds GPU generators (candle's CPU generator
    /// cannot be seeded).
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }
}

impl TensorSource for RandomWeights {
    fn contains(&self, name: &str) -> bool {
        // Flat names, stacked experts, untied lm_head.
        !name.starts_with("model.language_model.") && !name.contains(".experts.0.")
    }

    fn tensor(
        &self,
        name: &str,
        shape: &[usize],
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor, LoadError> {
        let wrap = |source| LoadError::Tensor {
            name: name.to_string(),
            source,
        };
        if !device.is_cpu() {
            // One seed per tensor name (FNV-1a), so tensors differ. The CPU
            // generator cannot be seeded in candle; it is random per run.
            let seed = name
                .bytes()
                .fold(self.seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            device.set_seed(seed).map_err(wrap)?;
        }
        let std = if shape.len() == 1 {
            0.1
        } else {
            1.0 / (shape[shape.len() - 1] as f64).sqrt()
        };
        let elems: usize = shape.iter().product();
        const REPEAT: usize = 16;
        let tensor = if elems > 32 << 20 && shape[0].is_multiple_of(REPEAT) {
            let mut block_shape = shape.to_vec();
            block_shape[0] /= REPEAT;
            let block = Tensor::randn(0f32, std as f32, block_shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(wrap)?;
            Tensor::cat(&[&block; REPEAT], 0).map_err(wrap)?
        } else {
            Tensor::randn(0f32, std as f32, shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(wrap)?
        };
        Ok(tensor)
    }

    fn stored_dtype(&self) -> Option<DType> {
        None
    }
}
