//! `worldloom model`: run and inspect a local Qwen3.5-MoE model directory.
//!
//! - `worldloom model generate --model DIR --ids 1,17,42 --max-new-tokens N
//!   --greedy [--json] [--device cpu|cuda:N|metal] [--dtype bf16|f16|f32]`:
//!   token ids in, token ids out (no tokenizer needed); with `--json` prints
//!   `{"generated_ids": […], "prompt_last_logits": […]}`, the full-vocabulary
//!   f32 logits at the last prompt position.
//! - `worldloom model info DIR [--json]`: architecture, parameter counts
//!   (total and active per token) and the memory estimate per dtype, from
//!   `config.json` and the safetensors headers alone.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use candle_core::DType;
use clap::{Args, Subcommand};
use serde::Serialize;
use worldloom_engine::CausalLm;
use worldloom_engine::loading::{
    BYTES_PER_GIB, LoadOptions, SafetensorsWeights, estimate_memory, load_model, parse_device,
    parse_dtype, read_config,
};
use worldloom_engine::qwen3_5_moe::LayerKind;

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
    /// Architecture, parameter counts and memory estimate of a model directory.
    Info(InfoArgs),
}

#[derive(Args)]
struct GenerateArgs {
    /// Hugging Face model directory (config.json + safetensors).
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
    /// Hugging Face model directory.
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
    }
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
        println!("{}", serde_json::to_string(&out)?);
    } else {
        let ids: Vec<String> = generated_ids.iter().map(u32::to_string).collect();
        println!("{}", ids.join(","));
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
struct InfoOutput {
    architecture: &'static str,
    model_dir: String,
    stored_dtype: Option<String>,
    tensor_count: Option<usize>,
    config: worldloom_engine::qwen3_5_moe::Config,
    layer_kinds: Vec<LayerKind>,
    parameters_total: u64,
    parameters_active_per_token: u64,
    context_tokens: usize,
    memory: Vec<MemoryRow>,
}

fn info(args: &InfoArgs) -> Result<()> {
    let config = read_config(&args.dir)?;
    let weights = SafetensorsWeights::open(&args.dir).ok();
    let counts = config.param_counts();
    let memory = [
        ("bf16", DType::BF16),
        ("f16", DType::F16),
        ("f32", DType::F32),
    ]
    .into_iter()
    .map(|(name, dtype)| {
        let e = estimate_memory(&config, dtype, args.context_tokens);
        MemoryRow {
            dtype: name,
            weight_gib: e.weight_bytes as f64 / BYTES_PER_GIB,
            state_gib: e.state_bytes as f64 / BYTES_PER_GIB,
            total_gib: e.total_gib(),
        }
    })
    .collect();
    let out = InfoOutput {
        architecture: "qwen3_5_moe",
        model_dir: args.dir.display().to_string(),
        stored_dtype: weights
            .as_ref()
            .and_then(worldloom_engine::loading::TensorSource::stored_dtype)
            .map(|d| d.as_str().to_string()),
        tensor_count: weights.as_ref().map(|w| w.names().count()),
        layer_kinds: (0..config.num_hidden_layers)
            .map(|i| config.layer_kind(i))
            .collect(),
        parameters_total: counts.total,
        parameters_active_per_token: counts.active_per_token,
        context_tokens: args.context_tokens,
        memory,
        config,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let c = &out.config;
    let attention = out
        .layer_kinds
        .iter()
        .filter(|k| **k == LayerKind::FullAttention)
        .count();
    println!("architecture   qwen3_5_moe ({})", out.model_dir);
    println!(
        "layers         {} ({} Gated DeltaNet, {} gated full attention)",
        c.num_hidden_layers,
        c.num_hidden_layers - attention,
        attention
    );
    println!(
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
    println!(
        "experts        {} routed (top {}) × {} + shared {}",
        c.num_experts,
        c.num_experts_per_tok,
        c.moe_intermediate_size,
        c.shared_expert_intermediate_size
    );
    println!(
        "parameters     {} total, {} active per token",
        out.parameters_total, out.parameters_active_per_token
    );
    if let (Some(d), Some(n)) = (&out.stored_dtype, out.tensor_count) {
        println!("weights        {n} tensors stored in {d}");
    }
    println!(
        "memory (weights + state at {} tokens + scratch):",
        out.context_tokens
    );
    for row in &out.memory {
        println!(
            "  {:<5} {:>8.2} GiB (weights {:.2}, state {:.3})",
            row.dtype, row.total_gib, row.weight_gib, row.state_gib
        );
    }
    Ok(())
}
