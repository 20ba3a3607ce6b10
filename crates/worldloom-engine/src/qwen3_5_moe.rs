//! Qwen3.5-MoE (`qwen3_5_moe`), the architecture of Qwen-AgentWorld-35B-A3B,
//! on candle.
//!
//! Follows the Hugging Face `transformers` reference
//! (`models/qwen3_5_moe/modeling_qwen3_5_moe.py`, transformers 5.24.0), which
//! the fixtures in `tests/fixtures/qwen3_5_moe/` were generated with. The
//! decoder interleaves two token mixers:
//!
//! - **Gated DeltaNet** (Yang, Kautz, Hatamizadeh, "Gated Delta Networks:
//!   Improving Mamba2 with Delta Rule", ICLR 2025): a depthwise causal conv1d
//!   over the q/k/v projections, then the gated delta rule on a per-head
//!   `d_k × d_v` fp32 state. Prefill uses the chunked (UT-transform) form with
//!   chunks of 64 tokens; decode uses the token recurrence. Both compute the
//!   same function.
//! - **Gated full attention**: `q_proj` yields per head a query and an output
//!   gate, zero-centred q/k RMSNorms, rotate-half RoPE on the first
//!   `head_dim × partial_rotary_factor` dimensions, GQA, output ×
//!   sigmoid(gate).
//!
//! Every layer's feed-forward is a sparse MoE: fp32 softmax router over all
//! experts, top-k, renormalised weights, SwiGLU experts, plus a shared
//! SwiGLU expert scaled by sigmoid(`shared_expert_gate`(x)).
//!
//! Norms: `input_layernorm`, `post_attention_layernorm`, the final norm and
//! `q_norm`/`k_norm` are zero-centred (output = rmsnorm(x) · (1 + w), in f32);
//! the DeltaNet output norm is a plain gated RMSNorm (w · rmsnorm(x) ·
//! silu(z)).
//!
//! Precision follows the reference: projections run in the model dtype,
//! norms, the router softmax, the gated delta rule and its state run in f32.
//!
//! State ([`State`]) is immutable per step: each forward builds new cache
//! tensors instead of writing into old ones, so `State::clone` (which shares
//! the tensors) is a snapshot that later steps on either copy cannot disturb.

use candle_core::{D, DType, Device, IndexOp, Tensor};
use serde::{Deserialize, Serialize};

use crate::lm::CausalLm;
use crate::loading::{LoadError, TensorSource};

/// Chunk length of the chunked gated-delta-rule prefill (the reference's).
pub const DELTANET_CHUNK_TOKENS: usize = 64;

/// Epsilon of the L2 normalisation of DeltaNet queries and keys.
const L2NORM_EPS: f64 = 1e-6;

fn default_head_dim() -> usize {
    256
}
fn default_linear_key_heads() -> usize {
    16
}
fn default_linear_value_heads() -> usize {
    32
}
fn default_linear_head_dim() -> usize {
    128
}
fn default_conv_kernel() -> usize {
    4
}
fn default_shared_expert_intermediate() -> usize {
    512
}
fn default_rms_norm_eps() -> f64 {
    1e-6
}
fn default_hidden_act() -> String {
    "silu".to_string()
}
fn default_full_attention_interval() -> usize {
    4
}
fn default_max_position_embeddings() -> usize {
    262_144
}

/// RoPE settings as `config.json`'s `rope_parameters` holds them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RopeParameters {
    /// Only `default` is implemented (the released model's).
    #[serde(default)]
    pub rope_type: Option<String>,
    /// Base θ of the frequencies θ^(−2j/rot).
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// Fraction of each head's dimensions that is rotated.
    #[serde(default)]
    pub partial_rotary_factor: Option<f64>,
    /// Multimodal RoPE sections; for text all three axes carry the same
    /// position, so they do not change the result.
    #[serde(default)]
    pub mrope_section: Option<Vec<usize>>,
    /// Interleaved mRoPE layout (same remark).
    #[serde(default)]
    pub mrope_interleaved: Option<bool>,
}

/// The text model's `config.json` (`Qwen3_5MoeTextConfig`).
///
/// Read with [`Config::from_json`], which accepts both the flat
/// ForCausalLM form and the released ForConditionalGeneration form whose text
/// settings sit under `text_config`. Fields without a serde default are
/// required; the others default to the reference's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Vocabulary size (rows of `embed_tokens` and `lm_head`).
    pub vocab_size: usize,
    /// Residual width.
    pub hidden_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads of full attention.
    pub num_attention_heads: usize,
    /// Key/value heads of full attention.
    pub num_key_value_heads: usize,
    /// Head width of full attention.
    #[serde(default = "default_head_dim")]
    pub head_dim: usize,
    /// Query/key heads of Gated DeltaNet.
    #[serde(default = "default_linear_key_heads")]
    pub linear_num_key_heads: usize,
    /// Value heads of Gated DeltaNet.
    #[serde(default = "default_linear_value_heads")]
    pub linear_num_value_heads: usize,
    /// Query/key head width of Gated DeltaNet.
    #[serde(default = "default_linear_head_dim")]
    pub linear_key_head_dim: usize,
    /// Value head width of Gated DeltaNet.
    #[serde(default = "default_linear_head_dim")]
    pub linear_value_head_dim: usize,
    /// Kernel length of the depthwise causal conv1d.
    #[serde(default = "default_conv_kernel")]
    pub linear_conv_kernel_dim: usize,
    /// Routed experts per layer.
    pub num_experts: usize,
    /// Experts chosen per token.
    pub num_experts_per_tok: usize,
    /// Hidden width of one routed expert.
    pub moe_intermediate_size: usize,
    /// Hidden width of the shared expert.
    #[serde(default = "default_shared_expert_intermediate")]
    pub shared_expert_intermediate_size: usize,
    /// Epsilon of every RMSNorm.
    #[serde(default = "default_rms_norm_eps")]
    pub rms_norm_eps: f64,
    /// Activation; only `silu` is implemented.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// Bias on q/k/v/o projections; only `false` is implemented.
    #[serde(default)]
    pub attention_bias: bool,
    /// `lm_head` shares `embed_tokens`' weight.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Per-layer mixer: `linear_attention` or `full_attention`.
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
    /// Without `layer_types`, layer i is full attention when (i+1) is a
    /// multiple of this.
    #[serde(default = "default_full_attention_interval")]
    pub full_attention_interval: usize,
    /// RoPE settings (current files).
    #[serde(default)]
    pub rope_parameters: Option<RopeParameters>,
    /// RoPE base (older files).
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// Rotated fraction (older files).
    #[serde(default)]
    pub partial_rotary_factor: Option<f64>,
    /// Longest context the model was trained for.
    #[serde(default = "default_max_position_embeddings")]
    pub max_position_embeddings: usize,
    /// End-of-sequence token id(s), as stored (number or list).
    #[serde(default)]
    pub eos_token_id: Option<serde_json::Value>,
}

/// Which token mixer a layer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// Gated DeltaNet (`linear_attn`).
    LinearAttention,
    /// Gated full attention (`self_attn`).
    FullAttention,
}

/// Parameter counts of a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    /// Every weight, embeddings and `lm_head` included (a tied `lm_head`
    /// counts once).
    pub total: u64,
    /// Weights one token touches: everything but the unchosen routed
    /// experts (`num_experts_per_tok` of `num_experts` count). Embeddings and
    /// `lm_head` included.
    pub active_per_token: u64,
}

impl Config {
    /// Parses `config.json` text in either form: flat (ForCausalLM) or with
    /// the text settings under `text_config` (the released
    /// ForConditionalGeneration form, whose top-level `tie_word_embeddings`
    /// applies when `text_config` lacks it).
    ///
    /// # Errors
    /// serde_json's error, naming a missing or mistyped field and its line.
    pub fn from_json(text: &str) -> serde_json::Result<Self> {
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        if let Some(text_config) = value.get("text_config").cloned() {
            let mut text_config = text_config;
            if let (Some(obj), Some(tie)) = (
                text_config.as_object_mut(),
                value.get("tie_word_embeddings").cloned(),
            ) {
                obj.entry("tie_word_embeddings").or_insert(tie);
            }
            value = text_config;
        }
        serde_json::from_value(value)
    }

