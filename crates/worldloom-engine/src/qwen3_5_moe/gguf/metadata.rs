//! The `qwen35moe` metadata keys: the model config read from a file's
//! metadata, and the metadata written for a config.

use super::*;

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

/// `qwen35moe.NAME`: a metadata key of the architecture.
pub(super) fn key(name: &str) -> String {
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
