//! Qwen3.5-MoE in GGUF files: llama.cpp's architecture `qwen35moe`, as its
//! converter (`convert_hf_to_gguf.py`, class `Qwen3_5MoeTextModel`) and
//! `llama-quantize` write it.
//!
//! This file is the one place that knows how the Hugging Face checkpoint
//! and the GGUF file differ, in both directions:
//!
//! - names ([`TENSORS`]: `model.layers.N.linear_attn.in_proj_qkv.weight` ↔
//!   `blk.N.attn_qkv.weight`, …);
//! - values ([`Values`]): zero-centred norm weights are stored as 1 + w,
//!   `A_log` as `ssm_a` = −exp(A_log); the DeltaNet conv is stored as
//!   `[channels, kernel]` and the shared-expert gate as `[hidden]`;
//! - value-head order ([`VOrder`]): with fewer key than value heads the
//!   converter reorders every tensor indexed by DeltaNet value heads from
//!   the reference's grouped order to a tiled one. Reading keeps the tiled
//!   order and marks the config ([`Config::linear_value_heads_tiled`]), so
//!   quantized rows and columns never need moving; writing reorders;
//! - metadata ([`config_from_gguf`], [`gguf_metadata`]).
//!
//! [`Qwen35MoeGguf`] serves a GGUF file to the model under the Hugging Face
//! names (a [`TensorSource`]); [`write_gguf`] makes a GGUF file from a model
//! directory (`worldloom model quantize`).

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};

use super::config::{Config, LayerKind, RopeParameters};
use crate::weights::gguf::{
    GgufFile, is_float_type, quantized_rows_supported, split_part_name, value_as_f64, value_as_u64,
};
use crate::weights::{
    LoadError, QuantizedWeight, SafetensorsWeights, TensorRequest, TensorSource, Weights,
    quantized_resident_bytes,
};

/// llama.cpp's name of the architecture (`general.architecture`).
pub const GGUF_ARCHITECTURE: &str = "qwen35moe";

/// How a tensor's values differ between the checkpoint (w) and the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Stored as they are.
    Same,
    /// Stored as 1 + w (the zero-centred RMSNorm weights).
    PlusOne,
    /// Stored as −exp(w) (`A_log` → `ssm_a`).
    NegExp,
}

/// Which part of a tensor is indexed by DeltaNet value heads (reordered by
/// the converter when there are fewer key than value heads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VOrder {
    /// Not indexed by value heads.
    None,
    /// Rows after the 2 × key_dim q/k rows, value_head_dim rows per head
    /// (`in_proj_qkv`, the conv).
    QkvRows,
    /// All rows, value_head_dim per head (`in_proj_z`).
    Rows,
    /// All rows (or entries), one per head (`in_proj_a`/`b`, `A_log`,
    /// `dt_bias`).
    HeadRows,
    /// Columns, value_head_dim per head (`out_proj`).
    Cols,
}

/// One tensor's names and transforms.
#[derive(Debug, Clone, Copy)]
pub struct TensorMapping {
    /// Hugging Face name after `model.layers.N.` (or the whole name for
    /// global tensors, after `model.`; `lm_head.weight` as is). Stacked
    /// experts use `mlp.experts.{gate,up,down}_proj` and
    /// `mlp.experts.gate_up_proj`.
    pub hf: &'static str,
    /// GGUF name after `blk.N.` (or the whole name for global tensors).
    pub gguf: &'static str,
    /// Value transform.
    pub values: Values,
    /// Value-head reordering.
    pub v_order: VOrder,
    /// Kept in F32 whatever the file type (as llama.cpp's converter and
    /// quantizer do: norms, vectors, the router, the conv).
    pub keep_f32: bool,
    /// The layer kind it belongs to; `None` for every layer (and globals).
    pub mixer: Option<LayerKind>,
}

const fn t(
    hf: &'static str,
    gguf: &'static str,
    values: Values,
    v_order: VOrder,
    keep_f32: bool,
    mixer: Option<LayerKind>,
) -> TensorMapping {
    TensorMapping {
        hf,
        gguf,
        values,
        v_order,
        keep_f32,
        mixer,
    }
}

const ATT: Option<LayerKind> = Some(LayerKind::FullAttention);
const LIN: Option<LayerKind> = Some(LayerKind::LinearAttention);

