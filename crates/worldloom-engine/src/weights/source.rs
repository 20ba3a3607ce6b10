//! [`TensorSource`]: the trait a weight format implements, and the
//! [`TensorRequest`] a model sends it.

use candle_core::{DType, Device, Tensor};

use super::error::LoadError;

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
