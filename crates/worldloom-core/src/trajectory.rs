//! The trajectory tree: nodes are environment states, edges are actions.
//!
//! A recorded trajectory is one path from the root (the initial state). Editing
//! the action at a turn adds a sibling edge under the same node (a branch);
//! nothing is ever overwritten. Node and edge ids are small integers, assigned
//! in creation order and never reused, so a store can key rows by
//! `(trajectory id, node id)`.
//!
//! Turns are counted as in AgentWorldBench: turn `k` (1-based) is the edge
//! into the node at depth `k`; its prompt shows the state at depth `k - 1` and
//! the action, and its answer is the observation at depth `k`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::action::Action;
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, Result};
use crate::observation::Observation;
use crate::output::OutputStatus;
use crate::screenshot::Screenshot;

/// A node id: the index of the node in [`Trajectory::nodes`]. The root is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

/// An edge id: the index of the edge in [`Trajectory::edges`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EdgeId(pub u32);

/// A prediction id, unique within its node, assigned in creation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PredictionId(pub u32);

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for EdgeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a trajectory was imported from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Source {
    /// The source format's name (`agentworldbench`, `agentlab`,
    /// `android-dumps`, `android-trace`, `osworld`, `webarena`, `atif`,
    /// `native`, `manual`).
    pub format: String,
    /// The file or folder name it came from (as given on import).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One trajectory: an initial state and every action tried from every state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// A stable id, unique within a file (the AgentWorldBench row id, the
    /// file stem, or a generated one).
    pub id: String,
    /// The environment domain.
    pub domain: Domain,
    /// Where it came from.
    pub source: Source,
    /// The agent's task instruction, when the source gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The world model's system prompt carried by the source
    /// (AgentWorldBench `system_str`); `None` means "use the default for the
    /// domain" (see [`crate::prompt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Every state; `nodes[i].id == NodeId(i)`. `nodes[0]` is the root.
    pub nodes: Vec<Node>,
    /// Every action; `edges[i].id == EdgeId(i)`.
    pub edges: Vec<Edge>,
    /// Source fields with no place above, unchanged.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// One environment state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// This node's id.
    pub id: NodeId,
    /// The edge that leads here; `None` only for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_edge: Option<EdgeId>,
    /// The recorded observation, when this state was really visited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real: Option<Observation>,
    /// Model predictions of this state, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predictions: Vec<Prediction>,
    /// Hand-written or hand-corrected observations, oldest first; the last is
    /// the current one (undo is dropping back to an earlier one in a store).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authored: Vec<AuthoredObservation>,
    /// The prediction chosen to stand for this state in free-running context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_prediction: Option<PredictionId>,
    /// The screenshot of the real state, when the source has one (set by
    /// [`crate::screenshot::attach`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<Screenshot>,
    /// Source fields of this step with no place above (BrowserGym `reward`,
    /// `terminated`…), unchanged.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl Node {
    fn new(id: NodeId, parent_edge: Option<EdgeId>, real: Option<Observation>) -> Self {
        Self {
            id,
            parent_edge,
            real,
            predictions: Vec::new(),
            authored: Vec::new(),
            chosen_prediction: None,
            screenshot: None,
            extra: Map::new(),
        }
    }

    /// The current authored observation, if any.
    pub fn current_authored(&self) -> Option<&AuthoredObservation> {
        self.authored.last()
    }

    /// The prediction with the given id.
    pub fn prediction(&self, id: PredictionId) -> Option<&Prediction> {
        self.predictions.iter().find(|p| p.id == id)
    }

    /// The chosen prediction, else the newest prediction with an observation.
    pub fn preferred_prediction(&self) -> Option<&Prediction> {
        self.chosen_prediction
            .and_then(|id| self.prediction(id))
            .or_else(|| {
                self.predictions
                    .iter()
                    .rev()
                    .find(|p| p.observation.is_some())
            })
    }
}

