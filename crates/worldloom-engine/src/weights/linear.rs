//! [`LinearWeight`]: a projection's weight, dense or quantized, and
//! [`ExpertWeights`]: a stack of expert projections, dense or quantized.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Module, Tensor};

use crate::kernels::linear;

/// The weight `w` [out, in] of a projection `x @ wᵀ`: a dense tensor in
/// the compute dtype (through the crate's dense kernel) or a quantized
/// GGUF block tensor (through candle's quantized matmul).
#[derive(Debug, Clone)]
pub enum LinearWeight {
    /// A dense tensor [out, in] in the model's compute dtype.
    Dense(Tensor),
    /// A quantized tensor [out, in] (Q8_0, Q4_K, …): the input is widened
    /// to f32, multiplied by candle's quantized kernels, and the f32 output
    /// cast back to the input's dtype.
    Quantized(Arc<QTensor>),
}

impl LinearWeight {
    /// `x @ wᵀ` for `x` [T, in]: [T, out] in `x`'s dtype.
    ///
    /// # Errors
    /// candle's shape and device errors.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(w) => linear(x, w),
            Self::Quantized(q) => {
                let dtype = x.dtype();
                let x32 = x.to_dtype(DType::F32)?.contiguous()?;
                let y = QMatMul::QTensor(q.clone()).forward(&x32)?;
                y.to_dtype(dtype)
            }
        }
    }

    /// Rows `ids` of `w` as a dense [len(ids), in] tensor in `dtype`
    /// (an embedding lookup); a quantized weight dequantizes only those
    /// rows.
    ///
    /// # Errors
    /// candle's errors (an id out of range among them).
    pub fn rows(&self, ids: &Tensor, dtype: DType) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(w) => w.index_select(ids, 0)?.to_dtype(dtype),
            Self::Quantized(q) => q.embedding(ids)?.to_dtype(dtype),
        }
    }

    /// The weight's dims, [out, in].
    pub fn dims(&self) -> &[usize] {
        match self {
            Self::Dense(w) => w.dims(),
            Self::Quantized(q) => q.shape().dims(),
        }
    }

    /// The stored block type for a quantized weight, `None` for a dense one.
    pub fn quantized_type(&self) -> Option<GgmlDType> {
        match self {
            Self::Dense(_) => None,
            Self::Quantized(q) => Some(q.dtype()),
        }
    }
}

/// Experts of one MoE layer for one projection, `[E, out, in]`.
#[derive(Debug, Clone)]
pub enum ExpertWeights {
    /// A dense stacked tensor [E, out, in] in the compute dtype.
    Dense(Tensor),
    /// One quantized [out, in] tensor per expert (each a block-aligned byte
    /// range of the file's 3-D tensor, read on its own).
    Quantized(Vec<Arc<QTensor>>),
}

impl ExpertWeights {
    /// Number of experts.
    pub fn len(&self) -> usize {
        match self {
            Self::Dense(t) => t.dims().first().copied().unwrap_or(0),
            Self::Quantized(v) => v.len(),
        }
    }

    /// Whether there are no experts.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Expert `e`'s weight [out, in].
    ///
    /// # Errors
    /// `e` out of range.
    pub fn expert(&self, e: usize) -> candle_core::Result<LinearWeight> {
        match self {
            Self::Dense(t) => Ok(LinearWeight::Dense(t.get(e)?)),
            Self::Quantized(v) => v
                .get(e)
                .cloned()
                .map(LinearWeight::Quantized)
                .ok_or_else(|| candle_core::Error::Msg(format!("no expert {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .and_then(|d| d.abs())
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .expect("diff")
    }

    /// A quantized projection and row lookup agree with the dense ones on
    /// the dequantized weight.
    #[test]
    fn quantized_matches_dequantized_dense() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (48, 256), &dev)?;
        let x = Tensor::randn(0f32, 1.0, (5, 256), &dev)?;
        for dtype in [
            GgmlDType::Q8_0,
            GgmlDType::Q4_0,
            GgmlDType::Q4K,
            GgmlDType::Q5K,
            GgmlDType::Q6K,
        ] {
            let q = QTensor::quantize(&w, dtype)?;
            let dense = LinearWeight::Dense(q.dequantize(&dev)?);
            let quant = LinearWeight::Quantized(Arc::new(q));
            let (a, b) = (dense.forward(&x)?, quant.forward(&x)?);
            let scale = a.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            let diff = max_abs_diff(&a, &b);
            // candle quantizes the input to 8 bits as llama.cpp does.
            assert!(diff <= 0.03 * scale, "{dtype:?}: {diff} of {scale}");
            let ids = Tensor::new(&[3u32, 0, 47, 3], &dev)?;
            let diff = max_abs_diff(
                &dense.rows(&ids, DType::F32)?,
                &quant.rows(&ids, DType::F32)?,
            );
            assert_eq!(diff, 0.0, "{dtype:?} rows");
        }
        Ok(())
    }
}
