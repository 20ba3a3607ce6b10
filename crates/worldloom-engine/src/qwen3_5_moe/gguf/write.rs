//! `worldloom model quantize`: a model directory's checkpoint written as a
//! `qwen35moe` GGUF file (one file or split parts), through the
//! model-neutral writer.

use super::*;
use crate::weights::gguf_writer::{GgufWriter, fallback_type};

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
