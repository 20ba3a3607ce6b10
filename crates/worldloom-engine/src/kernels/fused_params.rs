//! The fused decode ops' parameters: what each op is given besides its
//! tensors. Shared by the CPU implementations ([`super::fused`]) and their
//! CUDA twins (`super::cuda`), which both read them.

use candle_core::{DType, Tensor};

/// [`super::fused::rms_norm_scaled`] as a custom op: (x, scale) → y.
pub(crate) struct RmsNormScaled {
    pub(crate) eps: f32,
}

/// [`super::fused::gated_rms_norm`] as a custom op: (o, z, w) → y.
pub(crate) struct GatedRmsNorm {
    pub(crate) eps: f32,
}

/// Widths of a Gated DeltaNet layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GdnDims {
    /// Key heads.
    pub(crate) n_k: usize,
    /// Value heads (a multiple of `n_k`).
    pub(crate) n_v: usize,
    /// Key (and query) head width.
    pub(crate) d_k: usize,
    /// Value head width.
    pub(crate) d_v: usize,
    /// Conv taps.
    pub(crate) kernel: usize,
    /// Value head h uses key head h mod n_k (llama.cpp's order) instead of
    /// h / (n_v / n_k).
    pub(crate) tiled: bool,
}

/// [`super::fused::gdn_decode_step`] as a custom op on the conv window; the op carries
/// the other inputs. Output f32 `[n_v·d_v + n_v·d_k·d_v]`: the gated-norm
/// output (values already rounded to the model dtype), then the new state.
pub(crate) struct GdnDecodeStep {
    pub(crate) taps: Tensor,
    pub(crate) z: Tensor,
    pub(crate) b: Tensor,
    pub(crate) a: Tensor,
    pub(crate) neg_a: Tensor,
    pub(crate) dt_bias: Tensor,
    pub(crate) norm_weight: Tensor,
    pub(crate) state: Tensor,
    pub(crate) dims: GdnDims,
    pub(crate) eps: f32,
}

/// [`super::fused::router_top_k`] as a custom op: logits `[T, E]` → f32 `[T, 2k]` (the
/// k expert ids as f32, then the k weights).
pub(crate) struct RouterTopK {
    pub(crate) k: usize,
    pub(crate) weight_dtype: DType,
}

/// [`super::fused::sample_candidates`] as a custom op: logits `[V]` f32 → f32 `[3k + 2]`:
/// k ids as f32 (−1 past the finite ones), k scaled logits, k raw logits,
/// the max finite logit, ln Σ exp(x − max).
pub(crate) struct SampleCandidates {
    pub(crate) k: usize,
    pub(crate) temperature: f32,
}

/// Epsilon of the L2 normalisation of DeltaNet queries and keys.
pub(crate) const GDN_L2_EPS: f32 = 1e-6;
