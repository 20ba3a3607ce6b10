//! `worldloom`: the command-line tool.

use clap::{Parser, Subcommand};

/// `println!` for the command's output, except that a closed standard
/// output (`worldloom … | head`) is not an error: what cannot be written is
/// dropped, and the command goes on (a server keeps serving) instead of
/// panicking as `println!` does.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` under the same rule as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod atlas;
mod diff;
mod engines;
mod eval;
mod export;
mod import;
mod inspect;
mod judge;
mod model;
mod parse;
mod parse_output;
mod record;
mod rollout;
mod score;
mod serve;
mod serve_env;
mod serve_model;
mod step;

/// Worldloom: a studio for language world models.
#[derive(Parser)]
#[command(
    name = "worldloom",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("WORLDLOOM_COMMIT"), ")"),
    about
)]
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
    /// Serve a world model as an OpenEnv environment for RL trainers; records every episode.
    ServeEnv(serve_env::ServeEnvArgs),
    /// Predict every row of an AgentWorldBench folder or file (resumable).
    Eval(eval::EvalArgs),
    /// Score predictions with an LLM judge on the five AgentWorldBench dimensions.
    Judge(judge::JudgeArgs),
    /// What a run's predictions get wrong: error kinds by domain, role, attribute, action and turn (two runs side by side).
    Atlas(atlas::AtlasArgs),
    /// Aggregate a predictions or judged file per domain and overall.
    Score(score::ScoreArgs),
    /// Predict one turn of a trajectory with a local model, streaming.
    Step(step::StepArgs),
    /// Continue a trajectory free-running with a local model; writes the predictions into the file.
    Rollout(rollout::RolloutArgs),
    /// Record an agent loop's steps into a workspace as they happen (JSON lines on standard input).
    Record(record::RecordArgs),
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
    #[allow(unsafe_code)]
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe {
        worldloom_engine::local_model::pin_rayon_threads();
    }
    let cli = Cli::parse();
    #[cfg(unix)]
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::ServeModel(_) | Command::ServeEnv(_)
    ) {
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
        Command::ServeEnv(args) => serve_env::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Judge(args) => judge::run(&args),
        Command::Atlas(args) => atlas::run(&args),
        Command::Score(args) => score::run(&args),
        Command::Step(args) => step::run(&args),
        Command::Rollout(args) => rollout::run(&args),
        Command::Record(args) => record::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", error_message(&err));
            std::process::ExitCode::from(1)
        }
    }
}

/// `n` followed by the singular or plural noun: `1 trajectory`, `3 trajectories`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The error and its causes joined by `: `, leaving out a cause whose text
/// the message already holds (typed errors such as `CoreError::Io` print
/// their source themselves; anyhow's `{:#}` would print it twice).
fn error_message(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::{count, error_message};

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(1, "trajectory", "trajectories"), "1 trajectory");
        assert_eq!(count(0, "trajectory", "trajectories"), "0 trajectories");
        assert_eq!(count(2, "row", "rows"), "2 rows");
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let typed = anyhow::Error::new(io).context("/x.json: No such file");
        let err = typed.context("cannot import");
        assert_eq!(error_message(&err), "cannot import: /x.json: No such file");
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_message(&plain), "outer: inner");
    }
}
