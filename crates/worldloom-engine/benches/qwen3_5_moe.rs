//! Speed of the Qwen3.5-MoE engine at the real widths of
//! Qwen-AgentWorld-35B-A3B (hidden 2048, vocab 248320, 256 experts top-8 +
//! shared, DeltaNet 16/32 heads × 128, attention 16/2 heads × 256) with
//! reduced depth (default 4 layers: 3 Gated DeltaNet + 1 gated attention),
//! random weights built in memory.
//!
//! ```text
//! cargo bench -p worldloom-engine --bench qwen3_5_moe -- [--device cpu|cuda:0]
//!     [--dtype bf16|f16|f32] [--layers 4] [--prompt-tokens 512]
//!     [--decode-tokens 32] [--turn-tokens 64] [--repeats 2]
//!     [--prefill-chunk 512]
//!     [--moe auto|fused|per-expert] [--fused-ops auto|on|off]
//!     [--profile-decode N]
//!     [--context-tokens N] [--gguf FILE] [--quantize q8_0|q4_k|q6_k]
//!     [--speculate 1.0,0.8,0.5] [--draft-tokens 16,adaptive]
//! ```
//!
//! `--gguf FILE` loads the weights from a GGUF file (e.g. the bench-shape
//! file llama.cpp's tools make, quantized with `llama-quantize`) instead of
//! building random ones; the widths and depth come from the file, the
//! compute dtype is the file's default (`--dtype` is not used).
//!
//! `--quantize TYPE` keeps the random weights but builds the matrices a
//! quantized GGUF file stores in blocks (projections, experts, embedding,
//! output) in that block type, in memory (`RandomWeights::quantized`: one
//! quantized block per large tensor, its bytes copied to every 1/16 of
//! it); norms, router, conv and vectors stay dense in `--dtype`, which is
//! also the compute dtype around the quantized matmuls.
//!
//! `--moe` picks the MoE dispatch (`auto`: the fused CUDA kernels for
//! bf16/f16 on CUDA, else per expert). `--profile-decode N` (CUDA builds)
//! runs N decode steps between `cuProfilerStart` and `cuProfilerStop` after
//! a warm-up and exits, for `ncu --profile-from-start off`.
//!
//! `--context-tokens N` (N > `--prompt-tokens`): after the decode at the
//! prompt's length, the state is extended (untimed, in chunks of 512
//! tokens) to N tokens and `--decode-tokens` steps are timed again there;
//! the JSON line's `decode_ms_per_token_at_context` next to
//! `decode_ms_per_token` says how a step's cost grows with the context.
//!
//! `--speculate A[,A…]`: after the plain greedy decode, the forward passes
//! speculative decoding runs for the same number of tokens from the
//! prompt's state, as the local engine runs them (drafts of
//! `--draft-tokens` tokens, default 16, verified in one `forward_all`; a
//! cut draft rewound to its kept tokens), with each drafted token kept with
//! probability A (forced and seeded, so any weights give the cost of that
//! acceptance). Reports tokens/s, the speed-up over the plain decode and
//! tokens per forward for every pair of acceptance and `--draft-tokens
//! N[,N…]`.
//!
//! Prompts and turns are fed as the local engine feeds them, in pieces of
//! at most `--prefill-chunk` tokens (default the engine's 512; 0: one
//! forward).
//!
//! Reports (best of `--repeats`, after a warm-up that prefills the prompt
//! once):
//! - prefill tokens/s of a `--prompt-tokens` prompt (fresh state);
//! - decode tokens/s over `--decode-tokens` greedy steps after it;
//! - stepping turn k+1: the time to the first logits of a new
//!   `--turn-tokens` turn after the prompt, from scratch (prompt + turn) and
//!   from a snapshot (clone of the state after the prompt, then the turn);
//! - the snapshot's size and clone time;
//! - resident memory (Linux): after loading, at the end, the peak, and the
//!   peak over loading, the warm-up, the first prefill and its decode
//!   (`rss_peak_prompt_gib`: what llama-bench's process runs, before the
//!   turns hold a snapshot, a restored copy and a from-scratch state at
//!   once);
//! - of the decode time, the share the host spends inside `forward` (on a
//!   GPU the kernels run asynchronously: a share near 100 % means the step
//!   is bound by the host issuing launches, not by the device).
//!
//! Prints one Markdown table row and one JSON line.

