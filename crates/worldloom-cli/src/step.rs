//! `worldloom step`: predict one turn of a trajectory with a local model
//! (or the `copy` baseline).
//!
//! `worldloom step TRAJECTORY --turn K --model DIR [--device cpu|cuda:N|metal]
//! [--engine local|copy] [--teacher-forced|--free-running] [--json]
//! [--max-new-tokens N] [--temperature T] [--seed S]` predicts turn K of the
//! trajectory's main path through the use-case layer the studio uses
//! (`worldloom_predict::turn`: the AgentWorldBench-layout prompt, the
//! current observation by its one rule, the engine run, the prediction
//! record), streams the reasoning and the answer to the terminal, then
//! prints the extracted observation and its status (the engine's output
//! parse, `worldloom_core::OutputParser`). With `--json` nothing is
//! streamed and one JSON object is printed at the end.
//!
//! The shared parts (reading trajectories, making the engine through the
//! one builder, `worldloom_predict::engines`, running one prediction) are
//! used by `worldloom rollout` as well.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;
use worldloom_core::{
    ContextMode, ImportOptions, InputFormat, NodeId, OutputStatus, Trajectory, TrajectoryFile,
    detect_format, import_path,
};
use worldloom_engine::{
    CancelToken, EngineEvent, GenerationParams, GenerationStats, StopReason, WorldModel,
};
use worldloom_predict::engines::{EngineBuildError, EngineSpec, build_engine};

use crate::engines::DraftKind;
use worldloom_predict::turn::{Predicted, Stop, Turn};

/// Engines `step` and `rollout` predict with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StepEngine {
    /// The Qwen3.5-MoE model of `--model`, on candle.
    Local,
    /// The stale-state baseline: predicts the observation of the state the
    /// action is taken from, unchanged.
    Copy,
}

/// Model, device and sampling options shared by `step` and `rollout`.
#[derive(Args, Debug, Clone)]
pub struct ModelOptions {
    /// Which engine predicts.
    #[arg(long, value_enum, default_value = "local")]
    pub engine: StepEngine,
    /// Hugging Face model directory (config.json, safetensors, tokenizer.json,
    /// chat template), or a GGUF file with the tokenizer files beside it;
    /// required for `--engine local`.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Device: cpu, cuda, cuda:N, metal.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Compute dtype: bf16, f16, f32 (default: the stored dtype).
    #[arg(long)]
    pub dtype: Option<String>,
    /// Speculative decoding on the local engine
    /// (`observation`: drafted from the current observation; `prompt-lookup`;
    /// `off`): the same greedy output (sampled: the same distribution),
    /// fewer forward passes where drafts hold.
    #[arg(long, value_enum, default_value = "off")]
    pub draft: DraftKind,
    /// Upper bound on generated tokens (default: the model directory's
    /// generation_config.json, else 4096).
    #[arg(long)]
    pub max_new_tokens: Option<usize>,
    /// Sampling temperature; 0 is greedy (default: generation_config.json,
    /// else 0.6).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (default: generation_config.json, else 0.95).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Keep the k most likely tokens, 0 for all (default:
    /// generation_config.json, else 20).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Render the chat template with enable_thinking=false (no reasoning).
    #[arg(long)]
    pub no_thinking: bool,
    /// Keep generating after the observation block closes, until the
    /// end-of-turn token.
    #[arg(long)]
    pub no_stop_after_observation: bool,
    /// Which trajectory of a file holding several (default: the first).
    #[arg(long)]
    pub trajectory_id: Option<String>,
}

/// Arguments of `worldloom step`.
#[derive(Args, Debug)]
pub struct StepArgs {
    /// The trajectory: a native Worldloom file, an AgentWorldBench JSONL
    /// file, an AgentLab step file, or an Android / OSWorld folder.
    pub trajectory: PathBuf,
    /// The turn to predict, 1-based: the observation after the K-th action
    /// of the main path.
    #[arg(long)]
    pub turn: usize,
    /// History from the recorded observations (the default; as
    /// AgentWorldBench evaluates).
    #[arg(long, conflicts_with = "free_running")]
    pub teacher_forced: bool,
    /// History from the chosen predictions along the path.
    #[arg(long)]
    pub free_running: bool,
    /// Print one JSON object instead of streaming text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelOptions,
}

