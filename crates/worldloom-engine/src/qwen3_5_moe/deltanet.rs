//! Gated DeltaNet (`linear_attn`; Yang, Kautz, Hatamizadeh, "Gated Delta
//! Networks: Improving Mamba2 with Delta Rule", ICLR 2025): a depthwise
//! causal conv1d over the q/k/v projections, then the gated delta rule on a
//! per-head `d_k × d_v` fp32 state, then a gated RMSNorm. Prefill uses the
//! chunked (UT-transform) form with chunks of [`DELTANET_CHUNK_TOKENS`]
//! tokens (on a CPU with AVX2 + FMA as one per-head kernel,
//! `kernels::delta_rule`; elsewhere op by op); decode uses the token
//! recurrence. All compute the same function.

use std::sync::Arc;

use candle_core::{D, DType, Device, IndexOp, Tensor};

use super::config::Config;
use super::norm::rms_normalise_f32;
use crate::kernels::fused::{GdnDims, GdnStepInputs, gdn_decode_step};
use crate::weights::{LinearWeight, LoadError, Weights};

/// Chunk length of the chunked gated-delta-rule prefill (the reference's).
pub const DELTANET_CHUNK_TOKENS: usize = 64;

/// Epsilon of the L2 normalisation of DeltaNet queries and keys.
const L2NORM_EPS: f64 = 1e-6;

/// Gated DeltaNet (`linear_attn`).
#[derive(Debug, Clone)]
pub(super) struct GatedDeltaNet {
    in_proj_qkv: LinearWeight,
    in_proj_z: LinearWeight,
    in_proj_b: LinearWeight,
    in_proj_a: LinearWeight,
    /// Conv taps as [kernel, conv_dim] in the model dtype.
    conv_taps: Tensor,
    /// −exp(A_log) in f32, [n_v].
    neg_a: Tensor,
    /// dt_bias in f32, [n_v].
    dt_bias: Tensor,
    /// Gated-norm weight [d_v] in the model dtype.
    norm_weight: Tensor,
    out_proj: LinearWeight,
    n_k: usize,
    n_v: usize,
    d_k: usize,
    d_v: usize,
    kernel: usize,
    eps: f64,
    /// Value heads in llama.cpp's tiled order (value head h uses key head
    /// h mod n_k) rather than the reference's grouped order (h / (n_v /
    /// n_k)); see [`Config::linear_value_heads_tiled`].
    tiled_value_heads: bool,
}

/// The longest forward whose inputs a DeltaNet layer keeps
/// ([`DeltaTrail`]): a verified draft and its token, never a prompt.
pub(super) const TRAIL_MAX_TOKENS: usize = 64;

/// Decode state of one DeltaNet layer.
#[derive(Debug, Clone)]
pub(super) struct DeltaNetState {
    /// The last `kernel − 1` pre-conv inputs, [kernel − 1, conv_dim], model
    /// dtype (zeros at position 0).
    pub(super) conv: Tensor,
    /// Recurrent state S per value head, [n_v, d_k, d_v], f32.
    pub(super) recurrent: Tensor,
    /// The inputs of the last forward when it asked to keep them and was 2
    /// to [`TRAIL_MAX_TOKENS`] tokens long, else `None`.
    trail: Option<Arc<DeltaTrail>>,
}

/// What a short multi-token forward read, so that the state after any
/// prefix of it can be recomputed without the projections and experts
/// (speculative decoding keeping part of a draft): the recurrent state
/// before it, the pre-conv inputs with their left context [K − 1 + T,
/// conv_dim], and the delta rule's per-token inputs (q, k [n_v, T, d_k],
/// v [n_v, T, d_v], g, beta [n_v, T], f32).
#[derive(Debug)]
struct DeltaTrail {
    start: Tensor,
    padded: Tensor,
    inputs: DeltaRuleInputs,
}

impl DeltaNetState {
    /// Tokens of the last forward, when it kept its inputs.
    pub(super) fn trail_len(&self) -> Option<usize> {
        self.trail
            .as_ref()
            .and_then(|t| t.inputs.beta.dims().get(1).copied())
    }

    /// Bytes the kept inputs occupy (0 without them).
    pub(super) fn trail_size_bytes(&self) -> usize {
        self.trail.as_ref().map_or(0, |t| {
            let i = &t.inputs;
            [&t.start, &t.padded, &i.q, &i.k, &i.v, &i.g, &i.beta]
                .iter()
                .map(|x| x.elem_count() * x.dtype().size_in_bytes())
                .sum()
        })
    }

    /// Puts the state where it was after the first `keep` tokens of the
    /// last forward, from the inputs it kept.
    ///
    /// # Errors
    /// No kept inputs, or fewer than `keep` tokens of them (check
    /// [`DeltaNetState::trail_len`] first); the device's errors.
    pub(super) fn rewind_within(&mut self, keep: usize) -> candle_core::Result<()> {
        let Some(trail) = self.trail.take() else {
            candle_core::bail!("no kept inputs to rewind within");
        };
        let t = trail.inputs.beta.dim(1)?;
        if keep > t {
            candle_core::bail!("cannot keep {keep} tokens of a {t}-token forward");
        }
        // The conv's left context is the padded input's first rows.
        let context = trail.padded.dim(0)? - t;
        self.recurrent = if keep == 0 {
            trail.start.clone()
        } else {
            recurrent_gated_delta_rule(&trail.inputs.narrow_time(0, keep)?, &trail.start)?.1
        };
        self.conv = conv_context(&trail.padded, keep, context)?;
        Ok(())
    }
}

