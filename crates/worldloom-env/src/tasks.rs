//! Tasks: what an episode starts from (domain, system prompt, goal, first
//! observation), read from an AgentWorldBench file (or any trajectory file
//! `worldloom import` reads) or from a workspace's trajectories, and picked
//! by a seed.

use std::path::Path;

use worldloom_core::formats::awb::prompt_sections;
use worldloom_core::formats::guess_representation;
use worldloom_core::prompt::context_observation;
use worldloom_core::{
    ContextMode, Domain, ImportOptions, NodeId, Observation, Trajectory, import_path,
};
use worldloom_store::{Workspace, is_workspace_file};

use crate::error::EnvError;
use crate::record::EPISODE_SOURCE_FORMAT;

/// One task an episode can start from.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The task id: the trajectory's id in its source.
    pub id: String,
    /// Its domain.
    pub domain: Domain,
    /// The world model's system prompt (`None`: the domain's default).
    pub system_prompt: Option<String>,
    /// The instruction the agent is given.
    pub goal: Option<String>,
    /// The first observation (`None` where the domain starts without one,
    /// as AgentWorldBench's text domains do: the agent acts first).
    pub initial: Option<Observation>,
    /// Where the task came from (file name, or `workspace:KEY`).
    pub source: String,
    /// The state the task should end in, when known: the authored (else
    /// real) observation at the tagged branch's leaf for `--task-tag`, else
    /// at the main path's last state. [`crate::reward::TargetStateReward`]
    /// compares the episode's states with it.
    pub target: Option<Observation>,
}

impl Task {
    /// The task a trajectory starts: its domain and system prompt; its goal,
    /// else the first turn prompt's `**Task Instruction:**`; its initial
    /// state (authored, predicted or real, as free-running context reads
    /// it), else the first turn prompt's `**Current State:**` section.
    pub fn from_trajectory(trajectory: &Trajectory, source: impl Into<String>) -> Self {
        let leaf = trajectory.main_path().nodes.last().copied();
        Self::from_trajectory_to(trajectory, source, leaf)
    }

    /// Like [`Task::from_trajectory`], with the target state taken at
    /// `target` (a branch's leaf): its authored observation, else its real
    /// one.
    pub fn from_trajectory_to(
        trajectory: &Trajectory,
        source: impl Into<String>,
        target: Option<NodeId>,
    ) -> Self {
        let target = target
            .filter(|n| *n != trajectory.root())
            .and_then(|n| trajectory.node(n))
            .and_then(|n| {
                n.current_authored()
                    .map(|a| a.observation.clone())
                    .or_else(|| n.real.clone())
            });
        let sections = trajectory
            .edges
            .first()
            .and_then(|e| e.prompt.as_deref())
            .map(prompt_sections)
            .unwrap_or_default();
        let initial = context_observation(trajectory, trajectory.root(), ContextMode::FreeRunning)
            .or_else(|| {
                sections
                    .state
                    .map(|s| Observation::new(guess_representation(trajectory.domain, &s), s))
            });
        Self {
            id: trajectory.id.clone(),
            domain: trajectory.domain,
            system_prompt: trajectory.system_prompt.clone().filter(|s| !s.is_empty()),
            goal: trajectory.goal.clone().or(sections.goal),
            initial,
            source: source.into(),
            target,
        }
    }
}

/// The tasks a server offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskSet {
    tasks: Vec<Task>,
}

impl TaskSet {
    /// A set of the given tasks.
    pub fn new(tasks: Vec<Task>) -> Self {
        Self { tasks }
    }

    /// Reads tasks from `path`: a workspace file (every live trajectory but
    /// recorded episodes) or any trajectory file or folder
    /// `worldloom import` reads (an AgentWorldBench `.jsonl` file gives one
    /// task per trajectory).
    ///
    /// # Errors
    /// [`EnvError::Tasks`] naming the file when it cannot be read or holds
    /// no task.
    pub fn load(path: &Path) -> Result<Self, EnvError> {
        Self::load_tagged(path, None)
    }

