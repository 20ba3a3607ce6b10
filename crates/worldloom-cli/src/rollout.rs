//! `worldloom rollout`: continue a trajectory free-running with a local model
//! (or the `copy` baseline) and write the predictions into the trajectory
//! file.
//!
//! `worldloom rollout TRAJECTORY --from K --turns N --model DIR` predicts
//! turns K, K+1, …, K+N-1 of the main path through the use-case layer's
//! rollout (`worldloom_predict::rollout`, each turn by
//! `worldloom_predict::turn` as `step` does). Each prompt uses free-running
//! context (history from the chosen predictions; see
//! `worldloom_core::prompt`), and each new prediction becomes the node's
//! chosen one, so errors compound as they would in a simulated rollout.
//! After every turn the trajectory is written in the native format (to
//! `--output`; by default over the input when it is a native file, else to
//! `<name>.worldloom.json` beside it), so an interrupted run keeps the turns
//! it finished. Thanks to the engine's state snapshots, turn
//! k+1 re-reads only the tokens after turn k's action.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;
use worldloom_core::{ContextMode, NodeId, OutputStatus, TrajectoryFile};
use worldloom_engine::GenerationParams;
use worldloom_predict::rollout::{RolloutTree, keep_chosen, rollout};

use crate::step::{
    CancelSlot, Engine, ModelOptions, generation_params, install_interrupt, lay_out, load_engine,
    node_at_turn, predict, read_trajectories, select_trajectory,
};

/// Arguments of `worldloom rollout`.
#[derive(Args, Debug)]
pub struct RolloutArgs {
    /// The trajectory: a native Worldloom file (predictions are added to it),
    /// or any format `worldloom step` reads (then a native file
    /// `<name>.worldloom.json` is written beside it).
    pub trajectory: PathBuf,
    /// The first turn to predict (1-based).
    #[arg(long)]
    pub from: usize,
    /// How many turns to predict.
    #[arg(long, default_value_t = 1)]
    pub turns: usize,
    /// Write the updated trajectory file here instead of over the input.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Print one JSON object per turn (JSON Lines) instead of streaming text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelOptions,
}

/// `DIR/NAME.worldloom.json` for input `DIR/NAME.ext` (or folder `DIR/NAME`).
fn native_path_beside(input: &Path) -> PathBuf {
    let trimmed = input.components().as_path();
    let stem = trimmed
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trajectory".into());
    let stem = if trimmed.is_dir() {
        trimmed
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or(stem)
    } else {
        stem
    };
    trimmed.with_file_name(format!("{stem}.worldloom.json"))
}

/// One line of `rollout --json`.
#[derive(Serialize)]
struct TurnLine<'a> {
    turn: usize,
    node: NodeId,
    prediction_id: u32,
    status: OutputStatus,
    observation: Option<&'a str>,
    prompt_tokens: usize,
    prompt_tokens_computed: usize,
    completion_tokens: usize,
    total_ms: f64,
}

