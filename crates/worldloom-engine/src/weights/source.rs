//! [`TensorSource`]: the trait a weight format implements, and the
//! [`TensorRequest`] a model sends it.

use candle_core::{DType, Device, Tensor};

use super::error::LoadError;
use super::linear::QuantizedWeight;

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

    /// Tensor `request.name` as its stored quantized blocks (Q8_0, Q4_K, …)
    /// on `request.device`, when the source stores it block-quantized and
    /// can hand it over unchanged; `None` when [`TensorSource::tensor`]
    /// is the way to read it (dense formats, or a value that needs a
    /// transform). `request.dtype` is ignored.
    ///
    /// # Errors
    /// As [`TensorSource::tensor`].
    fn quantized(&self, request: &TensorRequest<'_>) -> Result<Option<QuantizedWeight>, LoadError> {
        let _ = request;
        Ok(None)
    }

    /// Stacked experts `request.name` of shape `[E, out, in]` as one
    /// quantized `[out, in]` tensor per expert (each read from its own byte
    /// range, so the whole stack is never held twice), when stored
    /// block-quantized; `None` otherwise.
    ///
    /// # Errors
    /// As [`TensorSource::tensor`].
    fn quantized_experts(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<Option<Vec<QuantizedWeight>>, LoadError> {
        let _ = request;
        Ok(None)
    }
}
