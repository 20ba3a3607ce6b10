//! [`LoadError`]: what can go wrong while reading a model directory or its
//! weights.

use std::path::{Path, PathBuf};

use candle_core::DType;

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
    /// A GGUF file could not be parsed, is truncated, or holds something
    /// the model cannot use; the message names the tensor or key.
    #[error("{path}: {message}")]
    BadGguf {
        /// The GGUF file (or part).
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

/// Reads a text file (a config or a shard index).
pub(crate) fn read_text(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}
