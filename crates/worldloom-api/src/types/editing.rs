//! Types of editing and branching (`editing.rs`): edited actions, appended
//! turns, parsed actions, validated and authored observations,
//! perturbations, branch comparison.

use super::*;

/// `edit_action` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EditActionRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The turn (edge) whose action is edited.
    pub edge_id: u32,
    /// The new action's exact text.
    pub raw: String,
}

/// `append_turn` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AppendTurnRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The state the action is taken from.
    pub node_id: u32,
    /// The action's exact text.
    pub raw: String,
}

/// A new edge and state (a branch or a longer branch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchCreated {
    /// Workspace id.
    pub trajectory_id: String,
    /// The new edge.
    pub edge_id: u32,
    /// The new state.
    pub node_id: u32,
    /// The branch it ends: the new node id as a string.
    pub branch_id: String,
    /// The change made (undoable).
    pub change: Option<ChangeSummary>,
}

/// `parse_action` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ParseActionRequest {
    /// The domain whose action language applies.
    pub domain: Domain,
    /// The action text.
    pub raw: String,
}

/// `parse_action` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ParseActionResponse {
    /// The action language.
    pub format: ActionFormat,
    /// The parsed form, when it parsed.
    pub parsed: Option<ParsedAction>,
    /// Why it did not parse, for formats that have a parser.
    pub error: Option<String>,
    /// First line, at most 80 characters.
    pub summary: String,
    /// The action as the edit form's fields: a name of the domain's
    /// catalogue (`action_space`) and each of its parameters under its raw
    /// name (`bid`, `x`, `element`, `arguments`), empty when not given;
    /// `null` when the text does not fit the form.
    pub form: Option<ActionFields>,
    /// Why the text does not fit the form (not one action of the catalogue,
    /// an argument it does not take, a language without a form); `null`
    /// when `form` is set.
    pub form_problem: Option<String>,
}

/// `action_space` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ActionSpaceRequest {
    /// The domain whose action language applies.
    pub domain: Domain,
}

/// `action_space` response: the actions the edit form offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ActionSpaceResponse {
    /// The action language.
    pub format: ActionFormat,
    /// Every action with its parameters, in the order shown; empty for
    /// languages without a form (shell commands, plain text).
    pub actions: Vec<ActionSpec>,
}

/// `format_action` request: a filled edit form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FormatActionRequest {
    /// The domain whose action language applies.
    pub domain: Domain,
    /// The action's name and its parameters' texts.
    pub action: ActionFields,
}

/// `format_action` response: the action text, or why the form does not
/// make one (exactly one of the two is set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FormatActionResponse {
    /// The action in the domain's language, as the world model sees it.
    pub raw: Option<String>,
    /// What is wrong, naming the parameter at fault when there is one.
    pub problem: Option<FieldProblem>,
}

/// `validate_observation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidateObservationRequest {
    /// How the text is to be read.
    pub representation: Representation,
    /// The text.
    pub text: String,
}

/// How bad a [`ValidationProblem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The text does not parse.
    Error,
    /// The text parsed after a repair.
    Warning,
}

/// One problem the observation parser found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidationProblem {
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column (characters), when known.
    pub column: Option<u32>,
    /// Whether the text parsed.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
}

/// What the observation parser (`worldloom-obs`) says about a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ValidationReport {
    /// No error (warnings allowed).
    pub ok: bool,
    /// Nodes of the parsed tree (`null` for text and JSON, or when it did
    /// not parse).
    pub node_count: Option<u32>,
    /// Errors and warnings in text order.
    pub problems: Vec<ValidationProblem>,
}

/// `author_observation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AuthorObservationRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The state.
    pub node_id: u32,
    /// How the text is to be read.
    pub representation: Representation,
    /// The observation text.
    pub text: String,
    /// The prediction it was corrected from, if any.
    #[serde(default)]
    pub based_on_prediction: Option<u32>,
    /// A note.
    #[serde(default)]
    pub note: Option<String>,
}

/// `author_observation` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AuthorObservationResponse {
    /// The change made (undoable).
    pub change: ChangeSummary,
    /// The parser's verdict (stored even with problems).
    pub validation: ValidationReport,
}

/// `set_perturbation` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetPerturbationRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The turn (edge).
    pub edge_id: u32,
    /// The control instruction; `null` (or blank) clears it.
    pub instruction: Option<String>,
}

/// `compare_branches` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareBranchesRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// Left branch id (leaf node id).
    pub left: String,
    /// Right branch id (leaf node id).
    pub right: String,
}

/// One turn of two branches side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRow {
    /// 1-based turn.
    pub turn: u32,
    /// The left branch's turn, if it is that long.
    pub left: Option<TurnSummary>,
    /// The right branch's turn, if it is that long.
    pub right: Option<TurnSummary>,
    /// Both turns exist and have the same action text.
    pub same_action: bool,
    /// The observation the left state shows (real, else authored, else the
    /// chosen prediction).
    pub left_text: Option<String>,
    /// The same for the right state.
    pub right_text: Option<String>,
}

/// `compare_branches` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareBranchesResponse {
    /// One row per turn of the longer branch.
    pub rows: Vec<CompareRow>,
}
