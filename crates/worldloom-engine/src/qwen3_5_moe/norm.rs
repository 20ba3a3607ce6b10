//! RMS normalisation in f32, and the zero-centred RMSNorm of the decoder.

use candle_core::{D, DType, Tensor};

use crate::weights::{LoadError, Weights};

/// RMSNorm in f32 over the last dimension: x · rsqrt(mean(x²) + eps).
pub(super) fn rms_normalise_f32(x: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
    let x = x.to_dtype(DType::F32)?;
    let mean_sq = x.sqr()?.mean_keepdim(D::Minus1)?;
    x.broadcast_div(&(mean_sq + eps)?.sqrt()?)
}

/// Zero-centred RMSNorm: rmsnorm(x) · (1 + w) in f32, cast back to x's dtype.
#[derive(Debug, Clone)]
pub(super) struct ZeroCentredRmsNorm {
    /// 1 + w, in f32.
    scale: Tensor,
    eps: f64,
}

impl ZeroCentredRmsNorm {
    /// Reads weight `name` [dim] under `vb` in f32.
    pub(super) fn load(
        vb: &Weights<'_>,
        name: &str,
        dim: usize,
        eps: f64,
    ) -> Result<Self, LoadError> {
        let w = vb.get_as(name, &[dim], DType::F32)?;
        let scale = (w + 1.0).map_err(vb.error(name))?;
        Ok(Self { scale, eps })
    }

    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        rms_normalise_f32(x, self.eps)?
            .broadcast_mul(&self.scale)?
            .to_dtype(x.dtype())
    }
}