    /// Like [`TaskSet::load`]; with `tag`, a workspace gives only the
    /// trajectories carrying that tag (on the trajectory or on one of its
    /// branches), such as an authored curriculum.
    ///
    /// # Errors
    /// As [`TaskSet::load`]; [`EnvError::Tasks`] for a tag given with a
    /// file that is not a workspace.
    pub fn load_tagged(path: &Path, tag: Option<&str>) -> Result<Self, EnvError> {
        let fail = |message: String| EnvError::Tasks(format!("{}: {message}", path.display()));
        let mut tasks = Vec::new();
        if path.is_file() && is_workspace_file(path) {
            let ws = Workspace::open(path).map_err(|e| fail(e.to_string()))?;
            let tagged: Option<Vec<_>> = match tag {
                Some(tag) => Some(
                    ws.tags()
                        .map_err(|e| fail(e.to_string()))?
                        .into_iter()
                        .filter(|t| t.tag == tag)
                        .map(|t| (t.trajectory, t.node))
                        .collect(),
                ),
                None => None,
            };
            for row in ws.list_trajectories().map_err(|e| fail(e.to_string()))? {
                if row.source.format == EPISODE_SOURCE_FORMAT {
                    continue;
                }
                let nodes: Vec<Option<NodeId>> = match &tagged {
                    Some(tags) => tags
                        .iter()
                        .filter(|(key, _)| *key == row.key)
                        .map(|(_, node)| *node)
                        .collect(),
                    None => vec![None],
                };
                if nodes.is_empty() {
                    continue;
                }
                let stored = ws
                    .load_trajectory(row.key)
                    .map_err(|e| fail(e.to_string()))?;
                let source = format!("workspace:{}", row.key.0);
                // One task per tagged branch; a tag on the trajectory (or no
                // tag asked for) gives its main path.
                let mut seen = Vec::new();
                for node in nodes {
                    if seen.contains(&node) {
                        continue;
                    }
                    seen.push(node);
                    let mut task = match node {
                        Some(leaf) => {
                            Task::from_trajectory_to(&stored.trajectory, source.clone(), Some(leaf))
                        }
                        None => Task::from_trajectory(&stored.trajectory, source.clone()),
                    };
                    if seen.len() > 1 {
                        task.id = format!("{}@{}", task.id, node.map_or(0, |n| n.0));
                    }
                    tasks.push(task);
                }
            }
        } else {
            if let Some(tag) = tag {
                return Err(fail(format!(
                    "--task-tag {tag} selects trajectories of a workspace, and this is not one"
                )));
            }
            let imported =
                import_path(path, &ImportOptions::default()).map_err(|e| fail(e.to_string()))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            tasks.extend(
                imported
                    .trajectories
                    .iter()
                    .map(|t| Task::from_trajectory(t, name.clone())),
            );
        }
        if tasks.is_empty() {
            return Err(fail(match tag {
                Some(tag) => format!("no trajectory tagged `{tag}` in it"),
                None => "no task in it".into(),
            }));
        }
        Ok(Self { tasks })
    }

    /// Every task, in source order.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The domains that have tasks, in [`Domain::ALL`] order.
    pub fn domains(&self) -> Vec<Domain> {
        Domain::ALL
            .into_iter()
            .filter(|d| self.tasks.iter().any(|t| t.domain == *d))
            .collect()
    }

