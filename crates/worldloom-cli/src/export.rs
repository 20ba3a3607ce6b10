//! `worldloom export`: write a native file as AgentWorldBench JSONL, SFT chat
//! JSONL or native JSON (`worldloom-core`'s [`ExportFormat`], the formats the
//! studio exports too). A native file gets its states' screenshots in the
//! sidecar folder beside it (`docs/formats.md`, "Screenshots").

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use worldloom_core::formats::ExportFormat;
use worldloom_core::{ImportOptions, import_path};

/// Arguments of `worldloom export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The input: a native file (or anything `worldloom import` reads).
    pub input: PathBuf,
    /// The output format: `agentworldbench` (one row per turn, readable by
    /// the official evaluation script), `sft` (chat JSONL for fine-tuning)
    /// or `native`.
    #[arg(long)]
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
    let mut trajectories = imported.trajectories;
    if args.format == ExportFormat::Native {
        // Screenshots go into the sidecar folder beside the native file.
        worldloom_core::native::write_screenshots(
            &args.output,
            &mut trajectories,
            worldloom_core::screenshot::read_file_bytes,
        )?;
    }
    let exported = args.format.export(&trajectories)?;
    std::fs::write(&args.output, &exported.text)
        .with_context(|| format!("writing {}", args.output.display()))?;
    println!(
        "wrote {} {} to {}",
        exported.records,
        args.format.record_unit(),
        args.output.display()
    );
    Ok(())
}
