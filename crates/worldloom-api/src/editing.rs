//! Editing commands: branches (edited actions, appended turns), authored
//! observations, perturbations, action parsing, observation validation and
//! branch comparison. Every change is one undoable workspace change; nothing
//! is overwritten (see `worldloom-store`).

use worldloom_core as core;
use worldloom_core::action::{ActionFormat, form};
use worldloom_core::{EdgeId, NodeId, PredictionId};
use worldloom_obs as obs;
use worldloom_store::{ChangeId, TrajectoryKey, Workspace};

use crate::branches::{append_locked, live_branches, live_node, path_turns};
use crate::error::ApiError;
use crate::ids::{parse_branch_id, parse_trajectory_id};
use crate::types::*;
use crate::views::{self, change_summary};
use crate::{Studio, StudioEvent};

fn changed(studio: &Studio, trajectory_id: &str, kind: ChangeKind) {
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(trajectory_id.to_string()),
        kind: kind.into(),
    });
}

fn change_record(ws: &Workspace, id: Option<ChangeId>) -> Result<Option<ChangeSummary>, ApiError> {
    let history = ws.history(20)?;
    match id {
        Some(id) => history.iter().find(|c| c.id == id),
        None => history.first(),
    }
    .map(change_summary)
    .transpose()
}

/// The answer of a command that made a branch or a turn: the new edge and
/// state (the new branch's id is its leaf, the new state).
fn branch_created(
    key: TrajectoryKey,
    edge: EdgeId,
    node: NodeId,
    change: Option<ChangeSummary>,
) -> BranchCreated {
    BranchCreated {
        trajectory_id: key.0.to_string(),
        edge_id: edge.0,
        node_id: node.0,
        branch_id: node.0.to_string(),
        change,
    }
}

fn non_empty_action(raw: &str) -> Result<&str, ApiError> {
    if raw.trim().is_empty() {
        return Err(ApiError::bad_request(
            "raw: an action must not be empty".to_string(),
        ));
    }
    Ok(raw)
}

/// `edit_action`: a sibling edge from the same state with the new action
/// (a branch); the original edge and its subtree stay.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for an empty action or a bad id,
/// [`crate::ErrorCode::NotFound`] for an unknown or undone edge.
pub fn edit_action(studio: &Studio, req: EditActionRequest) -> Result<BranchCreated, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let raw = non_empty_action(&req.raw)?;
    let (edge, node, change) = {
        let mut ws = studio.lock()?;
        let st = ws.load_trajectory(key)?;
        let original = st
            .trajectory
            .edge(EdgeId(req.edge_id))
            .filter(|e| st.live_edges.contains(&e.id))
            .ok_or_else(|| {
                ApiError::not_found(format!("trajectory {} has no edge {}", key.0, req.edge_id))
            })?;
        let action = core::Action::new(raw, original.action.format);
        let (edge, node) = ws.add_branch(key, original.id, action)?;
        (edge, node, change_record(&ws, None)?)
    };
    changed(studio, &req.trajectory_id, ChangeKind::AddBranch);
    Ok(branch_created(key, edge, node, change))
}

/// `append_turn`: a new action from a state. From a leaf it makes the branch
/// longer; from an inner state it starts a new branch. The action is read
/// in the format of the edge into that state (the domain's format at the
/// root).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for an empty action,
/// [`crate::ErrorCode::NotFound`] for an unknown or undone state.
pub fn append_turn(studio: &Studio, req: AppendTurnRequest) -> Result<BranchCreated, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let raw = non_empty_action(&req.raw)?;
    let (edge, node, change) = {
        let mut ws = studio.lock()?;
        let (edge, node) = append_locked(&mut ws, key, NodeId(req.node_id), raw)?;
        (edge, node, change_record(&ws, None)?)
    };
    changed(studio, &req.trajectory_id, ChangeKind::AddTurn);
    Ok(branch_created(key, edge, node, change))
}

