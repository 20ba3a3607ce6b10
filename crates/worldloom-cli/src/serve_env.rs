//! `worldloom serve-env`: serve a world model as an OpenEnv environment
//! (see the `worldloom-env` crate and `docs/openenv.md`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use worldloom_core::Domain;
use worldloom_engine::GenerationParams;
use worldloom_engine::openai::OpenAiConfig;
use worldloom_env::record::default_record_path;
use worldloom_env::server::check_exposure;
use worldloom_env::{
    EnvConfig, Environment, LlmJudgeReward, Perturbations, Recorder, Reward, ServeEnvOptions,
    TargetStateReward, TaskSet, ZeroReward, serve,
};

use crate::engines::{
    EngineFlags, EngineKind, EngineOptions, build_named, check_flags, make_engine, openai_spec,
};

/// Rewards `serve-env` can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EnvReward {
    /// 0 for every step.
    None,
    /// An LLM judge at the end of the episode (`--judge-base-url`,
    /// `--judge-model`).
    Judge,
    /// 1 for reaching the task's target state (the authored state at a
    /// tagged branch's leaf, else the main path's last state), which ends
    /// the episode; compared with the observation metrics
    /// (`--target-threshold`).
    Target,
}

/// Arguments of `worldloom serve-env`.
#[derive(Debug, Args)]
pub struct ServeEnvArgs {
    /// Tasks: an AgentWorldBench `.jsonl` file (one task per trajectory:
    /// system prompt, goal and first state from its first prompt), any
    /// trajectory file or folder `worldloom import` reads, or a workspace
    /// (its trajectories, recorded episodes excepted).
    #[arg(long)]
    pub tasks: PathBuf,
    /// With a workspace as `--tasks`: only the trajectories carrying this
    /// tag (on the trajectory or one of its branches), e.g. a curriculum.
    #[arg(long)]
    pub task_tag: Option<String>,
    /// Serve only the tasks of this domain (repeat for several; default:
    /// every domain the tasks have, up to all seven).
    #[arg(long = "domain")]
    pub domains: Vec<Domain>,
    /// The workspace every episode is recorded into (created when missing;
    /// default: the tasks workspace itself, else `NAME.episodes.worldloom`
    /// beside the tasks file).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Which engine predicts the observations.
    #[arg(long, value_enum, default_value = "copy")]
    pub engine: EngineKind,
    /// The options of each engine (`--no-stream` and the connection limits
    /// apply to the judge too).
    #[command(flatten)]
    pub engines: EngineOptions,
    /// Address to listen on. Anything but a loopback address needs a token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8001)]
    pub port: u16,
    /// Token clients send as `Authorization: Bearer TOKEN` (default: the
    /// `WORLDLOOM_ENV_TOKEN` environment variable); required off loopback.
    #[arg(long)]
    pub token: Option<String>,
    /// Sessions at once (WebSocket connections and open HTTP episodes);
    /// one more is refused.
    #[arg(long, default_value_t = 8)]
    pub max_sessions: usize,
    /// Seconds without a message after which a session is closed.
    #[arg(long, default_value_t = 600)]
    pub idle_timeout_s: u64,
    /// Steps after which an episode ends (`turn_limit`).
    #[arg(long, default_value_t = 30)]
    pub max_turns: usize,
    /// Seconds one prediction may take.
    #[arg(long, default_value_t = 600)]
    pub step_timeout_s: u64,
    /// Upper bound on generated tokens per step.
    #[arg(long, default_value_t = 4096)]
    pub max_tokens: usize,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.6)]
    pub temperature: f32,
    /// A control instruction that may perturb a step (repeatable).
    #[arg(long = "perturbation")]
    pub perturbations: Vec<String>,
    /// A file of control instructions, one per line (blank lines skipped).
    #[arg(long)]
    pub perturbations_file: Option<PathBuf>,
    /// Probability in [0, 1] that a step gets a control instruction (drawn
    /// from the episode's seed).
    #[arg(long, default_value_t = 0.0)]
    pub perturbation_prob: f64,
    /// How steps are rewarded: `none` (0 everywhere) or `judge` (an LLM
    /// judge at the end of the episode: 1 when the goal was achieved).
    #[arg(long, value_enum, default_value = "none")]
    pub reward: EnvReward,
    /// Judge API base URL for `--reward judge` (OpenAI-compatible).
    #[arg(long)]
    pub judge_base_url: Option<String>,
    /// Judge model name for `--reward judge`.
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Environment variable holding the judge's API key.
    #[arg(long)]
    pub judge_api_key_env: Option<String>,
    /// For `--reward target`: the score (node F1 for trees, token F1 for
    /// text) from which a state counts as the target.
    #[arg(long, default_value_t = 0.9)]
    pub target_threshold: f64,
    /// Upper bound on the judge's generated tokens.
    #[arg(long, default_value_t = 1024)]
    pub judge_max_tokens: usize,
    /// Seconds between progress lines on stderr (0: none).
    #[arg(long, default_value_t = 10)]
    pub progress_s: u64,
}

