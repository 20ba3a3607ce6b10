//! `worldloom import`: read a trajectory file or folder into a native file,
//! or into a workspace (`--workspace`), where an eval output (`worldloom
//! eval`'s, the official `predictions.jsonl` / `judged.jsonl`) becomes a run.
//! A native file gets the states' screenshots in the sidecar folder beside
//! it (`docs/formats.md`, "Screenshots").

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use worldloom_core::{ImportOptions, InputFormat, TrajectoryFile, import_path};

/// Arguments of `worldloom import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file or folder to read (AgentWorldBench .jsonl, AgentLab step .json or
    /// result folder, a WebArena render_N.html or JSON trace, an ATIF trajectory,
    /// an Android dump or trace folder, an OSWorld folder, a native file, or a folder of these).
    pub path: PathBuf,
    /// The input format; `auto` detects it from the contents.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    pub format: InputFormat,
    /// Skip malformed JSONL rows (with a warning each) instead of failing.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// The native file to write.
    #[arg(short = 'o', long = "output", required_unless_present = "workspace")]
    pub output: Option<PathBuf>,
    /// Import into this workspace file instead (created when missing); a file
    /// of predictions (rows with `gen`) becomes a run there.
    #[arg(long, conflicts_with = "output")]
    pub workspace: Option<PathBuf>,
}

fn parse_format(s: &str) -> Result<InputFormat, String> {
    s.parse()
}

/// Imports into a workspace through the studio's `import_files` command.
fn into_workspace(args: &ImportArgs, workspace: &std::path::Path) -> anyhow::Result<()> {
    use worldloom_api::launch;
    if args.format != InputFormat::Auto || args.skip_bad_rows {
        anyhow::bail!(
            "--format and --skip-bad-rows apply to native output (-o); a workspace import detects the format and stops at a bad row"
        );
    }
    let studio = launch::open_workspace(workspace)?;
    let summary = launch::import_paths(&studio, std::slice::from_ref(&args.path))?;
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    // A folder of trajectories imports what it can: one line per item that
    // did not import. Nothing imported at all is an error.
    let nothing = summary.added + summary.kept == 0 && summary.runs.is_empty();
    if nothing && let Some(first) = summary.failures.first() {
        for other in &summary.failures[1..] {
            eprintln!("error: {other}");
        }
        anyhow::bail!("{first}");
    }
    for failure in &summary.failures {
        eprintln!("not imported: {failure}");
    }
    outln!(
        "imported {} into {} ({} already there)",
        crate::count(summary.added, "trajectory", "trajectories"),
        workspace.display(),
        summary.kept
    );
    for run in &summary.runs {
        outln!("run: {run}");
    }
    Ok(())
}

/// Runs `worldloom import`: warnings go to stderr, a one-line summary to stdout.
pub fn run(args: &ImportArgs) -> anyhow::Result<()> {
    let output = match (&args.output, &args.workspace) {
        (_, Some(workspace)) => return into_workspace(args, workspace),
        (Some(output), None) => output,
        (None, None) => anyhow::bail!("give -o FILE (a native file) or --workspace FILE"),
    };
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
    let mut trajectories = imported.trajectories;
    // Screenshots go into the sidecar folder beside the native file.
    worldloom_core::native::write_screenshots(
        output,
        &mut trajectories,
        worldloom_core::screenshot::bytes_of,
    )?;
    TrajectoryFile::new(trajectories)
        .write(output)
        .with_context(|| format!("writing {}", output.display()))?;
    outln!(
        "imported {} ({}) from {} into {} ({})",
        crate::count(count, "trajectory", "trajectories"),
        crate::count(turns, "turn", "turns"),
        args.path.display(),
        output.display(),
        crate::count(imported.warnings.len(), "warning", "warnings")
    );
    Ok(())
}
