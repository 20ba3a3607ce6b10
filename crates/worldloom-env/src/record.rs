//! Recording episodes into a workspace: each episode is a trajectory
//! (source format [`EPISODE_SOURCE_FORMAT`], tagged [`LIVE_EPISODE_TAG`]),
//! each step a turn with its action and the chosen prediction (engine,
//! parameters, seed, raw output, token counts, timings), each control
//! instruction the turn's perturbation, and the end a note with the reason,
//! the steps, the reward and its rationale.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use worldloom_core::{Action, EdgeId, NodeId, Prediction, Trajectory};
use worldloom_store::{TrajectoryKey, Workspace};

use crate::error::EnvError;

/// `source.format` of a recorded episode (task loading skips these).
pub const EPISODE_SOURCE_FORMAT: &str = "openenv-episode";

/// The tag every recorded episode carries, so the studio's tag filter lists
/// the live episodes.
pub const LIVE_EPISODE_TAG: &str = "live-episode";

/// Where episodes of `tasks` are recorded unless told: the tasks
/// workspace itself, else `NAME.episodes.worldloom` beside the tasks file
/// `NAME.ext`.
pub fn default_record_path(tasks: &Path) -> PathBuf {
    if tasks.is_file() && worldloom_store::is_workspace_file(tasks) {
        return tasks.to_path_buf();
    }
    let stem = tasks
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tasks".into());
    tasks.with_file_name(format!("{stem}.episodes.worldloom"))
}

/// A workspace episodes are written into; one connection behind a mutex
/// (writes are short transactions).
pub struct Recorder {
    path: PathBuf,
    workspace: Mutex<Workspace>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .finish()
    }
}

impl Recorder {
    /// Opens (or creates) the workspace at `path`.
    ///
    /// # Errors
    /// [`EnvError::Record`] naming the file.
    pub fn open(path: &Path) -> Result<Self, EnvError> {
        let workspace = Workspace::open(path)
            .map_err(|e| EnvError::Record(format!("{}: {e}", path.display())))?;
        Ok(Self {
            path: path.to_path_buf(),
            workspace: Mutex::new(workspace),
        })
    }

    /// The workspace file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Workspace) -> worldloom_store::Result<T>,
    ) -> Result<T, EnvError> {
        let mut ws = self.workspace.lock().map_err(|_| {
            EnvError::Record(format!("{}: workspace lock poisoned", self.path.display()))
        })?;
        f(&mut ws).map_err(|e| EnvError::Record(format!("{}: {what}: {e}", self.path.display())))
    }

    /// Imports the episode's first state as a new trajectory and tags it.
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn start(&self, trajectory: &Trajectory) -> Result<TrajectoryKey, EnvError> {
        self.with("starting an episode", |ws| {
            let key = ws.import_trajectory(trajectory, None)?;
            ws.set_tag(key, None, LIVE_EPISODE_TAG, true)?;
            Ok(key)
        })
    }

    /// Adds a turn from `from` with `action`, its control instruction and
    /// (unless the action ended the episode) its chosen prediction.
    /// Returns the stored edge and node.
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn turn(
        &self,
        key: TrajectoryKey,
        from: NodeId,
        action: Action,
        perturbation: Option<&str>,
        prediction: Option<&Prediction>,
    ) -> Result<(EdgeId, NodeId), EnvError> {
        self.with("recording a step", |ws| {
            let (edge, node) = ws.add_turn(key, from, action)?;
            if let Some(text) = perturbation {
                ws.set_perturbation(key, edge, Some(text))?;
            }
            if let Some(p) = prediction {
                ws.add_chosen_prediction(key, node, p)?;
            }
            Ok((edge, node))
        })
    }

    /// Writes the closing note.
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn finish(&self, key: TrajectoryKey, note: &str) -> Result<(), EnvError> {
        self.with("finishing an episode", |ws| {
            ws.add_note(key, None, note)?;
            Ok(())
        })
    }
}