use std::time::Instant;

use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};
use worldloom_engine::draft::DraftLength;
use worldloom_engine::loading::{
    LoadOptions, RandomWeights, device_name, load_model, parse_device, parse_dtype,
};
use worldloom_engine::qwen3_5_moe::{Config, MoeDispatch, Qwen3_5Moe};
use worldloom_engine::{CausalLm, LocalEngineOptions};

struct Options {
    device: Device,
    dtype: DType,
    layers: usize,
    prompt_tokens: usize,
    decode_tokens: usize,
    turn_tokens: usize,
    /// Longest piece of a prompt fed in one forward (0: the whole prompt).
    prefill_chunk: usize,
    repeats: usize,
    /// `None`: what loading picks.
    moe: Option<MoeDispatch>,
    /// `None`: what loading picks.
    fused_ops: Option<bool>,
    profile_decode: usize,
    /// Tokens in the state when decode is timed (0: the prompt's).
    context_tokens: usize,
    /// Weights from this GGUF file instead of random ones.
    gguf: Option<std::path::PathBuf>,
    /// Random weights with the projections and experts in this block type.
    quantize: Option<GgmlDType>,
    /// Draft acceptance rates to decode at speculatively (empty: none).
    speculate: Vec<f64>,
    /// Draft lengths to decode at speculatively (`None`: adaptive).
    draft_tokens: Vec<Option<usize>>,
}

fn parse_args() -> Result<Options, Box<dyn std::error::Error>> {
    let mut o = Options {
        device: Device::Cpu,
        dtype: DType::BF16,
        layers: 4,
        prompt_tokens: 512,
        decode_tokens: 32,
        turn_tokens: 64,
        prefill_chunk: LocalEngineOptions::default().prefill_chunk_tokens,
        repeats: 2,
        moe: None,
        fused_ops: None,
        profile_decode: 0,
        context_tokens: 0,
        gguf: None,
        quantize: None,
        speculate: Vec::new(),
        draft_tokens: vec![Some(16)],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--device" => o.device = parse_device(&value()?)?,
            "--dtype" => o.dtype = parse_dtype(&value()?)?,
            "--layers" => o.layers = value()?.parse()?,
            "--prompt-tokens" => o.prompt_tokens = value()?.parse()?,
            "--decode-tokens" => o.decode_tokens = value()?.parse()?,
            "--turn-tokens" => o.turn_tokens = value()?.parse()?,
            "--prefill-chunk" => o.prefill_chunk = value()?.parse()?,
            "--repeats" => o.repeats = value()?.parse()?,
            "--moe" => {
                o.moe = match value()?.as_str() {
                    "auto" => None,
                    "fused" => Some(MoeDispatch::FusedCuda),
                    "per-expert" => Some(MoeDispatch::PerExpert),
                    other => return Err(format!("--moe {other}: auto, fused or per-expert").into()),
                }
            }
            "--fused-ops" => {
                o.fused_ops = match value()?.as_str() {
                    "auto" => None,
                    "on" => Some(true),
                    "off" => Some(false),
                    other => return Err(format!("--fused-ops {other}: auto, on or off").into()),
                }
            }
            "--profile-decode" => o.profile_decode = value()?.parse()?,
            "--context-tokens" => o.context_tokens = value()?.parse()?,
            "--speculate" => {
                o.speculate = value()?
                    .split(',')
                    .map(|a| a.trim().parse::<f64>())
                    .collect::<Result<_, _>>()?;
                if o.speculate.iter().any(|a| !(0.0..=1.0).contains(a)) {
                    return Err("--speculate: acceptance rates between 0 and 1".into());
                }
            }
            "--draft-tokens" => {
                o.draft_tokens = value()?
                    .split(',')
                    .map(|n| match n.trim() {
                        "adaptive" => Ok(None),
                        n => n.parse::<usize>().map(Some),
                    })
                    .collect::<Result<_, _>>()?;
                if o.draft_tokens.contains(&Some(0)) {
                    return Err("--draft-tokens: at least 1 token a draft".into());
                }
            }
            "--gguf" => o.gguf = Some(value()?.into()),
            "--quantize" => {
                o.quantize = Some(match value()?.to_ascii_lowercase().as_str() {
                    "q8_0" => GgmlDType::Q8_0,
                    "q4_k" => GgmlDType::Q4K,
                    "q6_k" => GgmlDType::Q6K,
                    other => return Err(format!("--quantize {other}: q8_0, q4_k or q6_k").into()),
                })
            }
            // `cargo bench` passes --bench; ignore flags we do not know.
            _ => {}
        }
    }
    if o.gguf.is_some() && o.quantize.is_some() {
        return Err("--quantize builds random weights: it does not go with --gguf".into());
    }
    Ok(o)
}