/// A trajectory file read for stepping.
pub struct Loaded {
    /// The trajectories, as a native file.
    pub file: TrajectoryFile,
    /// The input was already a native file.
    pub native: bool,
}

/// Reads a trajectory file or folder in any format the core importers know
/// (native, AgentWorldBench JSONL, AgentLab steps, Android / OSWorld folders,
/// with predictions sidecars); import warnings go to stderr.
///
/// # Errors
/// The importer's message (file, line and column, or field).
pub fn read_trajectories(path: &Path) -> Result<Loaded> {
    let format = detect_format(path)
        .with_context(|| format!("cannot read trajectory {}", path.display()))?;
    let imported = import_path(
        path,
        &ImportOptions {
            format,
            ..ImportOptions::default()
        },
    )
    .with_context(|| format!("cannot read trajectory {}", path.display()))?;
    for warning in &imported.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(Loaded {
        file: TrajectoryFile::new(imported.trajectories),
        native: format == InputFormat::Native,
    })
}

/// The index of the selected trajectory in `file`.
///
/// # Errors
/// When the file is empty or no trajectory has the requested id.
pub fn select_trajectory(file: &TrajectoryFile, path: &Path, id: Option<&str>) -> Result<usize> {
    match id {
        None if file.trajectories.is_empty() => {
            bail!("{}: the file holds no trajectory", path.display())
        }
        None => Ok(0),
        Some(id) => file
            .trajectories
            .iter()
            .position(|t| t.id == id)
            .ok_or_else(|| {
                let ids: Vec<&str> = file.trajectories.iter().map(|t| t.id.as_str()).collect();
                anyhow!(
                    "{}: no trajectory with id `{id}` (ids: {})",
                    path.display(),
                    ids.join(", ")
                )
            }),
    }
}

/// The node reached by turn `turn` (1-based) of the main path.
///
/// # Errors
/// When `turn` is 0 or beyond the path; the message names `option`, the
/// command-line option that gave the turn (`--turn`, `--from`).
pub fn node_at_turn(
    trajectory: &Trajectory,
    path: &Path,
    turn: usize,
    option: &str,
) -> Result<NodeId> {
    let main = trajectory.main_path();
    let turns = main.edges.len();
    if turn == 0 || turn > turns {
        bail!(
            "{}: trajectory `{}`: {option} {turn} is out of range (the main path has turns 1..={turns})",
            path.display(),
            trajectory.id
        );
    }
    Ok(main.nodes[turn])
}

/// An engine made through the one builder, with its provenance name and
/// the generation parameters it recommends.
pub struct Engine {
    /// The engine.
    pub model: Arc<dyn WorldModel>,
    /// Provenance name (`local:DIRNAME`, `copy`).
    pub name: String,
    /// The model's recommended parameters (a local model directory's
    /// `generation_config.json`), else the defaults.
    pub default_params: GenerationParams,
}

/// Makes the engine of `options` through the one engine builder
/// (`worldloom_predict::engines::build_engine`: a model directory is loaded
/// onto the device as the studio loads it).
///
/// # Errors
/// `--engine local` without `--model`; bad device or dtype names, loading
/// errors (file, tensor, memory), and tokenizer / template /
/// generation-config errors naming the file.
pub fn load_engine(options: &ModelOptions) -> Result<Engine> {
    let spec = match options.engine {
        StepEngine::Copy => EngineSpec::Copy,
        StepEngine::Local => {
            let Some(model) = &options.model else {
                bail!("--engine local needs --model DIR")
            };
            EngineSpec::Local {
                path: model.clone(),
                device: options.device.clone(),
                dtype: options.dtype.clone(),
                name: None,
                drafting: options.draft.into(),
            }
        }
    };
    let built = build_engine(spec).map_err(|e| match e {
        EngineBuildError::Local(message) => anyhow!(message),
        other => anyhow!(other),
    })?;
    Ok(Engine {
        model: built.model,
        name: built.name,
        default_params: built.default_params.unwrap_or_default(),
    })
}