    /// Checks values the model cannot use. Returns `(field, message)`.
    ///
    /// # Errors
    /// The first offending field and why.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        for (field, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
            ("head_dim", self.head_dim),
            ("linear_num_key_heads", self.linear_num_key_heads),
            ("linear_num_value_heads", self.linear_num_value_heads),
            ("linear_key_head_dim", self.linear_key_head_dim),
            ("linear_value_head_dim", self.linear_value_head_dim),
            ("linear_conv_kernel_dim", self.linear_conv_kernel_dim),
            ("num_experts", self.num_experts),
            ("num_experts_per_tok", self.num_experts_per_tok),
            ("moe_intermediate_size", self.moe_intermediate_size),
        ] {
            if value == 0 {
                return err(field, "must be at least 1".into());
            }
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return err(
                "num_key_value_heads",
                format!(
                    "{} does not divide num_attention_heads {}",
                    self.num_key_value_heads, self.num_attention_heads
                ),
            );
        }
        if !self
            .linear_num_value_heads
            .is_multiple_of(self.linear_num_key_heads)
        {
            return err(
                "linear_num_key_heads",
                format!(
                    "{} does not divide linear_num_value_heads {}",
                    self.linear_num_key_heads, self.linear_num_value_heads
                ),
            );
        }
        if self.num_experts_per_tok > self.num_experts {
            return err(
                "num_experts_per_tok",
                format!(
                    "{} exceeds num_experts {}",
                    self.num_experts_per_tok, self.num_experts
                ),
            );
        }
        if self.hidden_act != "silu" {
            return err(
                "hidden_act",
                format!("`{}` is not supported (silu)", self.hidden_act),
            );
        }
        if self.attention_bias {
            return err(
                "attention_bias",
                "attention biases are not supported".into(),
            );
        }
        if let Some(types) = &self.layer_types {
            if types.len() != self.num_hidden_layers {
                return err(
                    "layer_types",
                    format!(
                        "has {} entries for {} layers",
                        types.len(),
                        self.num_hidden_layers
                    ),
                );
            }
            if let Some(bad) = types
                .iter()
                .find(|t| *t != "linear_attention" && *t != "full_attention")
            {
                return err(
                    "layer_types",
                    format!("`{bad}` is neither linear_attention nor full_attention"),
                );
            }
        } else if self.full_attention_interval == 0 {
            return err("full_attention_interval", "must be at least 1".into());
        }
        if let Some(kind) = self
            .rope_parameters
            .as_ref()
            .and_then(|r| r.rope_type.as_ref())
            && kind != "default"
        {
            return err(
                "rope_parameters.rope_type",
                format!("`{kind}` is not supported (default)"),
            );
        }
        let rot = self.rotary_dim();
        if rot == 0 || !rot.is_multiple_of(2) || rot > self.head_dim {
            return err(
                "partial_rotary_factor",
                format!(
                    "gives a rotary width of {rot} for head_dim {}",
                    self.head_dim
                ),
            );
        }
        Ok(())
    }

    /// The mixer of layer `i`.
    pub fn layer_kind(&self, i: usize) -> LayerKind {
        match &self.layer_types {
            Some(types) if types.get(i).map(String::as_str) == Some("full_attention") => {
                LayerKind::FullAttention
            }
            Some(_) => LayerKind::LinearAttention,
            None if (i + 1).is_multiple_of(self.full_attention_interval.max(1)) => {
                LayerKind::FullAttention
            }
            None => LayerKind::LinearAttention,
        }
    }

    /// RoPE base θ: `rope_parameters.rope_theta`, else `rope_theta`, else
    /// 10000.
    pub fn rope_theta(&self) -> f64 {
        self.rope_parameters
            .as_ref()
            .and_then(|r| r.rope_theta)
            .or(self.rope_theta)
            .unwrap_or(10_000.0)
    }

    /// Rotated fraction of each head: `rope_parameters.partial_rotary_factor`,
    /// else `partial_rotary_factor`, else 0.25.
    pub fn partial_rotary_factor(&self) -> f64 {
        self.rope_parameters
            .as_ref()
            .and_then(|r| r.partial_rotary_factor)
            .or(self.partial_rotary_factor)
            .unwrap_or(0.25)
    }

    /// Rotated dimensions per head: `int(head_dim × partial_rotary_factor)`.
    pub fn rotary_dim(&self) -> usize {
        (self.head_dim as f64 * self.partial_rotary_factor()) as usize
    }

    /// Channels of the DeltaNet conv: 2 · key_dim + value_dim.
    pub fn linear_conv_dim(&self) -> usize {
        2 * self.linear_num_key_heads * self.linear_key_head_dim
            + self.linear_num_value_heads * self.linear_value_head_dim
    }

    /// Parameter counts derived from the config.
    pub fn param_counts(&self) -> ParamCounts {
        let h = self.hidden_size as u64;
        let v = self.vocab_size as u64;
        let embed = v * h;
        let lm_head = if self.tie_word_embeddings { 0 } else { v * h };
        let key_dim = (self.linear_num_key_heads * self.linear_key_head_dim) as u64;
        let value_dim = (self.linear_num_value_heads * self.linear_value_head_dim) as u64;
        let nv = self.linear_num_value_heads as u64;
        let conv_dim = 2 * key_dim + value_dim;
        let deltanet = conv_dim * h
            + value_dim * h
            + 2 * nv * h
            + conv_dim * self.linear_conv_kernel_dim as u64
            + 2 * nv
            + self.linear_value_head_dim as u64
            + h * value_dim;
        let hd = self.head_dim as u64;
        let nh = self.num_attention_heads as u64;
        let kvh = self.num_key_value_heads as u64;
        let attention = 2 * nh * hd * h + 2 * kvh * hd * h + h * nh * hd + 2 * hd;
        let e = self.num_experts as u64;
        let k = self.num_experts_per_tok as u64;
        let expert = 3 * self.moe_intermediate_size as u64 * h;
        let shared = 3 * self.shared_expert_intermediate_size as u64 * h + h;
        let per_layer_common = 2 * h + e * h + shared;
        let mut total = embed + lm_head + h;
        let mut active = total;
        for i in 0..self.num_hidden_layers {
            let mixer = match self.layer_kind(i) {
                LayerKind::LinearAttention => deltanet,
                LayerKind::FullAttention => attention,
            };
            total += mixer + per_layer_common + e * expert;
            active += mixer + per_layer_common + k * expert;
        }
        ParamCounts {
            total,
            active_per_token: active,
        }
    }

    /// Bytes of the decode state of one sequence of `tokens` tokens with
    /// KV caches in `dtype`.
    pub fn state_bytes(&self, tokens: usize, dtype: DType) -> usize {
        let mut bytes = 0;
        for i in 0..self.num_hidden_layers {
            bytes += match self.layer_kind(i) {
                LayerKind::FullAttention => {
                    2 * self.num_key_value_heads * self.head_dim * tokens * dtype.size_in_bytes()
                }
                LayerKind::LinearAttention => {
                    self.linear_num_value_heads
                        * self.linear_key_head_dim
                        * self.linear_value_head_dim
                        * 4
                        + (self.linear_conv_kernel_dim - 1)
                            * self.linear_conv_dim()
                            * dtype.size_in_bytes()
                }
            };
        }
        bytes
    }
}

// ---------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------