/// The released model's text config with `layers` layers.
fn real_width_config(layers: usize) -> Result<Config, serde_json::Error> {
    Config::from_json(&format!(
        r#"{{
        "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": {layers},
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
        "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "full_attention_interval": 4,
        "rope_parameters": {{"rope_type": "default", "rope_theta": 10000000.0,
                             "partial_rotary_factor": 0.25}}
    }}"#
    ))
}

/// Feeds `tokens` as the local engine prefills: pieces of at most `chunk`
/// tokens (0: one forward). The last piece's logits.
fn prefill(
    model: &Qwen3_5Moe,
    tokens: &[u32],
    state: &mut <Qwen3_5Moe as CausalLm>::State,
    chunk: usize,
) -> candle_core::Result<Tensor> {
    let chunk = if chunk == 0 {
        tokens.len().max(1)
    } else {
        chunk
    };
    let mut logits = None;
    for piece in tokens.chunks(chunk) {
        logits = Some(model.forward(piece, state)?);
    }
    logits.ok_or_else(|| candle_core::Error::Msg("empty prompt".into()))
}

fn synchronize(device: &Device) -> candle_core::Result<()> {
    device.synchronize()
}

/// Starts (`on`) or stops the CUDA profiler's collection; a no-op elsewhere.
fn profiler(device: &Device, on: bool) -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(dev) = device {
        use candle_core::cuda_backend::cudarc::driver;
        dev.cuda_stream().context().bind_to_thread()?;
        if on {
            driver::profiler_start()?;
        } else {
            driver::profiler_stop()?;
        }
        return Ok(());
    }
    let _ = (device, on);
    Ok(())
}

fn argmax(logits: &Tensor) -> candle_core::Result<u32> {
    logits.argmax(0)?.to_scalar::<u32>()
}

