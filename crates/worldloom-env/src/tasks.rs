//! Tasks: what an episode starts from (domain, system prompt, goal, first
//! observation), read from an AgentWorldBench file (or any trajectory file
//! `worldloom import` reads) or from a workspace's trajectories, and picked
//! by a seed.
//!
//! **Where a tagged branch starts.** A tag on a branch (set on one of its
//! states, normally its leaf) makes a task that starts at the branch's
//! *fork point*: the state its first own turn leaves from, i.e. the last
//! state the branch shares with the trajectory's main path (the oldest live
//! edge from every state). The episode gets the history up to there — the
//! turns of the shared path with their states as free-running context
//! reads them (authored, else chosen prediction, else real) — and goes on
//! from the fork state, so the agent meets the situation the curriculum's
//! author branched from. A tag on the trajectory itself, or on a state of
//! the main path, starts at the root. The target state (for
//! [`crate::reward::TargetStateReward`]) is the tagged state.

use std::path::Path;

use serde_json::Map;
use worldloom_core::formats::awb::prompt_sections;
use worldloom_core::formats::guess_representation;
use worldloom_core::prompt::context_observation;
use worldloom_core::{
    ContextMode, Domain, ImportOptions, Node, NodeId, Observation, Trajectory, import_path,
};
use worldloom_store::{StoredTrajectory, Workspace, is_workspace_file};

use crate::error::EnvError;

/// `source.format` of a recorded episode: [`crate::record::Recorder`] writes
/// it, and task loading skips trajectories that carry it.
pub const EPISODE_SOURCE_FORMAT: &str = "openenv-episode";

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
    /// The turns before the state the episode starts from, when a task
    /// starts mid-tree (a tagged branch's fork point): a one-path
    /// trajectory from the root to that state, whose last node is the
    /// start. Each state keeps its real observation, its current authored
    /// one and its chosen prediction (what free-running context reads; a
    /// root whose state lives only in the first prompt gets
    /// [`Task::initial`]); actions keep their source prompt strings.
    /// `None`: the episode starts at [`Task::initial`].
    pub history: Option<Trajectory>,
}

impl Task {
    /// The task a trajectory starts: its domain and system prompt; its goal,
    /// else the first turn prompt's goal section (`**Task Instruction:**`,
    /// `**Task:**`, …); its initial state (authored, predicted or real, as
    /// free-running context reads it), else the first turn prompt's state
    /// section (`**Current State:**`, `**Current Page State:**`, …), both
    /// read by core's [`prompt_sections`], the one reader of them.
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
            history: None,
        }
    }

    /// The task of the branch tagged at `tagged` in `stored` (a workspace's
    /// trajectory): it starts at the branch's fork point with the history up
    /// to there (see the module's notes), and its target is the tagged
    /// state.
    pub fn from_branch(
        stored: &StoredTrajectory,
        source: impl Into<String>,
        tagged: NodeId,
    ) -> Self {
        let t = &stored.trajectory;
        let mut task = Self::from_trajectory_to(t, source, Some(tagged));
        let Ok(path) = t.path_to(tagged) else {
            return task;
        };
        // The live main path: from each state its oldest live edge.
        let mut on_main = vec![t.root()];
        let mut current = t.root();
        while let Some(&edge) = stored.live_children(current).first() {
            let Some(next) = t.edge(edge).map(|e| e.to) else {
                break;
            };
            if on_main.contains(&next) {
                break;
            }
            on_main.push(next);
            current = next;
        }
        let fork = path
            .edges
            .iter()
            .filter_map(|e| t.edge(*e))
            .find(|e| !on_main.contains(&e.to))
            .map_or(t.root(), |e| e.from);
        if fork != t.root() {
            task.history = history_to(t, fork).map(|mut h| {
                // A first state that lives only in the first prompt (an
                // AgentWorldBench GUI row) becomes the root's, as for a task
                // that starts at the root.
                let root = h.root();
                if context_observation(&h, root, ContextMode::FreeRunning).is_none() {
                    h.nodes[0].real = task.initial.clone();
                }
                h
            });
        }
        task
    }

    /// How many turns come before the state the episode starts from (0 at
    /// the root).
    pub fn start_turn(&self) -> usize {
        self.history.as_ref().map_or(0, |h| h.edges.len())
    }
}