/// Request parameters: the model directory's defaults overridden by the
/// command line.
pub fn generation_params(engine: &Engine, options: &ModelOptions) -> GenerationParams {
    let mut params = engine.default_params.clone();
    if let Some(n) = options.max_new_tokens {
        params.max_new_tokens = n;
    }
    if let Some(t) = options.temperature {
        params.temperature = t;
    }
    if let Some(p) = options.top_p {
        params.top_p = p;
    }
    if let Some(k) = options.top_k {
        params.top_k = k;
    }
    params.seed = options.seed;
    params.enable_thinking = !options.no_thinking;
    params.stop_after_observation = !options.no_stop_after_observation;
    params
}

/// The cancel token of the prediction in progress, for Ctrl-C.
pub type CancelSlot = Arc<Mutex<Option<CancelToken>>>;

/// Installs a Ctrl-C handler that cancels the prediction in `slot` (a second
/// Ctrl-C with nothing to cancel exits).
pub fn install_interrupt(slot: &CancelSlot) {
    let slot = Arc::clone(slot);
    let _ = ctrlc::set_handler(move || {
        let current = slot.lock().ok().and_then(|s| s.clone());
        match current {
            Some(cancel) if !cancel.is_cancelled() => cancel.cancel(),
            _ => std::process::exit(130),
        }
    });
}

/// Lays out the turn into `node` (`worldloom_predict::turn::Turn`): the
/// prompt and the current observation, before any engine is made.
///
/// # Errors
/// A prompt that cannot be built, naming the file and the turn.
pub fn lay_out(
    trajectory: &Trajectory,
    node: NodeId,
    mode: ContextMode,
    path: &Path,
    turn: usize,
) -> Result<Turn> {
    Turn::of_trajectory(trajectory, node, mode, Default::default()).map_err(|e| {
        anyhow!(
            "{}: cannot build the prompt of turn {turn}: {}",
            path.display(),
            e.to_string()
                .trim_start_matches("cannot build the prompt: ")
        )
    })
}

/// Predicts a laid-out turn and records it (`Turn::predict` of the
/// use-case layer); streams reasoning and answer to `echo` when given.
/// Ctrl-C (the cancel token in `slot`) ends it early with the partial
/// output and the stop reason `cancelled`.
///
/// # Errors
/// An immediate refusal, an engine error event, or the engine going away.
pub fn predict(
    engine: &Engine,
    turn: Turn,
    trajectory: &Trajectory,
    node: NodeId,
    params: &GenerationParams,
    mut echo: Option<&mut dyn Write>,
    slot: &CancelSlot,
) -> Result<Predicted> {
    let mut section = "";
    let mut ended_with_newline = true;
    let mut write_error: Option<std::io::Error> = None;
    let on_event = |event: &EngineEvent| {
        let Some(out) = echo.as_deref_mut() else {
            return;
        };
        let result = (|| -> std::io::Result<()> {
            match event {
                EngineEvent::Reasoning { text } => {
                    if section != "reasoning" {
                        writeln!(out, "── reasoning ──")?;
                        section = "reasoning";
                    }
                    write!(out, "{text}")?;
                    ended_with_newline = text.ends_with('\n');
                }
                EngineEvent::Answer { text } => {
                    if section != "content" {
                        if section == "reasoning" && !ended_with_newline {
                            writeln!(out)?;
                        }
                        writeln!(out, "── answer ──")?;
                        section = "content";
                    }
                    write!(out, "{text}")?;
                }
                _ => return Ok(()),
            }
            out.flush()
        })();
        if let Err(e) = result {
            write_error.get_or_insert(e);
        }
    };
    let cancel = CancelToken::new();
    if let Ok(mut s) = slot.lock() {
        *s = Some(cancel.clone());
    }
    // A Ctrl-C cancels the engine and keeps its partial output.
    let stop = Stop {
        cancel: &cancel,
        deadline: None,
        keep_partial: true,
    };
    let result = turn.predict(
        engine.model.as_ref(),
        trajectory,
        node,
        params,
        stop,
        on_event,
    );
    if let Ok(mut s) = slot.lock() {
        *s = None;
    }
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let predicted = result.map_err(|e| anyhow!(e))?;
    if let Some(out) = echo
        && !section.is_empty()
    {
        writeln!(out)?;
    }
    Ok(predicted)
}

