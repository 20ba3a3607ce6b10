//! `worldloom`: the command-line tool.

use clap::{Parser, Subcommand};

/// Worldloom: a studio for language world models.
#[derive(Parser)]
#[command(name = "worldloom", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every subcommand. Each lives in its own module.
#[derive(Subcommand)]
enum Command {}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result: anyhow::Result<()> = match cli.command {};
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(1)
        }
    }
}
