//! `worldloom model`: run and inspect a local Qwen3.5-MoE model directory.
//!
//! - `worldloom model generate --model DIR --ids 1,17,42 --max-new-tokens N
//!   --greedy [--json] [--device cpu|cuda:N|metal] [--dtype bf16|f16|f32]`:
//!   token ids in, token ids out (no tokenizer needed); with `--json` prints
//!   `{"generated_ids": […], "prompt_last_logits": […]}`, the full-vocabulary
//!   f32 logits at the last prompt position.
//! - `worldloom model info DIR|FILE.gguf [--json]`: architecture, parameter
//!   counts (total and active per token) and the memory estimate per dtype,
//!   from `config.json` and the safetensors headers alone, or from a GGUF
//!   file's metadata and tensor table (with its tensor types: count and
//!   bytes per type).
//! - `worldloom model quantize DIR -o OUT.gguf --type q8_0`: a GGUF file
//!   (llama.cpp's `qwen35moe`) from a model directory, matrices quantized
//!   with candle.
//!
//! `--model` / `DIR` take a model directory or a `.gguf` file (the first
//! part of a split one).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use candle_core::DType;
use clap::{Args, Subcommand};
use serde::Serialize;
use worldloom_engine::CausalLm;
use worldloom_engine::loading::{
    BYTES_PER_GIB, LoadOptions, SafetensorsWeights, estimate_memory, estimate_memory_gguf,
    is_gguf_path, load_model, parse_device, parse_dtype, read_config,
};
use worldloom_engine::qwen3_5_moe::LayerKind;
use worldloom_engine::qwen3_5_moe::gguf::{Qwen35MoeGguf, WriteOptions, type_table, write_gguf};
use worldloom_engine::weights::gguf_writer::parse_file_type;

/// Arguments of `worldloom model`.
#[derive(Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Greedy generation from token ids (no tokenizer needed).
    Generate(GenerateArgs),
    /// Architecture, parameter counts and memory estimate of a model directory
    /// or GGUF file.
    Info(InfoArgs),
    /// Write a GGUF file (llama.cpp `qwen35moe`) from a model directory.
    Quantize(QuantizeArgs),
}

#[derive(Args)]
struct QuantizeArgs {
    /// Hugging Face model directory (config.json + safetensors).
    dir: PathBuf,
    /// The GGUF file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Type of the matrices: f32, f16, bf16, q8_0, q4_k, q5_k, q6_k (rows a
    /// block does not divide fall back as llama-quantize does; norms,
    /// vectors, the router and the conv stay f32).
    #[arg(long = "type", default_value = "q8_0")]
    file_type: String,
    /// Split into parts of at most this many tensors
    /// (OUT-00001-of-0000N.gguf, …).
    #[arg(long)]
    split_max_tensors: Option<usize>,
}

#[derive(Args)]
struct GenerateArgs {
    /// Hugging Face model directory (config.json + safetensors) or GGUF
    /// file.
    #[arg(long)]
    model: PathBuf,
    /// Prompt token ids, comma-separated (e.g. 1,17,42).
    #[arg(long, value_delimiter = ',', required = true)]
    ids: Vec<u32>,
    /// Number of tokens to generate.
    #[arg(long, default_value_t = 16)]
    max_new_tokens: usize,
    /// Greedy (argmax) decoding; the only mode of this command.
    #[arg(long)]
    greedy: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Device: cpu, cuda, cuda:N, metal.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Compute dtype: bf16, f16, f32 (default: the stored dtype).
    #[arg(long)]
    dtype: Option<String>,
}

#[derive(Args)]
struct InfoArgs {
    /// Hugging Face model directory or GGUF file.
    dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Context length the state part of the memory estimate is computed for.
    #[arg(long, default_value_t = 8192)]
    context_tokens: usize,
}

/// `generate --json` output.
#[derive(Serialize)]
struct GenerateOutput {
    generated_ids: Vec<u32>,
    prompt_last_logits: Vec<f32>,
}

/// Runs `worldloom model …`.
pub fn run(args: &ModelArgs) -> Result<()> {
    match &args.command {
        ModelCommand::Generate(a) => generate(a),
        ModelCommand::Info(a) => info(a),
        ModelCommand::Quantize(a) => quantize(a),
    }
}