/// The environment variable `--token` defaults to.
pub const TOKEN_ENV: &str = "WORLDLOOM_ENV_TOKEN";

/// The engine the arguments describe.
fn engine_flags(args: &ServeEnvArgs) -> EngineFlags<'_> {
    EngineFlags::of(
        args.engine,
        &args.engines,
        args.step_timeout_s.saturating_mul(1000).max(1),
    )
}

fn perturbations(args: &ServeEnvArgs) -> anyhow::Result<Perturbations> {
    if !(0.0..=1.0).contains(&args.perturbation_prob) {
        bail!(
            "--perturbation-prob {}: a probability is in [0, 1]",
            args.perturbation_prob
        );
    }
    let mut instructions: Vec<String> = args
        .perturbations
        .iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(file) = &args.perturbations_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        instructions.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    if args.perturbation_prob > 0.0 && instructions.is_empty() {
        bail!(
            "--perturbation-prob needs instructions (--perturbation TEXT or --perturbations-file FILE)"
        );
    }
    Ok(Perturbations {
        instructions,
        probability: args.perturbation_prob,
    })
}

fn reward(args: &ServeEnvArgs) -> anyhow::Result<Arc<dyn Reward>> {
    Ok(match args.reward {
        EnvReward::None => Arc::new(ZeroReward),
        EnvReward::Target => {
            if !(0.0..=1.0).contains(&args.target_threshold) {
                bail!(
                    "--target-threshold {}: a score is in [0, 1]",
                    args.target_threshold
                );
            }
            Arc::new(TargetStateReward {
                threshold: args.target_threshold,
            })
        }
        EnvReward::Judge => {
            let (Some(base_url), Some(model)) = (&args.judge_base_url, &args.judge_model) else {
                bail!("--reward judge needs --judge-base-url URL and --judge-model NAME")
            };
            let config = OpenAiConfig {
                base_url: base_url.clone(),
                model: model.clone(),
                api_key_env: args.judge_api_key_env.clone(),
                stream: !args.engines.no_stream,
                ..OpenAiConfig::default()
            };
            let step_ms = args.step_timeout_s.saturating_mul(1000).max(1);
            let judge = build_named(
                openai_spec(
                    std::slice::from_ref(base_url),
                    config,
                    &args.engines.endpoint,
                    Some(step_ms),
                ),
                "--judge-base-url",
            )?;
            Arc::new(LlmJudgeReward::new(
                judge.model,
                args.judge_max_tokens,
                Duration::from_secs(args.step_timeout_s.max(1)),
            ))
        }
    })
}

/// Runs `worldloom serve-env` until Ctrl-C.
pub fn run(args: &ServeEnvArgs) -> anyhow::Result<()> {
    let ip: std::net::IpAddr = args
        .host
        .parse()
        .with_context(|| format!("--host {} is not an IP address", args.host))?;
    let token = args
        .token
        .clone()
        .or_else(|| std::env::var(TOKEN_ENV).ok())
        .filter(|t| !t.is_empty());
    let addr = SocketAddr::new(ip, args.port);
    let options = ServeEnvOptions {
        max_sessions: args.max_sessions.max(1),
        idle_timeout: Duration::from_secs(args.idle_timeout_s.max(1)),
        token,
        progress_every: (args.progress_s > 0).then(|| Duration::from_secs(args.progress_s)),
        ..ServeEnvOptions::default()
    };
    check_exposure(addr, &options).map_err(anyhow::Error::msg)?;
    check_flags(&engine_flags(args))?;
    let perturbations = perturbations(args)?;
    let tasks =
        TaskSet::load_tagged(&args.tasks, args.task_tag.as_deref())?.only_domains(&args.domains)?;
    let record = args
        .record
        .clone()
        .unwrap_or_else(|| default_record_path(&args.tasks));
    let recorder = Recorder::open(&record)?;
    let reward = reward(args)?;
    let engine = make_engine(&engine_flags(args))?;
    let mut params = GenerationParams::default();
    crate::eval::set_sampling(&mut params, args.max_tokens, args.temperature);
    let config = EnvConfig {
        max_turns: args.max_turns.max(1),
        step_timeout: Duration::from_secs(args.step_timeout_s.max(1)),
        params,
        perturbations,
        reward,
    };
    let engine_name = engine.name();
    let count = tasks.tasks().len();
    let env = Arc::new(Environment::new(tasks, engine, Some(recorder), config));
    crate::serve_model::serve_until_ctrl_c(
        addr,
        |bound| {
            outln!(
                "serving {count} task(s) with `{engine_name}` as an OpenEnv environment at http://{bound}"
            );
            eprintln!("recording episodes into {}", record.display());
        },
        |listener, shutdown| serve(listener, env, options, shutdown),
    )
}
