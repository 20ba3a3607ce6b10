//! `worldloom inspect`: summarise the trajectories in a file or folder.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use worldloom_core::{ImportOptions, Trajectory, import_path};

/// Arguments of `worldloom inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A native file or anything `worldloom import` reads.
    pub path: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One trajectory's summary.
#[derive(Debug, Serialize)]
pub struct TrajectorySummary {
    /// The trajectory id.
    pub id: String,
    /// The domain name.
    pub domain: String,
    /// The source format.
    pub source: String,
    /// Representations of the recorded observations.
    pub representations: Vec<String>,
    /// Turns along the main path.
    pub turns: usize,
    /// Root-to-leaf branches.
    pub branches: usize,
    /// States in the tree.
    pub nodes: usize,
    /// Predictions over all states.
    pub predictions: usize,
    /// States whose observation is a step error.
    pub error_steps: usize,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct InspectReport {
    /// The path inspected.
    pub path: String,
    /// One entry per trajectory.
    pub trajectories: Vec<TrajectorySummary>,
    /// Import warnings.
    pub warnings: Vec<String>,
}

/// Summarises one trajectory.
pub fn summarize(t: &Trajectory) -> TrajectorySummary {
    TrajectorySummary {
        id: t.id.clone(),
        domain: t.domain.as_str().into(),
        source: t.source.format.clone(),
        representations: t
            .representations()
            .into_iter()
            .map(|r| r.as_str().to_owned())
            .collect(),
        turns: t.main_path().edges.len(),
        branches: t.branches().len(),
        nodes: t.nodes.len(),
        predictions: t.nodes.iter().map(|n| n.predictions.len()).sum(),
        error_steps: t
            .nodes
            .iter()
            .filter(|n| n.real.as_ref().is_some_and(|o| o.error.is_some()))
            .count(),
    }
}

/// Runs `worldloom inspect`.
pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let imported = import_path(&args.path, &ImportOptions::default())?;
    let report = InspectReport {
        path: args.path.display().to_string(),
        trajectories: imported.trajectories.iter().map(summarize).collect(),
        warnings: imported.warnings.iter().map(ToString::to_string).collect(),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    outln!(
        "{}: {}",
        report.path,
        crate::count(report.trajectories.len(), "trajectory", "trajectories")
    );
    outln!(
        "{:<40} {:<9} {:<16} {:>5} {:>8} {:>5} {:>6} {:>6}  representations",
        "id",
        "domain",
        "source",
        "turns",
        "branches",
        "nodes",
        "preds",
        "errors"
    );
    for s in &report.trajectories {
        outln!(
            "{:<40} {:<9} {:<16} {:>5} {:>8} {:>5} {:>6} {:>6}  {}",
            s.id,
            s.domain,
            s.source,
            s.turns,
            s.branches,
            s.nodes,
            s.predictions,
            s.error_steps,
            s.representations.join(",")
        );
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}
