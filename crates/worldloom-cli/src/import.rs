//! `worldloom import`: read a trajectory file or folder into a native file.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use worldloom_core::{ImportOptions, InputFormat, TrajectoryFile, import_path};

/// Arguments of `worldloom import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file or folder to read (AgentWorldBench .jsonl, AgentLab step .json,
    /// an Android dump folder, an OSWorld folder, a native file, or a folder of these).
    pub path: PathBuf,
    /// The input format; `auto` detects it from the contents.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    pub format: InputFormat,
    /// Skip malformed JSONL rows (with a warning each) instead of failing.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// The native file to write.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

fn parse_format(s: &str) -> Result<InputFormat, String> {
    s.parse()
}

/// Runs `worldloom import`: warnings go to stderr, a one-line summary to stdout.
pub fn run(args: &ImportArgs) -> anyhow::Result<()> {
    let options = ImportOptions {
        format: args.format,
        skip_bad_rows: args.skip_bad_rows,
    };
    let imported = import_path(&args.path, &options)?;
    for warning in &imported.warnings {
        eprintln!("warning: {warning}");
    }
    let turns: usize = imported
        .trajectories
        .iter()
        .map(|t| t.main_path().edges.len())
        .sum();
    let count = imported.trajectories.len();
    TrajectoryFile::new(imported.trajectories)
        .write(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    println!(
        "imported {} ({}) from {} into {} ({})",
        crate::count(count, "trajectory", "trajectories"),
        crate::count(turns, "turn", "turns"),
        args.path.display(),
        args.output.display(),
        crate::count(imported.warnings.len(), "warning", "warnings")
    );
    Ok(())
}
