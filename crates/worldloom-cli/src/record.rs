//! `worldloom record`: an agent loop's steps into a workspace as they
//! happen, one JSON line per step on standard input, one JSON line back per
//! step on standard output. The Python package's `Recorder` speaks it.
//!
//! Input lines (UTF-8 JSON objects, one per line; blank lines skipped):
//! - `{"observation": TEXT}` with no `action`, as the first line only: the
//!   state before the first action;
//! - `{"action": TEXT, "observation": TEXT|null, "predicted": TEXT|null}`:
//!   one step, taken from the state the previous step led to.
//!
//! Either may carry `"screenshot": PATH` (a PNG or JPEG file): the screen
//! of the state the line records.
//!
//! Each line is answered with `{"trajectory_id": "7", "node_id": 3,
//! "edge_id": 2}` (the studio's `record_trajectory` / `record_turn` reply),
//! or `{"error": "line N: …"}` for a line that was not recorded (the next
//! step is then taken from the last state recorded). The trajectory is made
//! at the first line. Standard input's end ends the recording.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Deserialize;
use worldloom_api::types::{
    RecordTrajectoryRequest, RecordTurnRequest, RecordedTurn, Representation,
};
use worldloom_api::{Studio, commands};
use worldloom_core::Domain;

/// Arguments of `worldloom record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The workspace file to record into (created when missing).
    #[arg(long)]
    pub workspace: PathBuf,
    /// The environment's domain: mcp, search, terminal, swe, web, os or android.
    #[arg(long, value_parser = parse_domain)]
    pub domain: Domain,
    /// How observations are written: html, axtree, os-xml, os-table, android-xml, json or text.
    #[arg(long, value_parser = parse_representation)]
    pub representation: Representation,
    /// The agent's task.
    #[arg(long)]
    pub goal: Option<String>,
    /// The trajectory's name (default `recorded-<unix milliseconds>`).
    #[arg(long)]
    pub name: Option<String>,
}

fn parse_domain(s: &str) -> Result<Domain, String> {
    s.parse()
}

fn parse_representation(s: &str) -> Result<Representation, String> {
    s.parse()
}

/// One input line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    action: Option<String>,
    observation: Option<String>,
    predicted: Option<String>,
    screenshot: Option<String>,
}

/// Records standard input's steps into the workspace.
///
/// # Errors
/// The workspace cannot be opened, or standard input or output fails; a bad
/// line is answered with an error line instead.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let studio = Studio::open(&args.workspace)
        .with_context(|| format!("opening the workspace {}", args.workspace.display()))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut last: Option<RecordedTurn> = None;
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let text = line.context("reading standard input")?;
        if text.trim().is_empty() {
            continue;
        }
        let reply = record_line(&studio, args, &mut last, &text)
            .map(|r| serde_json::to_value(r).unwrap_or_default())
            .unwrap_or_else(|e| serde_json::json!({ "error": format!("line {}: {e:#}", i + 1) }));
        writeln!(out, "{reply}").context("writing standard output")?;
        out.flush().context("writing standard output")?;
    }
    Ok(())
}

fn record_line(
    studio: &Studio,
    args: &RecordArgs,
    last: &mut Option<RecordedTurn>,
    text: &str,
) -> anyhow::Result<RecordedTurn> {
    let line: Line = serde_json::from_str(text).context("not a step object")?;
    let Some(action) = line.action else {
        if last.is_some() {
            anyhow::bail!("an observation with no action comes first or not at all");
        }
        if line.predicted.is_some() {
            anyhow::bail!("field `predicted` needs an `action`");
        }
        let started = start(studio, args, line.observation, line.screenshot)?;
        *last = Some(started.clone());
        return Ok(started);
    };
    let from = match last.take() {
        Some(r) => r,
        None => start(studio, args, None, None)?,
    };
    let result = commands::record_turn(
        studio,
        RecordTurnRequest {
            trajectory_id: from.trajectory_id.clone(),
            from_node: from.node_id,
            action,
            representation: args.representation,
            observation: line.observation,
            predicted: line.predicted,
            screenshot: line.screenshot,
        },
    );
    match result {
        Ok(turn) => {
            *last = Some(turn.clone());
            Ok(turn)
        }
        Err(e) => {
            *last = Some(from);
            Err(anyhow::anyhow!("{}", e.message))
        }
    }
}

fn start(
    studio: &Studio,
    args: &RecordArgs,
    observation: Option<String>,
    screenshot: Option<String>,
) -> anyhow::Result<RecordedTurn> {
    commands::record_trajectory(
        studio,
        RecordTrajectoryRequest {
            domain: args.domain,
            representation: args.representation,
            goal: args.goal.clone(),
            name: args.name.clone(),
            observation,
            screenshot,
        },
    )
    .map_err(|e| anyhow::anyhow!("{}", e.message))
}