fn stop_reason_name(reason: Option<StopReason>) -> String {
    reason
        .and_then(|r| serde_json::to_value(r).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// `step --json` output.
#[derive(Serialize)]
struct StepOutput<'a> {
    trajectory: &'a str,
    turn: usize,
    node: NodeId,
    context: ContextMode,
    engine: &'a str,
    params: &'a GenerationParams,
    raw_output: &'a str,
    reasoning: &'a str,
    observation: Option<&'a str>,
    status: OutputStatus,
    warnings: &'a [String],
    real_observation: Option<&'a str>,
    /// What the turn showed as the state the action is taken from (the
    /// `copy` baseline predicts it).
    current_observation: Option<&'a str>,
    stats: &'a GenerationStats,
    time_to_first_token_ms: Option<f64>,
    total_ms: f64,
}

/// Runs `worldloom step`.
///
/// # Errors
/// Unreadable trajectory or model, a turn out of range, a prompt that cannot
/// be built, an engine failure.
pub fn run(args: &StepArgs) -> Result<()> {
    let file = read_trajectories(&args.trajectory)?.file;
    let index = select_trajectory(&file, &args.trajectory, args.model.trajectory_id.as_deref())?;
    let trajectory = &file.trajectories[index];
    let node = node_at_turn(trajectory, &args.trajectory, args.turn, "--turn")?;
    let mode = if args.free_running {
        ContextMode::FreeRunning
    } else {
        ContextMode::TeacherForced
    };
    let turn = lay_out(trajectory, node, mode, &args.trajectory, args.turn)?;

    let engine = load_engine(&args.model)?;
    let params = generation_params(&engine, &args.model);
    let slot = CancelSlot::default();
    install_interrupt(&slot);
    let mut stdout = std::io::stdout();
    let echo: Option<&mut dyn Write> = if args.json { None } else { Some(&mut stdout) };
    let predicted = predict(&engine, turn, trajectory, node, &params, echo, &slot)?;
    let outcome = &predicted.collected;
    let parsed = &outcome.output.parsed;
    let real = trajectory
        .node(node)
        .and_then(|n| n.real.as_ref())
        .map(|o| o.text.as_str());

    if args.json {
        let out = StepOutput {
            trajectory: &trajectory.id,
            turn: args.turn,
            node,
            context: mode,
            engine: &engine.name,
            params: &params,
            raw_output: &outcome.output.raw,
            reasoning: &parsed.reasoning,
            observation: parsed.observation.as_deref(),
            status: parsed.status,
            warnings: &parsed.warnings,
            real_observation: real,
            current_observation: predicted.turn.current_observation.as_deref(),
            stats: &outcome.stats,
            time_to_first_token_ms: outcome.time_to_first_token_ms,
            total_ms: outcome.total_ms,
        };
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    outln!("── observation (status: {}) ──", parsed.status);
    match &parsed.observation {
        Some(obs) => outln!("{obs}"),
        None => outln!("(none)"),
    }
    for warning in &parsed.warnings {
        eprintln!("warning: {warning}");
    }
    let s = &outcome.stats;
    eprintln!(
        "{} prompt tokens ({} computed, {} from the snapshot cache), {} generated, prefill {:.0} ms, \
         decode {:.0} ms ({:.1} tokens/s), stop: {}",
        s.prompt_tokens,
        s.prompt_tokens_computed,
        s.prompt_tokens - s.prompt_tokens_computed,
        s.completion_tokens,
        s.prefill_ms,
        s.decode_ms,
        s.decode_tokens_per_sec,
        stop_reason_name(s.stop_reason)
    );
    if let Some(per_forward) = s.tokens_per_forward().filter(|_| s.drafted_tokens > 0) {
        eprintln!(
            "drafts: {} of {} drafted tokens kept, {} forwards for {} tokens ({per_forward:.2} tokens/forward)",
            s.accepted_tokens, s.drafted_tokens, s.decode_forwards, s.completion_tokens,
        );
    }
    Ok(())
}
