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
//! Files: this one holds the names and values; `metadata` the config ↔
//! metadata keys; `source` [`Qwen35MoeGguf`], which serves a GGUF file to the
//! model under the Hugging Face names (a [`TensorSource`]); `write`
//! [`write_gguf`], which makes a GGUF file from a model directory
//! (`worldloom model quantize`) through the model-neutral writer
//! (`weights::gguf_writer`).

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

mod metadata;
mod source;
#[cfg(test)]
mod tests;
mod write;

pub use metadata::{config_from_gguf, default_rope_sections, gguf_metadata};
pub use source::{Qwen35MoeGguf, type_table};
pub use write::{WriteOptions, WriteSummary, write_gguf};

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