/// `x @ wᵀ` for `x` [T, in] and `w` [out, in] (a plain or narrowed weight).
///
/// On the CPU, bf16 and f16 weights with at most
/// [`cpu_linear::MAX_STREAM_ROWS`] rows of `x` go through a row-streaming
/// kernel that widens each weight row to f32 in cache and reads the weight
/// once (decode and the small per-expert batches of a prefill); larger bf16
/// inputs widen only the viewed weight to f32 and use candle's gemm (candle's
/// own bf16 CPU matmul widens the whole storage behind a view, i.e. all
/// experts of a layer).
fn linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    if x.device().is_cpu() && matches!(w.dtype(), DType::BF16 | DType::F16) {
        if let Some(y) = cpu_linear::try_linear(x, w)? {
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

/// RMSNorm in f32 over the last dimension: x · rsqrt(mean(x²) + eps).
fn rms_normalise_f32(x: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
    let x = x.to_dtype(DType::F32)?;
    let mean_sq = x.sqr()?.mean_keepdim(D::Minus1)?;
    x.broadcast_div(&(mean_sq + eps)?.sqrt()?)
}

/// Zero-centred RMSNorm: rmsnorm(x) · (1 + w) in f32, cast back to x's dtype.
#[derive(Debug, Clone)]
struct ZeroCentredRmsNorm {
    /// 1 + w, in f32.
    scale: Tensor,
    eps: f64,
}

impl ZeroCentredRmsNorm {
    fn load(
        src: &dyn TensorSource,
        name: &str,
        dim: usize,
        eps: f64,
        device: &Device,
    ) -> Result<Self, LoadError> {
        let w = src.tensor(name, &[dim], DType::F32, device)?;
        let scale = (w + 1.0).map_err(|source| LoadError::Tensor {
            name: name.to_string(),
            source,
        })?;
        Ok(Self { scale, eps })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        rms_normalise_f32(x, self.eps)?
            .broadcast_mul(&self.scale)?
            .to_dtype(x.dtype())
    }
}

/// Reads a weight and wraps candle errors with its name.
fn weight(
    src: &dyn TensorSource,
    name: &str,
    shape: &[usize],
    dtype: DType,
    device: &Device,
) -> Result<Tensor, LoadError> {
    src.tensor(name, shape, dtype, device)
}

fn named(name: &str) -> impl Fn(candle_core::Error) -> LoadError + '_ {
    move |source| LoadError::Tensor {
        name: name.to_string(),
        source,
    }
}

/// Gated full attention (`self_attn`).
#[derive(Debug, Clone)]
struct FullAttention {
    q_proj: Tensor,
    k_proj: Tensor,
    v_proj: Tensor,
    o_proj: Tensor,
    q_norm: ZeroCentredRmsNorm,
    k_norm: ZeroCentredRmsNorm,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
}

/// KV cache of one attention layer: K and V as [kv_heads, T, head_dim].
#[derive(Debug, Clone)]
struct KvCache {
    k: Tensor,
    v: Tensor,
}

impl FullAttention {
    fn load(
        cfg: &Config,
        src: &dyn TensorSource,
        p: &str,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, LoadError> {
        let (h, nh, kvh, hd) = (
            cfg.hidden_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        );
        Ok(Self {
            q_proj: weight(
                src,
                &format!("{p}q_proj.weight"),
                &[nh * hd * 2, h],
                dtype,
                device,
            )?,
            k_proj: weight(
                src,
                &format!("{p}k_proj.weight"),
                &[kvh * hd, h],
                dtype,
                device,
            )?,
            v_proj: weight(
                src,
                &format!("{p}v_proj.weight"),
                &[kvh * hd, h],
                dtype,
                device,
            )?,
            o_proj: weight(
                src,
                &format!("{p}o_proj.weight"),
                &[h, nh * hd],
                dtype,
                device,
            )?,
            q_norm: ZeroCentredRmsNorm::load(
                src,
                &format!("{p}q_norm.weight"),
                hd,
                cfg.rms_norm_eps,
                device,
            )?,
            k_norm: ZeroCentredRmsNorm::load(
                src,
                &format!("{p}k_norm.weight"),
                hd,
                cfg.rms_norm_eps,
                device,
            )?,
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
    fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        offset: usize,
        cache: &mut Option<KvCache>,
    ) -> candle_core::Result<Tensor> {
        let t = x.dim(0)?;
        let (nh, kvh, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let q_gate = linear(x, &self.q_proj)?.reshape((t, nh, 2 * hd))?;
        let q = q_gate.narrow(2, 0, hd)?;
        let gate = q_gate.narrow(2, hd, hd)?.reshape((t, nh * hd))?;
        let q = self.q_norm.forward(&q.contiguous()?)?.transpose(0, 1)?;
        let k = linear(x, &self.k_proj)?.reshape((t, kvh, hd))?;
        let k = self.k_norm.forward(&k)?.transpose(0, 1)?;
        let v = linear(x, &self.v_proj)?
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
        linear(&gated, &self.o_proj)
    }
}

/// Gated DeltaNet (`linear_attn`).
#[derive(Debug, Clone)]
struct GatedDeltaNet {
    in_proj_qkv: Tensor,
    in_proj_z: Tensor,
    in_proj_b: Tensor,
    in_proj_a: Tensor,
    /// Conv taps as [kernel, conv_dim] in the model dtype.
    conv_taps: Tensor,
    /// −exp(A_log) in f32, [n_v].
    neg_a: Tensor,
    /// dt_bias in f32, [n_v].
    dt_bias: Tensor,
    /// Gated-norm weight [d_v] in the model dtype.
    norm_weight: Tensor,
    out_proj: Tensor,
    n_k: usize,
    n_v: usize,
    d_k: usize,
    d_v: usize,
    kernel: usize,
    eps: f64,
}

/// Decode state of one DeltaNet layer.
#[derive(Debug, Clone)]
struct DeltaNetState {
    /// The last `kernel − 1` pre-conv inputs, [kernel − 1, conv_dim], model
    /// dtype (zeros at position 0).
    conv: Tensor,
    /// Recurrent state S per value head, [n_v, d_k, d_v], f32.
    recurrent: Tensor,
}

impl GatedDeltaNet {
    fn load(
        cfg: &Config,
        src: &dyn TensorSource,
        p: &str,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, LoadError> {
        let h = cfg.hidden_size;
        let (n_k, n_v, d_k, d_v) = (
            cfg.linear_num_key_heads,
            cfg.linear_num_value_heads,
            cfg.linear_key_head_dim,
            cfg.linear_value_head_dim,
        );
        let conv_dim = cfg.linear_conv_dim();
        let kernel = cfg.linear_conv_kernel_dim;
        let conv_name = format!("{p}conv1d.weight");
        let conv = weight(src, &conv_name, &[conv_dim, 1, kernel], dtype, device)?;
        let conv_taps = conv
            .reshape((conv_dim, kernel))
            .and_then(|c| c.t())
            .and_then(|c| c.contiguous())
            .map_err(named(&conv_name))?;
        let a_name = format!("{p}A_log");
        let a_log = weight(src, &a_name, &[n_v], DType::F32, device)?;
        let neg_a = a_log.exp().and_then(|a| a.neg()).map_err(named(&a_name))?;
        Ok(Self {
            in_proj_qkv: weight(
                src,
                &format!("{p}in_proj_qkv.weight"),
                &[conv_dim, h],
                dtype,
                device,
            )?,
            in_proj_z: weight(
                src,
                &format!("{p}in_proj_z.weight"),
                &[n_v * d_v, h],
                dtype,
                device,
            )?,
            in_proj_b: weight(
                src,
                &format!("{p}in_proj_b.weight"),
                &[n_v, h],
                dtype,
                device,
            )?,
            in_proj_a: weight(
                src,
                &format!("{p}in_proj_a.weight"),
                &[n_v, h],
                dtype,
                device,
            )?,
            conv_taps,
            neg_a,
            dt_bias: weight(src, &format!("{p}dt_bias"), &[n_v], DType::F32, device)?,
            norm_weight: weight(src, &format!("{p}norm.weight"), &[d_v], dtype, device)?,
            out_proj: weight(
                src,
                &format!("{p}out_proj.weight"),
                &[h, n_v * d_v],
                dtype,
                device,
            )?,
            n_k,
            n_v,
            d_k,
            d_v,
            kernel,
            eps: cfg.rms_norm_eps,
        })
    }

    fn new_state(&self, dtype: DType, device: &Device) -> candle_core::Result<DeltaNetState> {
        let conv_dim = 2 * self.n_k * self.d_k + self.n_v * self.d_v;
        Ok(DeltaNetState {
            conv: Tensor::zeros((self.kernel - 1, conv_dim), dtype, device)?,
            recurrent: Tensor::zeros((self.n_v, self.d_k, self.d_v), DType::F32, device)?,
        })
    }

    /// x [T, hidden] → [T, hidden]; advances `state`. `chunked` selects the
    /// chunked prefill form, otherwise the token recurrence.
    fn forward(
        &self,
        x: &Tensor,
        state: &mut DeltaNetState,
        chunked: bool,
    ) -> candle_core::Result<Tensor> {
        let t = x.dim(0)?;
        let dtype = x.dtype();
        let (n_k, n_v, d_k, d_v) = (self.n_k, self.n_v, self.d_k, self.d_v);
        let key_dim = n_k * d_k;
        let mixed = linear(x, &self.in_proj_qkv)?; // [T, conv_dim]
        let z = linear(x, &self.in_proj_z)?; // [T, n_v·d_v]
        let b = linear(x, &self.in_proj_b)?; // [T, n_v]
        let a = linear(x, &self.in_proj_a)?; // [T, n_v]

        // Depthwise causal conv1d over time with the cached left context.
        let padded = Tensor::cat(&[&state.conv, &mixed], 0)?; // [K−1+T, C]
        let mut conv = padded
            .narrow(0, 0, t)?
            .broadcast_mul(&self.conv_taps.i(0)?)?;
        for j in 1..self.kernel {
            conv = (conv
                + padded
                    .narrow(0, j, t)?
                    .broadcast_mul(&self.conv_taps.i(j)?)?)?;
        }
        let conv = candle_nn::ops::silu(&conv)?;
        state.conv = padded.narrow(0, t, self.kernel - 1)?.contiguous()?;

        let q = conv.narrow(1, 0, key_dim)?.reshape((t, n_k, d_k))?;
        let k = conv.narrow(1, key_dim, key_dim)?.reshape((t, n_k, d_k))?;
        let v = conv
            .narrow(1, 2 * key_dim, n_v * d_v)?
            .reshape((t, n_v, d_v))?;

        let beta = candle_nn::ops::sigmoid(&b.to_dtype(DType::F32)?)?; // [T, n_v]
        let g = softplus(&a.to_dtype(DType::F32)?.broadcast_add(&self.dt_bias)?)?
            .broadcast_mul(&self.neg_a)?; // [T, n_v], ≤ 0

        // Value head h uses key head h / (n_v / n_k): interleaved repeat.
        let r = n_v / n_k;
        let expand = |x: &Tensor| -> candle_core::Result<Tensor> {
            let x = x.to_dtype(DType::F32)?;
            let x = if r > 1 {
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

        let (out, new_state) = if chunked {
            chunk_gated_delta_rule(&q, &k, &v, &g, &beta, &state.recurrent)?
        } else {
            recurrent_gated_delta_rule(&q, &k, &v, &g, &beta, &state.recurrent)?
        };
        state.recurrent = new_state;

        // Gated RMSNorm per value head: w · rmsnorm(o) · silu(z).
        let out = out.transpose(0, 1)?.to_dtype(dtype)?; // [T, n_v, d_v]
        let z = z.reshape((t, n_v, d_v))?;
        let normed = rms_normalise_f32(&out, self.eps)?
            .to_dtype(dtype)?
            .broadcast_mul(&self.norm_weight)?
            .to_dtype(DType::F32)?;
        let gated = (normed * candle_nn::ops::silu(&z.to_dtype(DType::F32)?)?)?
            .to_dtype(dtype)?
            .reshape((t, n_v * d_v))?;
        linear(&gated, &self.out_proj)
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

/// The gated delta rule, one token at a time.
///
/// Shapes (f32): q, k [H, T, d_k] (q already scaled by 1/√d_k), v [H, T,
/// d_v], g, beta [H, T], state [H, d_k, d_v]. Per token: S ← S·exp(g);
/// m = Sᵀk; S ← S + k ⊗ β(v − m); o = Sᵀq. Returns o [H, T, d_v] and the
/// final state.
fn recurrent_gated_delta_rule(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    g: &Tensor,
    beta: &Tensor,
    state: &Tensor,
) -> candle_core::Result<(Tensor, Tensor)> {
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

/// The chunked (UT transform) gated delta rule, as the reference's
/// `torch_chunk_gated_delta_rule`: chunks of [`DELTANET_CHUNK_TOKENS`],
/// intra-chunk work as matmuls, a sequential scan over chunks. Same shapes
/// and result as [`recurrent_gated_delta_rule`].
fn chunk_gated_delta_rule(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    g: &Tensor,
    beta: &Tensor,
    state: &Tensor,
) -> candle_core::Result<(Tensor, Tensor)> {
    let c = DELTANET_CHUNK_TOKENS;
    let (h, t, d_k) = q.dims3()?;
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

/// A SwiGLU MLP with separate projections (the shared expert).
#[derive(Debug, Clone)]
struct SwiGlu {
    gate_proj: Tensor,
    up_proj: Tensor,
    down_proj: Tensor,
}

impl SwiGlu {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let g = candle_nn::ops::silu(&linear(x, &self.gate_proj)?)?;
        let u = linear(x, &self.up_proj)?;
        linear(&(g * u)?, &self.down_proj)
    }
}

/// Sparse MoE block (`mlp`) with a sigmoid-gated shared expert.
#[derive(Debug, Clone)]
struct SparseMoe {
    /// Router weight [E, hidden].
    router: Tensor,
    /// Stacked expert gate and up projections [E, 2I, hidden] (gate rows
    /// first).
    gate_up: Tensor,
    /// Stacked expert down projections [E, hidden, I].
    down: Tensor,
    shared: SwiGlu,
    /// [1, hidden].
    shared_gate: Tensor,
    top_k: usize,
    intermediate: usize,
}

impl SparseMoe {
    fn load(
        cfg: &Config,
        src: &dyn TensorSource,
        p: &str,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, LoadError> {
        let (h, e, i, is) = (
            cfg.hidden_size,
            cfg.num_experts,
            cfg.moe_intermediate_size,
            cfg.shared_expert_intermediate_size,
        );
        let stacked = format!("{p}experts.gate_up_proj");
        let (gate_up, down) = if src.contains(&stacked) {
            (
                weight(src, &stacked, &[e, 2 * i, h], dtype, device)?,
                weight(
                    src,
                    &format!("{p}experts.down_proj"),
                    &[e, h, i],
                    dtype,
                    device,
                )?,
            )
        } else {
            let mut gate_ups = Vec::with_capacity(e);
            let mut downs = Vec::with_capacity(e);
            for x in 0..e {
                let q = format!("{p}experts.{x}.");
                let gate = weight(src, &format!("{q}gate_proj.weight"), &[i, h], dtype, device)?;
                let up = weight(src, &format!("{q}up_proj.weight"), &[i, h], dtype, device)?;
                let name = format!("{q}gate_proj.weight");
                gate_ups.push(Tensor::cat(&[&gate, &up], 0).map_err(named(&name))?);
                downs.push(weight(
                    src,
                    &format!("{q}down_proj.weight"),
                    &[h, i],
                    dtype,
                    device,
                )?);
            }
            (
                Tensor::stack(&gate_ups, 0).map_err(named(&stacked))?,
                Tensor::stack(&downs, 0).map_err(named(&stacked))?,
            )
        };
        // The fused kernels read the stacked buffers from their start.
        let gate_up = packed(&gate_up).map_err(named(&stacked))?;
        let down = packed(&down).map_err(named(&stacked))?;
        let sp = format!("{p}shared_expert.");
        Ok(Self {
            router: weight(src, &format!("{p}gate.weight"), &[e, h], dtype, device)?,
            gate_up,
            down,
            shared: SwiGlu {
                gate_proj: weight(
                    src,
                    &format!("{sp}gate_proj.weight"),
                    &[is, h],
                    dtype,
                    device,
                )?,
                up_proj: weight(src, &format!("{sp}up_proj.weight"), &[is, h], dtype, device)?,
                down_proj: weight(
                    src,
                    &format!("{sp}down_proj.weight"),
                    &[h, is],
                    dtype,
                    device,
                )?,
            },
            shared_gate: weight(
                src,
                &format!("{p}shared_expert_gate.weight"),
                &[1, h],
                dtype,
                device,
            )?,
            top_k: cfg.num_experts_per_tok,
            intermediate: i,
        })
    }

    /// x [T, hidden] → [T, hidden]: the routed experts' weighted sum plus
    /// the gated shared expert.
    fn forward(&self, x: &Tensor, dispatch: MoeDispatch) -> candle_core::Result<Tensor> {
        let routed = match dispatch {
            MoeDispatch::PerExpert => self.routed_per_expert(x)?,
            MoeDispatch::FusedCuda => {
                self.routed_grouped(x, FUSED_MOE_MAX_PAIRS, &fused_cuda_grouped_gemm)?
            }
        };
        let shared = self.shared.forward(x)?;
        let shared_gate = candle_nn::ops::sigmoid(&linear(x, &self.shared_gate)?)?;
        routed + shared.broadcast_mul(&shared_gate)?
    }

    /// Routed experts, one matmul pair per chosen expert; routing on the
    /// host. Works on every device and dtype.
    fn routed_per_expert(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (t, _) = x.dims2()?;
        let dtype = x.dtype();
        let logits = linear(x, &self.router)?;
        let probs = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32)?)?;
        let probs: Vec<Vec<f32>> = probs.to_vec2()?;
        // Route on the host: top-k per token, renormalised, then group the
        // tokens by expert so each chosen expert runs one matmul.
        let num_experts = self.router.dim(0)?;
        let mut tokens_of: Vec<Vec<u32>> = vec![Vec::new(); num_experts];
        let mut weights_of: Vec<Vec<f32>> = vec![Vec::new(); num_experts];
        let mut order: Vec<usize> = Vec::with_capacity(num_experts);
        for (tok, p) in probs.iter().enumerate() {
            order.clear();
            order.extend(0..p.len());
            // Descending probability; ties to the lower index, like topk.
            order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
            let chosen = &order[..self.top_k];
            let sum: f32 = chosen.iter().map(|&e| p[e]).sum();
            for &e in chosen {
                tokens_of[e].push(tok as u32);
                // The reference casts the renormalised weights to the model
                // dtype before use.
                weights_of[e].push(round_to(p[e] / sum, dtype));
            }
        }
        let mut out = Tensor::zeros_like(x)?;
        let i = self.intermediate;
        for (e, toks) in tokens_of.iter().enumerate() {
            if toks.is_empty() {
                continue;
            }
            let idx = Tensor::new(toks.as_slice(), x.device())?;
            let xs = if t == toks.len() {
                x.clone()
            } else {
                x.index_select(&idx, 0)?
            };
            let gate_up = linear(&xs, &self.gate_up.i(e)?)?; // [n, 2I]
            let g = candle_nn::ops::silu(&gate_up.narrow(1, 0, i)?)?;
            let u = gate_up.narrow(1, i, i)?;
            let y = linear(&(g * u)?, &self.down.i(e)?)?; // [n, hidden]
            let w = Tensor::new(weights_of[e].as_slice(), x.device())?
                .to_dtype(dtype)?
                .unsqueeze(1)?;
            let y = y.broadcast_mul(&w)?;
            out = out.index_add(&idx, &y, 0)?;
        }
        Ok(out)
    }

    /// Routed experts through a grouped GEMM over all experts at once
    /// (candle's fused CUDA kernels in production, see
    /// [`fused_cuda_grouped_gemm`]). Routing stays on the device: no host
    /// round trip per layer. Inputs of more than `max_pairs` (token, expert)
    /// pairs run in token chunks (the device sort keeps one row in shared
    /// memory).
    fn routed_grouped(
        &self,
        x: &Tensor,
        max_pairs: usize,
        gemm: &GroupedGemm,
    ) -> candle_core::Result<Tensor> {
        let (t, _) = x.dims2()?;
        let k = self.top_k;
        let chunk = (max_pairs / k).max(1);
        if t > chunk {
            let mut parts = Vec::with_capacity(t.div_ceil(chunk));
            for start in (0..t).step_by(chunk) {
                let len = chunk.min(t - start);
                parts.push(self.routed_grouped(&x.narrow(0, start, len)?, max_pairs, gemm)?);
            }
            return Tensor::cat(&parts, 0);
        }
        let x = packed(x)?;
        let (t, hidden) = x.dims2()?;
        let logits = linear(&x, &self.router)?;
        let probs = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32)?)?;
        let routing = PairRouting::from_probs(&probs, k, x.dtype())?;
        let is_prefill = t > 1;
        // Pass 1: every pair's gate/up rows, [T·k, 2I], input row = pair / k.
        let gate_up = gemm(
            &x,
            &self.gate_up,
            None,
            &routing.sorted_pairs,
            &routing.expert_of_sorted,
            k,
            is_prefill,
        )?;
        let i = self.intermediate;
        let act = (candle_nn::ops::silu(&gate_up.narrow(1, 0, i)?)? * gate_up.narrow(1, i, i)?)?;
        // Pass 2: every pair's down projection scaled by its routing weight,
        // [T·k, hidden], input row = pair.
        let down = gemm(
            &packed(&act)?,
            &self.down,
            Some(&routing.pair_weights),
            &routing.sorted_pairs,
            &routing.expert_of_sorted,
            k,
            is_prefill,
        )?;
        down.reshape((t, k, hidden))?.sum(1)
    }
}

/// How the sparse MoE blocks send tokens to their experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoeDispatch {
    /// candle's fused grouped-GEMM CUDA kernels
    /// (`candle_nn::moe::moe_gemm`, WMMA tensor-core tiles): top-k routing
    /// on the device, then one launch for all experts' gate/up projections
    /// and one for their down projections. bf16/f16 weights on a CUDA device
    /// in a `--features cuda` build only (see [`MoeDispatch::fused_applies`]).
    FusedCuda,
    /// Routing on the host, then one matmul pair per chosen expert. Every
    /// device and dtype; the CPU path.
    PerExpert,
}

impl MoeDispatch {
    /// Whether [`MoeDispatch::FusedCuda`] can run a model of `config` in
    /// `dtype` on `device`: a build with the `cuda` feature, a CUDA device,
    /// bf16 or f16, and hidden and expert widths that are multiples of 8
    /// (the kernels load 8 values at a time).
    pub fn fused_applies(config: &Config, dtype: DType, device: &Device) -> bool {
        cfg!(feature = "cuda")
            && device.is_cuda()
            && matches!(dtype, DType::BF16 | DType::F16)
            && config.hidden_size.is_multiple_of(8)
            && config.moe_intermediate_size.is_multiple_of(8)
    }

    /// The fastest dispatch that applies: [`MoeDispatch::FusedCuda`] where
    /// [`MoeDispatch::fused_applies`], else [`MoeDispatch::PerExpert`].
    pub fn best_for(config: &Config, dtype: DType, device: &Device) -> Self {
        if Self::fused_applies(config, dtype, device) {
            Self::FusedCuda
        } else {
            Self::PerExpert
        }
    }
}

/// Most (token, expert) pairs one grouped MoE call routes: the device sort of
/// the pairs' expert ids keeps the padded row (4 bytes per entry) in 48 KiB
/// of shared memory, so 8192 (1024 tokens at top-8); longer inputs run in
/// token chunks.
const FUSED_MOE_MAX_PAIRS: usize = 8192;

/// A grouped GEMM over stacked experts with the contract of
/// `candle_nn::moe::moe_gemm`: `(input, weights [E, N, K], pair_weights,
/// sorted_pairs, expert_of_sorted, top_k, is_prefill)` → `[pairs, N]`.
/// Without pair weights, input is [T, K] and pair p reads row p / top_k;
/// with them, input is [T·top_k, K], pair p reads row p and its output is
/// scaled by `pair_weights[p]` (f32).
type GroupedGemm = dyn Fn(
    &Tensor,
    &Tensor,
    Option<&Tensor>,
    &Tensor,
    &Tensor,
    usize,
    bool,
) -> candle_core::Result<Tensor>;

/// candle's fused MoE GEMM (`candle_nn::moe::moe_gemm`). The kernel reads
/// raw device buffers from their start, so every operand must be packed
/// (contiguous at offset 0); [`SparseMoe::routed_grouped`] and the loader
/// make sure of it. Without the `cuda` feature candle's function returns
/// an error; [`MoeDispatch::fused_applies`] keeps it from being chosen.
fn fused_cuda_grouped_gemm(
    input: &Tensor,
    weights: &Tensor,
    pair_weights: Option<&Tensor>,
    sorted_pairs: &Tensor,
    expert_of_sorted: &Tensor,
    top_k: usize,
    is_prefill: bool,
) -> candle_core::Result<Tensor> {
    candle_nn::moe::moe_gemm(
        input,
        weights,
        &pair_weights.cloned(),
        sorted_pairs,
        expert_of_sorted,
        top_k,
        is_prefill,
    )
}

/// The routing of T tokens to their top-k experts as a grouped GEMM wants
/// it. Pair p = token · k + slot stands for the token's slot-th choice.
struct PairRouting {
    /// Pair ids ordered by expert id, [T·k] u32: the rows of one expert
    /// are contiguous.
    sorted_pairs: Tensor,
    /// Expert id of each entry of `sorted_pairs` (ascending), [T·k] u32.
    expert_of_sorted: Tensor,
    /// Renormalised routing weight of each pair (rounded to the model dtype,
    /// as the reference does, then held in f32), [T·k] f32.
    pair_weights: Tensor,
}

impl PairRouting {
    /// From router probabilities [T, E] (f32): top-k per token (descending),
    /// weights divided by their sum, pairs sorted by expert. All tensor ops,
    /// so it stays on the probabilities' device.
    fn from_probs(probs: &Tensor, k: usize, dtype: DType) -> candle_core::Result<Self> {
        let top = probs
            .arg_sort_last_dim(false)?
            .narrow(1, 0, k)?
            .contiguous()?; // [T, k]
        let top_p = probs.contiguous()?.gather(&top, 1)?; // [T, k]
        let weights = top_p.broadcast_div(&top_p.sum_keepdim(1)?)?;
        let pair_weights = weights
            .to_dtype(dtype)?
            .to_dtype(DType::F32)?
            .flatten_all()?;
        let (expert_of_sorted, sorted_pairs) = top.flatten_all()?.sort_last_dim(true)?;
        Ok(Self {
            sorted_pairs: packed(&sorted_pairs)?,
            expert_of_sorted: packed(&expert_of_sorted)?,
            pair_weights: packed(&pair_weights)?,
        })
    }
}

/// `x` itself when it is contiguous from the start of its storage, else a
/// packed copy (kernels that read raw buffers need that).
fn packed(x: &Tensor) -> candle_core::Result<Tensor> {
    if x.is_contiguous() && x.layout().start_offset() == 0 {
        Ok(x.clone())
    } else {
        x.force_contiguous()
    }
}

/// Rounds an f32 to the nearest value representable in `dtype`.
fn round_to(x: f32, dtype: DType) -> f32 {
    match dtype {
        DType::BF16 => half::bf16::from_f32(x).to_f32(),
        DType::F16 => half::f16::from_f32(x).to_f32(),
        _ => x,
    }
}

#[derive(Debug, Clone)]
enum Mixer {
    Attention(FullAttention),
    DeltaNet(GatedDeltaNet),
}

#[derive(Debug, Clone)]
struct DecoderLayer {
    input_layernorm: ZeroCentredRmsNorm,
    post_attention_layernorm: ZeroCentredRmsNorm,
    mixer: Mixer,
    moe: SparseMoe,
}

/// Decode state of one layer.
#[derive(Debug, Clone)]
enum LayerState {
    Attention(Option<KvCache>),
    DeltaNet(DeltaNetState),
}

/// The decode state of one sequence: KV caches of the attention layers,
/// conv and recurrent states of the DeltaNet layers, and the position.
///
/// Cloning is cheap (tensors are shared) and is a snapshot: forwards build
/// new tensors and never write into shared ones.
#[derive(Debug, Clone)]
pub struct State {
    position: usize,
    layers: Vec<LayerState>,
}

impl State {
    /// Tokens seen so far.
    pub fn len(&self) -> usize {
        self.position
    }

    /// Whether no token has been fed yet.
    pub fn is_empty(&self) -> bool {
        self.position == 0
    }

    /// Bytes the state's tensors occupy.
    pub fn size_bytes(&self) -> usize {
        let bytes = |t: &Tensor| t.elem_count() * t.dtype().size_in_bytes();
        self.layers
            .iter()
            .map(|l| match l {
                LayerState::Attention(Some(c)) => bytes(&c.k) + bytes(&c.v),
                LayerState::Attention(None) => 0,
                LayerState::DeltaNet(s) => bytes(&s.conv) + bytes(&s.recurrent),
            })
            .sum()
    }
}

/// How [`Qwen3_5Moe::forward_with`] runs the DeltaNet layers on a
/// multi-token input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeltaNetMode {
    /// Chunked form for inputs longer than one token, recurrence for one
    /// token (what the reference does).
    #[default]
    Auto,
    /// The token recurrence for every input (a test oracle).
    Recurrent,
}

/// Qwen3.5-MoE causal language model (text part).
#[derive(Debug, Clone)]
pub struct Qwen3_5Moe {
    config: Config,
    embed_tokens: Tensor,
    layers: Vec<DecoderLayer>,
    norm: ZeroCentredRmsNorm,
    lm_head: Tensor,
    /// RoPE inverse frequencies θ^(−2j/rot), f32, [rot/2].
    inv_freq: Vec<f32>,
    dtype: DType,
    device: Device,
    moe_dispatch: MoeDispatch,
}

impl Qwen3_5Moe {
    /// Builds the model from named tensors.
    ///
    /// Tensor names follow the Hugging Face checkpoints: `model.…` (flat
    /// ForCausalLM) or `model.language_model.…` (released form), experts per
    /// expert (`mlp.experts.{e}.{gate,up,down}_proj.weight`) or stacked
    /// (`mlp.experts.gate_up_proj` [E, 2I, H], `mlp.experts.down_proj`
    /// [E, H, I]); `model.visual.*` and `mtp.*` are not read. Experts are
    /// held stacked either way.
    ///
    /// The MoE dispatch is [`MoeDispatch::best_for`] the config, dtype and
    /// device: the fused CUDA kernels for bf16/f16 on CUDA, else one matmul
    /// pair per expert.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`] / [`LoadError::ShapeMismatch`] naming the
    /// tensor, [`LoadError::InvalidConfig`] for an unusable config.
    pub fn load(
        config: Config,
        src: &dyn TensorSource,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, LoadError> {
        config
            .validate()
            .map_err(|(field, message)| LoadError::InvalidConfig {
                path: "config.json".into(),
                field,
                message,
            })?;
        let prefix = if src.contains("model.language_model.embed_tokens.weight") {
            "model.language_model."
        } else {
            "model."
        };
        let (h, v) = (config.hidden_size, config.vocab_size);
        let embed_tokens = weight(
            src,
            &format!("{prefix}embed_tokens.weight"),
            &[v, h],
            dtype,
            device,
        )?;
        let lm_head = if src.contains("lm_head.weight") || !config.tie_word_embeddings {
            weight(src, "lm_head.weight", &[v, h], dtype, device)?
        } else {
            embed_tokens.clone()
        };
        let eps = config.rms_norm_eps;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("{prefix}layers.{i}.");
            let mixer = match config.layer_kind(i) {
                LayerKind::FullAttention => Mixer::Attention(FullAttention::load(
                    &config,
                    src,
                    &format!("{p}self_attn."),
                    dtype,
                    device,
                )?),
                LayerKind::LinearAttention => Mixer::DeltaNet(GatedDeltaNet::load(
                    &config,
                    src,
                    &format!("{p}linear_attn."),
                    dtype,
                    device,
                )?),
            };
            layers.push(DecoderLayer {
                input_layernorm: ZeroCentredRmsNorm::load(
                    src,
                    &format!("{p}input_layernorm.weight"),
                    h,
                    eps,
                    device,
                )?,
                post_attention_layernorm: ZeroCentredRmsNorm::load(
                    src,
                    &format!("{p}post_attention_layernorm.weight"),
                    h,
                    eps,
                    device,
                )?,
                mixer,
                moe: SparseMoe::load(&config, src, &format!("{p}mlp."), dtype, device)?,
            });
        }
        let norm = ZeroCentredRmsNorm::load(src, &format!("{prefix}norm.weight"), h, eps, device)?;
        let rot = config.rotary_dim();
        let theta = config.rope_theta();
        let inv_freq = (0..rot / 2)
            .map(|j| (1.0 / theta.powf((2 * j) as f64 / rot as f64)) as f32)
            .collect();
        let moe_dispatch = MoeDispatch::best_for(&config, dtype, device);
        Ok(Self {
            config,
            embed_tokens,
            layers,
            norm,
            lm_head,
            inv_freq,
            dtype,
            device: device.clone(),
            moe_dispatch,
        })
    }

    /// How the MoE blocks dispatch tokens to experts.
    pub fn moe_dispatch(&self) -> MoeDispatch {
        self.moe_dispatch
    }

    /// Chooses the MoE dispatch (for comparisons and benchmarks; loading
    /// already picks the fastest that applies).
    ///
    /// # Errors
    /// [`MoeDispatch::FusedCuda`] where [`MoeDispatch::fused_applies`] is
    /// false for this model's config, dtype and device.
    pub fn set_moe_dispatch(&mut self, dispatch: MoeDispatch) -> candle_core::Result<()> {
        if dispatch == MoeDispatch::FusedCuda
            && !MoeDispatch::fused_applies(&self.config, self.dtype, &self.device)
        {
            candle_core::bail!(
                "the fused CUDA MoE kernels need a `cuda` build, a CUDA device and bf16/f16 \
                 weights (model: {:?} on {:?})",
                self.dtype,
                self.device.location()
            );
        }
        self.moe_dispatch = dispatch;
        Ok(())
    }

    /// The config the model was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The compute dtype of the weights.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// A fresh decode state at position 0.
    ///
    /// # Errors
    /// candle allocation errors.
    pub fn new_state(&self) -> candle_core::Result<State> {
        let layers = self
            .layers
            .iter()
            .map(|l| match &l.mixer {
                Mixer::Attention(_) => Ok(LayerState::Attention(None)),
                Mixer::DeltaNet(d) => {
                    Ok(LayerState::DeltaNet(d.new_state(self.dtype, &self.device)?))
                }
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(State {
            position: 0,
            layers,
        })
    }

    /// cos and sin [T, rot/2] (model dtype) for positions
    /// `offset..offset+T`, computed in f32 as the reference does.
    fn rope_tables(&self, offset: usize, t: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(t * half);
        let mut sin = Vec::with_capacity(t * half);
        for p in offset..offset + t {
            for f in &self.inv_freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let cos = Tensor::from_vec(cos, (t, half), &self.device)?.to_dtype(self.dtype)?;
        let sin = Tensor::from_vec(sin, (t, half), &self.device)?.to_dtype(self.dtype)?;
        Ok((cos, sin))
    }

    /// Runs the decoder over `input_ids` after the tokens in `state` and
    /// returns the final hidden states [T, hidden] (after the final norm).
    fn hidden_states(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
    ) -> candle_core::Result<Tensor> {
        let t = input_ids.len();
        if t == 0 {
            candle_core::bail!("forward needs at least one input token");
        }
        let vocab = self.config.vocab_size;
        if let Some(bad) = input_ids.iter().find(|&&id| id as usize >= vocab) {
            candle_core::bail!("token id {bad} is outside the vocabulary of {vocab}");
        }
        // Work on a copy so that a failing step leaves `state` untouched.
        let mut next = state.clone();
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.embed_tokens.index_select(&ids, 0)?; // [T, H]
        let offset = state.position;
        let (cos, sin) = self.rope_tables(offset, t)?;
        let chunked = t > 1 && mode == DeltaNetMode::Auto;
        for (layer, layer_state) in self.layers.iter().zip(next.layers.iter_mut()) {
            let normed = layer.input_layernorm.forward(&x)?;
            let mixed = match (&layer.mixer, layer_state) {
                (Mixer::Attention(a), LayerState::Attention(cache)) => {
                    a.forward(&normed, &cos, &sin, offset, cache)?
                }
                (Mixer::DeltaNet(d), LayerState::DeltaNet(s)) => d.forward(&normed, s, chunked)?,
                _ => candle_core::bail!("decode state does not match the model's layers"),
            };
            x = (x + mixed)?;
            let normed = layer.post_attention_layernorm.forward(&x)?;
            x = (x + layer.moe.forward(&normed, self.moe_dispatch)?)?;
        }
        next.position += t;
        let out = self.norm.forward(&x)?;
        *state = next;
        Ok(out)
    }

    /// Feeds `input_ids` and returns the f32 logits of **every** position,
    /// [T, vocab]. Advances `state`.
    ///
    /// # Errors
    /// Empty input, a token id outside the vocabulary, candle errors.
    pub fn forward_all(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
    ) -> candle_core::Result<Tensor> {
        let hidden = self.hidden_states(input_ids, state, mode)?;
        linear(&hidden, &self.lm_head)?.to_dtype(DType::F32)
    }

    /// Feeds `input_ids` and returns the f32 logits of the last position,
    /// [vocab]. Advances `state`.
    ///
    /// # Errors
    /// Empty input, a token id outside the vocabulary, candle errors.
    pub fn forward_with(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
    ) -> candle_core::Result<Tensor> {
        let hidden = self.hidden_states(input_ids, state, mode)?;
        let last = hidden.narrow(0, input_ids.len() - 1, 1)?;
        linear(&last, &self.lm_head)?
            .squeeze(0)?
            .to_dtype(DType::F32)
    }
}

impl CausalLm for Qwen3_5Moe {
    type State = State;

    fn new_state(&self) -> candle_core::Result<State> {
        Qwen3_5Moe::new_state(self)
    }

    fn forward(&self, input_ids: &[u32], state: &mut State) -> candle_core::Result<Tensor> {
        self.forward_with(input_ids, state, DeltaNetMode::Auto)
    }

    fn state_len(state: &State) -> usize {
        state.position
    }

    fn state_size_bytes(state: &State) -> usize {
        state.size_bytes()
    }

    fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }
}

/// A CPU kernel for `x @ wᵀ` with few rows of `x` and bf16/f16 weights.
mod cpu_linear {
    use candle_core::{CpuStorage, DType, Storage, Tensor};
    use rayon::prelude::*;

    /// Most rows of `x` the streaming kernel takes; beyond it a widened
    /// weight and a gemm win.
    pub const MAX_STREAM_ROWS: usize = 32;

    /// Weight rows per parallel task.
    const ROWS_PER_TASK: usize = 16;

    /// Independent partial sums of the dot products: 32 f32 lanes are four
    /// AVX2 accumulators, enough to hide the add latency.
    const LANES: usize = 32;

    /// Widens a slice of stored weights to f32.
    trait Widen: Sync + Sized {
        fn widen(src: &[Self], dst: &mut [f32]);

        /// Dot product of one stored weight row with an f32 row; `scratch`
        /// (the row's length) may hold the widened weights.
        #[inline(always)]
        fn dot_row(src: &[Self], x: &[f32], scratch: &mut [f32]) -> f32 {
            Self::widen(src, scratch);
            dot(scratch, x)
        }
    }

    impl Widen for half::bf16 {
        #[inline(always)]
        fn widen(src: &[Self], dst: &mut [f32]) {
            // bf16 is the top half of an f32: a shift, which vectorises.
            for (d, s) in dst.iter_mut().zip(src) {
                *d = f32::from_bits(u32::from(s.to_bits()) << 16);
            }
        }

        /// Widens in registers while multiplying: the weight row is read
        /// once from memory and never written back as f32 (about 20 % more
        /// throughput than widen-then-dot for one input row).
        #[inline(always)]
        fn dot_row(src: &[Self], x: &[f32], _scratch: &mut [f32]) -> f32 {
            let mut acc = [0f32; LANES];
            let mut w_chunks = src.chunks_exact(LANES);
            let mut x_chunks = x.chunks_exact(LANES);
            for (cw, cx) in (&mut w_chunks).zip(&mut x_chunks) {
                for l in 0..LANES {
                    acc[l] += f32::from_bits(u32::from(cw[l].to_bits()) << 16) * cx[l];
                }
            }
            let tail: f32 = w_chunks
                .remainder()
                .iter()
                .zip(x_chunks.remainder())
                .map(|(w, x)| w.to_f32() * x)
                .sum();
            acc.iter().sum::<f32>() + tail
        }
    }

    impl Widen for half::f16 {
        #[inline(always)]
        fn widen(src: &[Self], dst: &mut [f32]) {
            use half::slice::HalfFloatSliceExt;
            src.convert_to_f32_slice(dst);
        }

        /// Like bf16's: converted in registers while multiplying, with the
        /// branch-free conversion [`f16_bits_to_f32`] (which vectorises;
        /// `half`'s per-value conversion does not).
        #[inline(always)]
        fn dot_row(src: &[Self], x: &[f32], _scratch: &mut [f32]) -> f32 {
            let mut acc = [0f32; LANES];
            let mut w_chunks = src.chunks_exact(LANES);
            let mut x_chunks = x.chunks_exact(LANES);
            for (cw, cx) in (&mut w_chunks).zip(&mut x_chunks) {
                for l in 0..LANES {
                    acc[l] += f16_bits_to_f32(cw[l].to_bits()) * cx[l];
                }
            }
            let tail: f32 = w_chunks
                .remainder()
                .iter()
                .zip(x_chunks.remainder())
                .map(|(w, x)| w.to_f32() * x)
                .sum();
            acc.iter().sum::<f32>() + tail
        }
    }

    /// IEEE binary16 bits to f32, exactly, without branches: exponent and
    /// mantissa moved into f32 position and scaled by 2¹¹² (the exponent
    /// bias difference; this also normalises f16 subnormals, which land in
    /// f32's subnormal range), infinities and NaNs (exponent 31) mapped to
    /// exponent 255, then the sign.
    #[inline(always)]
    fn f16_bits_to_f32(bits: u16) -> f32 {
        const TWO_POW_112: f32 = f32::from_bits(0x7780_0000);
        let h = u32::from(bits);
        let exp_mant = (h & 0x7fff) << 13;
        let magnitude = if h & 0x7c00 == 0x7c00 {
            f32::from_bits(exp_mant | 0x7f80_0000)
        } else {
            f32::from_bits(exp_mant) * TWO_POW_112
        };
        f32::from_bits(magnitude.to_bits() | ((h & 0x8000) << 16))
    }

    /// f32 dot product with [`LANES`] independent partial sums (vectorises).
    #[inline(always)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let mut acc = [0f32; LANES];
        let mut a_chunks = a.chunks_exact(LANES);
        let mut b_chunks = b.chunks_exact(LANES);
        for (ca, cb) in (&mut a_chunks).zip(&mut b_chunks) {
            for l in 0..LANES {
                acc[l] += ca[l] * cb[l];
            }
        }
        let tail: f32 = a_chunks
            .remainder()
            .iter()
            .zip(b_chunks.remainder())
            .map(|(x, y)| x * y)
            .sum();
        acc.iter().sum::<f32>() + tail
    }

    /// One task: `out` [rows, m] for weight rows `first..first + rows`.
    struct RowTask<'a, T> {
        w: &'a [T],
        xs: &'a [f32],
        m: usize,
        k: usize,
        first: usize,
        out: &'a mut [f32],
        row: &'a mut [f32],
    }

    impl<T: Widen> pulp::WithSimd for RowTask<'_, T> {
        type Output = ();

        // Inlined into pulp's `#[target_feature]` entry point, so the
        // widening and dot products below compile for that instruction set.
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) {
            let (m, k) = (self.m, self.k);
            if m == 1 {
                for (r, o) in self.out.iter_mut().enumerate() {
                    let j = self.first + r;
                    *o = T::dot_row(&self.w[j * k..(j + 1) * k], self.xs, self.row);
                }
                return;
            }
            for (r, out_row) in self.out.chunks_exact_mut(m).enumerate() {
                let j = self.first + r;
                T::widen(&self.w[j * k..(j + 1) * k], self.row);
                for (i, o) in out_row.iter_mut().enumerate() {
                    *o = dot(self.row, &self.xs[i * k..(i + 1) * k]);
                }
            }
        }
    }

    /// out_t [n, m] = w [n, k] · xs [m, k]ᵀ.
    ///
    /// Each task runs under `pulp`'s runtime dispatch, so the widening and
    /// the dot products are compiled for the best instruction set the CPU
    /// has (AVX2 + FMA on x86-64) while the crate builds for the baseline.
    fn run<T: Widen>(w: &[T], xs: &[f32], m: usize, k: usize, out_t: &mut [f32]) {
        let arch = pulp::Arch::new();
        out_t
            .par_chunks_mut(ROWS_PER_TASK * m)
            .enumerate()
            .for_each(|(task, out)| {
                let mut row = vec![0f32; k];
                arch.dispatch(RowTask {
                    w,
                    xs,
                    m,
                    k,
                    first: task * ROWS_PER_TASK,
                    out,
                    row: &mut row,
                });
            });
    }

    /// `x @ wᵀ` for CPU `x` [m ≤ MAX_STREAM_ROWS, k] and a contiguous bf16
    /// or f16 `w` [n, k]; `None` when the kernel does not apply. The result
    /// has x's dtype; sums run in f32.
    pub fn try_linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let (m, k) = x.dims2()?;
        let (n, k_w) = w.dims2()?;
        if k != k_w || m > MAX_STREAM_ROWS || m == 0 {
            return Ok(None);
        }
        let xs: Vec<f32> = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
        let mut out_t = vec![0f32; n * m];
        {
            let (storage, layout) = w.storage_and_layout();
            let Some((start, end)) = layout.contiguous_offsets() else {
                return Ok(None);
            };
            match &*storage {
                Storage::Cpu(CpuStorage::BF16(v)) => run(&v[start..end], &xs, m, k, &mut out_t),
                Storage::Cpu(CpuStorage::F16(v)) => run(&v[start..end], &xs, m, k, &mut out_t),
                _ => return Ok(None),
            }
        }
        let out = if m == 1 {
            out_t
        } else {
            let mut out = vec![0f32; n * m];
            for j in 0..n {
                for i in 0..m {
                    out[i * n + j] = out_t[j * m + i];
                }
            }
            out
        };
        Ok(Some(
            Tensor::from_vec(out, (m, n), x.device())?.to_dtype(x.dtype())?,
        ))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use candle_core::Device;

        /// The branch-free f16 conversion equals `half`'s for every one of
        /// the 65536 bit patterns (NaNs stay NaNs).
        #[test]
        fn f16_conversion_is_exact_for_every_value() {
            for bits in 0..=u16::MAX {
                let want = half::f16::from_bits(bits).to_f32();
                let got = f16_bits_to_f32(bits);
                if want.is_nan() {
                    assert!(got.is_nan(), "{bits:#06x}: {got}");
                } else {
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{bits:#06x}: {got} vs {want}"
                    );
                }
            }
        }

        /// The kernel agrees with candle's f32 matmul on widened weights,
        /// for plain and narrowed (expert-slice) weights and several row
        /// counts.
        #[test]
        fn streaming_kernel_matches_matmul() -> candle_core::Result<()> {
            let dev = Device::Cpu;
            for dtype in [DType::BF16, DType::F16] {
                let stacked = Tensor::randn(0f32, 1.0, (3, 40, 37), &dev)?.to_dtype(dtype)?;
                let w = stacked.get(1)?; // a narrowed view, as experts are
                for m in [1, 5, MAX_STREAM_ROWS] {
                    let x = Tensor::randn(0f32, 1.0, (m, 37), &dev)?;
                    let got = try_linear(&x, &w)?.expect("kernel applies");
                    let want = x.matmul(&w.to_dtype(DType::F32)?.t()?)?;
                    let diff = (got - want)?
                        .abs()?
                        .flatten_all()?
                        .max(0)?
                        .to_scalar::<f32>()?;
                    assert!(diff < 1e-4, "{dtype:?} m={m}: {diff}");
                }
                let too_many = Tensor::randn(0f32, 1.0, (MAX_STREAM_ROWS + 1, 37), &dev)?;
                assert!(try_linear(&too_many, &w)?.is_none());
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod grouped_moe_tests {
    use super::*;

    /// A CPU model of the grouped-GEMM contract that candle-kernels'
    /// `moe_gemm_wmma` implements: it counts `expert_of_sorted` per expert,
    /// turns the counts into segment offsets, and computes the pairs of
    /// segment e (positions `offsets[e]..offsets[e + 1]` of `sorted_pairs`)
    /// with expert e's weights. A routing whose pairs are not grouped by
    /// expert therefore gives wrong rows here as it would on the GPU.
    fn grouped_gemm_cpu(
        input: &Tensor,
        weights: &Tensor,
        pair_weights: Option<&Tensor>,
        sorted_pairs: &Tensor,
        expert_of_sorted: &Tensor,
        top_k: usize,
        _is_prefill: bool,
    ) -> candle_core::Result<Tensor> {
        let num_experts = weights.dim(0)?;
        let sorted: Vec<u32> = sorted_pairs.to_vec1()?;
        let experts: Vec<u32> = expert_of_sorted.to_vec1()?;
        let scale: Option<Vec<f32>> = pair_weights.map(|w| w.to_vec1()).transpose()?;
        let mut counts = vec![0usize; num_experts];
        for &e in &experts {
            counts[e as usize] += 1;
        }
        let mut rows: Vec<Option<Tensor>> = vec![None; sorted.len()];
        let mut start = 0;
        for (e, &count) in counts.iter().enumerate() {
            let w = weights.i(e)?.to_dtype(DType::F32)?;
            for &pair in &sorted[start..start + count] {
                let row = if scale.is_some() {
                    pair as usize
                } else {
                    pair as usize / top_k
                };
                let mut y = input
                    .narrow(0, row, 1)?
                    .to_dtype(DType::F32)?
                    .matmul(&w.t()?)?;
                if let Some(scale) = &scale {
                    y = (y * f64::from(scale[pair as usize]))?;
                }
                rows[pair as usize] = Some(y.to_dtype(input.dtype())?);
            }
            start += count;
        }
        let rows = rows
            .into_iter()
            .enumerate()
            .map(|(pair, r)| r.ok_or_else(|| candle_core::Error::Msg(format!("pair {pair} unset"))))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Tensor::cat(&rows, 0)
    }

    fn random_moe(
        experts: usize,
        top_k: usize,
        hidden: usize,
        inter: usize,
        dtype: DType,
    ) -> SparseMoe {
        let dev = Device::Cpu;
        let r = |shape: &[usize]| {
            Tensor::randn(0f32, 0.5, shape, &dev)
                .and_then(|t| t.to_dtype(dtype))
                .expect("randn")
        };
        SparseMoe {
            router: r(&[experts, hidden]),
            gate_up: r(&[experts, 2 * inter, hidden]),
            down: r(&[experts, hidden, inter]),
            shared: SwiGlu {
                gate_proj: r(&[24, hidden]),
                up_proj: r(&[24, hidden]),
                down_proj: r(&[hidden, 24]),
            },
            shared_gate: r(&[1, hidden]),
            top_k,
            intermediate: inter,
        }
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a.to_dtype(DType::F32).expect("f32") - b.to_dtype(DType::F32).expect("f32"))
            .and_then(|d| d.abs())
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .expect("diff")
    }

    /// The device-side routing (top-k, renormalised weights, pairs grouped
    /// by expert) through the grouped-GEMM contract gives what the
    /// per-expert dispatch gives: for prefill and decode shapes, with and
    /// without token chunking.
    #[test]
    fn grouped_routing_matches_per_expert_dispatch() -> candle_core::Result<()> {
        let moe = random_moe(8, 3, 32, 16, DType::F32);
        for t in [1, 2, 13, 40] {
            let x = Tensor::randn(0f32, 1.0, (t, 32), &Device::Cpu)?;
            let want = moe.routed_per_expert(&x)?;
            let scale = want.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(scale > 0.1, "routed output is not trivially small: {scale}");
            for max_pairs in [FUSED_MOE_MAX_PAIRS, 9, 1] {
                let got = moe.routed_grouped(&x, max_pairs, &grouped_gemm_cpu)?;
                assert_eq!(got.dims(), &[t, 32]);
                // f32 rounding of differently blocked matmuls, relative to
                // the output's scale (a routing mistake is of that scale).
                let diff = max_abs_diff(&got, &want);
                assert!(
                    diff <= 1e-5 * scale,
                    "T={t} max_pairs={max_pairs}: {diff} of {scale}"
                );
            }
        }
        Ok(())
    }

    /// The pair layout the kernels rely on: pair p = token · k + slot, the
    /// sorted pairs grouped by ascending expert id, every pair once, each
    /// token's weights summing to one.
    #[test]
    fn pair_routing_groups_pairs_by_expert() -> candle_core::Result<()> {
        let probs = Tensor::new(
            &[
                [0.1f32, 0.5, 0.3, 0.1],
                [0.4, 0.1, 0.2, 0.3],
                [0.05, 0.15, 0.2, 0.6],
            ],
            &Device::Cpu,
        )?;
        let r = PairRouting::from_probs(&probs, 2, DType::F32)?;
        let pairs: Vec<u32> = r.sorted_pairs.to_vec1()?;
        let experts: Vec<u32> = r.expert_of_sorted.to_vec1()?;
        let weights: Vec<f32> = r.pair_weights.to_vec1()?;
        // Top-2: token 0 → experts 1, 2; token 1 → 0, 3; token 2 → 3, 2.
        let chosen = [1u32, 2, 0, 3, 3, 2];
        let mut seen = pairs.clone();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 5]);
        assert!(experts.windows(2).all(|w| w[0] <= w[1]), "{experts:?}");
        for (&pair, &expert) in pairs.iter().zip(&experts) {
            assert_eq!(chosen[pair as usize], expert, "pair {pair}");
        }
        let want = [0.625f32, 0.375, 4.0 / 7.0, 3.0 / 7.0, 0.75, 0.25];
        for (got, want) in weights.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{weights:?}");
        }
        Ok(())
    }

    /// Fused dispatch is never chosen where it cannot run: the CPU, or f32.
    #[test]
    fn fused_dispatch_needs_cuda_and_half_precision() -> candle_core::Result<()> {
        let config = Config::from_json(
            r#"{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1,
                "num_attention_heads": 2, "num_key_value_heads": 1,
                "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8}"#,
        )
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        for dtype in [DType::BF16, DType::F16, DType::F32] {
            assert!(!MoeDispatch::fused_applies(&config, dtype, &Device::Cpu));
            assert_eq!(
                MoeDispatch::best_for(&config, dtype, &Device::Cpu),
                MoeDispatch::PerExpert
            );
        }
        Ok(())
    }
}