/// `parse_action`: the action in its domain's language, for the edit form:
/// the parsed form and its problem (`worldloom-core`'s parser), and the
/// form's fields under their raw names (`core::action::form::read_fields`).
///
/// # Errors
/// Never: a text that does not parse is reported in `error`, one that does
/// not fit the form in `form_problem`.
pub fn parse_action(
    _studio: &Studio,
    req: ParseActionRequest,
) -> Result<ParseActionResponse, ApiError> {
    let format = ActionFormat::for_domain(req.domain);
    let action = core::Action::new(req.raw.clone(), format);
    let view = views::action(&action);
    let error = action.problem();
    let (form, form_problem) = match form::read_fields(&req.raw, format) {
        Ok(fields) => (Some(fields), None),
        Err(problem) => (None, Some(problem)),
    };
    Ok(ParseActionResponse {
        format: view.format,
        parsed: view.parsed,
        error,
        summary: view.summary,
        form,
        form_problem,
    })
}

/// `action_space`: the catalogue of the domain's action language
/// (`core::action::form::catalogue`).
///
/// # Errors
/// Never.
pub fn action_space(
    _studio: &Studio,
    req: ActionSpaceRequest,
) -> Result<ActionSpaceResponse, ApiError> {
    let format = ActionFormat::for_domain(req.domain);
    Ok(ActionSpaceResponse {
        format,
        actions: form::catalogue(format),
    })
}

/// `format_action`: a filled edit form written as the action text in the
/// domain's language (`core::action::form::write_fields`).
///
/// # Errors
/// Never: a form that makes no action is answered with `problem`.
pub fn format_action(
    _studio: &Studio,
    req: FormatActionRequest,
) -> Result<FormatActionResponse, ApiError> {
    let format = ActionFormat::for_domain(req.domain);
    Ok(match form::write_fields(&req.action, format) {
        Ok(raw) => FormatActionResponse {
            raw: Some(raw),
            problem: None,
        },
        Err(problem) => FormatActionResponse {
            raw: None,
            problem: Some(problem),
        },
    })
}

/// Runs the `worldloom-obs` parser (or a JSON parser) on an observation text.
pub(crate) fn validate(text: &str, representation: core::Representation) -> ValidationReport {
    let problem = |line: Option<u32>, column: Option<u32>, severity: Severity, message: String| {
        ValidationProblem {
            line,
            column,
            severity,
            message,
        }
    };
    match representation {
        core::Representation::Text => ValidationReport {
            ok: true,
            node_count: None,
            problems: Vec::new(),
        },
        core::Representation::Json => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(_) => ValidationReport {
                ok: true,
                node_count: None,
                problems: Vec::new(),
            },
            Err(e) => ValidationReport {
                ok: false,
                node_count: None,
                problems: vec![problem(
                    Some(e.line() as u32),
                    Some(e.column() as u32),
                    Severity::Error,
                    e.to_string(),
                )],
            },
        },
        tree => match obs::parse(text, tree) {
            Ok(parsed) => ValidationReport {
                ok: true,
                node_count: Some(parsed.tree.nodes.len() as u32),
                problems: parsed
                    .warnings
                    .iter()
                    .map(|w| problem(Some(w.line), None, Severity::Warning, w.message.clone()))
                    .collect(),
            },
            Err(obs::ParseError::Syntax {
                line,
                column,
                message,
            }) => ValidationReport {
                ok: false,
                node_count: None,
                problems: vec![problem(Some(line), Some(column), Severity::Error, message)],
            },
            Err(e) => ValidationReport {
                ok: false,
                node_count: None,
                problems: vec![problem(None, None, Severity::Error, e.to_string())],
            },
        },
    }
}

/// `validate_observation`: what the observation parser says about a text.
///
/// # Errors
/// Never: problems are reported in the response.
pub fn validate_observation(
    _studio: &Studio,
    req: ValidateObservationRequest,
) -> Result<ValidationReport, ApiError> {
    Ok(validate(&req.text, req.representation))
}