/// The path of `t` from its root to `to` as a trajectory of its own (same
/// id, domain, goal and system prompt): every state with its real
/// observation, current authored observation and chosen prediction; every
/// action with its source prompt string (not its AgentWorldBench row, which
/// belonged to the source file).
fn history_to(t: &Trajectory, to: NodeId) -> Option<Trajectory> {
    let path = t.path_to(to).ok()?;
    let copy = |node: &Node, id: NodeId, parent_edge| {
        let chosen = node.chosen_prediction.and_then(|p| node.prediction(p));
        Node {
            id,
            parent_edge,
            real: node.real.clone(),
            predictions: chosen.cloned().into_iter().collect(),
            authored: node.current_authored().cloned().into_iter().collect(),
            chosen_prediction: chosen.map(|p| p.id),
            screenshot: node.screenshot.clone(),
            extra: Map::new(),
        }
    };
    let mut h = Trajectory::new(t.id.clone(), t.domain, None);
    h.goal = t.goal.clone();
    h.system_prompt = t.system_prompt.clone();
    h.nodes[0] = copy(t.node(t.root())?, h.root(), None);
    let mut at = h.root();
    for edge in &path.edges {
        let e = t.edge(*edge)?;
        let (new_edge, new_node) = h.add_step(at, e.action.clone(), None).ok()?;
        h.edges[new_edge.0 as usize].prompt = e.prompt.clone();
        h.nodes[new_node.0 as usize] = copy(t.node(e.to)?, new_node, Some(new_edge));
        at = new_node;
    }
    Some(h)
}

/// What a task read from a file lacks that its first turn's prompt should
/// have given: a GUI task without a first state, or without a goal; any
/// task without a goal whose first prompt has sections besides the action
/// (a heading [`prompt_sections`] does not read). Names the file's row
/// (1-based, as AgentWorldBench rows are counted) and the trajectory, and
/// lists the prompt's headings. `None` when nothing is missing.
fn missing_sections(trajectory: &Trajectory, task: &Task, file: &str) -> Option<String> {
    let first = trajectory.edges.first()?;
    let sections = first.prompt.as_deref().map(prompt_sections)?;
    let gui = trajectory.domain.is_gui();
    let unread = sections
        .headings
        .iter()
        .any(|h| !h.eq_ignore_ascii_case("action") && !h.eq_ignore_ascii_case("last action error"));
    let mut missing = Vec::new();
    if task.goal.is_none() && (gui || unread) {
        missing.push("goal");
    }
    if task.initial.is_none() && gui {
        missing.push("first state");
    }
    if missing.is_empty() {
        return None;
    }
    let row = first
        .awb_row
        .as_ref()
        .and_then(|r| r.row)
        .map_or_else(|| "first turn".to_owned(), |r| format!("row {}", r + 1));
    let headings = if sections.headings.is_empty() {
        "none".to_owned()
    } else {
        sections
            .headings
            .iter()
            .map(|h| format!("**{h}:**"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "{file}: {row} (trajectory `{}`, {}): no {} in the first turn's prompt (its headings: {headings}); its episodes start without {}",
        trajectory.id,
        trajectory.domain,
        missing.join(" and no "),
        if missing.len() == 2 { "them" } else { "it" }
    ))
}

/// The tasks a server offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskSet {
    tasks: Vec<Task>,
    warnings: Vec<String>,
}

impl TaskSet {
    /// A set of the given tasks.
    pub fn new(tasks: Vec<Task>) -> Self {
        Self {
            tasks,
            warnings: Vec::new(),
        }
    }