fn quantize(args: &QuantizeArgs) -> Result<()> {
    let dtype = parse_file_type(&args.file_type).map_err(anyhow::Error::msg)?;
    let summary = write_gguf(
        &args.dir,
        &args.output,
        WriteOptions {
            dtype,
            max_tensors_per_file: args.split_max_tensors,
        },
    )
    .with_context(|| format!("quantizing {}", args.dir.display()))?;
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (_, t) in &summary.tensors {
        *counts.entry(format!("{t:?}")).or_default() += 1;
    }
    for file in &summary.files {
        outln!("wrote {}", file.display());
    }
    let types: Vec<String> = counts.iter().map(|(t, n)| format!("{n} {t}")).collect();
    outln!("{} tensors: {}", summary.tensors.len(), types.join(", "));
    Ok(())
}

fn generate(args: &GenerateArgs) -> Result<()> {
    if !args.greedy {
        bail!("`model generate` decodes greedily only: pass --greedy");
    }
    let device = parse_device(&args.device)?;
    let dtype = args.dtype.as_deref().map(parse_dtype).transpose()?;
    let options = LoadOptions {
        device,
        dtype,
        context_tokens: args.ids.len() + args.max_new_tokens,
        skip_memory_check: false,
    };
    let model = load_model(&args.model, &options)
        .with_context(|| format!("loading {}", args.model.display()))?;
    let vocab = model.vocab_size();
    if let Some((i, bad)) = args
        .ids
        .iter()
        .enumerate()
        .find(|(_, id)| **id as usize >= vocab)
    {
        bail!(
            "--ids: entry {} (token {bad}) is outside the vocabulary of {vocab}",
            i + 1
        );
    }
    let mut state = model.new_state()?;
    let logits = model.forward(&args.ids, &mut state)?;
    let prompt_last_logits: Vec<f32> = logits.to_vec1()?;
    let mut generated_ids = Vec::with_capacity(args.max_new_tokens);
    let mut next = argmax(&prompt_last_logits);
    for step in 0..args.max_new_tokens {
        generated_ids.push(next);
        if step + 1 == args.max_new_tokens {
            break;
        }
        let logits: Vec<f32> = model.forward(&[next], &mut state)?.to_vec1()?;
        next = argmax(&logits);
    }
    if args.json {
        let out = GenerateOutput {
            generated_ids,
            prompt_last_logits,
        };
        outln!("{}", serde_json::to_string(&out)?);
    } else {
        let ids: Vec<String> = generated_ids.iter().map(u32::to_string).collect();
        outln!("{}", ids.join(","));
    }
    Ok(())
}

/// Index of the largest logit (the first on ties).
fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as u32
}

#[derive(Serialize)]
struct MemoryRow {
    dtype: &'static str,
    weight_gib: f64,
    state_gib: f64,
    total_gib: f64,
}

#[derive(Serialize)]
struct TypeRow {
    #[serde(rename = "type")]
    name: &'static str,
    tensors: usize,
    bytes: u64,
}

#[derive(Serialize)]
struct GgufInfo {
    /// `general.architecture`.
    architecture: String,
    /// Files (parts) of the model.
    parts: usize,
    /// Tensors and bytes per stored type.
    types: Vec<TypeRow>,
}

#[derive(Serialize)]
struct InfoOutput {
    architecture: &'static str,
    model_dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    gguf: Option<GgufInfo>,
    stored_dtype: Option<String>,
    tensor_count: Option<usize>,
    config: worldloom_engine::qwen3_5_moe::Config,
    layer_kinds: Vec<LayerKind>,
    parameters_total: u64,
    parameters_active_per_token: u64,
    context_tokens: usize,
    memory: Vec<MemoryRow>,
    /// The CPU kernels this machine runs.
    cpu_kernels: worldloom_engine::CpuKernels,
}