/// `author_observation`: stores a hand-written observation of a state (it
/// becomes the one the state shows and the target of curriculum exports).
/// Stored even when validation finds problems.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown state or `based_on`
/// prediction; [`crate::ErrorCode::BadRequest`].
pub fn author_observation(
    studio: &Studio,
    req: AuthorObservationRequest,
) -> Result<AuthorObservationResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let representation = req.representation;
    let validation = validate(&req.text, representation);
    let change = {
        let mut ws = studio.lock()?;
        let st = ws.load_trajectory(key)?;
        let node = live_node(&st, req.node_id)?;
        if let Some(p) = req.based_on_prediction
            && node.prediction(PredictionId(p)).is_none()
        {
            return Err(ApiError::not_found(format!(
                "based_on_prediction: node {} has no prediction {p}",
                req.node_id
            )));
        }
        let authored = core::AuthoredObservation {
            observation: core::Observation::new(representation, req.text.clone()),
            author: None,
            based_on: req.based_on_prediction.map(PredictionId),
            note: req.note.clone().filter(|n| !n.trim().is_empty()),
        };
        let id = ws.set_authored(key, node.id, &authored)?;
        change_record(&ws, Some(id))?
    };
    changed(studio, &req.trajectory_id, ChangeKind::SetAuthored);
    let change = change.ok_or_else(|| ApiError::internal("the change was not recorded"))?;
    Ok(AuthorObservationResponse { change, validation })
}

/// `set_perturbation`: sets or clears the control instruction of a turn.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] for an unknown or undone edge.
pub fn set_perturbation(
    studio: &Studio,
    req: SetPerturbationRequest,
) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_perturbation(key, EdgeId(req.edge_id), req.instruction.as_deref())?;
        change_record(&ws, Some(id))?
    };
    changed(studio, &req.trajectory_id, ChangeKind::SetPerturbation);
    Ok(ChangeResponse { change })
}

/// The text a state shows in comparisons and exports: real, else the
/// current authored observation, else the preferred prediction's.
pub(crate) fn shown_state_text(node: &core::Node) -> Option<String> {
    node.real
        .as_ref()
        .map(|o| o.text.clone())
        .or_else(|| node.current_authored().map(|a| a.observation.text.clone()))
        .or_else(|| {
            node.preferred_prediction()
                .and_then(|p| p.observation.clone())
        })
}

/// `compare_branches`: two branches turn by turn.
///
/// # Errors
/// [`crate::ErrorCode::NotFound`] when a branch id is not a live leaf.
pub fn compare_branches(
    studio: &Studio,
    req: CompareBranchesRequest,
) -> Result<CompareBranchesResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let left_leaf = parse_branch_id(&req.left)?;
    let right_leaf = parse_branch_id(&req.right)?;
    let mut ws = studio.lock()?;
    let st = ws.load_trajectory(key)?;
    let paths = live_branches(&st);
    let find = |leaf: NodeId| {
        paths
            .iter()
            .find(|p| p.nodes.last() == Some(&leaf))
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "trajectory {} has no branch ending at node {}",
                    key.0, leaf.0
                ))
            })
    };
    let (left_path, right_path) = (find(left_leaf)?, find(right_leaf)?);
    let perturbations = ws.perturbations(key)?;
    let left = path_turns(&mut ws, &st, &left_path, &perturbations)?;
    let right = path_turns(&mut ws, &st, &right_path, &perturbations)?;
    let text_of = |t: Option<&TurnSummary>| {
        t.and_then(|t| st.trajectory.node(NodeId(t.node_id)))
            .and_then(shown_state_text)
    };
    let rows = (0..left.len().max(right.len()))
        .map(|i| {
            let (l, r) = (left.get(i), right.get(i));
            CompareRow {
                turn: i as u32 + 1,
                same_action: matches!((l, r), (Some(a), Some(b)) if a.action.raw == b.action.raw),
                left_text: text_of(l),
                right_text: text_of(r),
                left: l.cloned(),
                right: r.cloned(),
            }
        })
        .collect();
    Ok(CompareBranchesResponse { rows })
}