/// The model's global tensors (outside the layers).
pub const GLOBAL_TENSORS: [TensorMapping; 3] = [
    t(
        "embed_tokens.weight",
        "token_embd.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "norm.weight",
        "output_norm.weight",
        Values::PlusOne,
        VOrder::None,
        true,
        None,
    ),
    t(
        "lm_head.weight",
        "output.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
];

/// The tensors of layer N (`model.layers.N.` ↔ `blk.N.`).
pub const TENSORS: [TensorMapping; 26] = [
    t(
        "input_layernorm.weight",
        "attn_norm.weight",
        Values::PlusOne,
        VOrder::None,
        true,
        None,
    ),
    t(
        "post_attention_layernorm.weight",
        "post_attention_norm.weight",
        Values::PlusOne,
        VOrder::None,
        true,
        None,
    ),
    t(
        "self_attn.q_proj.weight",
        "attn_q.weight",
        Values::Same,
        VOrder::None,
        false,
        ATT,
    ),
    t(
        "self_attn.k_proj.weight",
        "attn_k.weight",
        Values::Same,
        VOrder::None,
        false,
        ATT,
    ),
    t(
        "self_attn.v_proj.weight",
        "attn_v.weight",
        Values::Same,
        VOrder::None,
        false,
        ATT,
    ),
    t(
        "self_attn.o_proj.weight",
        "attn_output.weight",
        Values::Same,
        VOrder::None,
        false,
        ATT,
    ),
    t(
        "self_attn.q_norm.weight",
        "attn_q_norm.weight",
        Values::PlusOne,
        VOrder::None,
        true,
        ATT,
    ),
    t(
        "self_attn.k_norm.weight",
        "attn_k_norm.weight",
        Values::PlusOne,
        VOrder::None,
        true,
        ATT,
    ),
    t(
        "linear_attn.in_proj_qkv.weight",
        "attn_qkv.weight",
        Values::Same,
        VOrder::QkvRows,
        false,
        LIN,
    ),
    t(
        "linear_attn.in_proj_z.weight",
        "attn_gate.weight",
        Values::Same,
        VOrder::Rows,
        false,
        LIN,
    ),
    t(
        "linear_attn.in_proj_b.weight",
        "ssm_beta.weight",
        Values::Same,
        VOrder::HeadRows,
        false,
        LIN,
    ),
    t(
        "linear_attn.in_proj_a.weight",
        "ssm_alpha.weight",
        Values::Same,
        VOrder::HeadRows,
        false,
        LIN,
    ),
    t(
        "linear_attn.conv1d.weight",
        "ssm_conv1d.weight",
        Values::Same,
        VOrder::QkvRows,
        true,
        LIN,
    ),
    t(
        "linear_attn.A_log",
        "ssm_a",
        Values::NegExp,
        VOrder::HeadRows,
        true,
        LIN,
    ),
    t(
        "linear_attn.dt_bias",
        "ssm_dt.bias",
        Values::Same,
        VOrder::HeadRows,
        true,
        LIN,
    ),
    t(
        "linear_attn.norm.weight",
        "ssm_norm.weight",
        Values::Same,
        VOrder::None,
        true,
        LIN,
    ),
    t(
        "linear_attn.out_proj.weight",
        "ssm_out.weight",
        Values::Same,
        VOrder::Cols,
        false,
        LIN,
    ),
    t(
        "mlp.gate.weight",
        "ffn_gate_inp.weight",
        Values::Same,
        VOrder::None,
        true,
        None,
    ),
    t(
        "mlp.experts.gate_proj",
        "ffn_gate_exps.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.experts.up_proj",
        "ffn_up_exps.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.experts.down_proj",
        "ffn_down_exps.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.experts.gate_up_proj",
        "ffn_gate_up_exps.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.shared_expert.gate_proj.weight",
        "ffn_gate_shexp.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.shared_expert.up_proj.weight",
        "ffn_up_shexp.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.shared_expert.down_proj.weight",
        "ffn_down_shexp.weight",
        Values::Same,
        VOrder::None,
        false,
        None,
    ),
    t(
        "mlp.shared_expert_gate.weight",
        "ffn_gate_inp_shexp.weight",
        Values::Same,
        VOrder::None,
        true,
        None,
    ),
];

/// The GGUF name and mapping of a Hugging Face tensor name (flat `model.…`
/// or released `model.language_model.…`; `lm_head.weight`), if it has one.
pub fn gguf_name(hf_name: &str) -> Option<(String, &'static TensorMapping)> {
    if hf_name == "lm_head.weight" {
        return Some(("output.weight".to_string(), &GLOBAL_TENSORS[2]));
    }
    let rest = hf_name
        .strip_prefix("model.language_model.")
        .or_else(|| hf_name.strip_prefix("model."))?;
    if let Some(layer) = rest.strip_prefix("layers.") {
        let (index, suffix) = layer.split_once('.')?;
        let index: usize = index.parse().ok()?;
        let m = TENSORS.iter().find(|m| m.hf == suffix)?;
        return Some((format!("blk.{index}.{}", m.gguf), m));
    }
    let m = GLOBAL_TENSORS[..2].iter().find(|m| m.hf == rest)?;
    Some((m.gguf.to_string(), m))
}

/// The (flat, `model.…`) Hugging Face name and mapping of a GGUF tensor
/// name, if it has one.
pub fn hf_name(gguf: &str) -> Option<(String, &'static TensorMapping)> {
    if let Some(layer) = gguf.strip_prefix("blk.") {
        let (index, suffix) = layer.split_once('.')?;
        let index: usize = index.parse().ok()?;
        let m = TENSORS.iter().find(|m| m.gguf == suffix)?;
        return Some((format!("model.layers.{index}.{}", m.hf), m));
    }
    let m = GLOBAL_TENSORS.iter().find(|m| m.gguf == gguf)?;
    let name = if m.hf == "lm_head.weight" {
        m.hf.to_string()
    } else {
        format!("model.{}", m.hf)
    };
    Some((name, m))
}

/// Dims without the ones equal to 1 (the conv's `[C, 1, K]` is stored
/// `[C, K]`, the shared-expert gate's `[1, H]` as `[H]`).
fn squeezed(dims: &[usize]) -> Vec<usize> {
    dims.iter().copied().filter(|&d| d != 1).collect()
}

/// Checkpoint values → file values (`to_file`) or back, for a dense f32
/// tensor.
fn apply_values(x: &Tensor, values: Values, to_file: bool) -> candle_core::Result<Tensor> {
    match (values, to_file) {
        (Values::Same, _) => Ok(x.clone()),
        (Values::PlusOne, true) => x + 1.0,
        (Values::PlusOne, false) => x - 1.0,
        (Values::NegExp, true) => x.exp()?.neg(),
        (Values::NegExp, false) => x.neg()?.log(),
    }
}

/// Reorders the value-head part of `x` (in its file shape) from grouped to
/// tiled order (`to_tiled`) or back.
fn reorder_v_heads(
    x: &Tensor,
    v_order: VOrder,
    cfg: &Config,
    to_tiled: bool,
) -> candle_core::Result<Tensor> {
    let (n_k, n_v, d_v) = (
        cfg.linear_num_key_heads,
        cfg.linear_num_value_heads,
        cfg.linear_value_head_dim,
    );
    if n_k == n_v || v_order == VOrder::None {
        return Ok(x.clone());
    }
    let r = n_v / n_k;
    // [n_k, r, …] (grouped) ↔ [r, n_k, …] (tiled) along `dim`.
    let swap = |x: &Tensor, dim: usize, per_head: usize| -> candle_core::Result<Tensor> {
        let dims = x.dims().to_vec();
        let outer: usize = dims[..dim].iter().product();
        let inner: usize = dims[dim + 1..].iter().product::<usize>() * per_head;
        let (a, b) = if to_tiled { (n_k, r) } else { (r, n_k) };
        x.reshape((outer, a, b, inner))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape(dims)
    };
    match v_order {
        VOrder::None => Ok(x.clone()),
        VOrder::Rows => swap(x, 0, d_v),
        VOrder::HeadRows => swap(x, 0, 1),
        VOrder::Cols => swap(x, 1, d_v),
        VOrder::QkvRows => {
            let qk = 2 * cfg.linear_num_key_heads * cfg.linear_key_head_dim;
            let rows = x.dim(0)?;
            let head = x.narrow(0, 0, qk)?;
            let v = swap(&x.narrow(0, qk, rows - qk)?.contiguous()?, 0, d_v)?;
            Tensor::cat(&[&head, &v], 0)
        }
    }
}

/// A checkpoint tensor (f32, its Hugging Face shape) as the file stores it
/// (f32, file shape `file_shape`): values transformed, value heads in tiled
/// order.
///
/// # Errors
/// candle's shape errors.
pub fn to_file_values(
    x: &Tensor,
    m: &TensorMapping,
    cfg: &Config,
    file_shape: &[usize],
) -> candle_core::Result<Tensor> {
    let x = apply_values(&x.to_dtype(DType::F32)?, m.values, true)?.reshape(file_shape)?;
    reorder_v_heads(&x, m.v_order, cfg, true)
}

/// The inverse of [`to_file_values`]: file values (f32) back in the
/// checkpoint's shape `hf_shape`, with value heads back in grouped order
/// when `grouped` (else left tiled, as the model reads GGUF files).
///
/// # Errors
/// candle's shape errors.
pub fn from_file_values(
    x: &Tensor,
    m: &TensorMapping,
    cfg: &Config,
    hf_shape: &[usize],
    grouped: bool,
) -> candle_core::Result<Tensor> {
    let x = if grouped {
        reorder_v_heads(&x.to_dtype(DType::F32)?, m.v_order, cfg, false)?
    } else {
        x.to_dtype(DType::F32)?
    };
    apply_values(&x, m.values, false)?.reshape(hf_shape)
}

fn get_u(file: &GgufFile, key: &str) -> Result<usize, LoadError> {
    let value = file.require(key)?;
    value_as_u64(value)
        .map(|v| v as usize)
        .ok_or_else(|| LoadError::InvalidConfig {
            path: file.path().to_path_buf(),
            field: key.to_string(),
            message: format!("expected an integer, found {value:?}"),
        })
}

fn opt_u(file: &GgufFile, key: &str) -> Option<usize> {
    file.metadata()
        .get(key)
        .and_then(value_as_u64)
        .map(|v| v as usize)
}

fn opt_f(file: &GgufFile, key: &str) -> Option<f64> {
    file.metadata().get(key).and_then(value_as_f64)
}

fn key(name: &str) -> String {
    format!("{GGUF_ARCHITECTURE}.{name}")
}

/// The model config from a `qwen35moe` GGUF file's metadata (and the
/// vocabulary size from `token_embd.weight`'s shape).
///
/// Keys: `block_count` (minus `nextn_predict_layers`), `embedding_length`,
/// `attention.head_count`/`head_count_kv`/`key_length`,
/// `attention.layer_norm_rms_epsilon`, `ssm.group_count` (key heads),
/// `ssm.time_step_rank` (value heads), `ssm.state_size` (key and value head
/// width), `ssm.inner_size`, `ssm.conv_kernel`, `expert_count`,
/// `expert_used_count`, `expert_feed_forward_length`,
/// `expert_shared_feed_forward_length`, `attention.recurrent_layers` or
/// `full_attention_interval`, `rope.freq_base`, `rope.dimension_count`
/// (rotated width, over `key_length` the partial rotary factor),
/// `rope.dimension_sections`, `context_length`. Value heads are marked
/// tiled.
///
/// # Errors
/// [`LoadError::InvalidConfig`] naming the file and key: another
/// architecture, a missing or mistyped key, or an inconsistent value;
/// [`LoadError::MissingTensor`] without `token_embd.weight`.
pub fn config_from_gguf(file: &GgufFile) -> Result<Config, LoadError> {
    let path = file.path().to_path_buf();
    let invalid = |field: &str, message: String| LoadError::InvalidConfig {
        path: path.clone(),
        field: field.to_string(),
        message,
    };
    match file.architecture() {
        Some(GGUF_ARCHITECTURE) => {}
        Some(other) => {
            return Err(invalid(
                "general.architecture",
                format!("`{other}` is not supported (expected `{GGUF_ARCHITECTURE}`, Qwen3.5-MoE)"),
            ));
        }
        None => {
            return Err(invalid(
                "general.architecture",
                "missing from the GGUF metadata".into(),
            ));
        }
    }
    let embd = file
        .info("token_embd.weight")
        .ok_or_else(|| LoadError::MissingTensor {
            dir: path.clone(),
            name: "token_embd.weight".into(),
        })?;
    let vocab_size = embd.shape.first().copied().unwrap_or(0);
    let blocks = get_u(file, &key("block_count"))?;
    let nextn = opt_u(file, &key("nextn_predict_layers")).unwrap_or(0);
    let num_hidden_layers = blocks.saturating_sub(nextn);
    let head_dim = get_u(file, &key("attention.key_length"))?;
    if let Some(v) = opt_u(file, &key("attention.value_length"))
        && v != head_dim
    {
        return Err(invalid(
            &key("attention.value_length"),
            format!("{v} differs from attention.key_length {head_dim}"),
        ));
    }
    let n_k = get_u(file, &key("ssm.group_count"))?;
    let n_v = get_u(file, &key("ssm.time_step_rank"))?;
    let d = get_u(file, &key("ssm.state_size"))?;
    if let Some(inner) = opt_u(file, &key("ssm.inner_size"))
        && inner != n_v * d
    {
        return Err(invalid(
            &key("ssm.inner_size"),
            format!(
                "{inner} is not ssm.time_step_rank × ssm.state_size = {}",
                n_v * d
            ),
        ));
    }
    let layer_types = match file.metadata().get(&key("attention.recurrent_layers")) {
        Some(Value::Array(flags)) => {
            let mut types = Vec::with_capacity(num_hidden_layers);
            for flag in flags.iter().take(num_hidden_layers) {
                let recurrent = match flag {
                    Value::Bool(b) => *b,
                    other => value_as_u64(other).is_some_and(|v| v != 0),
                };
                types.push(
                    if recurrent {
                        "linear_attention"
                    } else {
                        "full_attention"
                    }
                    .to_string(),
                );
            }
            Some(types)
        }
        _ => None,
    };
    let rope_dims = opt_u(file, &key("rope.dimension_count")).unwrap_or(head_dim / 4);
    let sections = match file.metadata().get(&key("rope.dimension_sections")) {
        Some(Value::Array(v)) => Some(
            v.iter()
                .filter_map(value_as_u64)
                .map(|x| x as usize)
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    let shared = match opt_u(file, &key("expert_shared_feed_forward_length")) {
        Some(v) => v,
        None => file
            .info("blk.0.ffn_gate_shexp.weight")
            .and_then(|i| i.shape.first().copied())
            .ok_or_else(|| {
                invalid(
                    &key("expert_shared_feed_forward_length"),
                    "missing, and no blk.0.ffn_gate_shexp.weight to take it from".into(),
                )
            })?,
    };
    let eos = opt_u(file, "tokenizer.ggml.eos_token_id").map(|v| serde_json::json!(v));
    let config = Config {
        vocab_size,
        hidden_size: get_u(file, &key("embedding_length"))?,
        num_hidden_layers,
        num_attention_heads: get_u(file, &key("attention.head_count"))?,
        num_key_value_heads: get_u(file, &key("attention.head_count_kv"))?,
        head_dim,
        linear_num_key_heads: n_k,
        linear_num_value_heads: n_v,
        linear_key_head_dim: d,
        linear_value_head_dim: d,
        linear_conv_kernel_dim: get_u(file, &key("ssm.conv_kernel"))?,
        num_experts: get_u(file, &key("expert_count"))?,
        num_experts_per_tok: get_u(file, &key("expert_used_count"))?,
        moe_intermediate_size: get_u(file, &key("expert_feed_forward_length"))?,
        shared_expert_intermediate_size: shared,
        rms_norm_eps: opt_f(file, &key("attention.layer_norm_rms_epsilon")).ok_or_else(|| {
            invalid(
                &key("attention.layer_norm_rms_epsilon"),
                "missing from the GGUF metadata".into(),
            )
        })?,
        hidden_act: "silu".into(),
        attention_bias: false,
        tie_word_embeddings: file.info("output.weight").is_none(),
        layer_types,
        full_attention_interval: opt_u(file, &key("full_attention_interval")).unwrap_or(4),
        rope_parameters: Some(RopeParameters {
            rope_type: Some("default".into()),
            rope_theta: Some(opt_f(file, &key("rope.freq_base")).unwrap_or(10_000.0)),
            partial_rotary_factor: Some(rope_dims as f64 / head_dim.max(1) as f64),
            mrope_section: sections,
            mrope_interleaved: Some(true),
        }),
        rope_theta: None,
        partial_rotary_factor: None,
        max_position_embeddings: opt_u(file, &key("context_length")).unwrap_or(262_144),
        eos_token_id: eos,
        linear_value_heads_tiled: true,
    };
    config
        .validate()
        .map_err(|(field, message)| invalid(&field, message))?;
    Ok(config)
}

/// llama.cpp's `general.file_type` (`LLAMA_FTYPE_*`) for a whole-file type.
fn file_type(dtype: GgmlDType) -> u32 {
    match dtype {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q8_0 => 7,
        GgmlDType::Q4K => 14, // MOSTLY_Q4_K_S: every matrix Q4_K
        GgmlDType::Q5K => 16, // MOSTLY_Q5_K_S
        GgmlDType::Q6K => 18,
        GgmlDType::BF16 => 32,
        _ => 0,
    }
}

/// The metadata llama.cpp's converter writes for `qwen35moe`, from `cfg`
/// (`name` for `general.name`, `dtype` for `general.file_type`). No
/// tokenizer vocabulary: `tokenizer.ggml.model` is `none` and
/// `qwen35moe.vocab_size` gives the number of ids.
///
/// # Errors
/// [`LoadError::InvalidConfig`] for a config llama.cpp's `qwen35moe`
/// cannot express (different DeltaNet key and value head widths).
pub fn gguf_metadata(
    cfg: &Config,
    name: &str,
    dtype: GgmlDType,
) -> Result<Vec<(String, Value)>, LoadError> {
    if cfg.linear_key_head_dim != cfg.linear_value_head_dim {
        return Err(LoadError::InvalidConfig {
            path: "config.json".into(),
            field: "linear_value_head_dim".into(),
            message: format!(
                "{} differs from linear_key_head_dim {}; GGUF qwen35moe has one DeltaNet head width",
                cfg.linear_value_head_dim, cfg.linear_key_head_dim
            ),
        });
    }
    let u = |v: usize| Value::U32(v as u32);
    let sections: Vec<usize> = cfg
        .rope_parameters
        .as_ref()
        .and_then(|r| r.mrope_section.clone())
        .unwrap_or_else(|| default_rope_sections(cfg.rotary_dim()));
    let mut sections: Vec<Value> = sections.into_iter().map(|s| Value::I32(s as i32)).collect();
    sections.resize(4, Value::I32(0));
    let mut out: Vec<(String, Value)> = vec![
        (
            "general.architecture".into(),
            Value::String(GGUF_ARCHITECTURE.into()),
        ),
        ("general.type".into(), Value::String("model".into())),
        ("general.name".into(), Value::String(name.into())),
        ("general.file_type".into(), Value::U32(file_type(dtype))),
        ("general.quantization_version".into(), Value::U32(2)),
        (key("block_count"), u(cfg.num_hidden_layers)),
        (key("context_length"), u(cfg.max_position_embeddings)),
        (key("embedding_length"), u(cfg.hidden_size)),
        (key("vocab_size"), u(cfg.vocab_size)),
        (key("attention.head_count"), u(cfg.num_attention_heads)),
        (key("attention.head_count_kv"), u(cfg.num_key_value_heads)),
        (key("rope.dimension_sections"), Value::Array(sections)),
        (key("rope.freq_base"), Value::F32(cfg.rope_theta() as f32)),
        (
            key("attention.layer_norm_rms_epsilon"),
            Value::F32(cfg.rms_norm_eps as f32),
        ),
        (key("expert_count"), u(cfg.num_experts)),
        (key("expert_used_count"), u(cfg.num_experts_per_tok)),
        (key("attention.key_length"), u(cfg.head_dim)),
        (key("attention.value_length"), u(cfg.head_dim)),
        (
            key("expert_feed_forward_length"),
            u(cfg.moe_intermediate_size),
        ),
        (
            key("expert_shared_feed_forward_length"),
            u(cfg.shared_expert_intermediate_size),
        ),
        (key("ssm.conv_kernel"), u(cfg.linear_conv_kernel_dim)),
        (key("ssm.state_size"), u(cfg.linear_key_head_dim)),
        (key("ssm.group_count"), u(cfg.linear_num_key_heads)),
        (key("ssm.time_step_rank"), u(cfg.linear_num_value_heads)),
        (
            key("ssm.inner_size"),
            u(cfg.linear_value_head_dim * cfg.linear_num_value_heads),
        ),
    ];
    if cfg.layer_types.is_some() {
        let flags = (0..cfg.num_hidden_layers)
            .map(|i| Value::Bool(cfg.layer_kind(i) == LayerKind::LinearAttention))
            .collect();
        out.push((key("attention.recurrent_layers"), Value::Array(flags)));
    }
    out.push((
        key("full_attention_interval"),
        u(cfg.full_attention_interval),
    ));
    out.push((key("rope.dimension_count"), u(cfg.rotary_dim())));
    out.push(("tokenizer.ggml.model".into(), Value::String("none".into())));
    Ok(out)
}

/// A `qwen35moe` GGUF file served under the Hugging Face names the model
/// asks for (flat `model.…` names, stacked experts), with the values
/// transformed back ([`Values`]) and the value heads left tiled.
pub struct Qwen35MoeGguf {
    file: GgufFile,
    config: Config,
}

impl Qwen35MoeGguf {
    /// Opens a GGUF file (the first part of a split one) and reads its
    /// config from the metadata.
    ///
    /// # Errors
    /// As [`GgufFile::open`] and [`config_from_gguf`].
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let file = GgufFile::open(path)?;
        let config = config_from_gguf(&file)?;
        Ok(Self { file, config })
    }

    /// The config from the metadata.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The file.
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Bytes the weights keep resident once loaded on the CPU for compute
    /// dtype `dtype`: float tensors converted (vectors stay f32, as the
    /// model keeps its norms); quantized ones in the form the CPU kernels
    /// use ([`quantized_resident_bytes`]: the stored blocks, or candle's x86
    /// Q4_K tiles at 4/3 of them), except the token embedding when the
    /// model has its own output matrix: only its looked-up rows are read,
    /// from the file's mapping, so it counts at its stored size.
    pub fn weight_bytes(&self, dtype: DType) -> u64 {
        self.weight_bytes_on(dtype, &Device::Cpu)
    }

    /// [`Qwen35MoeGguf::weight_bytes`] on `device`: on a GPU quantized
    /// tensors take their stored size.
    pub fn weight_bytes_on(&self, dtype: DType, device: &Device) -> u64 {
        let tied = self.file.info("output.weight").is_none();
        let cpu = device.is_cpu();
        self.file
            .tensors()
            .iter()
            .filter(|(name, _)| hf_name(name).is_some())
            .map(|(name, info)| {
                if cpu && !is_float_type(info.dtype) && (tied || name != "token_embd.weight") {
                    quantized_resident_bytes(info.dtype, &info.shape, info.size_bytes)
                } else if is_float_type(info.dtype) {
                    let elem = if info.shape.len() <= 1 {
                        4
                    } else {
                        dtype.size_in_bytes()
                    };
                    (info.elem_count() * elem) as u64
                } else {
                    info.size_bytes
                }
            })
            .sum()
    }

    /// The GGUF tensor behind `request`, checked against its shape.
    fn lookup(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<
        (
            String,
            &'static TensorMapping,
            &crate::weights::gguf::GgufTensorInfo,
        ),
        LoadError,
    > {
        let (gguf, m) = gguf_name(request.name).ok_or_else(|| LoadError::MissingTensor {
            dir: self.file.path().to_path_buf(),
            name: format!("{} (no GGUF name for it)", request.name),
        })?;
        let info = self
            .file
            .info(&gguf)
            .ok_or_else(|| LoadError::MissingTensor {
                dir: self.file.path().to_path_buf(),
                name: format!("{gguf} (for {})", request.name),
            })?;
        if squeezed(&info.shape) != squeezed(request.shape) {
            return Err(LoadError::ShapeMismatch {
                dir: self.file.path().to_path_buf(),
                name: format!("{gguf} (for {})", request.name),
                expected: request.shape.to_vec(),
                found: info.shape.clone(),
            });
        }
        Ok((gguf, m, info))
    }
}

impl TensorSource for Qwen35MoeGguf {
    fn contains(&self, name: &str) -> bool {
        if name.starts_with("model.language_model.") {
            return false;
        }
        gguf_name(name).is_some_and(|(gguf, _)| self.file.info(&gguf).is_some())
    }

    fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError> {
        let (gguf, m, _) = self.lookup(request)?;
        let wrap = LoadError::tensor(request.name);
        if m.values == Values::Same {
            let x = self.file.read_dense(&gguf, request.dtype, &Device::Cpu)?;
            return x
                .reshape(request.shape)
                .and_then(|x| x.to_device(request.device))
                .map_err(wrap);
        }
        let x = self.file.read_dense(&gguf, DType::F32, &Device::Cpu)?;
        from_file_values(&x, m, &self.config, request.shape, false)
            .and_then(|x| x.to_dtype(request.dtype))
            .and_then(|x| x.to_device(request.device))
            .map_err(wrap)
    }

    fn stored_dtype(&self) -> Option<DType> {
        let embd = self.file.info("token_embd.weight")?;
        Some(match embd.dtype {
            GgmlDType::BF16 => DType::BF16,
            GgmlDType::F16 => DType::F16,
            _ => DType::F32,
        })
    }

    fn quantized(&self, request: &TensorRequest<'_>) -> Result<Option<QuantizedWeight>, LoadError> {
        let (gguf, m, info) = self.lookup(request)?;
        let row = info.shape.last().copied().unwrap_or(0);
        if is_float_type(info.dtype)
            || !quantized_rows_supported(info.dtype, row)
            || m.values != Values::Same
            || info.shape != request.shape
        {
            return Ok(None);
        }
        self.file.read_qtensor(&gguf, request.device).map(Some)
    }

    fn quantized_experts(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<Option<Vec<QuantizedWeight>>, LoadError> {
        let (gguf, _, info) = self.lookup(request)?;
        let row = info.shape.last().copied().unwrap_or(0);
        if is_float_type(info.dtype)
            || !quantized_rows_supported(info.dtype, row)
            || info.shape != request.shape
        {
            return Ok(None);
        }
        self.file
            .read_qtensor_slices(&gguf, request.device)
            .map(Some)
    }
}

/// The rope sections written for a config without `mrope_section`: the
/// rotary pairs (`rotary_dims / 2`) split over the time, height and width
/// axes as evenly as possible, the first axes taking the remainder —
/// `[11, 11, 10]` for the released model's 64 rotary dims, `[1, 1, 0]` for
/// 4, as `transformers` splits the rotary pairs. llama.cpp's rope asserts
/// that the sections sum to at most the rotated width (`sect_dims <= ne0`),
/// so its converter's fixed `[11, 11, 10]` (sum 32) breaks every model with
/// fewer than 32 rotary dims; a split of the pairs always fits and gives
/// every pair a section of the three text axes. For text all three axes
/// carry the same position, so any such split computes the same rotation.
pub fn default_rope_sections(rotary_dims: usize) -> Vec<usize> {
    let pairs = rotary_dims / 2;
    let (base, extra) = (pairs / 3, pairs % 3);
    (0..3)
        .map(|axis| base + usize::from(axis < extra))
        .collect()
}

/// The block type `target` falls back to for a tensor whose rows
/// (`row_len` values) are not a whole number of its blocks, as
/// llama-quantize does: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0 — except that
/// Q5_0/Q5_1 become Q8_0 where candle's kernels cannot take the rows (an
/// odd number of blocks, [`quantized_rows_supported`]) — and F16 when even
/// a 32-value block does not divide the row.
pub fn fallback_type(target: GgmlDType, row_len: usize) -> GgmlDType {
    if row_len.is_multiple_of(target.block_size()) {
        return target;
    }
    let next = match target {
        GgmlDType::Q4K => GgmlDType::Q5_0,
        GgmlDType::Q5K => GgmlDType::Q5_1,
        GgmlDType::Q6K => GgmlDType::Q8_0,
        _ => GgmlDType::F16,
    };
    let next = if quantized_rows_supported(next, row_len) {
        next
    } else {
        GgmlDType::Q8_0
    };
    if row_len.is_multiple_of(next.block_size()) {
        next
    } else {
        GgmlDType::F16
    }
}

/// What [`write_gguf`] wrote.
#[derive(Debug, Clone)]
pub struct WriteSummary {
    /// The files written (one, or the parts of a split model).
    pub files: Vec<PathBuf>,
    /// Each tensor's GGUF name and stored type, in file order.
    pub tensors: Vec<(String, GgmlDType)>,
}

/// The checkpoint's tensors in GGUF order, as (mapping, layer, file shape,
/// f32 checkpoint tensor). Reads through `vb` (f32 on the CPU).
type Load<'a> = dyn Fn() -> Result<Tensor, LoadError> + 'a;

/// Calls `each(mapping, GGUF name, checkpoint shape, load)` for the
/// checkpoint's tensors in GGUF order; `load` reads the tensor (f32 on the
/// CPU, through `vb`) only when called.
fn checkpoint_tensors(
    cfg: &Config,
    vb: &Weights<'_>,
    mut each: impl FnMut(&TensorMapping, String, Vec<usize>, &Load<'_>) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    let text = if vb.contains("model.language_model.embed_tokens.weight") {
        vb.pp("model.language_model")
    } else {
        vb.pp("model")
    };
    let (h, v) = (cfg.hidden_size, cfg.vocab_size);
    each(
        &GLOBAL_TENSORS[0],
        GLOBAL_TENSORS[0].gguf.into(),
        vec![v, h],
        &|| text.get("embed_tokens.weight", &[v, h]),
    )?;
    let (nh, kvh, hd) = (
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.head_dim,
    );
    let (n_v, d_v) = (cfg.linear_num_value_heads, cfg.linear_value_head_dim);
    let conv = cfg.linear_conv_dim();
    let (e, i, is) = (
        cfg.num_experts,
        cfg.moe_intermediate_size,
        cfg.shared_expert_intermediate_size,
    );
    for layer in 0..cfg.num_hidden_layers {
        let vbl = text.pp("layers").pp(layer);
        let kind = cfg.layer_kind(layer);
        for m in TENSORS.iter() {
            if m.mixer.is_some_and(|k| k != kind) || m.hf == "mlp.experts.gate_up_proj" {
                continue;
            }
            let shape: Vec<usize> = match m.hf {
                "input_layernorm.weight" | "post_attention_layernorm.weight" => vec![h],
                "self_attn.q_proj.weight" => vec![nh * hd * 2, h],
                "self_attn.k_proj.weight" | "self_attn.v_proj.weight" => vec![kvh * hd, h],
                "self_attn.o_proj.weight" => vec![h, nh * hd],
                "self_attn.q_norm.weight" | "self_attn.k_norm.weight" => vec![hd],
                "linear_attn.in_proj_qkv.weight" => vec![conv, h],
                "linear_attn.in_proj_z.weight" => vec![n_v * d_v, h],
                "linear_attn.in_proj_b.weight" | "linear_attn.in_proj_a.weight" => vec![n_v, h],
                "linear_attn.conv1d.weight" => vec![conv, 1, cfg.linear_conv_kernel_dim],
                "linear_attn.A_log" | "linear_attn.dt_bias" => vec![n_v],
                "linear_attn.norm.weight" => vec![d_v],
                "linear_attn.out_proj.weight" => vec![h, n_v * d_v],
                "mlp.gate.weight" => vec![e, h],
                "mlp.shared_expert.gate_proj.weight" | "mlp.shared_expert.up_proj.weight" => {
                    vec![is, h]
                }
                "mlp.shared_expert.down_proj.weight" => vec![h, is],
                "mlp.shared_expert_gate.weight" => vec![1, h],
                "mlp.experts.gate_proj" | "mlp.experts.up_proj" => vec![e, i, h],
                "mlp.experts.down_proj" => vec![e, h, i],
                _ => Vec::new(),
            };
            let name = format!("blk.{layer}.{}", m.gguf);
            let experts = vbl.pp("mlp").pp("experts");
            let load = || -> Result<Tensor, LoadError> {
                Ok(match m.hf {
                    "mlp.experts.gate_proj" | "mlp.experts.up_proj" => {
                        let gate = m.hf == "mlp.experts.gate_proj";
                        if experts.contains("gate_up_proj") {
                            let gu = experts.get("gate_up_proj", &[e, 2 * i, h])?;
                            gu.narrow(1, if gate { 0 } else { i }, i)
                                .and_then(|x| x.contiguous())
                                .map_err(experts.error("gate_up_proj"))?
                        } else {
                            let part = if gate {
                                "gate_proj.weight"
                            } else {
                                "up_proj.weight"
                            };
                            experts.get_stacked(e, part, &[i, h])?
                        }
                    }
                    "mlp.experts.down_proj" => {
                        if experts.contains("down_proj") {
                            experts.get("down_proj", &[e, h, i])?
                        } else {
                            experts.get_stacked(e, "down_proj.weight", &[h, i])?
                        }
                    }
                    hf => vbl.get(hf, &shape)?,
                })
            };
            each(m, name, shape.clone(), &load)?;
        }
    }
    let norm = &GLOBAL_TENSORS[1];
    each(norm, norm.gguf.into(), vec![h], &|| {
        text.get("norm.weight", &[h])
    })?;
    if vb.contains("lm_head.weight") || !cfg.tie_word_embeddings {
        let head = &GLOBAL_TENSORS[2];
        each(head, head.gguf.into(), vec![v, h], &|| {
            vb.get("lm_head.weight", &[v, h])
        })?;
    }
    Ok(())
}

/// Options of [`write_gguf`].
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Block type of the matrices (F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K);
    /// rows it does not divide fall back ([`fallback_type`]); norms,
    /// vectors, the router and the conv stay F32.
    pub dtype: GgmlDType,
    /// Split into parts of at most this many tensors
    /// (`OUT-00001-of-0000N.gguf`, …); `None` writes one file.
    pub max_tensors_per_file: Option<usize>,
}

/// Writes a `qwen35moe` GGUF file from the Hugging Face model directory
/// `dir`: the converter's names, transforms and metadata, matrices
/// quantized to `options.dtype` with candle. When `dir` has a
/// `tokenizer.json`, its tokenizer and chat template go into the metadata
/// ([`crate::tokenizer::gguf::gguf_tokenizer_metadata`]), so the file alone is a
/// complete model; otherwise `tokenizer.ggml.model` is `none`. The file is written as a
/// stream (GGUF version 3): the tensor table first, from the config, then
/// each tensor read in f32, transformed, quantized and written in turn, so
/// the peak memory is about one f32 tensor and its quantized copy.
///
/// # Errors
/// [`LoadError`] from reading the directory (naming the file or tensor),
/// [`LoadError::BadJson`] naming `tokenizer.json` when its tokenizer cannot
/// be written as GGUF metadata, [`LoadError::Tensor`] from quantizing,
/// [`LoadError::Io`] writing `out`.
pub fn write_gguf(
    dir: &Path,
    out: &Path,
    options: WriteOptions,
) -> Result<WriteSummary, LoadError> {
    let config_path = dir.join("config.json");
    let text = crate::weights::read_text(&config_path)?;
    let cfg = Config::from_json(&text).map_err(|e| LoadError::BadJson {
        path: config_path.clone(),
        message: e.to_string(),
    })?;
    cfg.validate()
        .map_err(|(field, message)| LoadError::InvalidConfig {
            path: config_path.clone(),
            field,
            message,
        })?;
    let source = SafetensorsWeights::open(dir)?;
    let vb = Weights::new(&source, DType::F32, &Device::Cpu);
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "model".into());
    let mut metadata = gguf_metadata(&cfg, &name, options.dtype)?;
    if dir.join("tokenizer.json").is_file() {
        // The directory's tokenizer and chat template, as the converter
        // writes them, in place of `tokenizer.ggml.model = none`: llama.cpp
        // and this engine then need nothing beside the file.
        let tokenizer = crate::tokenizer::gguf::gguf_tokenizer_metadata(dir, cfg.vocab_size)
            .map_err(|e| LoadError::BadJson {
                path: dir.join("tokenizer.json"),
                message: e.to_string(),
            })?;
        metadata.retain(|(k, _)| k != "tokenizer.ggml.model");
        metadata.extend(tokenizer);
    }
    // Pass 1: every tensor's name, file shape and type, from the config
    // alone (the header comes first in the file).
    let mut plan: Vec<(String, Vec<usize>, GgmlDType)> = Vec::new();
    checkpoint_tensors(&cfg, &vb, |m, gguf, hf_shape, _| {
        let file_shape: Vec<usize> = match m.hf {
            "linear_attn.conv1d.weight" | "mlp.shared_expert_gate.weight" => squeezed(&hf_shape),
            _ => hf_shape,
        };
        let row_len = file_shape.last().copied().unwrap_or(1);
        let dtype = if m.keep_f32 || file_shape.len() < 2 {
            GgmlDType::F32
        } else {
            fallback_type(options.dtype, row_len)
        };
        plan.push((gguf, file_shape, dtype));
        Ok(())
    })?;
    let chunk = options.max_tensors_per_file.unwrap_or(plan.len()).max(1);
    let count = plan.len().div_ceil(chunk).max(1);
    let files: Vec<PathBuf> = if count == 1 {
        vec![out.to_path_buf()]
    } else {
        let stem = out
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| n.strip_suffix(".gguf").unwrap_or(n).to_string())
            .unwrap_or_else(|| "model".into());
        let dir = out.parent().unwrap_or(Path::new(""));
        (0..count)
            .map(|k| dir.join(split_part_name(&stem, k + 1, count)))
            .collect()
    };
    // Pass 2: headers, then each tensor read, transformed, quantized and
    // written in turn.
    let mut writer: Option<(usize, GgufWriter)> = None;
    let mut index = 0;
    checkpoint_tensors(&cfg, &vb, |m, gguf, _, load| {
        let part = index / chunk;
        if writer.as_ref().is_none_or(|(p, _)| *p != part) {
            if let Some((_, w)) = writer.take() {
                w.finish()?;
            }
            let mut meta: Vec<(String, Value)> = if part == 0 {
                metadata.clone()
            } else {
                metadata
                    .iter()
                    .filter(|(k, _)| k == "general.architecture")
                    .cloned()
                    .collect()
            };
            if count > 1 {
                meta.push(("split.no".into(), Value::U16(part as u16)));
                meta.push(("split.count".into(), Value::U16(count as u16)));
                meta.push(("split.tensors.count".into(), Value::I32(plan.len() as i32)));
            }
            let end = ((part + 1) * chunk).min(plan.len());
            writer = Some((
                part,
                GgufWriter::create(&files[part], &meta, &plan[part * chunk..end])?,
            ));
        }
        let (_, file_shape, dtype) = &plan[index];
        let wrap = LoadError::tensor(&gguf);
        let y = to_file_values(&load()?, m, &cfg, file_shape).map_err(&wrap)?;
        let q = QTensor::quantize(&y, *dtype).map_err(wrap)?;
        if let Some((_, w)) = writer.as_mut() {
            w.tensor(&q)?;
        }
        index += 1;
        Ok(())
    })?;
    if let Some((_, w)) = writer.take() {
        w.finish()?;
    }
    let summary_tensors = plan.into_iter().map(|(n, _, t)| (n, t)).collect();
    Ok(WriteSummary {
        files,
        tensors: summary_tensors,
    })
}

/// Alignment of the tensor data (GGUF's default, `general.alignment`).
const ALIGNMENT: u64 = 32;

/// ggml's id of a block type.
fn ggml_type_id(dtype: GgmlDType) -> u32 {
    match dtype {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q5_0 => 6,
        GgmlDType::Q5_1 => 7,
        GgmlDType::Q8_0 => 8,
        GgmlDType::Q8_1 => 9,
        GgmlDType::Q2K => 10,
        GgmlDType::Q3K => 11,
        GgmlDType::Q4K => 12,
        GgmlDType::Q5K => 13,
        GgmlDType::Q6K => 14,
        GgmlDType::Q8K => 15,
        GgmlDType::BF16 => 30,
    }
}

/// A GGUF (version 3) file written as a stream: the header and tensor
/// table first, from names, shapes and types known up front, then each
/// tensor's data as it is produced, so only one tensor is in memory.
struct GgufWriter {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    /// Expected byte size of each tensor still to come, in order.
    sizes: std::collections::VecDeque<u64>,
}

impl GgufWriter {
    fn create(
        path: &Path,
        metadata: &[(String, Value)],
        tensors: &[(String, Vec<usize>, GgmlDType)],
    ) -> Result<Self, LoadError> {
        let io = |source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut head: Vec<u8> = Vec::new();
        head.extend(0x4655_4747u32.to_le_bytes());
        head.extend(3u32.to_le_bytes());
        head.extend((tensors.len() as u64).to_le_bytes());
        head.extend((metadata.len() as u64).to_le_bytes());
        for (key, value) in metadata {
            put_string(&mut head, key);
            head.extend(value_type_id(value).to_le_bytes());
            put_value(&mut head, value);
        }
        let mut offset = 0u64;
        let mut sizes = std::collections::VecDeque::with_capacity(tensors.len());
        for (name, shape, dtype) in tensors {
            put_string(&mut head, name);
            head.extend((shape.len() as u32).to_le_bytes());
            for &d in shape.iter().rev() {
                head.extend((d as u64).to_le_bytes());
            }
            head.extend(ggml_type_id(*dtype).to_le_bytes());
            head.extend(offset.to_le_bytes());
            let size = crate::weights::gguf::dtype_bytes(*dtype, shape.iter().product());
            sizes.push_back(size);
            offset += size.div_ceil(ALIGNMENT) * ALIGNMENT;
        }
        let padded = (head.len() as u64).div_ceil(ALIGNMENT) * ALIGNMENT;
        head.resize(padded as usize, 0);
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        std::io::Write::write_all(&mut file, &head).map_err(io)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            sizes,
        })
    }

    /// Writes the next tensor's data (padded to the alignment).
    fn tensor(&mut self, q: &QTensor) -> Result<(), LoadError> {
        let data = q.data().map_err(LoadError::tensor("gguf data"))?;
        let expected = self.sizes.pop_front();
        if expected != Some(data.len() as u64) {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!(
                    "tensor data of {} bytes where the header announced {expected:?}",
                    data.len()
                ),
            });
        }
        let pad = (data.len() as u64).div_ceil(ALIGNMENT) * ALIGNMENT - data.len() as u64;
        let io = |source| LoadError::Io {
            path: self.path.clone(),
            source,
        };
        std::io::Write::write_all(&mut self.file, &data).map_err(io)?;
        std::io::Write::write_all(&mut self.file, &vec![0u8; pad as usize]).map_err(io)?;
        Ok(())
    }

    /// Flushes the file; every announced tensor must have been written.
    fn finish(mut self) -> Result<(), LoadError> {
        if !self.sizes.is_empty() {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!("{} announced tensors were not written", self.sizes.len()),
            });
        }
        std::io::Write::flush(&mut self.file).map_err(|source| LoadError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// GGUF's id of a metadata value type.
fn value_type_id(value: &Value) -> u32 {
    match value {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.extend(v.to_le_bytes()),
        Value::U16(v) => out.extend(v.to_le_bytes()),
        Value::I16(v) => out.extend(v.to_le_bytes()),
        Value::U32(v) => out.extend(v.to_le_bytes()),
        Value::I32(v) => out.extend(v.to_le_bytes()),
        Value::U64(v) => out.extend(v.to_le_bytes()),
        Value::I64(v) => out.extend(v.to_le_bytes()),
        Value::F32(v) => out.extend(v.to_le_bytes()),
        Value::F64(v) => out.extend(v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(v) => put_string(out, v),
        Value::Array(values) => {
            // An empty array is written as one of U8.
            let element = values.first().map_or(0, value_type_id);
            out.extend(element.to_le_bytes());
            out.extend((values.len() as u64).to_le_bytes());
            for v in values {
                put_value(out, v);
            }
        }
    }
}

/// Parses a `--type` name: `f32`, `f16`, `bf16`, `q8_0`, `q4_k`, `q5_k`,
/// `q6_k` (case-insensitive; `q4_k_m`-style suffixes are not accepted:
/// every matrix gets the one type).
///
/// # Errors
/// The accepted names, when `spec` is none of them.
pub fn parse_file_type(spec: &str) -> Result<GgmlDType, String> {
    match spec.to_ascii_lowercase().as_str() {
        "f32" => Ok(GgmlDType::F32),
        "f16" => Ok(GgmlDType::F16),
        "bf16" => Ok(GgmlDType::BF16),
        "q8_0" => Ok(GgmlDType::Q8_0),
        "q4_k" => Ok(GgmlDType::Q4K),
        "q5_k" => Ok(GgmlDType::Q5K),
        "q6_k" => Ok(GgmlDType::Q6K),
        _ => Err(format!(
            "type `{spec}`: expected f32, f16, bf16, q8_0, q4_k, q5_k or q6_k"
        )),
    }
}

/// Bytes of the file's tensors per stored type (count, bytes), by llama.cpp
/// type name.
pub fn type_table(file: &GgufFile) -> Vec<(&'static str, usize, u64)> {
    file.type_summary()
        .into_iter()
        .map(|(name, (count, bytes))| (name, count, bytes))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::gguf::{dtype_bytes, dtype_name};

    /// Every mapped name converts both ways; names outside the text model
    /// have none.
    #[test]
    fn names_round_trip() {
        for m in TENSORS.iter() {
            let hf = format!("model.layers.7.{}", m.hf);
            let (gguf, _) = gguf_name(&hf).expect("mapped");
            assert_eq!(gguf, format!("blk.7.{}", m.gguf));
            assert_eq!(hf_name(&gguf).map(|(n, _)| n), Some(hf.clone()));
            let released = format!("model.language_model.layers.7.{}", m.hf);
            assert_eq!(gguf_name(&released).map(|(n, _)| n), Some(gguf));
        }
        assert_eq!(
            gguf_name("lm_head.weight").map(|(n, _)| n).as_deref(),
            Some("output.weight")
        );
        assert_eq!(
            gguf_name("model.norm.weight").map(|(n, _)| n).as_deref(),
            Some("output_norm.weight")
        );
        assert!(gguf_name("model.layers.0.self_attn.qkv_proj.weight").is_none());
        assert!(gguf_name("model.visual.blocks.0.attn.qkv.weight").is_none());
        assert_eq!(dtype_name(GgmlDType::Q4K), "Q4_K");
        assert_eq!(dtype_bytes(GgmlDType::Q8_0, 64), 68);
    }

    /// Value transforms and the value-head reordering invert exactly.
    #[test]
    fn transforms_invert() -> candle_core::Result<()> {
        let cfg = Config::from_json(
            r#"{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
                "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
                "linear_num_key_heads": 2, "linear_num_value_heads": 6,
                "linear_key_head_dim": 2, "linear_value_head_dim": 2,
                "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4}"#,
        )
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let dev = Device::Cpu;
        for m in TENSORS.iter() {
            let shape: Vec<usize> = match m.v_order {
                VOrder::QkvRows => vec![2 * 2 * 2 + 12, 3],
                VOrder::Rows => vec![12, 3],
                VOrder::HeadRows => vec![6],
                VOrder::Cols => vec![3, 12],
                VOrder::None => vec![5],
            };
            let x = Tensor::rand(0.1f32, 0.9, shape.as_slice(), &dev)?;
            let file = to_file_values(&x, m, &cfg, &shape)?;
            let back = from_file_values(&file, m, &cfg, &shape, true)?;
            let diff = (x - &back)?
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?;
            assert!(diff < 1e-6, "{}: {diff}", m.hf);
        }
        // Grouped [k0v0 k0v1 k0v2 k1v0 k1v1 k1v2] → tiled [k0v0 k1v0 k0v1 …].
        let heads = Tensor::new(&[0f32, 1., 2., 3., 4., 5.], &dev)?;
        let tiled = reorder_v_heads(&heads, VOrder::HeadRows, &cfg, true)?;
        assert_eq!(tiled.to_vec1::<f32>()?, vec![0., 3., 1., 4., 2., 5.]);
        Ok(())
    }

    /// The rope sections written without `mrope_section` sum to the rotary
    /// pairs (within what llama.cpp's rope takes), whatever the head width.
    #[test]
    fn rope_sections_fit_the_rotary_dims() -> Result<(), LoadError> {
        assert_eq!(default_rope_sections(64), vec![11, 11, 10]);
        assert_eq!(default_rope_sections(4), vec![1, 1, 0]);
        assert_eq!(default_rope_sections(8), vec![2, 1, 1]);
        assert_eq!(default_rope_sections(2), vec![1, 0, 0]);
        let config = |head_dim: usize, sections: &str| {
            Config::from_json(&format!(
                r#"{{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
                    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": {head_dim},
                    "linear_num_key_heads": 2, "linear_num_value_heads": 2,
                    "linear_key_head_dim": 2, "linear_value_head_dim": 2,
                    "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4,
                    "rope_parameters": {{"rope_type": "default", "rope_theta": 1e7,
                                         "partial_rotary_factor": 0.25 {sections}}}}}"#
            ))
            .map_err(|e| LoadError::InvalidConfig {
                path: "config.json".into(),
                field: "test".into(),
                message: e.to_string(),
            })
        };
        let written = |cfg: &Config| -> Result<Vec<i32>, LoadError> {
            let meta = gguf_metadata(cfg, "t", GgmlDType::F32)?;
            let Some((_, Value::Array(v))) = meta
                .iter()
                .find(|(k, _)| k == &key("rope.dimension_sections"))
            else {
                panic!("no rope sections written");
            };
            Ok(v.iter()
                .map(|x| match x {
                    Value::I32(i) => *i,
                    other => panic!("section {other:?}"),
                })
                .collect())
        };
        // The tiny world model's 16-wide heads: 4 rotary dims, 2 pairs.
        assert_eq!(written(&config(16, "")?)?, vec![1, 1, 0, 0]);
        // The released model's 256-wide heads: 64 rotary dims.
        assert_eq!(written(&config(256, "")?)?, vec![11, 11, 10, 0]);
        // Sections the config gives are written as given.
        assert_eq!(
            written(&config(16, r#", "mrope_section": [2, 0, 0]"#)?)?,
            vec![2, 0, 0, 0]
        );
        Ok(())
    }

    /// Rows that a k-quant block does not divide fall back as llama-quantize
    /// does.
    #[test]
    fn narrow_rows_fall_back() {
        assert_eq!(fallback_type(GgmlDType::Q4K, 512), GgmlDType::Q4K);
        assert_eq!(fallback_type(GgmlDType::Q4K, 64), GgmlDType::Q5_0);
        assert_eq!(fallback_type(GgmlDType::Q4K, 96), GgmlDType::Q8_0);
        assert_eq!(fallback_type(GgmlDType::Q6K, 64), GgmlDType::Q8_0);
        assert_eq!(fallback_type(GgmlDType::Q8_0, 48), GgmlDType::F16);
        assert_eq!(fallback_type(GgmlDType::BF16, 7), GgmlDType::BF16);
        assert_eq!(parse_file_type("Q8_0"), Ok(GgmlDType::Q8_0));
        assert!(parse_file_type("q4_k_m").is_err());
    }
}
