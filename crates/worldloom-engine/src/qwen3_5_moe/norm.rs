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

    /// The norm of `x` [.., dim]; `fused` runs it as one fused op
    /// ([`crate::kernels::fused::rms_norm_scaled`], the same maths).
    pub(super) fn forward_with(&self, x: &Tensor, fused: bool) -> candle_core::Result<Tensor> {
        if fused {
            crate::kernels::fused::rms_norm_scaled(x, &self.scale, self.eps)
        } else {
            self.forward(x)
        }
    }

    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        rms_normalise_f32(x, self.eps)?
            .broadcast_mul(&self.scale)?
            .to_dtype(x.dtype())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qwen3_5_moe::max_rel_diff;
    use candle_core::Device;

    /// The fused RMSNorm (CPU implementation) equals the unfused candle
    /// path: f32 to 1e-6 of the output's scale, bf16/f16 to one rounding
    /// of the dtype.
    #[test]
    fn fused_rms_norm_matches_unfused() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let scale = (Tensor::randn(0f32, 0.3, 96, &dev)? + 1.0)?;
        let norm = ZeroCentredRmsNorm { scale, eps: 1e-6 };
        let x = (Tensor::randn(0f32, 2.0, (5, 96), &dev)? + 0.5)?;
        for (dtype, tol) in [(DType::F32, 1e-6), (DType::BF16, 8e-3), (DType::F16, 1e-3)] {
            let x = x.to_dtype(dtype)?;
            let want = norm.forward(&x)?;
            let got = norm.forward_with(&x, true)?;
            assert_eq!(got.dtype(), dtype);
            assert_eq!(got.dims(), want.dims());
            let diff = max_rel_diff(&got, &want);
            assert!(diff <= tol, "{dtype:?}: {diff}");
        }
        // A view with an offset (a row of a larger tensor) is read as such.
        let row = x.narrow(0, 3, 1)?;
        let diff = max_rel_diff(&norm.forward_with(&row, true)?, &norm.forward(&row)?);
        assert!(diff <= 1e-6, "view: {diff}");
        Ok(())
    }
}
