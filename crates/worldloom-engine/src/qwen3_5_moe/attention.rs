//! Gated full attention (`self_attn`): `q_proj` yields per head a query and
//! an output gate, zero-centred q/k RMSNorms, rotate-half RoPE on the first
//! `head_dim × partial_rotary_factor` dimensions, GQA, output ×
//! sigmoid(gate).

use candle_core::{D, DType, Tensor};

use super::config::Config;
use super::norm::ZeroCentredRmsNorm;
use crate::weights::{LinearWeight, LoadError, Weights};

/// Gated full attention (`self_attn`).
#[derive(Debug, Clone)]
pub(super) struct FullAttention {
    q_proj: LinearWeight,
    k_proj: LinearWeight,
    v_proj: LinearWeight,
    o_proj: LinearWeight,
    q_norm: ZeroCentredRmsNorm,
    k_norm: ZeroCentredRmsNorm,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
}

/// KV cache of one attention layer: K and V as [kv_heads, T, head_dim].
#[derive(Debug, Clone)]
pub(super) struct KvCache {
    pub(super) k: Tensor,
    pub(super) v: Tensor,
}

impl FullAttention {
    /// Reads the layer's `self_attn` under `vb`.
    pub(super) fn load(cfg: &Config, vb: &Weights<'_>) -> Result<Self, LoadError> {
        let (h, nh, kvh, hd) = (
            cfg.hidden_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        );
        Ok(Self {
            q_proj: vb.get_linear("q_proj.weight", &[nh * hd * 2, h])?,
            k_proj: vb.get_linear("k_proj.weight", &[kvh * hd, h])?,
            v_proj: vb.get_linear("v_proj.weight", &[kvh * hd, h])?,
            o_proj: vb.get_linear("o_proj.weight", &[h, nh * hd])?,
            q_norm: ZeroCentredRmsNorm::load(vb, "q_norm.weight", hd, cfg.rms_norm_eps)?,
            k_norm: ZeroCentredRmsNorm::load(vb, "k_norm.weight", hd, cfg.rms_norm_eps)?,
            num_heads: nh,
            num_kv_heads: kvh,
            head_dim: hd,
            rotary_dim: cfg.rotary_dim(),
        })
    }

    /// Rotate-half RoPE on the first `rotary_dim` dims of x [heads, T, hd].
    fn rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
        let rot = x.narrow(D::Minus1, 0, self.rotary_dim)?.contiguous()?;
        let rot = candle_nn::rotary_emb::rope(&rot.unsqueeze(0)?, cos, sin)?.squeeze(0)?;
        if self.rotary_dim == self.head_dim {
            return Ok(rot);
        }
        let pass = x.narrow(D::Minus1, self.rotary_dim, self.head_dim - self.rotary_dim)?;
        Tensor::cat(&[&rot, &pass], D::Minus1)
    }

    /// x [T, hidden] → [T, hidden]; `cos`/`sin` [T, rotary_dim/2] for the
    /// absolute positions `offset..offset+T`.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        offset: usize,
        cache: &mut Option<KvCache>,
    ) -> candle_core::Result<Tensor> {
        let t = x.dim(0)?;
        let (nh, kvh, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let q_gate = self.q_proj.forward(x)?.reshape((t, nh, 2 * hd))?;
        let q = q_gate.narrow(2, 0, hd)?;
        let gate = q_gate.narrow(2, hd, hd)?.reshape((t, nh * hd))?;
        let q = self.q_norm.forward(&q.contiguous()?)?.transpose(0, 1)?;
        let k = self.k_proj.forward(x)?.reshape((t, kvh, hd))?;
        let k = self.k_norm.forward(&k)?.transpose(0, 1)?;
        let v = self
            .v_proj
            .forward(x)?
            .reshape((t, kvh, hd))?
            .transpose(0, 1)?
            .contiguous()?;
        let q = self.rope(&q, cos, sin)?;
        let k = self.rope(&k, cos, sin)?;
        let (k, v) = match cache.as_ref() {
            Some(c) => (Tensor::cat(&[&c.k, &k], 1)?, Tensor::cat(&[&c.v, &v], 1)?),
            None => (k, v),
        };
        *cache = Some(KvCache {
            k: k.clone(),
            v: v.clone(),
        });
        let s = k.dim(1)?;
        let groups = nh / kvh;
        // GQA: query head h reads KV head h / groups (consecutive groups).
        let k = k
            .unsqueeze(1)?
            .broadcast_as((kvh, groups, s, hd))?
            .reshape((nh, s, hd))?;
        let v = v
            .unsqueeze(1)?
            .broadcast_as((kvh, groups, s, hd))?
            .reshape((nh, s, hd))?;
        let scale = 1.0 / (hd as f64).sqrt();
        let scores = (q.contiguous()?.matmul(&k.t()?)? * scale)?;
        let scores = if t > 1 {
            // Query i (absolute offset + i) sees keys 0..=offset + i.
            let mask: Vec<f32> = (0..t)
                .flat_map(|i| {
                    (0..s).map(move |j| {
                        if j <= offset + i {
                            0.0
                        } else {
                            f32::NEG_INFINITY
                        }
                    })
                })
                .collect();
            let mask = Tensor::from_vec(mask, (1, t, s), x.device())?;
            scores.to_dtype(DType::F32)?.broadcast_add(&mask)?
        } else {
            scores.to_dtype(DType::F32)?
        };
        let probs = candle_nn::ops::softmax_last_dim(&scores)?.to_dtype(x.dtype())?;
        let out = probs.matmul(&v)?.transpose(0, 1)?.reshape((t, nh * hd))?;
        let gated = (out * candle_nn::ops::sigmoid(&gate)?)?;
        self.o_proj.forward(&gated)
    }
}