/// Rows `start..start + len` of a forward's padded conv input as the
/// state's own tensor. A narrowed row range of a contiguous tensor is
/// already contiguous, so `contiguous()` would keep a view of the whole
/// `[K − 1 + T, conv_dim]` buffer alive in the state and in every snapshot
/// of it (17 MB per layer for a 512-token piece at conv_dim 8,192, f32);
/// this copies the `len` rows out.
fn conv_context(padded: &Tensor, start: usize, len: usize) -> candle_core::Result<Tensor> {
    padded.narrow(0, start, len)?.force_contiguous()
}

impl GatedDeltaNet {
    /// Reads the layer's `linear_attn` under `vb`.
    pub(super) fn load(cfg: &Config, vb: &Weights<'_>) -> Result<Self, LoadError> {
        let h = cfg.hidden_size;
        let (n_k, n_v, d_k, d_v) = (
            cfg.linear_num_key_heads,
            cfg.linear_num_value_heads,
            cfg.linear_key_head_dim,
            cfg.linear_value_head_dim,
        );
        let conv_dim = cfg.linear_conv_dim();
        let kernel = cfg.linear_conv_kernel_dim;
        let conv = vb.get("conv1d.weight", &[conv_dim, 1, kernel])?;
        let conv_taps = conv
            .reshape((conv_dim, kernel))
            .and_then(|c| c.t())
            .and_then(|c| c.contiguous())
            .map_err(vb.error("conv1d.weight"))?;
        let a_log = vb.get_as("A_log", &[n_v], DType::F32)?;
        let neg_a = a_log
            .exp()
            .and_then(|a| a.neg())
            .map_err(vb.error("A_log"))?;
        Ok(Self {
            in_proj_qkv: vb.get_linear("in_proj_qkv.weight", &[conv_dim, h])?,
            in_proj_z: vb.get_linear("in_proj_z.weight", &[n_v * d_v, h])?,
            in_proj_b: vb.get_linear("in_proj_b.weight", &[n_v, h])?,
            in_proj_a: vb.get_linear("in_proj_a.weight", &[n_v, h])?,
            conv_taps,
            neg_a,
            dt_bias: vb.get_as("dt_bias", &[n_v], DType::F32)?,
            norm_weight: vb.get("norm.weight", &[d_v])?,
            out_proj: vb.get_linear("out_proj.weight", &[h, n_v * d_v])?,
            n_k,
            n_v,
            d_k,
            d_v,
            kernel,
            eps: cfg.rms_norm_eps,
            tiled_value_heads: cfg.linear_value_heads_tiled,
        })
    }