/// One action taken from a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// This edge's id.
    pub id: EdgeId,
    /// The state the action was taken from.
    pub from: NodeId,
    /// The state it led to.
    pub to: NodeId,
    /// The action.
    pub action: Action,
    /// The exact per-turn prompt string of the source (AgentWorldBench
    /// `prompt[k-1]`), when it has one; otherwise prompts are rendered from
    /// templates (see [`crate::prompt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The edge this one was made from by editing its action, for branches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_from: Option<EdgeId>,
    /// A free-text note (OSWorld/Android `actions.jsonl` `note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What is needed to write this turn back as the exact AgentWorldBench row
    /// it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awb_row: Option<AwbRowInfo>,
    /// Source fields of the action with no place above (AgentLab `think`,
    /// `llm_answer_raw`…), unchanged.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// The parts of an AgentWorldBench row that the tree does not hold by itself,
/// kept so that export reproduces the row field for field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AwbRowInfo {
    /// The row's fields in their original order, with the values the tree
    /// cannot rebuild (`task`, `id`, `total_turns`, `turn_idx`, unknown
    /// fields). `prompt`, `response`, `system_str` and `current_prompt` are
    /// stored as `null` placeholders and rebuilt from the tree on export.
    pub fields: Map<String, Value>,
    /// How many entries the row's `prompt` list had.
    pub prompt_count: usize,
    /// How many entries the row's `response` list had.
    pub response_count: usize,
    /// `current_prompt` when it differs from this turn's prompt string, or
    /// when the row had no `prompt` entry for this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_prompt: Option<String>,
    /// `prompt` was a single string rather than a list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt_is_string: bool,
    /// `response` was a single string rather than a list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub response_is_string: bool,
    /// 0-based position of the row among the rows of its source file, so that
    /// export can keep the file's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<usize>,
}

/// One model prediction of a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Unique within the node.
    pub id: PredictionId,
    /// The engine's name (`local:Qwen-AgentWorld-35B-A3B`, `openai:…`, `copy`).
    pub engine: String,
    /// The generation parameters, as the engine reports them (JSON object).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// The sampler seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Which history the prompt used.
    #[serde(default)]
    pub context: ContextMode,
    /// The raw model output, reasoning included, exactly as generated.
    pub raw_output: String,
    /// The reasoning, stored apart from the raw output: returned separately
    /// by an API (`reasoning_content`), or split from the output by the
    /// engine's parser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The extracted observation (see [`crate::output::parse_model_output`]);
    /// `None` when the output held none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    /// The extraction status.
    pub status: OutputStatus,
    /// How the observation is to be read (normally that of the real one).
    #[serde(default)]
    pub representation: Representation,
    /// Prompt length in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens (reasoning included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Time to the first generated token, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<f64>,
    /// Total generation time, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// When it was made (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Other fields (from a predictions sidecar line, or engine statistics).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl Prediction {
    /// A prediction from raw output, parsed with
    /// [`crate::output::parse_model_output`]. The id is set when it is added
    /// to a node.
    pub fn from_output(engine: impl Into<String>, raw_output: impl Into<String>) -> Self {
        let raw_output = raw_output.into();
        let parsed = crate::output::parse_model_output(&raw_output);
        Self {
            id: PredictionId(0),
            engine: engine.into(),
            params: Map::new(),
            seed: None,
            context: ContextMode::TeacherForced,
            raw_output,
            reasoning_content: None,
            observation: parsed.observation,
            status: parsed.status,
            representation: Representation::Text,
            prompt_tokens: None,
            completion_tokens: None,
            time_to_first_token_ms: None,
            total_ms: None,
            created_at: None,
            extra: Map::new(),
        }
    }

    /// A prediction from an OpenAI-style message with separate `content` and
    /// `reasoning_content`, parsed with [`crate::output::parse_openai_message`].
    pub fn from_openai_message(
        engine: impl Into<String>,
        content: &str,
        reasoning_content: Option<&str>,
    ) -> Self {
        let parsed = crate::output::parse_openai_message(Some(content), reasoning_content);
        let mut p = Self::from_output(engine, content);
        p.reasoning_content = reasoning_content.map(str::to_owned);
        p.observation = parsed.observation;
        p.status = parsed.status;
        p
    }
}