    /// Picks a task: the one named `task_id`; else one of `domain`'s tasks
    /// (or of all tasks), chosen by `seed` (the same seed picks the same
    /// task from the same set).
    ///
    /// # Errors
    /// [`EnvError::Invalid`] for an unknown task id or a domain without
    /// tasks.
    pub fn pick(
        &self,
        seed: u64,
        task_id: Option<&str>,
        domain: Option<Domain>,
    ) -> Result<&Task, EnvError> {
        if let Some(id) = task_id {
            return self
                .tasks
                .iter()
                .find(|t| t.id == id && domain.is_none_or(|d| d == t.domain))
                .ok_or_else(|| {
                    EnvError::Invalid(format!(
                        "task_id: no task `{id}`{} ({} tasks are served)",
                        domain
                            .map(|d| format!(" in domain {d}"))
                            .unwrap_or_default(),
                        self.tasks.len()
                    ))
                });
        }
        let pool: Vec<&Task> = self
            .tasks
            .iter()
            .filter(|t| domain.is_none_or(|d| d == t.domain))
            .collect();
        if pool.is_empty() {
            let served: Vec<&str> = self.domains().into_iter().map(Domain::as_str).collect();
            return Err(EnvError::Invalid(format!(
                "domain: no task in domain {} (served: {})",
                domain.map(|d| d.as_str()).unwrap_or("?"),
                served.join(", ")
            )));
        }
        Ok(pool[(splitmix64(seed) % pool.len() as u64) as usize])
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): one step of a small, fast
/// generator, used to spread seeds.
pub fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A value in [0, 1) from `seed` (53 bits of [`splitmix64`]).
pub fn unit_interval(seed: u64) -> f64 {
    (splitmix64(seed) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, domain: Domain) -> Task {
        Task {
            id: id.into(),
            domain,
            system_prompt: None,
            goal: None,
            initial: None,
            source: "t".into(),
            target: None,
        }
    }

    #[test]
    fn picks_by_id_domain_and_seed() {
        let set = TaskSet::new(vec![
            task("a", Domain::Web),
            task("b", Domain::Web),
            task("c", Domain::Terminal),
        ]);
        assert_eq!(
            set.pick(0, Some("c"), None).map(|t| &t.id).ok(),
            Some(&"c".to_owned())
        );
        assert!(set.pick(0, Some("zz"), None).is_err());
        for seed in 0..20 {
            assert_eq!(
                set.pick(seed, None, Some(Domain::Terminal))
                    .map(|t| t.id.as_str())
                    .ok(),
                Some("c")
            );
            let a = set.pick(seed, None, None).map(|t| t.id.clone()).ok();
            assert_eq!(a, set.pick(seed, None, None).map(|t| t.id.clone()).ok());
        }
        let err = set
            .pick(0, None, Some(Domain::Android))
            .unwrap_err()
            .to_string();
        assert!(err.contains("served: terminal, web"), "{err}");
        let picked: std::collections::BTreeSet<String> = (0..50)
            .filter_map(|s| set.pick(s, None, None).ok().map(|t| t.id.clone()))
            .collect();
        assert_eq!(picked.len(), 3);
    }

    #[test]
    fn a_workspace_gives_its_tagged_trajectories() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("c.worldloom");
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
        let imported = import_path(&sample, &ImportOptions::default()).expect("import");
        {
            let mut ws = Workspace::open(&path).expect("ws");
            let keys: Vec<_> = imported
                .trajectories
                .iter()
                .map(|t| ws.import_trajectory(t, None).expect("import"))
                .collect();
            ws.set_tag(keys[4], Some(worldloom_core::NodeId(1)), "curriculum", true)
                .expect("tag");
        }
        assert_eq!(TaskSet::load(&path).expect("all").tasks().len(), 7);
        let tagged = TaskSet::load_tagged(&path, Some("curriculum")).expect("tagged");
        assert_eq!(tagged.tasks().len(), 1);
        assert_eq!(tagged.tasks()[0].domain, Domain::Web);
        assert_eq!(
            tagged.tasks()[0].goal.as_deref(),
            Some("Buy two stoneware mugs.")
        );
        let target = tagged.tasks()[0].target.as_ref().expect("the tagged state");
        assert_eq!(
            Some(target),
            imported.trajectories[4].nodes[1].real.as_ref()
        );
        let err = TaskSet::load_tagged(&path, Some("nope"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no trajectory tagged `nope`"), "{err}");
        assert!(TaskSet::load_tagged(&sample, Some("x")).is_err());
    }

    #[test]
    fn awb_sample_gives_goal_and_first_state() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
        let set = TaskSet::load(&path).expect("loads");
        let web = set
            .tasks()
            .iter()
            .find(|t| t.domain == Domain::Web)
            .expect("a web task");
        assert_eq!(web.goal.as_deref(), Some("Buy two stoneware mugs."));
        let initial = web.initial.as_ref().expect("first state");
        assert!(
            initial.text.starts_with("RootWebArea 'Mugs"),
            "{}",
            initial.text
        );
        assert!(
            web.system_prompt
                .as_deref()
                .is_some_and(|s| s.contains("BrowserGym"))
        );
        let terminal = set
            .tasks()
            .iter()
            .find(|t| t.domain == Domain::Terminal)
            .expect("terminal");
        assert!(terminal.initial.is_none());
        assert_eq!(set.domains().len(), 7);
    }
}