    pub(super) fn new_state(
        &self,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<DeltaNetState> {
        let conv_dim = 2 * self.n_k * self.d_k + self.n_v * self.d_v;
        Ok(DeltaNetState {
            conv: Tensor::zeros((self.kernel - 1, conv_dim), dtype, device)?,
            recurrent: Tensor::zeros((self.n_v, self.d_k, self.d_v), DType::F32, device)?,
            trail: None,
        })
    }

    /// x [T, hidden] → [T, hidden]; advances `state`. `chunked` selects the
    /// chunked prefill form, otherwise the token recurrence. `fused` runs a
    /// one-token step as one fused op
    /// ([`crate::kernels::fused::gdn_decode_step`]) and the output norm of
    /// longer inputs as [`crate::kernels::fused::gated_rms_norm`]; the
    /// same maths either way. `keep_trail` keeps a 2- to
    /// [`TRAIL_MAX_TOKENS`]-token input's delta-rule inputs in the state
    /// ([`DeltaTrail`]); any other forward drops what was kept.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        state: &mut DeltaNetState,
        chunked: bool,
        fused: bool,
        keep_trail: bool,
    ) -> candle_core::Result<Tensor> {
        let t = x.dim(0)?;
        if fused && t == 1 {
            return self.decode_fused(x, state);
        }
        let dtype = x.dtype();
        let (n_k, n_v, d_k, d_v) = (self.n_k, self.n_v, self.d_k, self.d_v);
        let key_dim = n_k * d_k;
        let mixed = self.in_proj_qkv.forward(x)?; // [T, conv_dim]
        let z = self.in_proj_z.forward(x)?; // [T, n_v·d_v]
        let b = self.in_proj_b.forward(x)?; // [T, n_v]
        let a = self.in_proj_a.forward(x)?; // [T, n_v]

        // Depthwise causal conv1d over time with the cached left context.
        let padded = Tensor::cat(&[&state.conv, &mixed], 0)?; // [K−1+T, C]
        let conv = match crate::kernels::fused::conv_silu_rows(&padded, &self.conv_taps)? {
            Some(conv) => conv,
            None => {
                let mut conv = padded
                    .narrow(0, 0, t)?
                    .broadcast_mul(&self.conv_taps.i(0)?)?;
                for j in 1..self.kernel {
                    conv = (conv
                        + padded
                            .narrow(0, j, t)?
                            .broadcast_mul(&self.conv_taps.i(j)?)?)?;
                }
                candle_nn::ops::silu(&conv)?
            }
        };
        state.conv = conv_context(&padded, t, self.kernel - 1)?;

        let q = conv.narrow(1, 0, key_dim)?.reshape((t, n_k, d_k))?;
        let k = conv.narrow(1, key_dim, key_dim)?.reshape((t, n_k, d_k))?;
        let v = conv
            .narrow(1, 2 * key_dim, n_v * d_v)?
            .reshape((t, n_v, d_v))?;

        let beta = candle_nn::ops::sigmoid(&b.to_dtype(DType::F32)?)?; // [T, n_v]
        let g = softplus(&a.to_dtype(DType::F32)?.broadcast_add(&self.dt_bias)?)?
            .broadcast_mul(&self.neg_a)?; // [T, n_v], ≤ 0

        // Value head h uses key head h / (n_v / n_k): interleaved repeat
        // (grouped order); in the tiled order key head h mod n_k: tiled
        // repeat.
        let r = n_v / n_k;
        let tiled = self.tiled_value_heads;
        let expand = |x: &Tensor| -> candle_core::Result<Tensor> {
            let x = x.to_dtype(DType::F32)?;
            let x = if r > 1 && tiled {
                x.unsqueeze(1)?
                    .broadcast_as((t, r, n_k, d_k))?
                    .reshape((t, n_v, d_k))?
            } else if r > 1 {
                x.unsqueeze(2)?
                    .broadcast_as((t, n_k, r, d_k))?
                    .reshape((t, n_v, d_k))?
            } else {
                x
            };
            l2_normalise(&x)?.transpose(0, 1)?.contiguous() // [n_v, T, d_k]
        };
        let q = (expand(&q)? * (1.0 / (d_k as f64).sqrt()))?;
        let k = expand(&k)?;
        let v = v.to_dtype(DType::F32)?.transpose(0, 1)?.contiguous()?; // [n_v, T, d_v]
        let beta = beta.t()?.contiguous()?; // [n_v, T]
        let g = g.t()?.contiguous()?; // [n_v, T]
        let inputs = DeltaRuleInputs { q, k, v, g, beta };

        let (out, new_state) = if chunked {
            chunk_gated_delta_rule(&inputs, &state.recurrent)?
        } else {
            recurrent_gated_delta_rule(&inputs, &state.recurrent)?
        };
        state.trail = (keep_trail && t > 1 && t <= TRAIL_MAX_TOKENS).then(|| {
            Arc::new(DeltaTrail {
                start: state.recurrent.clone(),
                padded: padded.clone(),
                inputs: inputs.clone(),
            })
        });
        state.recurrent = new_state;

        // Gated RMSNorm per value head: w · rmsnorm(o) · silu(z).
        let z = z.reshape((t, n_v, d_v))?;
        if fused {
            let out = out.transpose(0, 1)?; // [T, n_v, d_v] f32
            let gated =
                crate::kernels::fused::gated_rms_norm(&out, &z, &self.norm_weight, self.eps)?
                    .reshape((t, n_v * d_v))?;
            return self.out_proj.forward(&gated);
        }
        let out = out.transpose(0, 1)?.to_dtype(dtype)?; // [T, n_v, d_v]
        let normed = rms_normalise_f32(&out, self.eps)?
            .to_dtype(dtype)?
            .broadcast_mul(&self.norm_weight)?
            .to_dtype(DType::F32)?;
        let gated = (normed * candle_nn::ops::silu(&z.to_dtype(DType::F32)?)?)?
            .to_dtype(dtype)?
            .reshape((t, n_v * d_v))?;
        self.out_proj.forward(&gated)
    }
}

impl GatedDeltaNet {
    /// The widths the fused ops take.
    fn fused_dims(&self) -> GdnDims {
        GdnDims {
            n_k: self.n_k,
            n_v: self.n_v,
            d_k: self.d_k,
            d_v: self.d_v,
            kernel: self.kernel,
            tiled: self.tiled_value_heads,
        }
    }

    /// One token x [1, hidden] through the fused decode step: the four
    /// input projections, one fused op (conv, gating, recurrence, gated
    /// norm), `out_proj`. The new recurrent state is a new tensor, so a
    /// snapshot sharing the old one is not disturbed.
    fn decode_fused(&self, x: &Tensor, state: &mut DeltaNetState) -> candle_core::Result<Tensor> {
        let n_vd = self.n_v * self.d_v;
        let mixed = self.in_proj_qkv.forward(x)?; // [1, conv_dim]
        let z = self.in_proj_z.forward(x)?.reshape(n_vd)?;
        let b = self.in_proj_b.forward(x)?.reshape(self.n_v)?;
        let a = self.in_proj_a.forward(x)?.reshape(self.n_v)?;
        let padded = Tensor::cat(&[&state.conv, &mixed], 0)?; // [K, conv_dim]
        let inputs = GdnStepInputs {
            taps: &self.conv_taps,
            z: &z,
            b: &b,
            a: &a,
            neg_a: &self.neg_a,
            dt_bias: &self.dt_bias,
            norm_weight: &self.norm_weight,
            state: &state.recurrent,
        };
        let (gated, recurrent) = gdn_decode_step(&padded, &inputs, self.fused_dims(), self.eps)?;
        state.conv = conv_context(&padded, 1, self.kernel - 1)?;
        state.recurrent = recurrent;
        state.trail = None;
        self.out_proj.forward(&gated.reshape((1, n_vd))?)
    }
}

