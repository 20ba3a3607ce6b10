//! [`Weights`]: the prefixed handle a model reads its tensors through.

use candle_core::{DType, Device, Tensor};

use super::error::LoadError;
use super::linear::{ExpertWeights, LinearWeight};
use super::source::{TensorRequest, TensorSource};
use candle_core::quantized::GgmlDType;

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

    /// The projection weight `name` [out, in] under this prefix: quantized
    /// as stored when the source holds it block-quantized
    /// ([`TensorSource::quantized`]), else dense in the handle's dtype.
    ///
    /// # Errors
    /// See [`TensorSource::tensor`].
    /// A quantized weight is made ready for its matmuls now
    /// ([`QuantizedWeight::prepare`]), so the first tokens do not pay for
    /// it.
    pub fn get_linear(&self, name: &str, shape: &[usize]) -> Result<LinearWeight, LoadError> {
        let weight = self.get_embedding(name, shape)?;
        if let LinearWeight::Quantized(q) = &weight {
            q.prepare().map_err(self.error(name))?;
        }
        Ok(weight)
    }

    /// An embedding table `name` [vocab, hidden]: as [`Weights::get_linear`]
    /// but left as stored, since only the looked-up rows are read (prepared
    /// on its first matmul if it is also the output projection).
    ///
    /// # Errors
    /// See [`TensorSource::tensor`].
    pub fn get_embedding(&self, name: &str, shape: &[usize]) -> Result<LinearWeight, LoadError> {
        let request = TensorRequest {
            name: &self.path(name),
            shape,
            dtype: self.dtype,
            device: &self.device,
        };
        match self.source.quantized(&request)? {
            Some(q) => Ok(LinearWeight::Quantized(q)),
            None => Ok(LinearWeight::Dense(self.get(name, shape)?)),
        }
    }

    /// Stacked experts `name` of `shape` [E, out, in] under this prefix:
    /// one quantized tensor per expert when stored block-quantized
    /// ([`TensorSource::quantized_experts`]), else one dense stacked tensor
    /// in the handle's dtype.
    ///
    /// # Errors
    /// See [`TensorSource::tensor`].
    pub fn get_experts(&self, name: &str, shape: &[usize]) -> Result<ExpertWeights, LoadError> {
        let request = TensorRequest {
            name: &self.path(name),
            shape,
            dtype: self.dtype,
            device: &self.device,
        };
        // On CUDA the stack stays one 3-D tensor for the indexed kernel.
        if self.device.is_cuda()
            && let Some(q) = self.source.quantized(&request)?
            && indexed_moe_supports(q.tensor().dtype())
        {
            return Ok(ExpertWeights::QuantizedStack(q));
        }
        match self.source.quantized_experts(&request)? {
            Some(v) => {
                for q in &v {
                    q.prepare().map_err(self.error(name))?;
                }
                Ok(ExpertWeights::Quantized(v))
            }
            None => Ok(ExpertWeights::Dense(self.get(name, shape)?)),
        }
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

/// The block types candle's CUDA indexed MoE kernel takes
/// (`QTensor::indexed_moe_forward`).
fn indexed_moe_supports(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q8_0
            | GgmlDType::Q2K
            | GgmlDType::Q3K
            | GgmlDType::Q4K
            | GgmlDType::Q5K
            | GgmlDType::Q6K
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each tensor is filled with the byte sum of its full name, in the
    /// requested dtype; `missing` is absent.
    struct NameSums;

    fn byte_sum(name: &str) -> f32 {
        name.bytes().map(f32::from).sum()
    }

    impl TensorSource for NameSums {
        fn contains(&self, name: &str) -> bool {
            !name.ends_with("missing")
        }

        fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError> {
            if !self.contains(request.name) {
                return Err(LoadError::MissingTensor {
                    dir: "memory".into(),
                    name: request.name.to_string(),
                });
            }
            Tensor::full(byte_sum(request.name), request.shape, request.device)
                .and_then(|t| t.to_dtype(request.dtype))
                .map_err(LoadError::tensor(request.name))
        }

        fn stored_dtype(&self) -> Option<DType> {
            None
        }
    }

    /// Prefixes join with dots, `get` reads the full name in the handle's
    /// dtype, `get_as` in another, and errors name the full tensor name.
    #[test]
    fn prefixes_build_full_names() -> Result<(), LoadError> {
        let root = Weights::new(&NameSums, DType::BF16, &Device::Cpu);
        let layer = root.pp("model").pp("layers").pp(3);
        assert_eq!(root.path("lm_head.weight"), "lm_head.weight");
        assert_eq!(layer.path("q.weight"), "model.layers.3.q.weight");
        let q = layer.get("q.weight", &[2, 3])?;
        assert_eq!((q.dims(), q.dtype()), (&[2, 3][..], DType::BF16));
        let values: Vec<f32> = q
            .to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .map_err(LoadError::tensor("q"))?;
        // The byte sum rounded to bf16 (8 bits of mantissa), as stored.
        let want = half::bf16::from_f32(byte_sum("model.layers.3.q.weight")).to_f32();
        assert_eq!(values, vec![want; 6]);
        assert_eq!(
            layer.get_as("q.weight", &[1], DType::F32)?.dtype(),
            DType::F32
        );
        assert!(layer.contains("q.weight") && !layer.contains("missing"));
        match layer.get("missing", &[1]) {
            Err(LoadError::MissingTensor { name, .. }) => {
                assert_eq!(name, "model.layers.3.missing");
            }
            other => panic!("expected a missing tensor, got {other:?}"),
        }
        Ok(())
    }

    /// `get_stacked` reads `0.name`, `1.name`, … under the prefix and stacks
    /// them along a new first dimension, in order.
    #[test]
    fn stacked_tensors_follow_their_index() -> Result<(), LoadError> {
        let experts = Weights::new(&NameSums, DType::F32, &Device::Cpu).pp("e");
        let stacked = experts.get_stacked(12, "w", &[2])?;
        assert_eq!(stacked.dims(), &[12, 2]);
        let rows: Vec<Vec<f32>> = stacked.to_vec2().map_err(LoadError::tensor("e"))?;
        for (i, row) in rows.iter().enumerate() {
            let want = byte_sum(&format!("e.{i}.w"));
            assert_eq!(row, &vec![want; 2], "expert {i}");
        }
        Ok(())
    }
}
