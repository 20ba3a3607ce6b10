//! `worldloom`: the command-line tool.

use clap::{Parser, Subcommand};

mod diff;
mod parse;

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
    /// Parse an observation file into a UI tree (node count, warnings, tree).
    Parse(parse::ParseArgs),
    /// Compare a predicted observation with the real one (fidelity metrics).
    Diff(diff::DiffArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result: anyhow::Result<()> = match cli.command {
        Command::Parse(args) => parse::run(&args),
        Command::Diff(args) => diff::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(1)
        }
    }
}
