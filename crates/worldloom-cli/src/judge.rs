//! `worldloom judge`: LLM-judge scores for a predictions file.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use worldloom_engine::openai::OpenAiConfig;
use worldloom_eval::judge::{JudgeOptions, JudgePrompts, run_judge};
use worldloom_eval::score::{render, score_file};

/// Arguments of `worldloom judge`.
#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// Predictions JSON Lines (from `worldloom eval` or the official `infer`).
    #[arg(long)]
    pub predictions: PathBuf,
    /// Judge API base URL (OpenAI-compatible).
    #[arg(long)]
    pub judge_base_url: String,
    /// Judge model name.
    #[arg(long)]
    pub judge_model: String,
    /// Environment variable holding the judge API key (default: OPENAI_API_KEY
    /// when it is set).
    #[arg(long)]
    pub judge_api_key_env: Option<String>,
    /// Folder of judge system prompts replacing Worldloom's per domain
    /// (`<domain>.txt` or `<domain>/judge_system_prompt.txt`).
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Judge calls in flight at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Upper bound on judge tokens per row.
    #[arg(long, default_value_t = 32_768)]
    pub max_tokens: usize,
    /// Judge sampling temperature.
    #[arg(long, default_value_t = 0.6)]
    pub temperature: f32,
    /// Attempts per row when the call fails or the verdict does not parse.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: usize,
    /// Connection limits for the judge endpoint.
    #[command(flatten)]
    pub endpoint: crate::engines::EndpointArgs,
    /// Output JSON Lines file (default: `judged.jsonl` beside the
    /// predictions); rows already in it are skipped.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

/// Runs `worldloom judge` and prints the score table.
pub fn run(args: &JudgeArgs) -> anyhow::Result<()> {
    let api_key_env = args
        .judge_api_key_env
        .clone()
        .or_else(|| std::env::var_os("OPENAI_API_KEY").map(|_| "OPENAI_API_KEY".to_owned()));
    let config = OpenAiConfig {
        base_url: args.judge_base_url.clone(),
        model: args.judge_model.clone(),
        api_key_env,
        send_extensions: false,
        ..OpenAiConfig::default()
    };
    let judge = crate::engines::build_named(
        crate::engines::openai_spec(
            std::slice::from_ref(&args.judge_base_url),
            config,
            &args.endpoint,
            None,
        ),
        "--judge-base-url",
    )?;
    let prompts = match &args.prompts {
        Some(dir) => JudgePrompts::from_folder(dir)?,
        None => JudgePrompts::builtin(),
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| args.predictions.with_file_name("judged.jsonl"));
    let mut options = JudgeOptions {
        concurrency: args.concurrency.max(1),
        max_attempts: args.max_attempts.max(1),
        ..JudgeOptions::default()
    };
    crate::eval::set_sampling(&mut options.params, args.max_tokens, args.temperature);
    let stop = crate::eval::interrupt_flag()?;
    let summary = run_judge(
        &args.predictions,
        judge.model,
        &prompts,
        &output,
        &options,
        stop.clone(),
    )?;
    eprintln!(
        "{}: {} rows judged ({} failed), {} already there",
        output.display(),
        summary.written,
        summary.failed,
        summary.already_done
    );
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        bail!("interrupted; run the same command again to resume");
    }
    out!("{}", render(&score_file(&output)?));
    Ok(())
}
