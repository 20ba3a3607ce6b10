//! Compute kernels the models share.
//!
//! [`linear`] is `x @ wᵀ`, routed to the CPU streaming kernel of [`cpu`]
//! where it applies and to candle's matmul elsewhere.

pub(crate) mod cpu;

use candle_core::{DType, Tensor};

/// `x @ wᵀ` for `x` [T, in] and `w` [out, in] (a plain or narrowed weight).
///
/// On the CPU, bf16 and f16 weights with at most
/// [`cpu::MAX_STREAM_ROWS`] rows of `x` go through a row-streaming
/// kernel that widens each weight row to f32 in cache and reads the weight
/// once (decode and the small per-expert batches of a prefill); larger bf16
/// inputs widen only the viewed weight to f32 and use candle's gemm (candle's
/// own bf16 CPU matmul widens the whole storage behind a view, i.e. all
/// experts of a layer).
pub(crate) fn linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    if x.device().is_cpu() && matches!(w.dtype(), DType::BF16 | DType::F16) {
        if let Some(y) = cpu::try_linear(x, w)? {
            return Ok(y);
        }
        if w.dtype() == DType::BF16 {
            return x
                .to_dtype(DType::F32)?
                .matmul(&w.to_dtype(DType::F32)?.t()?)?
                .to_dtype(DType::BF16);
        }
    }
    x.matmul(&w.t()?)
}