/// softplus(x) = log(1 + exp(x)), with the reference's threshold (x > 20 →
/// x).
fn softplus(x: &Tensor) -> candle_core::Result<Tensor> {
    let soft = (x.exp()? + 1.0)?.log()?;
    let big = x.gt(20.0)?;
    big.where_cond(x, &soft)
}

/// x / sqrt(Σx² + 1e-6) over the last dimension (f32).
fn l2_normalise(x: &Tensor) -> candle_core::Result<Tensor> {
    let sum_sq = x.sqr()?.sum_keepdim(D::Minus1)?;
    x.broadcast_div(&(sum_sq + L2NORM_EPS)?.sqrt()?)
}

/// The per-token inputs of the gated delta rule, per value head (f32):
/// q, k [H, T, d_k] (q already scaled by 1/√d_k), v [H, T, d_v], the log
/// decay g and the write strength beta [H, T].
#[derive(Debug, Clone)]
struct DeltaRuleInputs {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor,
    beta: Tensor,
}

impl DeltaRuleInputs {
    /// Tokens `start..start + len` of every input (views, no copy).
    fn narrow_time(&self, start: usize, len: usize) -> candle_core::Result<Self> {
        let part = |x: &Tensor| x.narrow(1, start, len);
        Ok(Self {
            q: part(&self.q)?,
            k: part(&self.k)?,
            v: part(&self.v)?,
            g: part(&self.g)?,
            beta: part(&self.beta)?,
        })
    }
}

/// The gated delta rule, one token at a time.
///
/// Shapes (f32): q, k [H, T, d_k] (q already scaled by 1/√d_k), v [H, T,
/// d_v], g, beta [H, T], state [H, d_k, d_v]. Per token: S ← S·exp(g);
/// m = Sᵀk; S ← S + k ⊗ β(v − m); o = Sᵀq. Returns o [H, T, d_v] and the
/// final state.
fn recurrent_gated_delta_rule(
    inputs: &DeltaRuleInputs,
    state: &Tensor,
) -> candle_core::Result<(Tensor, Tensor)> {
    let DeltaRuleInputs { q, k, v, g, beta } = inputs;
    let t = q.dim(1)?;
    let mut s = state.clone();
    let decay = g.exp()?;
    let mut outs = Vec::with_capacity(t);
    for i in 0..t {
        let q_t = q.narrow(1, i, 1)?; // [H,1,dk]
        let k_t = k.narrow(1, i, 1)?;
        let v_t = v.narrow(1, i, 1)?; // [H,1,dv]
        let decay_t = decay.narrow(1, i, 1)?.unsqueeze(2)?; // [H,1,1]
        let beta_t = beta.narrow(1, i, 1)?.unsqueeze(2)?;
        s = s.broadcast_mul(&decay_t)?;
        let mem = k_t.matmul(&s)?; // [H,1,dv]
        let delta = (v_t - mem)?.broadcast_mul(&beta_t)?;
        s = (s + k_t.transpose(1, 2)?.matmul(&delta)?)?;
        outs.push(q_t.matmul(&s)?);
    }
    Ok((Tensor::cat(&outs, 1)?, s))
}

/// Bytes of one f32 `[H, tokens, d]` intermediate of the chunked rule per
/// block of chunks: the rule works through a forward's tokens in blocks of
/// whole chunks so its dozen such intermediates stay near this size
/// however long the forward (at the real widths, 32 heads × 128: 512
/// tokens, the engine's prefill piece, in one block; a 4,096-token forward
/// in eight). Smaller blocks measured ~10 % slower at 512 tokens (more,
/// smaller ops) for no lower peak, the attention's transients being
/// larger.
const DELTANET_BLOCK_BYTES: usize = 8 << 20;

/// Tokens per block of the chunked rule for `heads` heads of width `d`:
/// whole chunks within [`DELTANET_BLOCK_BYTES`], at least one.
fn delta_block_tokens(heads: usize, d: usize) -> usize {
    let per_token = heads.max(1) * d.max(1) * std::mem::size_of::<f32>();
    let c = DELTANET_CHUNK_TOKENS;
    (DELTANET_BLOCK_BYTES / per_token / c).max(1) * c
}