fn info(args: &InfoArgs) -> Result<()> {
    let config = read_config(&args.dir)?;
    let gguf = if is_gguf_path(&args.dir) {
        Some(Qwen35MoeGguf::open(&args.dir)?)
    } else {
        None
    };
    let weights = if gguf.is_none() {
        SafetensorsWeights::open(&args.dir).ok()
    } else {
        None
    };
    let counts = config.param_counts();
    let memory = [
        ("bf16", DType::BF16),
        ("f16", DType::F16),
        ("f32", DType::F32),
    ]
    .into_iter()
    .map(|(name, dtype)| {
        let e = match &gguf {
            Some(g) => estimate_memory_gguf(g, dtype, args.context_tokens),
            None => estimate_memory(&config, dtype, args.context_tokens),
        };
        MemoryRow {
            dtype: name,
            weight_gib: e.weight_bytes as f64 / BYTES_PER_GIB,
            state_gib: e.state_bytes as f64 / BYTES_PER_GIB,
            total_gib: e.total_gib(),
        }
    })
    .collect();
    use worldloom_engine::loading::TensorSource;
    let stored_dtype = match &gguf {
        Some(g) => g.stored_dtype(),
        None => weights.as_ref().and_then(TensorSource::stored_dtype),
    };
    let out = InfoOutput {
        architecture: "qwen3_5_moe",
        model_dir: args.dir.display().to_string(),
        gguf: gguf.as_ref().map(|g| GgufInfo {
            architecture: g.file().architecture().unwrap_or("unknown").to_string(),
            parts: g.file().part_paths().count(),
            types: type_table(g.file())
                .into_iter()
                .map(|(name, tensors, bytes)| TypeRow {
                    name,
                    tensors,
                    bytes,
                })
                .collect(),
        }),
        stored_dtype: stored_dtype.map(|d| d.as_str().to_string()),
        tensor_count: match &gguf {
            Some(g) => Some(g.file().tensors().len()),
            None => weights.as_ref().map(|w| w.names().count()),
        },
        layer_kinds: (0..config.num_hidden_layers)
            .map(|i| config.layer_kind(i))
            .collect(),
        parameters_total: counts.total,
        parameters_active_per_token: counts.active_per_token,
        context_tokens: args.context_tokens,
        memory,
        config,
        cpu_kernels: worldloom_engine::cpu_kernels(),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let c = &out.config;
    let attention = out
        .layer_kinds
        .iter()
        .filter(|k| **k == LayerKind::FullAttention)
        .count();
    outln!("architecture   qwen3_5_moe ({})", out.model_dir);
    outln!(
        "layers         {} ({} Gated DeltaNet, {} gated full attention)",
        c.num_hidden_layers,
        c.num_hidden_layers - attention,
        attention
    );
    outln!(
        "widths         hidden {}, vocab {}, attention {}/{} heads × {}, DeltaNet {}/{} heads × {}/{}",
        c.hidden_size,
        c.vocab_size,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
        c.linear_num_key_heads,
        c.linear_num_value_heads,
        c.linear_key_head_dim,
        c.linear_value_head_dim
    );
    outln!(
        "experts        {} routed (top {}) × {} + shared {}",
        c.num_experts,
        c.num_experts_per_tok,
        c.moe_intermediate_size,
        c.shared_expert_intermediate_size
    );
    outln!(
        "parameters     {} total, {} active per token",
        out.parameters_total,
        out.parameters_active_per_token
    );
    match (&out.gguf, &out.stored_dtype, out.tensor_count) {
        (Some(g), _, Some(n)) => {
            outln!(
                "weights        GGUF `{}`, {} part(s), {n} tensors:",
                g.architecture,
                g.parts
            );
            for row in &g.types {
                outln!(
                    "  {:<5} {:>5} tensors {:>12.2} MiB",
                    row.name,
                    row.tensors,
                    row.bytes as f64 / (1024.0 * 1024.0)
                );
            }
        }
        (None, Some(d), Some(n)) => outln!("weights        {n} tensors stored in {d}"),
        _ => {}
    }
    outln!(
        "memory (weights + state at {} tokens + scratch){}:",
        out.context_tokens,
        if out.gguf.is_some() {
            ", quantized tensors as the CPU keeps them, per compute dtype"
        } else {
            ""
        }
    );
    for row in &out.memory {
        outln!(
            "  {:<5} {:>8.2} GiB (weights {:.2}, state {:.3})",
            row.dtype,
            row.total_gib,
            row.weight_gib,
            row.state_gib
        );
    }
    let k = &out.cpu_kernels;
    let or_candle = |form: Option<&str>| form.unwrap_or("candle").to_string();
    outln!(
        "cpu kernels    quantized {}, prefill attention {}, bf16 {} (WORLDLOOM_CPU_TILES=avx2|avxvnni|off caps the first two)",
        or_candle(k.quantized),
        or_candle(k.prefill_attention),
        or_candle(k.bf16)
    );
    Ok(())
}