/// Which observations the history of a prompt is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum ContextMode {
    /// History from the recorded (real) observations, as AgentWorldBench
    /// evaluates.
    #[default]
    TeacherForced,
    /// History from the chosen predictions along the branch, so drift
    /// compounds.
    FreeRunning,
}

/// A hand-written or hand-corrected observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthoredObservation {
    /// The observation.
    pub observation: Observation,
    /// Who wrote it, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The prediction it was corrected from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub based_on: Option<PredictionId>,
    /// A free-text note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<Observation> for AuthoredObservation {
    /// The observation with no author, source prediction or note.
    fn from(observation: Observation) -> Self {
        Self {
            observation,
            author: None,
            based_on: None,
            note: None,
        }
    }
}

/// A root-to-node path: `nodes[0]` is the root and `edges[i]` leads from
/// `nodes[i]` to `nodes[i + 1]`; `edges.len()` is the number of turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreePath {
    /// The nodes, root first.
    pub nodes: Vec<NodeId>,
    /// The edges between them.
    pub edges: Vec<EdgeId>,
}

impl Trajectory {
    /// A trajectory with only a root node (holding `initial`, if given).
    pub fn new(id: impl Into<String>, domain: Domain, initial: Option<Observation>) -> Self {
        Self {
            id: id.into(),
            domain,
            source: Source {
                format: "manual".into(),
                path: None,
            },
            goal: None,
            system_prompt: None,
            nodes: vec![Node::new(NodeId(0), None, initial)],
            edges: Vec::new(),
            extra: Map::new(),
        }
    }

    /// The root node's id (always 0).
    pub fn root(&self) -> NodeId {
        NodeId(0)
    }

