//! `worldloom export`: write a native file as AgentWorldBench JSONL, SFT chat
//! JSONL or native JSON.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use worldloom_core::formats::{awb, sft};
use worldloom_core::{ImportOptions, PromptOptions, TrajectoryFile, import_path};

/// Output formats of `worldloom export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// AgentWorldBench JSONL, one row per turn (readable by the official evaluation script).
    Agentworldbench,
    /// Chat JSONL for fine-tuning: `{"messages": [...]}` per turn.
    Sft,
    /// The native worldloom-trajectory JSON.
    Native,
}

/// Arguments of `worldloom export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The input: a native file (or anything `worldloom import` reads).
    pub input: PathBuf,
    /// The output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// The file to write.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

/// Runs `worldloom export`.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let imported = import_path(&args.input, &ImportOptions::default())?;
    for warning in &imported.warnings {
        eprintln!("warning: {warning}");
    }
    let trajectories = imported.trajectories;
    let text = match args.format {
        ExportFormat::Agentworldbench => awb::export(&trajectories),
        ExportFormat::Sft => sft::export(&trajectories, &PromptOptions::default())?,
        ExportFormat::Native => TrajectoryFile::new(trajectories.clone()).to_json_string(),
    };
    std::fs::write(&args.output, &text)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let lines = if args.format == ExportFormat::Native {
        trajectories.len()
    } else {
        text.lines().count()
    };
    let unit = if args.format == ExportFormat::Native {
        "trajectories"
    } else {
        "rows"
    };
    println!("wrote {lines} {unit} to {}", args.output.display());
    Ok(())
}
