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
//! - [`GgufFile`] ([`gguf`]): a GGUF file or split parts (llama.cpp's
//!   format, quantized block types included), read one tensor at a time;
//!   a model maps its own names onto it (`qwen3_5_moe::gguf`); written by
//!   [`gguf_writer`] (header, tensor table, blocks streamed one tensor at a
//!   time).
//! - [`RandomWeights`]: random tensors built in memory (the benchmark's model
//!   at real widths).
//!
//! Projections come as a [`LinearWeight`] (dense, or quantized as stored
//! through [`TensorSource::quantized`]) and stacked experts as
//! [`ExpertWeights`] (quantized ones one tensor per expert).
//!
//! Experts stored one tensor per expert are read through
//! [`Weights::get_stacked`]; experts stored stacked are one tensor.
//!
//! [`memory`] holds the memory check: [`MemoryEstimate`] against the free
//! memory of a device, failing with [`LoadError::InsufficientMemory`]
//! ("needed X GiB, available Y GiB") before any tensor is allocated.
//!
//! This module knows no model: models import it, never the reverse.

mod error;
pub mod gguf;
pub mod gguf_writer;
mod handle;
mod linear;
mod mapped;
pub use mapped::quantized_resident_bytes;
pub mod memory;
mod random;
mod safetensors_dir;
mod source;

pub use error::LoadError;
pub(crate) use error::read_text;
pub use gguf::GgufFile;
pub use handle::Weights;
pub use linear::{ExpertWeights, LinearWeight, QuantizedWeight};
pub use memory::{BYTES_PER_GIB, MemoryEstimate, available_memory_bytes, device_name, ensure_fits};
pub use random::RandomWeights;
pub use safetensors_dir::SafetensorsWeights;
pub use source::{TensorRequest, TensorSource};