    /// The node with the given id.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.0 as usize).filter(|n| n.id == id)
    }

    /// The node with the given id, mutably.
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.nodes.get_mut(id.0 as usize).filter(|n| n.id == id)
    }

    /// The edge with the given id.
    pub fn edge(&self, id: EdgeId) -> Option<&Edge> {
        self.edges.get(id.0 as usize).filter(|e| e.id == id)
    }

    /// The node with the given id, or [`CoreError::NoSuchNode`].
    pub fn try_node(&self, id: NodeId) -> Result<&Node> {
        self.node(id).ok_or_else(|| CoreError::NoSuchNode {
            trajectory: self.id.clone(),
            node: id.0,
        })
    }

    /// The edge with the given id, or [`CoreError::NoSuchEdge`].
    pub fn try_edge(&self, id: EdgeId) -> Result<&Edge> {
        self.edge(id).ok_or_else(|| CoreError::NoSuchEdge {
            trajectory: self.id.clone(),
            edge: id.0,
        })
    }

    fn try_node_mut(&mut self, id: NodeId) -> Result<&mut Node> {
        let trajectory = self.id.clone();
        self.node_mut(id).ok_or(CoreError::NoSuchNode {
            trajectory,
            node: id.0,
        })
    }

    /// The edges leaving `node`, oldest first. The first is the recorded (or
    /// first-made) continuation.
    pub fn children(&self, node: NodeId) -> Vec<EdgeId> {
        self.edges
            .iter()
            .filter(|e| e.from == node)
            .map(|e| e.id)
            .collect()
    }

    /// Adds an action from `from` leading to a new node holding `real` (if
    /// given); returns the new edge and node.
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`] when `from` does not exist.
    pub fn add_step(
        &mut self,
        from: NodeId,
        action: Action,
        real: Option<Observation>,
    ) -> Result<(EdgeId, NodeId)> {
        self.try_node(from)?;
        let edge_id = EdgeId(self.edges.len() as u32);
        let node_id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node::new(node_id, Some(edge_id), real));
        self.edges.push(Edge {
            id: edge_id,
            from,
            to: node_id,
            action,
            prompt: None,
            edited_from: None,
            note: None,
            awb_row: None,
            extra: Map::new(),
        });
        Ok((edge_id, node_id))
    }

    /// Edits the action of turn `edge`: adds a sibling edge from the same node
    /// with `action`, leading to a new node with no real observation. The
    /// original edge and everything under it stay as they are.
    ///
    /// When the original edge carries a source prompt string that contains its
    /// action's raw text exactly once, the new edge's prompt is that string
    /// with the action text replaced; otherwise the new edge has no prompt
    /// string and prompts are rendered from templates.
    ///
    /// # Errors
    /// [`CoreError::NoSuchEdge`] when `edge` does not exist.
    pub fn add_branch(&mut self, edge: EdgeId, action: Action) -> Result<(EdgeId, NodeId)> {
        let original = self.try_edge(edge)?.clone();
        let prompt = original.prompt.as_ref().and_then(|p| {
            let old = original.action.raw.as_str();
            (!old.is_empty() && p.matches(old).count() == 1)
                .then(|| p.replacen(old, &action.raw, 1))
        });
        let (new_edge, new_node) = self.add_step(original.from, action, None)?;
        let e = &mut self.edges[new_edge.0 as usize];
        e.edited_from = Some(edge);
        e.prompt = prompt;
        Ok((new_edge, new_node))
    }

    /// Adds `prediction` to `node`, giving it the next prediction id.
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`] when `node` does not exist.
    pub fn add_prediction(
        &mut self,
        node: NodeId,
        mut prediction: Prediction,
    ) -> Result<PredictionId> {
        let n = self.try_node_mut(node)?;
        let id = PredictionId(n.predictions.iter().map(|p| p.id.0 + 1).max().unwrap_or(0));
        prediction.id = id;
        n.predictions.push(prediction);
        Ok(id)
    }

    /// Chooses the prediction that stands for `node` in free-running context
    /// (`None` clears the choice).
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`] or [`CoreError::NoSuchPrediction`].
    pub fn choose_prediction(
        &mut self,
        node: NodeId,
        prediction: Option<PredictionId>,
    ) -> Result<()> {
        let trajectory = self.id.clone();
        let n = self.try_node_mut(node)?;
        if let Some(p) = prediction
            && n.prediction(p).is_none()
        {
            return Err(CoreError::NoSuchPrediction {
                trajectory,
                node: node.0,
                prediction: p.0,
            });
        }
        n.chosen_prediction = prediction;
        Ok(())
    }

    /// Sets the authored observation of `node` by adding a new record (the
    /// earlier ones are kept).
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`] when `node` does not exist.
    pub fn set_authored(&mut self, node: NodeId, authored: AuthoredObservation) -> Result<()> {
        self.try_node_mut(node)?.authored.push(authored);
        Ok(())
    }

    /// The path from the root to `node`.
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`] when `node` (or an edge on its path) is missing.
    pub fn path_to(&self, node: NodeId) -> Result<TreePath> {
        let mut nodes = vec![node];
        let mut edges = Vec::new();
        let mut current = self.try_node(node)?;
        while let Some(edge_id) = current.parent_edge {
            let edge = self.try_edge(edge_id)?;
            edges.push(edge_id);
            nodes.push(edge.from);
            current = self.try_node(edge.from)?;
            if edges.len() > self.edges.len() {
                return Err(CoreError::NoSuchNode {
                    trajectory: self.id.clone(),
                    node: node.0,
                });
            }
        }
        nodes.reverse();
        edges.reverse();
        Ok(TreePath { nodes, edges })
    }

    /// The depth of `node` (0 for the root), which is also its turn number.
    ///
    /// # Errors
    /// [`CoreError::NoSuchNode`].
    pub fn turn_of(&self, node: NodeId) -> Result<usize> {
        Ok(self.path_to(node)?.edges.len())
    }

    /// Every root-to-leaf path, in depth-first order with older edges first.
    /// The first is the main path.
    pub fn branches(&self) -> Vec<TreePath> {
        let mut out = Vec::new();
        let mut stack = vec![TreePath {
            nodes: vec![self.root()],
            edges: Vec::new(),
        }];
        while let Some(path) = stack.pop() {
            let last = *path.nodes.last().unwrap_or(&NodeId(0));
            let children = self.children(last);
            if children.is_empty() {
                out.push(path);
                continue;
            }
            for edge_id in children.into_iter().rev() {
                if let Some(edge) = self.edge(edge_id) {
                    let mut p = path.clone();
                    p.nodes.push(edge.to);
                    p.edges.push(edge_id);
                    stack.push(p);
                }
            }
        }
        out
    }

    /// The main path: from the root, always the oldest edge.
    pub fn main_path(&self) -> TreePath {
        let mut path = TreePath {
            nodes: vec![self.root()],
            edges: Vec::new(),
        };
        let mut current = self.root();
        while let Some(&edge_id) = self.children(current).first() {
            let Some(edge) = self.edge(edge_id) else {
                break;
            };
            path.edges.push(edge_id);
            path.nodes.push(edge.to);
            current = edge.to;
            if path.edges.len() > self.edges.len() {
                break;
            }
        }
        path
    }

    /// Every representation used by a real, authored or view observation.
    pub fn representations(&self) -> Vec<Representation> {
        let mut out: Vec<Representation> = Vec::new();
        for node in &self.nodes {
            let observations = node
                .real
                .iter()
                .chain(node.authored.iter().map(|a| &a.observation));
            for obs in observations {
                for r in obs.representations() {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// Checks the invariants a loaded file must hold: ids equal indices, the
    /// root has no parent, every other node is reached by exactly the edge
    /// it names, and edges point at existing nodes.
    ///
    /// # Errors
    /// A message naming the first broken invariant.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.nodes.is_empty() {
            return Err("no nodes (a trajectory has at least its root)".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.id.0 as usize != i {
                return Err(format!("nodes[{i}].id is {}, expected {i}", node.id));
            }
            match (i, node.parent_edge) {
                (0, Some(_)) => return Err("nodes[0] (the root) has a parent_edge".into()),
                (0, None) => {}
                (_, None) => return Err(format!("nodes[{i}] has no parent_edge")),
                (_, Some(e)) => match self.edge(e) {
                    Some(edge) if edge.to == node.id => {}
                    _ => {
                        return Err(format!(
                            "nodes[{i}].parent_edge {e} does not lead to node {i}"
                        ));
                    }
                },
            }
        }
        for (i, edge) in self.edges.iter().enumerate() {
            if edge.id.0 as usize != i {
                return Err(format!("edges[{i}].id is {}, expected {i}", edge.id));
            }
            if self.node(edge.from).is_none() || self.node(edge.to).is_none() {
                return Err(format!("edges[{i}] points at a missing node"));
            }
            if edge.to.0 <= edge.from.0 {
                return Err(format!(
                    "edges[{i}] leads from node {} back to node {}",
                    edge.from, edge.to
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::ActionFormat;

    fn sample() -> Trajectory {
        let mut t = Trajectory::new(
            "t",
            Domain::Web,
            Some(Observation::new(Representation::Axtree, "s0")),
        );
        let (_, n1) = t
            .add_step(
                t.root(),
                Action::new("click('1')", ActionFormat::Browsergym),
                Some(Observation::new(Representation::Axtree, "s1")),
            )
            .expect("root");
        t.add_step(
            n1,
            Action::new("click('2')", ActionFormat::Browsergym),
            Some(Observation::new(Representation::Axtree, "s2")),
        )
        .expect("n1");
        t
    }

    #[test]
    fn branch_adds_sibling_and_keeps_original() {
        let mut t = sample();
        let before = t.edges[1].clone();
        let (e, n) = t
            .add_branch(
                EdgeId(1),
                Action::new("fill('2', 'x')", ActionFormat::Browsergym),
            )
            .expect("branch");
        assert_eq!((e, n), (EdgeId(2), NodeId(3)));
        assert_eq!(t.edges[1], before);
        assert_eq!(t.edges[2].from, NodeId(1));
        assert_eq!(t.edges[2].edited_from, Some(EdgeId(1)));
        assert!(t.node(n).expect("node").real.is_none());
        assert_eq!(t.children(NodeId(1)), vec![EdgeId(1), EdgeId(2)]);
        let branches = t.branches();
        assert_eq!(branches.len(), 2);
        assert_eq!(branches[0].nodes, vec![NodeId(0), NodeId(1), NodeId(2)]);
        assert_eq!(branches[1].nodes, vec![NodeId(0), NodeId(1), NodeId(3)]);
        assert_eq!(t.main_path(), branches[0]);
        assert_eq!(
            t.path_to(NodeId(3)).expect("path").edges,
            vec![EdgeId(0), EdgeId(2)]
        );
        assert_eq!(t.turn_of(NodeId(3)).expect("turn"), 2);
        assert!(t.validate().is_ok());
    }

    #[test]
    fn branch_rewrites_prompt_when_action_occurs_once() {
        let mut t = sample();
        t.edges[1].prompt = Some("### Turn 2\n**Action:**\nclick('2')\n".into());
        let (e, _) = t
            .add_branch(
                EdgeId(1),
                Action::new("click('9')", ActionFormat::Browsergym),
            )
            .expect("branch");
        assert_eq!(
            t.edge(e).expect("edge").prompt.as_deref(),
            Some("### Turn 2\n**Action:**\nclick('9')\n")
        );
    }

    #[test]
    fn predictions_authored_and_errors() {
        let mut t = sample();
        let p0 = t
            .add_prediction(
                NodeId(2),
                Prediction::from_output(
                    "copy",
                    "<predicted_observation>s2</predicted_observation>",
                ),
            )
            .expect("add");
        let p1 = t
            .add_prediction(NodeId(2), Prediction::from_output("copy", "<think>only"))
            .expect("add");
        assert_eq!((p0, p1), (PredictionId(0), PredictionId(1)));
        assert_eq!(t.nodes[2].preferred_prediction().map(|p| p.id), Some(p0));
        t.choose_prediction(NodeId(2), Some(p1)).expect("choose");
        assert_eq!(t.nodes[2].preferred_prediction().map(|p| p.id), Some(p1));
        assert!(matches!(
            t.choose_prediction(NodeId(2), Some(PredictionId(7))),
            Err(CoreError::NoSuchPrediction { .. })
        ));
        let authored = AuthoredObservation {
            observation: Observation::new(Representation::Axtree, "fixed"),
            author: None,
            based_on: Some(p0),
            note: None,
        };
        t.set_authored(NodeId(2), authored.clone()).expect("set");
        t.set_authored(
            NodeId(2),
            AuthoredObservation {
                note: Some("second".into()),
                ..authored
            },
        )
        .expect("set");
        assert_eq!(t.nodes[2].authored.len(), 2);
        assert_eq!(
            t.nodes[2]
                .current_authored()
                .and_then(|a| a.note.as_deref()),
            Some("second")
        );
        assert!(matches!(
            t.add_prediction(NodeId(9), Prediction::from_output("x", "")),
            Err(CoreError::NoSuchNode { node: 9, .. })
        ));
        assert!(matches!(
            t.add_branch(EdgeId(5), Action::new("x", ActionFormat::Text)),
            Err(CoreError::NoSuchEdge { edge: 5, .. })
        ));
    }

    #[test]
    fn validate_catches_broken_ids() {
        let mut t = sample();
        t.nodes[2].id = NodeId(5);
        assert!(t.validate().is_err());
    }
}
