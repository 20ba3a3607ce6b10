//! Recording episodes into a workspace: each episode is a trajectory
//! (source format [`crate::tasks::EPISODE_SOURCE_FORMAT`], tagged [`LIVE_EPISODE_TAG`]),
//! each step a turn with its action and the chosen prediction (engine,
//! parameters, seed, raw output, token counts, timings), each control
//! instruction the turn's perturbation, and the end a note with the reason,
//! the steps, the reward and its rationale (and, for an LLM judge, a second
//! note with the judge's call: the messages sent and its answer).
//!
//! **Cost per step.** A step appends its rows (edge, node, perturbation,
//! chosen prediction) without reading the trajectory back
//! ([`Workspace::append_turns`]), so it costs the same at turn 1 and turn
//! 300. Steps of concurrent sessions are written together: each step queues
//! its turn, and whoever holds the workspace writes every queued turn in one
//! transaction (one disk sync), each turn still its own change in the undo
//! log. A step returns once its turn is committed, so the studio (which
//! rereads the file) shows it at once.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, mpsc};

use worldloom_core::{Action, EdgeId, NodeId, Prediction, Trajectory};
use worldloom_store::{AppendTurn, TrajectoryKey, Workspace};

use crate::error::EnvError;
use crate::reward::JudgeCall;

/// The first line of the note that keeps an LLM judge's call with a
/// recorded episode; the rest of the note is the call as JSON
/// ([`JudgeCall`]: `judge`, `messages`, `answer`, `error`, `verdict`,
/// `rationale`).
pub const JUDGE_NOTE_HEADER: &str = "judge call (JSON below: the messages sent and the answer)";

type Reply = mpsc::Sender<Result<(EdgeId, NodeId), EnvError>>;

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
    /// Turns waiting to be written, with where each answer goes.
    queue: Mutex<Vec<(AppendTurn, Reply)>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .finish()
    }
}

