//! [`Weights`]: the prefixed handle a model reads its tensors through.

use candle_core::{DType, Device, Tensor};

use super::error::LoadError;
use super::source::{TensorRequest, TensorSource};

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