/// The chunked (UT transform) gated delta rule, as the reference's
/// `torch_chunk_gated_delta_rule`: chunks of [`DELTANET_CHUNK_TOKENS`],
/// intra-chunk work as matmuls, a sequential scan over chunks, taken in
/// blocks of [`delta_block_tokens`] (the state carried from block to
/// block). Same shapes and result as [`recurrent_gated_delta_rule`]. On a
/// CPU with AVX2 + FMA the whole input goes through the fused per-head
/// kernel instead (`kernels::delta_rule`: a few chunk-sized buffers per
/// head, so no blocks are needed).
fn chunk_gated_delta_rule(
    inputs: &DeltaRuleInputs,
    state: &Tensor,
) -> candle_core::Result<(Tensor, Tensor)> {
    let DeltaRuleInputs { q, k, v, g, beta } = inputs;
    let chunk = DELTANET_CHUNK_TOKENS;
    if let Some(done) =
        crate::kernels::delta_rule::try_chunked_rule((q, k, v), (g, beta), state, chunk)?
    {
        return Ok(done);
    }
    let (h, _, d_k) = q.dims3()?;
    let block = delta_block_tokens(h, d_k.max(v.dim(2)?));
    chunk_rule_in_blocks(inputs, state, block)
}

/// [`chunk_gated_delta_rule`] in blocks of `block` tokens (a multiple of
/// [`DELTANET_CHUNK_TOKENS`]).
fn chunk_rule_in_blocks(
    inputs: &DeltaRuleInputs,
    state: &Tensor,
    block: usize,
) -> candle_core::Result<(Tensor, Tensor)> {
    let t = inputs.q.dim(1)?;
    if t <= block {
        return chunk_block(inputs, state);
    }
    let mut s = state.clone();
    let mut outs = Vec::with_capacity(t.div_ceil(block));
    for start in (0..t).step_by(block) {
        let part = inputs.narrow_time(start, block.min(t - start))?;
        let (out, next) = chunk_block(&part, &s)?;
        outs.push(out);
        s = next;
    }
    Ok((Tensor::cat(&outs, 1)?, s))
}

/// [`chunk_gated_delta_rule`] on one block: all its chunks' intra-chunk
/// work batched, then the scan.
fn chunk_block(inputs: &DeltaRuleInputs, state: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let DeltaRuleInputs { q, k, v, g, beta } = inputs;
    let (h, t, d_k) = q.dims3()?;
    // A shorter input is one chunk of its own length: padding it to a
    // whole chunk computed 64 × 64 matrices per head for a verified draft
    // of a few tokens.
    let c = DELTANET_CHUNK_TOKENS.min(t);
    let d_v = v.dim(2)?;
    let n = t.div_ceil(c);
    let pad = n * c - t;
    let device = q.device();
    let pad3 = |x: &Tensor| -> candle_core::Result<Tensor> {
        if pad == 0 {
            Ok(x.clone())
        } else {
            x.pad_with_zeros(1, 0, pad)
        }
    };
    // [H, n, C, d]
    let q = pad3(q)?.reshape((h, n, c, d_k))?;
    let k = pad3(k)?.reshape((h, n, c, d_k))?;
    let v = pad3(v)?.reshape((h, n, c, d_v))?;
    let beta = pad3(beta)?.reshape((h, n, c, 1))?;
    let g = pad3(g)?.reshape((h, n, c))?;

    let k_beta = k.broadcast_mul(&beta)?;
    let v_beta = v.broadcast_mul(&beta)?;
    let cum = g.cumsum(2)?; // [H, n, C]
    let lower = Tensor::tril2(c, DType::F32, device)?; // 1 on and below the diagonal
    // pairwise[i, j] = exp(cum_i − cum_j) for j ≤ i, else 0.
    let diff = cum.unsqueeze(3)?.broadcast_sub(&cum.unsqueeze(2)?)?;
    let pairwise = diff.broadcast_mul(&lower)?.exp()?.broadcast_mul(&lower)?;

    let kt = k.transpose(2, 3)?.contiguous()?;
    let ut = k_beta.contiguous()?.matmul(&kt)?.mul(&pairwise)?; // [H, n, C, C]
    let intra = q.contiguous()?.matmul(&kt)?.mul(&pairwise)?;
    let cum_exp = cum.exp()?;
    let decayed_k_beta = k_beta.broadcast_mul(&cum_exp.unsqueeze(3)?)?;

    // Solve (I + strictly-lower(ut)) X = [v_beta, decayed_k_beta].
    let inv = unit_lower_inverse(&ut)?; // [H, n, C, C]
    let new_values = inv.matmul(&v_beta.contiguous()?)?; // [H, n, C, dv]
    let k_cumdecay = inv.matmul(&decayed_k_beta.contiguous()?)?; // [H, n, C, dk]

    let q_dec = q.broadcast_mul(&cum_exp.unsqueeze(3)?)?;
    let last = cum.narrow(2, c - 1, 1)?; // [H, n, 1]
    let k_dec = k.broadcast_mul(&last.broadcast_sub(&cum)?.exp()?.unsqueeze(3)?)?;
    let chunk_decay = last.exp()?.unsqueeze(3)?; // [H, n, 1, 1]

    let mut s = state.clone(); // [H, dk, dv]
    let mut outs = Vec::with_capacity(n);
    for i in 0..n {
        let v_new = (new_values.i((.., i))? - k_cumdecay.i((.., i))?.contiguous()?.matmul(&s)?)?;
        let inter = q_dec.i((.., i))?.contiguous()?.matmul(&s)?;
        outs.push((inter + intra.i((.., i))?.contiguous()?.matmul(&v_new)?)?);
        s = (s.broadcast_mul(&chunk_decay.i((.., i))?)?
            + k_dec
                .i((.., i))?
                .transpose(1, 2)?
                .contiguous()?
                .matmul(&v_new)?)?;
    }
    let out = Tensor::cat(&outs, 1)?.narrow(1, 0, t)?; // [H, T, dv]
    Ok((out, s))
}

