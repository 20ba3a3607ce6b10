//! `worldloom export`: write a native file (or every trajectory of a
//! workspace) as AgentWorldBench JSONL, SFT chat JSONL or native JSON
//! (`worldloom-core`'s [`ExportFormat`], the formats the studio exports
//! too). `-o -` writes to standard output. A native file gets its states'
//! screenshots in the sidecar folder beside it (`docs/formats.md`,
//! "Screenshots"); on standard output they are named without their bytes.
//! With `--lesson NAME`, a workspace's lesson as one self-contained HTML
//! file (the studio's `export_lesson`, the one builder).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use worldloom_api::Studio;
use worldloom_api::types::ExportLessonRequest;
use worldloom_core::formats::ExportFormat;
use worldloom_core::{ImportOptions, import_path};

/// Arguments of `worldloom export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The input: a native file (or anything `worldloom import` reads), or a
    /// workspace file (every trajectory in it, each as its live tree; with
    /// `--lesson`, that lesson).
    pub input: PathBuf,
    /// The output format: `agentworldbench` (one row per turn, readable by
    /// the official evaluation script), `sft` (chat JSONL for fine-tuning)
    /// or `native`.
    #[arg(long, required_unless_present = "lesson", conflicts_with = "lesson")]
    pub format: Option<ExportFormat>,
    /// Export this lesson of the workspace `input` (the tag `lesson:NAME` on
    /// its branches) as one self-contained HTML file: no script, no external
    /// resource, navigation by anchors.
    #[arg(long, value_name = "NAME")]
    pub lesson: Option<String>,
    /// The file to write (`-` for standard output).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

/// Runs `worldloom export`.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let Some(format) = args.format else {
        return export_lesson(args);
    };
    let workspace = if worldloom_api::launch::is_workspace_file(&args.input) {
        Some(
            Studio::open(&args.input)
                .with_context(|| format!("opening the workspace {}", args.input.display()))?,
        )
    } else {
        None
    };
    let mut trajectories = match &workspace {
        Some(studio) => worldloom_api::commands::workspace_trajectories(studio)
            .map_err(|e| anyhow::anyhow!("{}: {}", args.input.display(), e.message))?,
        None => {
            let imported = import_path(&args.input, &ImportOptions::default())?;
            for warning in &imported.warnings {
                eprintln!("warning: {warning}");
            }
            imported.trajectories
        }
    };
    let to_stdout = args.output.as_os_str() == "-";
    if format == ExportFormat::Native && !to_stdout {
        // Screenshots go into the sidecar folder beside the native file:
        // from the workspace, or from the files the input names.
        worldloom_core::native::write_screenshots(&args.output, &mut trajectories, |shot| {
            match &workspace {
                Some(studio) => worldloom_api::commands::screenshot_bytes(studio, &shot.sha256)
                    .ok()
                    .map(|stored| stored.bytes),
                None => worldloom_core::screenshot::bytes_of(shot),
            }
        })?;
    }
    let exported = format.export(&trajectories)?;
    if to_stdout {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(exported.text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing standard output")?;
        return Ok(());
    }
    std::fs::write(&args.output, &exported.text)
        .with_context(|| format!("writing {}", args.output.display()))?;
    outln!(
        "wrote {} {} to {}",
        exported.records,
        format.record_unit(),
        args.output.display()
    );
    Ok(())
}

/// `worldloom export WORKSPACE --lesson NAME -o FILE`.
fn export_lesson(args: &ExportArgs) -> anyhow::Result<()> {
    let name = args.lesson.clone().unwrap_or_default();
    // Opening creates a missing file: a workspace must exist to hold a lesson.
    if !args.input.is_file() {
        anyhow::bail!("{}: no such workspace file", args.input.display());
    }
    let studio = Studio::open(&args.input)
        .map_err(|e| anyhow::anyhow!("{}: {}", args.input.display(), e.message))?;
    let out = worldloom_api::commands::export_lesson(
        &studio,
        ExportLessonRequest {
            lesson: Some(name.clone()),
            path: Some(args.output.display().to_string()),
            ..Default::default()
        },
    )
    .map_err(|e| anyhow::anyhow!("lesson `{name}`: {}", e.message))?;
    outln!(
        "wrote lesson `{}`: {} sections, {} bytes, to {}",
        name.trim(),
        out.sections,
        out.bytes,
        args.output.display()
    );
    Ok(())
}
