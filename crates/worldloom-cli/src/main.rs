//! `worldloom`: the command-line tool.

use clap::{Parser, Subcommand};

mod diff;
mod eval;
mod export;
mod import;
mod inspect;
mod judge;
mod model;
mod parse;
mod parse_output;
mod rollout;
mod score;
mod serve;
mod serve_model;
mod step;

/// Worldloom: a studio for language world models.
#[derive(Parser)]
#[command(name = "worldloom", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every subcommand. Each lives in its own module.
#[derive(Subcommand)]
enum Command {
    /// Import a trajectory file or folder into a native worldloom-trajectory file.
    Import(import::ImportArgs),
    /// Export trajectories as AgentWorldBench JSONL, SFT chat JSONL or native JSON.
    Export(export::ExportArgs),
    /// Summarise trajectories: domains, representations, turns, branches.
    Inspect(inspect::InspectArgs),
    /// Extract reasoning and the predicted observation from raw model output.
    ParseOutput(parse_output::ParseOutputArgs),
    /// Parse an observation file into a UI tree (node count, warnings, tree).
    Parse(parse::ParseArgs),
    /// Compare a predicted observation with the real one (fidelity metrics).
    Diff(diff::DiffArgs),
    /// Run (token ids in, ids out) or inspect a local Qwen3.5-MoE model directory.
    Model(model::ModelArgs),
    /// Open the studio in a browser: serve the API and UI on 127.0.0.1 with an access token.
    Serve(serve::ServeArgs),
    /// Serve a world model as an OpenAI-compatible endpoint (127.0.0.1 by default).
    ServeModel(serve_model::ServeModelArgs),
    /// Predict every row of an AgentWorldBench folder or file (resumable).
    Eval(eval::EvalArgs),
    /// Score predictions with an LLM judge on the five AgentWorldBench dimensions.
    Judge(judge::JudgeArgs),
    /// Aggregate a predictions or judged file per domain and overall.
    Score(score::ScoreArgs),
    /// Predict one turn of a trajectory with a local model, streaming.
    Step(step::StepArgs),
    /// Continue a trajectory free-running with a local model; writes the predictions into the file.
    Rollout(rollout::RolloutArgs),
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`worldloom inspect
/// DIR | head`) would make `println!` panic with a backtrace. A command-line
/// tool should stop quietly instead, as `cat` does. Servers keep the default
/// Rust behaviour (their sockets never raise SIGPIPE anyway).
#[cfg(unix)]
fn stop_quietly_on_closed_pipe() {
    #[allow(unsafe_code)]
    // SAFETY: restores the default disposition of one signal at start-up,
    // before any other thread exists; no handler code is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    #[cfg(unix)]
    if !matches!(cli.command, Command::Serve(_) | Command::ServeModel(_)) {
        stop_quietly_on_closed_pipe();
    }
    let result: anyhow::Result<()> = match cli.command {
        Command::Import(args) => import::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::ParseOutput(args) => parse_output::run(&args),
        Command::Parse(args) => parse::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Model(args) => model::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::ServeModel(args) => serve_model::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Judge(args) => judge::run(&args),
        Command::Score(args) => score::run(&args),
        Command::Step(args) => step::run(&args),
        Command::Rollout(args) => rollout::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(1)
        }
    }
}
