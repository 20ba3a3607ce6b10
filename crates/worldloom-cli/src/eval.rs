//! `worldloom eval`: predictions for a whole AgentWorldBench folder or file.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};
use clap::Args;
use worldloom_engine::GenerationParams;
use worldloom_eval::bench::load_rows;
use worldloom_eval::run::{RunOptions, run_eval};

use crate::engines::{EngineFlags, EngineKind, EngineOptions, check_flags, make_engine};

/// Arguments of `worldloom eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// An AgentWorldBench JSONL file, or a folder of `*_test.jsonl` files.
    #[arg(long)]
    pub data: PathBuf,
    /// Which engine predicts.
    #[arg(long, value_enum)]
    pub engine: EngineKind,
    /// The options of each engine.
    #[command(flatten)]
    pub engines: EngineOptions,
    /// Predictions in flight at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Upper bound on generated tokens per row (the official default).
    #[arg(long, default_value_t = 32_768)]
    pub max_tokens: usize,
    /// Sampling temperature (the official default).
    #[arg(long, default_value_t = 0.6)]
    pub temperature: f32,
    /// Give up on one row after this many seconds. For `--engine openai`
    /// it also caps `--read-timeout-s` (no silence outlasts a row).
    #[arg(long, default_value_t = 3600)]
    pub row_timeout_s: u64,
    /// Output JSON Lines file; rows already in it are skipped (resume).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
}

/// The engine the arguments describe.
fn engine_flags(args: &EvalArgs) -> EngineFlags<'_> {
    let cap_ms = args.row_timeout_s.saturating_mul(1000).max(1);
    EngineFlags::of(args.engine, &args.engines, cap_ms)
}

/// Sets the command line's `--max-tokens` and `--temperature` on `params`.
pub fn set_sampling(params: &mut GenerationParams, max_tokens: usize, temperature: f32) {
    params.max_new_tokens = max_tokens;
    params.temperature = temperature;
}

/// Sets the returned flag on the first Ctrl-C; exits at once on the second.
pub fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: finishing written rows (Ctrl-C again to quit at once)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(stop)
}

/// Runs `worldloom eval`.
pub fn run(args: &EvalArgs) -> anyhow::Result<()> {
    check_flags(&engine_flags(args))?;
    let rows = load_rows(&args.data)?;
    let engine = make_engine(&engine_flags(args))?;
    let mut options = RunOptions {
        concurrency: args.concurrency.max(1),
        row_timeout_ms: args.row_timeout_s.saturating_mul(1000),
        ..RunOptions::default()
    };
    set_sampling(&mut options.params, args.max_tokens, args.temperature);
    let stop = interrupt_flag()?;
    let summary = run_eval(&rows, engine, &args.output, &options, stop)?;
    eprintln!(
        "{}: {} rows written ({} failed), {} already there, {} in the input",
        args.output.display(),
        summary.written,
        summary.errors,
        summary.already_done,
        summary.total
    );
    if summary.interrupted {
        bail!("interrupted; run the same command again to resume");
    }
    Ok(())
}