impl Recorder {
    /// Opens (or creates) the workspace at `path`, and tags
    /// [`LIVE_EPISODE_TAG`] any recorded episode that never had the tag:
    /// older builds imported and tagged an episode in two transactions, and
    /// a kill between them left it untagged. An episode whose tag was
    /// cleared by hand stays cleared.
    ///
    /// # Errors
    /// [`EnvError::Record`] naming the file.
    pub fn open(path: &Path) -> Result<Self, EnvError> {
        let fail =
            |e: worldloom_store::StoreError| EnvError::Record(format!("{}: {e}", path.display()));
        let mut workspace = Workspace::open(path).map_err(fail)?;
        for key in workspace
            .never_tagged(crate::tasks::EPISODE_SOURCE_FORMAT, LIVE_EPISODE_TAG)
            .map_err(fail)?
        {
            workspace
                .set_tag(key, None, LIVE_EPISODE_TAG, true)
                .map_err(fail)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            workspace: Mutex::new(workspace),
            queue: Mutex::new(Vec::new()),
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

    /// Imports the episode's first state as a new trajectory tagged
    /// [`LIVE_EPISODE_TAG`], in one change (one transaction: a crash never
    /// leaves an episode without its tag).
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn start(&self, trajectory: &Trajectory) -> Result<TrajectoryKey, EnvError> {
        self.with("starting an episode", |ws| {
            ws.import_trajectory_tagged(trajectory, None, &[LIVE_EPISODE_TAG])
        })
    }

    /// Adds a turn from `from` (a node of the stored trajectory) with
    /// `action`, its control instruction and (unless the action ended the
    /// episode) its chosen prediction; returns once it is committed, with
    /// the stored edge and node. Turns queued by other sessions meanwhile
    /// are committed in the same transaction (see the module's notes).
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
        let poisoned =
            || EnvError::Record(format!("{}: workspace lock poisoned", self.path.display()));
        let (reply, answer) = mpsc::channel();
        let turn = AppendTurn {
            key,
            from,
            action,
            // The new state of an episode is predicted, never observed.
            real: None,
            perturbation: perturbation.map(str::to_owned),
            prediction: prediction.cloned(),
        };
        self.queue
            .lock()
            .map_err(|_| poisoned())?
            .push((turn, reply));
        {
            // Whoever holds the workspace writes every turn queued so far;
            // ours is either in this batch or was in the previous holder's.
            let mut ws = self.workspace.lock().map_err(|_| poisoned())?;
            let batch = std::mem::take(&mut *self.queue.lock().map_err(|_| poisoned())?);
            if !batch.is_empty() {
                self.write_batch(&mut ws, batch);
            }
        }
        answer.recv().unwrap_or_else(|_| {
            Err(EnvError::Record(format!(
                "{}: the step's turn was not written",
                self.path.display()
            )))
        })
    }

    /// Writes `batch` in one transaction; when that fails with several
    /// turns, each is written alone so one bad turn fails only itself.
    fn write_batch(&self, ws: &mut Workspace, batch: Vec<(AppendTurn, Reply)>) {
        let (turns, replies): (Vec<AppendTurn>, Vec<Reply>) = batch.into_iter().unzip();
        let fail = |e: worldloom_store::StoreError| {
            EnvError::Record(format!("{}: recording a step: {e}", self.path.display()))
        };
        match ws.append_turns(&turns) {
            Ok(ids) => {
                for (reply, id) in replies.iter().zip(ids) {
                    let _ = reply.send(Ok(id));
                }
            }
            Err(e) if turns.len() == 1 => {
                let _ = replies[0].send(Err(fail(e)));
            }
            Err(_) => {
                for (turn, reply) in turns.into_iter().zip(replies) {
                    let result = ws
                        .append_turns(std::slice::from_ref(&turn))
                        .map(|ids| ids[0])
                        .map_err(fail);
                    let _ = reply.send(result);
                }
            }
        }
    }

    /// Writes the closing note and, when the reward came from an LLM
    /// judge, a second note with its call ([`JUDGE_NOTE_HEADER`], then the
    /// call as JSON).
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn finish(
        &self,
        key: TrajectoryKey,
        note: &str,
        judge: Option<&JudgeCall>,
    ) -> Result<(), EnvError> {
        let judge_note = match judge {
            Some(call) => Some(format!(
                "{JUDGE_NOTE_HEADER}\n{}",
                serde_json::to_string_pretty(call).map_err(|e| EnvError::Record(format!(
                    "{}: writing the judge's call: {e}",
                    self.path.display()
                )))?
            )),
            None => None,
        };
        self.with("finishing an episode", |ws| {
            ws.add_note(key, None, note)?;
            if let Some(text) = &judge_note {
                ws.add_note(key, None, text)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldloom_core::{Domain, Observation, Representation};

    #[test]
    fn an_episode_is_stored_with_its_tag_in_one_change() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("e.worldloom");
        let recorder = Recorder::open(&path).expect("open");
        let mut first = Trajectory::new(
            "ep-1",
            Domain::Web,
            Some(Observation::new(Representation::Axtree, "RootWebArea 'S0'")),
        );
        first.source.format = crate::tasks::EPISODE_SOURCE_FORMAT.into();
        let key = recorder.start(&first).expect("start");
        drop(recorder);

        let mut ws = Workspace::open(&path).expect("reopen");
        // One change holds the trajectory and its tag: a kill between two
        // transactions can no longer leave an untagged episode.
        let log = ws.history(10).expect("log");
        assert_eq!(log.len(), 1, "{log:?}");
        assert_eq!(log[0].kind, "import");
        let tags = ws.tags().expect("tags");
        assert_eq!(tags.len(), 1);
        assert_eq!(
            (tags[0].trajectory, tags[0].node, tags[0].tag.as_str()),
            (key, None, LIVE_EPISODE_TAG)
        );
        // Undoing the import takes the tag with it.
        ws.undo().expect("undo");
        assert!(ws.tags().expect("tags").is_empty());
        assert!(ws.list_trajectories().expect("list").is_empty());
    }

    #[test]
    fn an_episode_left_untagged_by_an_older_build_is_tagged_on_open() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("e.worldloom");
        let mut episode = Trajectory::new("ep-1", Domain::Web, None);
        episode.source.format = crate::tasks::EPISODE_SOURCE_FORMAT.into();
        let (untagged, cleared, task) = {
            let mut ws = Workspace::open(&path).expect("ws");
            // Killed between the import and the tag, as two transactions were.
            let untagged = ws.import_trajectory(&episode, None).expect("import");
            let cleared = ws.import_trajectory(&episode, None).expect("import");
            ws.set_tag(cleared, None, LIVE_EPISODE_TAG, true)
                .expect("tag");
            ws.set_tag(cleared, None, LIVE_EPISODE_TAG, false)
                .expect("clear");
            let task = ws
                .import_trajectory(&Trajectory::new("task", Domain::Web, None), None)
                .expect("a task");
            (untagged, cleared, task)
        };
        drop(Recorder::open(&path).expect("open"));
        let ws = Workspace::open(&path).expect("reopen");
        let tagged: Vec<TrajectoryKey> = ws
            .tags()
            .expect("tags")
            .into_iter()
            .filter(|t| t.tag == LIVE_EPISODE_TAG)
            .map(|t| t.trajectory)
            .collect();
        assert_eq!(tagged, [untagged]);
        assert!(!tagged.contains(&cleared) && !tagged.contains(&task));
        // Opening again finds nothing more to do.
        drop(Recorder::open(&path).expect("open"));
        assert_eq!(
            Workspace::open(&path)
                .expect("reopen")
                .history(100)
                .expect("log")
                .len(),
            6
        );
    }
}