    /// What loading noticed without refusing: a task whose first state or
    /// goal could not be found in its first turn's prompt (naming the
    /// file's row). `serve-env` prints them when it starts.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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
        let mut warnings = Vec::new();
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
                        Some(tagged) => Task::from_branch(&stored, source.clone(), tagged),
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
            for t in &imported.trajectories {
                let task = Task::from_trajectory(t, name.clone());
                warnings.extend(missing_sections(t, &task, &name));
                tasks.push(task);
            }
        }
        if tasks.is_empty() {
            return Err(fail(match tag {
                Some(tag) => format!("no trajectory tagged `{tag}` in it"),
                None => "no task in it".into(),
            }));
        }
        Ok(Self { tasks, warnings })
    }

    /// Keeps only the tasks of `domains` (all of them when empty), for a
    /// server of one domain or a few.
    ///
    /// # Errors
    /// [`EnvError::Tasks`] when none of them has a task, naming the domains
    /// served.
    pub fn only_domains(self, domains: &[Domain]) -> Result<Self, EnvError> {
        if domains.is_empty() {
            return Ok(self);
        }
        let served: Vec<&str> = self.domains().into_iter().map(Domain::as_str).collect();
        let tasks: Vec<Task> = self
            .tasks
            .into_iter()
            .filter(|t| domains.contains(&t.domain))
            .collect();
        if tasks.is_empty() {
            let asked: Vec<&str> = domains.iter().map(|d| d.as_str()).collect();
            return Err(EnvError::Tasks(format!(
                "--domain {}: no task in that domain (the tasks have: {})",
                asked.join(", "),
                served.join(", ")
            )));
        }
        Ok(Self {
            tasks,
            warnings: self.warnings,
        })
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
            history: None,
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
    fn heading_variants_give_goal_and_first_state_and_a_missing_one_is_warned_of() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("variants.jsonl");
        let row = |task: &str, id: u64, prompt: &str| {
            serde_json::json!({
                "task": task, "id": id, "prompt": [prompt],
                "response": ["**Environment Observation:**\nnext"],
                "current_prompt": prompt, "system_str": "", "turn_idx": 1, "total_turns": 1,
            })
            .to_string()
        };
        let lines = [
            row(
                "web",
                1,
                "### Turn 1\n**Task:**\nBuy socks.\n\n**Current Page State:**\nRootWebArea 'Socks'\n\n**Action:**\n```python\nclick('3')\n```",
            ),
            row(
                "android",
                2,
                "### Turn 1\n**Task:**\nTurn on wifi.\n\n**Current Screen State:**\n<hierarchy rotation=\"0\"/>\n\n**Action:**\n```json\n{\"action_type\": \"wait\"}\n```",
            ),
            row(
                "web",
                3,
                "### Turn 1\n**Objective:**\nFind it.\n\n**Page:**\nRootWebArea 'X'\n\n**Action:**\n```python\nclick('4')\n```",
            ),
        ];
        std::fs::write(&path, lines.join("\n")).expect("write");
        let set = TaskSet::load(&path).expect("loads");
        let tasks = set.tasks();
        assert_eq!(tasks.len(), 3);
        assert_eq!(tasks[0].goal.as_deref(), Some("Buy socks."));
        assert_eq!(
            tasks[0].initial.as_ref().map(|o| o.text.as_str()),
            Some("RootWebArea 'Socks'")
        );
        assert_eq!(tasks[1].goal.as_deref(), Some("Turn on wifi."));
        assert_eq!(
            tasks[1].initial.as_ref().map(|o| o.text.as_str()),
            Some("<hierarchy rotation=\"0\"/>")
        );
        assert_eq!((&tasks[2].goal, &tasks[2].initial), (&None, &None));
        assert_eq!(set.warnings().len(), 1, "{:?}", set.warnings());
        let w = &set.warnings()[0];
        assert!(
            w.starts_with("variants.jsonl: row 3 (trajectory `3`, web): no goal and no first state in the first turn's prompt (its headings: **Objective:**, **Page:**, **Action:**)"),
            "{w}"
        );
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
        // Text domains without a goal heading are not warned of.
        assert_eq!(set.warnings(), &[] as &[String]);
        assert_eq!(set.domains().len(), 7);
        let two = set
            .clone()
            .only_domains(&[Domain::Web, Domain::Os])
            .expect("two domains");
        assert_eq!(two.domains(), [Domain::Web, Domain::Os]);
        assert_eq!(two.tasks().len(), 2);
        assert_eq!(set.clone().only_domains(&[]).expect("all"), set);
        let none = TaskSet::new(vec![web.clone()])
            .only_domains(&[Domain::Android])
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("--domain android: no task") && none.contains("have: web"),
            "{none}"
        );
    }
}