/// Runs `worldloom rollout`.
///
/// # Errors
/// Unreadable trajectory or model, turns out of range, engine failures,
/// an unwritable output file.
pub fn run(args: &RolloutArgs) -> Result<()> {
    if args.turns == 0 {
        bail!("--turns must be at least 1");
    }
    let loaded = read_trajectories(&args.trajectory)?;
    let mut file = loaded.file;
    let index = select_trajectory(&file, &args.trajectory, args.model.trajectory_id.as_deref())?;
    let last_turn = args.from + args.turns - 1;
    // Check the whole range before loading the model.
    node_at_turn(
        &file.trajectories[index],
        &args.trajectory,
        args.from,
        "--from",
    )?;
    let turns = file.trajectories[index].main_path().edges.len();
    if last_turn > turns {
        bail!(
            "{}: trajectory `{}`: --from {} --turns {} reaches turn {last_turn}, past the main path's last turn ({turns})",
            args.trajectory.display(),
            file.trajectories[index].id,
            args.from,
            args.turns
        );
    }
    let output = match &args.output {
        Some(path) => path.clone(),
        None if loaded.native => args.trajectory.clone(),
        // Never overwrite a file of another format: write a native file beside it.
        None => native_path_beside(&args.trajectory),
    };

    let engine = load_engine(&args.model)?;
    let params = generation_params(&engine, &args.model);
    let slot = CancelSlot::default();
    install_interrupt(&slot);
    let start = if args.from == 1 {
        file.trajectories[index].root()
    } else {
        node_at_turn(
            &file.trajectories[index],
            &args.trajectory,
            args.from - 1,
            "--from",
        )?
    };
    let mut tree = FileRollout {
        args,
        file: &mut file,
        index,
        output: &output,
        engine: &engine,
        params: &params,
        slot: &slot,
        stdout: std::io::stdout(),
    };
    let end = rollout(&mut tree, start, args.turns)?;
    if end.stopped {
        eprintln!(
            "interrupted: turns {}..={} were written to {}",
            args.from,
            args.from + end.done - 1,
            output.display()
        );
        return Ok(());
    }
    if !args.json {
        eprintln!("wrote {} prediction(s) to {}", args.turns, output.display());
    }
    Ok(())
}

/// A rollout along the main path of a trajectory file: each turn's
/// prediction is kept as the state's chosen one and the file written.
struct FileRollout<'a> {
    args: &'a RolloutArgs,
    file: &'a mut TrajectoryFile,
    index: usize,
    output: &'a Path,
    engine: &'a Engine,
    params: &'a GenerationParams,
    slot: &'a CancelSlot,
    stdout: std::io::Stdout,
}

impl RolloutTree for FileRollout<'_> {
    type Error = anyhow::Error;

    /// The next state of the main path.
    fn next_state(&mut self, index: usize, _from: NodeId) -> Result<NodeId> {
        let turn = self.args.from + index;
        node_at_turn(
            &self.file.trajectories[self.index],
            &self.args.trajectory,
            turn,
            "turn",
        )
    }

    /// Predicts free-running, keeps the prediction as chosen and writes the
    /// file; a Ctrl-C keeps the partial prediction and ends the rollout.
    fn predict_and_keep(&mut self, index: usize, node: NodeId) -> Result<bool> {
        let args = self.args;
        let turn = args.from + index;
        let trajectory = &mut self.file.trajectories[self.index];
        let laid_out = lay_out(
            trajectory,
            node,
            ContextMode::FreeRunning,
            &args.trajectory,
            turn,
        )?;
        if !args.json {
            outln!("══ turn {turn} (node {node}) ══");
        }
        let echo: Option<&mut dyn Write> = if args.json {
            None
        } else {
            Some(&mut self.stdout)
        };
        let predicted = predict(
            self.engine,
            laid_out,
            trajectory,
            node,
            self.params,
            echo,
            self.slot,
        )?;
        let outcome = &predicted.collected;
        let (status, observation) = (
            predicted.record.status,
            predicted.record.observation.clone(),
        );
        let id = keep_chosen(trajectory, node, predicted.record.clone())?;
        self.file.write(self.output)?;
        let s = &outcome.stats;
        if args.json {
            let line = TurnLine {
                turn,
                node,
                prediction_id: id.0,
                status,
                observation: observation.as_deref(),
                prompt_tokens: s.prompt_tokens,
                prompt_tokens_computed: s.prompt_tokens_computed,
                completion_tokens: s.completion_tokens,
                total_ms: outcome.total_ms,
            };
            outln!("{}", serde_json::to_string(&line)?);
        } else {
            outln!("── observation (status: {status}) ──");
            outln!("{}", observation.as_deref().unwrap_or("(none)"));
            eprintln!(
                "turn {turn}: {} prompt tokens ({} computed), {} generated, {:.0} ms",
                s.prompt_tokens, s.prompt_tokens_computed, s.completion_tokens, outcome.total_ms
            );
        }
        Ok(s.stop_reason != Some(worldloom_engine::StopReason::Cancelled))
    }
}