/// A `/proc/self/status` field in KiB (`VmRSS`: resident now, `VmHWM`: the
/// peak), `None` where there is no such file (not Linux).
fn rss_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// KiB to GiB (NaN when unknown).
fn gib(kib: Option<u64>) -> f64 {
    kib.map_or(f64::NAN, |k| k as f64 / (1024.0 * 1024.0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As the worldloom binaries do (candle would otherwise count the cores
    // on every CPU matmul).
    #[allow(unsafe_code)]
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe {
        worldloom_engine::local_model::pin_rayon_threads();
    }
    let mut o = parse_args()?;
    let t0 = Instant::now();
    let mut model = match &o.gguf {
        Some(path) => {
            let options = LoadOptions {
                device: o.device.clone(),
                ..LoadOptions::default()
            };
            let model = load_model(path, &options)?;
            o.dtype = model.dtype();
            o.layers = model.config().num_hidden_layers;
            model
        }
        None => {
            let weights = match o.quantize {
                Some(q) => RandomWeights::quantized(7, q)?,
                None => RandomWeights::new(7),
            };
            Qwen3_5Moe::load(real_width_config(o.layers)?, &weights, o.dtype, &o.device)?
        }
    };
    let weights_name = match (&o.gguf, o.quantize) {
        (Some(p), _) => p.display().to_string(),
        (None, Some(q)) => format!("random {q:?}"),
        (None, None) => "random".to_string(),
    };
    let config = model.config().clone();
    let counts = config.param_counts();
    eprintln!(
        "model: {} layers, {:.2} G parameters ({:.2} G active per token), {:?} on {}, weights {}",
        o.layers,
        counts.total as f64 / 1e9,
        counts.active_per_token as f64 / 1e9,
        o.dtype,
        device_name(&o.device),
        weights_name
    );
    if let Some(moe) = o.moe {
        model.set_moe_dispatch(moe)?;
    }
    if let Some(on) = o.fused_ops {
        model.set_fused_ops(on);
    }
    synchronize(&o.device)?;
    let build_s = t0.elapsed().as_secs_f64();
    let moe = model.moe_dispatch();
    let rss_built = rss_kib("VmRSS");
    let fused_ops = model.fused_ops();
    eprintln!(
        "built in {build_s:.1} s; MoE dispatch {moe:?}; fused ops {fused_ops}; resident {:.2} GiB",
        gib(rss_built)
    );

    // Deterministic token ids spread over the vocabulary.
    let vocab = config.vocab_size as u64;
    let ids: Vec<u32> = (0..(o.prompt_tokens + o.turn_tokens) as u64)
        .map(|i| ((i * 2_654_435_761 + 12_345) % vocab) as u32)
        .collect();
    let (prompt, turn) = ids.split_at(o.prompt_tokens);

    // Warm-up (allocations, kernels, thread pools): one whole prompt, as
    // llama-bench warms up with one run of its prompt.
    let mut warm = model.new_state()?;
    prefill(&model, prompt, &mut warm, o.prefill_chunk)?;
    let mut warm = model.new_state()?;
    model.forward(&prompt[..16.min(prompt.len())], &mut warm)?;
    model.forward(&[1], &mut warm)?;
    synchronize(&o.device)?;

    if o.profile_decode > 0 {
        let mut logits = model.forward(&[2], &mut warm)?;
        synchronize(&o.device)?;
        profiler(&o.device, true)?;
        for _ in 0..o.profile_decode {
            let next = argmax(&logits)?;
            logits = model.forward(&[next], &mut warm)?;
        }
        synchronize(&o.device)?;
        profiler(&o.device, false)?;
        eprintln!("profiled {} decode steps", o.profile_decode);
        return Ok(());
    }

    let mut prefill_s = f64::INFINITY;
    let mut decode_s = f64::INFINITY;
    let mut decode_host_share = f64::NAN;
    let mut long_decode_s = f64::INFINITY;
    let mut scratch_turn_s = f64::INFINITY;
    let mut snapshot_turn_s = f64::INFINITY;
    let mut clone_us = f64::INFINITY;
    let mut state_bytes = 0;
    // Peak RSS over loading, the warm-up, the first prefill and its decode
    // (what llama-bench's process runs), before the turns add states.
    let mut rss_peak_prompt = None;
    // The first repeat's greedy decode, its starting state and logits.
    let mut reference: Option<(Vec<u32>, <Qwen3_5Moe as CausalLm>::State)> = None;
    for repeat in 0..o.repeats {
        let mut state = model.new_state()?;
        let t = Instant::now();
        let mut logits = prefill(&model, prompt, &mut state, o.prefill_chunk)?;
        synchronize(&o.device)?;
        prefill_s = prefill_s.min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let snapshot = state.clone();
        clone_us = clone_us.min(t.elapsed().as_secs_f64() * 1e6);
        state_bytes = <Qwen3_5Moe as CausalLm>::state_size_bytes(&snapshot);

        let start = snapshot.clone();
        let mut decoded = Vec::with_capacity(o.decode_tokens);
        let t = Instant::now();
        let mut in_forward_s = 0.0;
        for _ in 0..o.decode_tokens {
            let next = argmax(&logits)?;
            decoded.push(next);
            let f = Instant::now();
            logits = model.forward(&[next], &mut state)?;
            in_forward_s += f.elapsed().as_secs_f64();
        }
        if reference.is_none() {
            reference = Some((decoded, start));
            rss_peak_prompt = rss_kib("VmHWM");
        }
        synchronize(&o.device)?;
        let elapsed = t.elapsed().as_secs_f64();
        if elapsed < decode_s {
            decode_s = elapsed;
            decode_host_share = in_forward_s / elapsed;
        }

        // Long-context decode: grow the state (untimed) to the context,
        // then time the same number of decode steps there.
        if o.context_tokens > state.len() {
            let mut fed = state.len() as u64;
            while (fed as usize) < o.context_tokens {
                let n = 512.min(o.context_tokens - fed as usize) as u64;
                let chunk: Vec<u32> = (fed..fed + n)
                    .map(|i| ((i * 2_654_435_761 + 12_345) % vocab) as u32)
                    .collect();
                logits = model.forward(&chunk, &mut state)?;
                fed += n;
            }
            synchronize(&o.device)?;
            let t = Instant::now();
            for _ in 0..o.decode_tokens {
                let next = argmax(&logits)?;
                logits = model.forward(&[next], &mut state)?;
            }
            synchronize(&o.device)?;
            long_decode_s = long_decode_s.min(t.elapsed().as_secs_f64());
        }

        // Turn k+1 with snapshot reuse: restore, feed only the new turn.
        let t = Instant::now();
        let mut restored = snapshot.clone();
        let with = prefill(&model, turn, &mut restored, o.prefill_chunk)?;
        synchronize(&o.device)?;
        snapshot_turn_s = snapshot_turn_s.min(t.elapsed().as_secs_f64());

        // Turn k+1 without reuse: the whole history again.
        let t = Instant::now();
        let mut fresh = model.new_state()?;
        let without = prefill(&model, &ids, &mut fresh, o.prefill_chunk)?;
        synchronize(&o.device)?;
        scratch_turn_s = scratch_turn_s.min(t.elapsed().as_secs_f64());

        let diff = (with - without)?
            .abs()?
            .max(0)?
            .to_dtype(DType::F32)?
            .to_scalar::<f32>()?;
        eprintln!(
            "repeat {repeat}: prefill {:.2} s, decode {:.2} s, turn from snapshot {:.3} s, from scratch {:.3} s, logit gap {diff:.3e}",
            prefill_s, decode_s, snapshot_turn_s, scratch_turn_s
        );
    }

    if let Some((decoded, state)) = &reference {
        for &acceptance in &o.speculate {
            for &draft in &o.draft_tokens {
                let run = speculate(&model, decoded, state.clone(), acceptance, draft)?;
                let tokens_per_sec = decoded.len() as f64 / run.seconds;
                let draft = draft.map_or("adaptive length".to_string(), |n| format!("{n} tokens"));
                println!(
                    "| speculative | {:?} | acceptance {acceptance:.2} | drafts of {draft} | {:.2} tokens/s | {:.2}× plain | {:.2} tokens/forward |",
                    o.dtype,
                    tokens_per_sec,
                    tokens_per_sec * decode_s / o.decode_tokens as f64,
                    decoded.len() as f64 / run.forwards as f64,
                );
            }
        }
    }

    let (rss_end, rss_peak) = (rss_kib("VmRSS"), rss_kib("VmHWM"));
    eprintln!(
        "resident: {:.2} GiB after loading, {:.2} GiB at the end, peak {:.2} GiB ({:.2} GiB over the prompt and its decode)",
        gib(rss_built),
        gib(rss_end),
        gib(rss_peak),
        gib(rss_peak_prompt)
    );
    let prefill_tokens_per_sec = o.prompt_tokens as f64 / prefill_s;
    let decode_tokens_per_sec = o.decode_tokens as f64 / decode_s;
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| {
        std::thread::available_parallelism()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into())
    });
    println!(
        "| {} | {:?} | {} | {} | {} | {:.1} | {:.2} | {:.0} % | {:.0} | {:.0} | {:.2} | {:.1} |",
        device_name(&o.device),
        o.dtype,
        threads,
        o.layers,
        match moe {
            MoeDispatch::FusedCuda => "fused",
            MoeDispatch::PerExpert => "per expert",
        },
        prefill_tokens_per_sec,
        decode_tokens_per_sec,
        decode_host_share * 100.0,
        scratch_turn_s * 1e3,
        snapshot_turn_s * 1e3,
        state_bytes as f64 / (1024.0 * 1024.0),
        clone_us,
    );
    println!(
        "{}",
        serde_json::json!({
            "device": device_name(&o.device),
            "dtype": format!("{:?}", o.dtype),
            "weights": weights_name,
            "quantize": o.quantize.map(|q| format!("{q:?}")),
            "threads": threads,
            "layers": o.layers,
            "parameters": counts.total,
            "parameters_active_per_token": counts.active_per_token,
            "prompt_tokens": o.prompt_tokens,
            "decode_tokens": o.decode_tokens,
            "context_tokens": o.context_tokens,
            "decode_ms_per_token_at_context": (o.context_tokens > o.prompt_tokens)
                .then(|| long_decode_s * 1e3 / o.decode_tokens as f64),
            "turn_tokens": o.turn_tokens,
            "prefill_tokens_per_sec": prefill_tokens_per_sec,
            "decode_tokens_per_sec": decode_tokens_per_sec,
            "turn_from_scratch_ms": scratch_turn_s * 1e3,
            "turn_from_snapshot_ms": snapshot_turn_s * 1e3,
            "snapshot_bytes": state_bytes,
            "snapshot_clone_us": clone_us,
            "build_s": build_s,
            "moe_dispatch": moe,
            "fused_ops": fused_ops,
            "decode_ms_per_token": decode_s * 1e3 / o.decode_tokens as f64,
            "decode_host_share": decode_host_share,
            "rss_after_load_gib": gib(rss_built),
            "rss_end_gib": gib(rss_end),
            "rss_peak_gib": gib(rss_peak),
            "rss_peak_prompt_gib": gib(rss_peak_prompt),
        })
    );
    Ok(())
}

/// What [`speculate`] measured.
struct Speculated {
    seconds: f64,
    /// Verifying forwards plus re-feeds after a cut draft.
    forwards: usize,
}

/// The forward passes speculative decoding runs for `tokens` output
/// tokens from `state` when each drafted token is kept with probability
/// `acceptance` (seeded), drafts of `draft` tokens (`None`: as long as
/// [`DraftLength`] says): per cycle one
/// `forward_all` of the chosen token and the draft, and when the draft is
/// cut, the state put back to after the kept ones
/// (`CausalLm::rewind_within`: KV caches cut, DeltaNet states recomputed
/// from the forward's inputs), as the local engine's `local::speculative`
/// does. The tokens fed are the plain
/// decode's `reference`; which are kept is forced, not read from the
/// logits, so the cost of a given acceptance is measured on any weights.
fn speculate(
    model: &Qwen3_5Moe,
    reference: &[u32],
    mut state: <Qwen3_5Moe as CausalLm>::State,
    acceptance: f64,
    draft: Option<usize>,
) -> Result<Speculated, Box<dyn std::error::Error>> {
    let mut adaptive = DraftLength::default();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut kept_draw = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        ((rng >> 11) as f64 / (1u64 << 53) as f64) < acceptance
    };
    let mut done = 0;
    let mut forwards = 0;
    let t = Instant::now();
    while done < reference.len() {
        let want = draft.unwrap_or(adaptive.get());
        let window = &reference[done..reference.len().min(done + 1 + want)];
        let draft = window.len() - 1;
        if draft == 0 {
            model.forward(window, &mut state)?;
            forwards += 1;
            done += 1;
            continue;
        }
        let checkpoint = <Qwen3_5Moe as CausalLm>::checkpoint(&state);
        CausalLm::forward_all(model, window, &mut state)?;
        forwards += 1;
        let mut kept = 0;
        while kept < draft && kept_draw() {
            kept += 1;
        }
        if kept < draft
            && !<Qwen3_5Moe as CausalLm>::rewind_within(&mut state, &checkpoint, kept + 1)?
        {
            <Qwen3_5Moe as CausalLm>::rewind(&mut state, checkpoint);
            model.forward(&window[..=kept], &mut state)?;
            forwards += 1;
        }
        adaptive.update(draft, kept);
        done += kept + 1;
    }
    synchronize(model.device())?;
    Ok(Speculated {
        seconds: t.elapsed().as_secs_f64(),
        forwards,
    })
}
