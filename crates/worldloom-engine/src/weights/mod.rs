//! Weight tensors by name: where a model's parameters come from.
//!
//! A model asks a [`Weights`] handle for its tensors by name. The handle
//! carries a name prefix, the compute dtype and the device together, in the
//! manner of candle-nn's `VarBuilder`: `weights.pp("model").pp("layers").pp(3)`
//! reads `model.layers.3.…`, and `get(name, shape)` returns that tensor,
//! checked against the shape, converted to the dtype and placed on the
//! device. Behind the handle sits a [`TensorSource`]:
//!
//! - [`SafetensorsWeights`]: the safetensors of a Hugging Face model
//!   directory, one `model.safetensors` or shards listed by
//!   `model.safetensors.index.json`, memory-mapped. Each tensor is read,
//!   converted and placed one at a time, so the peak memory is the model
//!   plus one tensor.
//! - [`RandomWeights`]: random tensors built in memory (the benchmark's model
//!   at real widths).
//!
//! Experts stored one tensor per expert are read through
//! [`Weights::get_stacked`]; experts stored stacked are one tensor.
//!
//! [`memory`] holds the memory check: [`MemoryEstimate`] against the free
//! memory of a device, failing with [`LoadError::InsufficientMemory`]
//! ("needed X GiB, available Y GiB") before any tensor is allocated.
//!
//! This module knows no model: models import it, never the reverse.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

pub mod memory;
mod random;
mod safetensors_dir;

pub use memory::{BYTES_PER_GIB, MemoryEstimate, available_memory_bytes, device_name, ensure_fits};
pub use random::RandomWeights;
pub use safetensors_dir::SafetensorsWeights;

/// Everything that can go wrong while reading a model directory or its
/// weights.
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

impl LoadError {
    /// Wraps a candle error met while building tensor `name` (its full
    /// name) as [`LoadError::Tensor`].
    pub fn tensor(name: &str) -> impl Fn(candle_core::Error) -> LoadError + '_ {
        move |source| LoadError::Tensor {
            name: name.to_string(),
            source,
        }
    }
}

/// What a model asks a [`TensorSource`] for.
#[derive(Debug, Clone, Copy)]
pub struct TensorRequest<'a> {
    /// Full tensor name, e.g. `model.layers.3.self_attn.q_proj.weight`.
    pub name: &'a str,
    /// The shape the config implies; a stored tensor of another shape is a
    /// [`LoadError::ShapeMismatch`].
    pub shape: &'a [usize],
    /// The dtype to convert to.
    pub dtype: DType,
    /// The device to place the tensor on.
    pub device: &'a Device,
}

/// A provider of named weight tensors: a model directory on disk, or random
/// weights built in memory (the benchmark).
pub trait TensorSource {
    /// Whether a tensor of that full name exists.
    fn contains(&self, name: &str) -> bool;

    /// Loads tensor `request.name`, checks it has `request.shape`, converts
    /// it to `request.dtype` and places it on `request.device`.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`], [`LoadError::ShapeMismatch`],
    /// [`LoadError::UnsupportedDtype`] or [`LoadError::Tensor`].
    fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError>;

    /// The dtype the weights are stored in, if known (used as the default
    /// compute dtype).
    fn stored_dtype(&self) -> Option<DType>;
}

/// A prefixed handle on a [`TensorSource`]: name prefix, compute dtype and
/// device travel together (candle-nn's `VarBuilder` pattern).
///
/// Cloning is cheap; [`Weights::pp`] returns a handle one name segment
/// deeper and leaves `self` as it was.
#[derive(Clone)]
pub struct Weights<'a> {
    source: &'a dyn TensorSource,
    /// Dot-joined segments, without a trailing dot; empty at the root.
    prefix: String,
    dtype: DType,
    device: Device,
}

impl<'a> Weights<'a> {
    /// The root handle: no prefix, tensors in `dtype` on `device`.
    pub fn new(source: &'a dyn TensorSource, dtype: DType, device: &Device) -> Self {
        Self {
            source,
            prefix: String::new(),
            dtype,
            device: device.clone(),
        }
    }

    /// The handle for names under `segment`: `pp("layers").pp(3)` reads
    /// `layers.3.…` below this handle's prefix.
    pub fn pp(&self, segment: impl std::fmt::Display) -> Self {
        Self {
            prefix: self.path(&segment.to_string()),
            ..self.clone()
        }
    }

    /// The full name of `name` under this handle's prefix.
    pub fn path(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    /// The compute dtype [`Weights::get`] converts to.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device tensors are placed on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the source holds `name` under this prefix.
    pub fn contains(&self, name: &str) -> bool {
        self.source.contains(&self.path(name))
    }

    /// Tensor `name` under this prefix, of `shape`, in the handle's dtype.
    ///
    /// # Errors
    /// See [`TensorSource::tensor`]; errors name the full tensor name.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor, LoadError> {
        self.get_as(name, shape, self.dtype)
    }

    /// Tensor `name` under this prefix, of `shape`, in `dtype` (e.g. f32
    /// norm weights of a bf16 model).
    ///
    /// # Errors
    /// See [`TensorSource::tensor`].
    pub fn get_as(&self, name: &str, shape: &[usize], dtype: DType) -> Result<Tensor, LoadError> {
        self.source.tensor(&TensorRequest {
            name: &self.path(name),
            shape,
            dtype,
            device: &self.device,
        })
    }

    /// Tensors `0.name`, `1.name`, … `(count − 1).name` under this prefix,
    /// each of `shape`, stacked along a new first dimension:
    /// `[count, shape…]` in the handle's dtype (experts stored one tensor
    /// per expert).
    ///
    /// # Errors
    /// See [`TensorSource::tensor`]; [`LoadError::Tensor`] naming
    /// `prefix.name` when stacking fails.
    pub fn get_stacked(
        &self,
        count: usize,
        name: &str,
        shape: &[usize],
    ) -> Result<Tensor, LoadError> {
        let parts = (0..count)
            .map(|i| self.pp(i).get(name, shape))
            .collect::<Result<Vec<_>, _>>()?;
        Tensor::stack(&parts, 0).map_err(self.error(name))
    }

    /// Wraps a candle error met while building tensor `name` (under this
    /// prefix) as [`LoadError::Tensor`] with its full name.
    pub fn error(&self, name: &str) -> impl Fn(candle_core::Error) -> LoadError + use<> {
        let name = self.path(name);
        move |source| LoadError::Tensor {
            name: name.clone(),
            source,
        }
    }
}

/// Reads a text file (a config or a shard index).
pub(crate) fn read_text(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}
