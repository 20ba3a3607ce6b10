//! `worldloom score`: per-domain and overall scores of a predictions or
//! judged file.

use std::path::PathBuf;

use clap::Args;
use worldloom_eval::score::{render, score_file};

/// Arguments of `worldloom score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Predictions or judged JSON Lines file.
    pub file: PathBuf,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `worldloom score`.
pub fn run(args: &ScoreArgs) -> anyhow::Result<()> {
    let report = score_file(&args.file)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", render(&report));
    }
    Ok(())
}
