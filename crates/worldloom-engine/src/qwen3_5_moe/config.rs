//! The text model's `config.json` ([`Config`]) and what follows from it:
//! layer kinds, parameter counts, decode-state size.

use candle_core::DType;
use serde::{Deserialize, Serialize};

use crate::moe::MoeShape;

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
    /// Gated DeltaNet value heads (and everything indexed by them: the v
    /// rows of `in_proj_qkv` and the conv, `in_proj_z`, `in_proj_a`/`b`,
    /// `A_log`, `dt_bias`, the columns of `out_proj`) are stored in
    /// llama.cpp's tiled order `[k0v0, k1v0, …, k0v1, k1v1, …]` rather
    /// than the reference's grouped order `[k0v0, k0v1, …, k1v0, …]`. Set
    /// for GGUF files (whose converter reorders them), never by
    /// `config.json`'s authors; the function computed is the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub linear_value_heads_tiled: bool,
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

impl From<&Config> for MoeShape {
    fn from(config: &Config) -> Self {
        Self {
            hidden: config.hidden_size,
            experts: config.num_experts,
            top_k: config.num_experts_per_tok,
            expert_intermediate: config.moe_intermediate_size,
            shared_intermediate: config.shared_expert_intermediate_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config's MoE widths, as the MoE blocks and the dispatch choice
    /// read them (the shared width from its default).
    #[test]
    fn moe_shape_reads_the_config() -> serde_json::Result<()> {
        let config = Config::from_json(
            r#"{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1,
                "num_attention_heads": 2, "num_key_value_heads": 1,
                "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8}"#,
        )?;
        assert_eq!(
            MoeShape::from(&config),
            MoeShape {
                hidden: 16,
                experts: 4,
                top_k: 2,
                expert_intermediate: 8,
                shared_intermediate: 512,
            }
        );
        Ok(())
    }
}