/// (I + L)⁻¹ for L the strictly lower triangle of each trailing `C × C`
/// matrix of `m` (f32), by forward substitution on the host:
/// row i of T = (I + L)⁻¹ − I is −L[i] − L[i]·T. The matrices are small
/// (64 × 64 per head and chunk); the copy to the host is a documented cost
/// on GPUs.
fn unit_lower_inverse(m: &Tensor) -> candle_core::Result<Tensor> {
    let dims = m.dims().to_vec();
    let c = dims[dims.len() - 1];
    let device = m.device().clone();
    let data: Vec<f32> = m.to_device(&Device::Cpu)?.flatten_all()?.to_vec1()?;
    let mut out = vec![0f32; data.len()];
    let mut row = vec![0f32; c];
    for (src, dst) in data.chunks_exact(c * c).zip(out.chunks_exact_mut(c * c)) {
        for i in 0..c {
            // row = −L[i, :i] − L[i, :i] · T[:i, :i]
            for (j, r) in row.iter_mut().enumerate().take(i) {
                *r = -src[i * c + j];
            }
            for j in 0..i {
                let l = src[i * c + j];
                if l == 0.0 {
                    continue;
                }
                for m2 in 0..j {
                    row[m2] -= l * dst[j * c + m2];
                }
            }
            dst[i * c..i * c + i].copy_from_slice(&row[..i]);
            dst[i * c + i] = 1.0;
        }
    }
    Tensor::from_vec(out, dims, &device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qwen3_5_moe::max_rel_diff;

    fn randn(shape: &[usize], std: f32, dtype: DType) -> Tensor {
        Tensor::randn(0f32, std, shape, &Device::Cpu)
            .and_then(|t| t.to_dtype(dtype))
            .expect("randn")
    }

    /// A random layer (every tensor drawn, d_k ≠ d_v, 2 key heads for 4
    /// value heads) in `dtype`.
    fn random_layer(dtype: DType, tiled: bool) -> GatedDeltaNet {
        let (h, n_k, n_v, d_k, d_v, kernel) = (48, 2, 4, 16, 12, 4);
        let conv_dim = 2 * n_k * d_k + n_v * d_v;
        let lin = |o: usize, i: usize| LinearWeight::Dense(randn(&[o, i], 0.3, dtype));
        GatedDeltaNet {
            in_proj_qkv: lin(conv_dim, h),
            in_proj_z: lin(n_v * d_v, h),
            in_proj_b: lin(n_v, h),
            in_proj_a: lin(n_v, h),
            conv_taps: randn(&[kernel, conv_dim], 0.5, dtype),
            neg_a: randn(&[n_v], 0.5, DType::F32)
                .exp()
                .and_then(|a| a.neg())
                .expect("neg_a"),
            dt_bias: randn(&[n_v], 0.5, DType::F32),
            norm_weight: (randn(&[d_v], 0.2, DType::F32) + 1.0)
                .and_then(|w| w.to_dtype(dtype))
                .expect("w"),
            out_proj: lin(h, n_v * d_v),
            n_k,
            n_v,
            d_k,
            d_v,
            kernel,
            eps: 1e-6,
            tiled_value_heads: tiled,
        }
    }

    /// The fused decode step (CPU implementation of the fused op) gives the
    /// unfused recurrence's output, conv state and recurrent state, step
    /// after step from a prefilled state: f32 to 1e-5 of the scale, bf16 and
    /// f16 within a few roundings of the dtype; both head orders. The state
    /// it started from (a snapshot's) is left as it was.
    #[test]
    fn fused_decode_step_matches_unfused() -> candle_core::Result<()> {
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::BF16, 3e-2), (DType::F16, 5e-3)] {
            for tiled in [false, true] {
                let layer = random_layer(dtype, tiled);
                let mut want_state = layer.new_state(dtype, &Device::Cpu)?;
                let prompt = randn(&[5, 48], 1.0, dtype);
                layer.forward(&prompt, &mut want_state, true, false, false)?;
                let mut got_state = want_state.clone();
                for step in 0..4 {
                    let x = randn(&[1, 48], 1.0, dtype);
                    let snapshot = got_state.clone();
                    let before: Vec<f32> = snapshot.recurrent.flatten_all()?.to_vec1()?;
                    let want = layer.forward(&x, &mut want_state, false, false, false)?;
                    let got = layer.forward(&x, &mut got_state, false, true, false)?;
                    let what = format!("{dtype:?} tiled={tiled} step {step}");
                    assert_eq!(got.dims(), want.dims(), "{what}");
                    assert_eq!(got.dtype(), dtype, "{what}");
                    let d = max_rel_diff(&got, &want);
                    assert!(d <= tol, "{what}: output {d}");
                    let d = max_rel_diff(&got_state.recurrent, &want_state.recurrent);
                    assert!(d <= tol, "{what}: recurrent state {d}");
                    assert_eq!(
                        got_state.conv.to_dtype(DType::F32)?.to_vec2::<f32>()?,
                        want_state.conv.to_dtype(DType::F32)?.to_vec2::<f32>()?,
                        "{what}: conv state"
                    );
                    let after: Vec<f32> = snapshot.recurrent.flatten_all()?.to_vec1()?;
                    assert_eq!(before, after, "{what}: the snapshot moved");
                }
            }
        }
        Ok(())
    }

    /// Random delta-rule inputs for `h` heads and `t` tokens (unit q and k,
    /// q scaled by 1/4, decays g ≤ 0, β in (0, 1)) and a random state.
    fn random_rule_inputs(
        h: usize,
        t: usize,
        d_k: usize,
        d_v: usize,
    ) -> candle_core::Result<(DeltaRuleInputs, Tensor)> {
        let unit = |x: Tensor| l2_normalise(&x);
        let q = (unit(randn(&[h, t, d_k], 1.0, DType::F32))? * 0.25)?;
        let k = unit(randn(&[h, t, d_k], 1.0, DType::F32))?;
        let v = randn(&[h, t, d_v], 1.0, DType::F32);
        let g = (randn(&[h, t], 0.5, DType::F32).abs()? * -0.3)?;
        let beta = candle_nn::ops::sigmoid(&randn(&[h, t], 1.0, DType::F32))?;
        let state = randn(&[h, d_k, d_v], 0.5, DType::F32);
        Ok((DeltaRuleInputs { q, k, v, g, beta }, state))
    }

    /// The chunked rule in blocks of one, two or three chunks (the last
    /// block partial, T not a multiple of the chunk) equals the one-block
    /// form and the token recurrence within 1e-4 of the scale, output and
    /// final state; real widths take a 512-token piece in one block, and
    /// the block never falls below one chunk.
    #[test]
    fn chunked_rule_in_blocks_equals_one_block_and_the_recurrence() -> candle_core::Result<()> {
        let (h, t, d_k, d_v) = (3, 200, 16, 12);
        let (inputs, state) = random_rule_inputs(h, t, d_k, d_v)?;
        let (want_out, want_state) = recurrent_gated_delta_rule(&inputs, &state)?;
        let (one_out, one_state) =
            chunk_rule_in_blocks(&inputs, &state, 4 * DELTANET_CHUNK_TOKENS)?;
        for chunks in [1, 2, 3] {
            let (out, s) = chunk_rule_in_blocks(&inputs, &state, chunks * DELTANET_CHUNK_TOKENS)?;
            assert_eq!(out.dims(), &[h, t, d_v]);
            for (got, want, what) in [(&out, &want_out, "output"), (&s, &want_state, "state")] {
                let d = max_rel_diff(got, want);
                assert!(
                    d <= 1e-4,
                    "{chunks}-chunk blocks, {what} against the recurrence: {d}"
                );
            }
            assert!(
                max_rel_diff(&out, &one_out) <= 1e-5,
                "{chunks}-chunk blocks against one block"
            );
            assert!(
                max_rel_diff(&s, &one_state) <= 1e-5,
                "{chunks}-chunk blocks, state"
            );
        }
        assert_eq!(delta_block_tokens(32, 128), 8 * DELTANET_CHUNK_TOKENS);
        assert_eq!(delta_block_tokens(1024, 1024), DELTANET_CHUNK_TOKENS);
        Ok(())
    }

    /// The fused CPU rule (`kernels::delta_rule`) equals the op-by-op
    /// chunked form within 1e-5 and the token recurrence within 1e-4 of the
    /// scale, output and final state, over several chunks with a partial
    /// last one, on inputs that are views (a time slice of longer ones).
    #[test]
    fn fused_cpu_rule_equals_the_op_by_op_form_and_the_recurrence() -> candle_core::Result<()> {
        if !crate::kernels::delta_rule::available() {
            return Ok(());
        }
        let (h, d_k, d_v) = (3, 16, 12);
        let (longer, state) = random_rule_inputs(h, 230, d_k, d_v)?;
        let inputs = longer.narrow_time(20, 200)?;
        let (want_out, want_state) = recurrent_gated_delta_rule(&inputs, &state)?;
        let (ops_out, ops_state) = chunk_block(&inputs, &state)?;
        let DeltaRuleInputs { q, k, v, g, beta } = &inputs;
        let (out, s) = crate::kernels::delta_rule::try_chunked_rule(
            (q, k, v),
            (g, beta),
            &state,
            DELTANET_CHUNK_TOKENS,
        )?
        .expect("applies on this CPU");
        for (got, want, what) in [(&out, &want_out, "output"), (&s, &want_state, "state")] {
            let d = max_rel_diff(got, want);
            assert!(d <= 1e-4, "{what} against the recurrence: {d}");
        }
        for (got, want, what) in [(&out, &ops_out, "output"), (&s, &ops_state, "state")] {
            let d = max_rel_diff(got, want);
            assert!(d <= 1e-5, "{what} against the op-by-op form: {d}");
        }
        Ok(())
    }

    /// An input shorter than a chunk (a verified draft of a few tokens) is
    /// one chunk of its own length: output and final state equal the token
    /// recurrence within 1e-4 of the scale for 1, 2, 5 and 63 tokens, as
    /// they do for a whole chunk and one token more.
    #[test]
    fn chunked_rule_on_inputs_shorter_than_a_chunk_equals_the_recurrence() -> candle_core::Result<()>
    {
        let (h, d_k, d_v) = (3, 16, 12);
        let c = DELTANET_CHUNK_TOKENS;
        for t in [1, 2, 5, c - 1, c, c + 1] {
            let (inputs, state) = random_rule_inputs(h, t, d_k, d_v)?;
            let (want_out, want_state) = recurrent_gated_delta_rule(&inputs, &state)?;
            let (out, s) = chunk_gated_delta_rule(&inputs, &state)?;
            assert_eq!(out.dims(), &[h, t, d_v], "{t} tokens");
            for (got, want, what) in [(&out, &want_out, "output"), (&s, &want_state, "state")] {
                let d = max_rel_diff(got, want);
                assert!(d <= 1e-4, "{t} tokens, {what} against the recurrence: {d}");
            }
        }
        Ok(())
    }

    /// Elements of the f32 CPU buffer behind `x` (not just those `x` shows).
    fn stored_f32(x: &Tensor) -> usize {
        let (storage, _) = x.storage_and_layout();
        match &*storage {
            candle_core::Storage::Cpu(c) => c.as_slice::<f32>().expect("f32 storage").len(),
            _ => panic!("a CPU tensor"),
        }
    }

    /// The conv state owns its `K − 1` rows after every kind of forward (a
    /// prompt in either form, a one-token step fused or not, a rewind into
    /// a kept draft): it holds the last inputs, and no view of the forward's
    /// `[K − 1 + T, conv_dim]` buffer stays alive in it or in a snapshot.
    #[test]
    fn conv_state_owns_only_its_rows() -> candle_core::Result<()> {
        let layer = random_layer(DType::F32, false);
        let conv_dim = 2 * layer.n_k * layer.d_k + layer.n_v * layer.d_v;
        let rows = layer.kernel - 1;
        let expect_owned = |state: &DeltaNetState, what: &str| {
            assert_eq!(state.conv.dims(), &[rows, conv_dim], "{what}");
            assert_eq!(
                stored_f32(&state.conv),
                rows * conv_dim,
                "{what}: conv state buffer"
            );
        };
        for chunked in [true, false] {
            let mut state = layer.new_state(DType::F32, &Device::Cpu)?;
            let prompt = randn(&[40, 48], 1.0, DType::F32);
            layer.forward(&prompt, &mut state, chunked, false, false)?;
            expect_owned(&state, &format!("40-token prompt, chunked={chunked}"));
            // The rows are the last three pre-conv inputs of the prompt.
            let mixed = layer
                .in_proj_qkv
                .forward(&prompt)?
                .narrow(0, 40 - rows, rows)?;
            assert_eq!(
                state.conv.to_vec2::<f32>()?,
                mixed.to_vec2::<f32>()?,
                "chunked={chunked}"
            );
            for fused in [false, true] {
                layer.forward(
                    &randn(&[1, 48], 1.0, DType::F32),
                    &mut state,
                    false,
                    fused,
                    false,
                )?;
                expect_owned(&state, &format!("one-token step, fused={fused}"));
            }
        }
        let mut state = layer.new_state(DType::F32, &Device::Cpu)?;
        layer.forward(
            &randn(&[8, 48], 1.0, DType::F32),
            &mut state,
            false,
            false,
            true,
        )?;
        expect_owned(&state, "8-token draft kept");
        state.rewind_within(5)?;
        expect_owned(&state, "rewound to 5 of 8 tokens");
        Ok(())
    }

    /// With `fused`, a multi-token input (chunked and recurrent forms)
    /// runs the fused gated norm and gives the unfused output.
    #[test]
    fn fused_gated_norm_matches_unfused() -> candle_core::Result<()> {
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::BF16, 2e-2), (DType::F16, 4e-3)] {
            let layer = random_layer(dtype, false);
            let x = randn(&[7, 48], 1.0, dtype);
            for chunked in [true, false] {
                let mut s1 = layer.new_state(dtype, &Device::Cpu)?;
                let mut s2 = layer.new_state(dtype, &Device::Cpu)?;
                let want = layer.forward(&x, &mut s1, chunked, false, false)?;
                let got = layer.forward(&x, &mut s2, chunked, true, false)?;
                let d = max_rel_diff(&got, &want);
                assert!(d <= tol, "{dtype:?} chunked={chunked}: {d}");
            }
        }
        Ok(())
    }
}
