//! Lessons for teaching: a tagged, ordered set of branches with a caption per
//! turn, shown by the studio's presentation mode and exported as one
//! self-contained HTML file (`lesson_html`).
//!
//! The model adds no table: a lesson is the tag `lesson:NAME` on branch
//! leaves (the store's tags), its branches in the order the tag was set
//! ([`Workspace::tagged_in_order`]); a caption is the newest note on a state
//! (the store's notes). Both are undoable changes like any tag or note.

use std::collections::{BTreeMap, HashMap};

use worldloom_core as core;
use worldloom_core::NodeId;
use worldloom_store::{StoredTrajectory, TrajectoryKey, Workspace};

use crate::branches::{branch_index, branch_summary, live_branches, path_turns};
use crate::commands::set_tag;
use crate::error::ApiError;
use crate::ids::{parse_branch_id, parse_trajectory_id};
use crate::import::write_export_file;
use crate::lesson_html::{self, DocBranch, DocStep, LessonDoc};
use crate::scoring::{Shown, shown, shown_text};
use crate::types::*;
use crate::views::change_summary;
use crate::{Studio, StudioEvent};

/// The prefix that makes a tag a lesson: `lesson:NAME`.
pub const LESSON_TAG_PREFIX: &str = "lesson:";

/// The tag of the lesson `name` (trimmed).
///
/// # Errors
/// [`ErrorCode::BadRequest`] for an empty name or one with a line break.
fn lesson_tag(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("lesson: empty name"));
    }
    if name.contains(['\n', '\r']) {
        return Err(ApiError::bad_request("lesson: a name is one line"));
    }
    Ok(format!("{LESSON_TAG_PREFIX}{name}"))
}

/// `list_lessons`: every lesson of the workspace, by name.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn list_lessons(studio: &Studio, _req: EmptyRequest) -> Result<ListLessonsResponse, ApiError> {
    let tags = studio.lock()?.tags()?;
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for t in tags {
        if let Some(name) = t.tag.strip_prefix(LESSON_TAG_PREFIX) {
            *counts.entry(name.to_owned()).or_default() += 1;
        }
    }
    Ok(ListLessonsResponse {
        lessons: counts
            .into_iter()
            .map(|(name, branch_count)| LessonSummary { name, branch_count })
            .collect(),
    })
}

/// `add_to_lesson`: adds a branch at the end of a lesson, or takes it out
/// (one change: the lesson's tag on the branch's leaf).
///
/// # Errors
/// [`ErrorCode::BadRequest`] for a bad name or id; [`ErrorCode::NotFound`]
/// for an unknown branch; [`ErrorCode::Storage`].
pub fn add_to_lesson(studio: &Studio, req: AddToLessonRequest) -> Result<ChangeResponse, ApiError> {
    let tag = lesson_tag(&req.lesson)?;
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let leaf = parse_branch_id(&req.branch_id)?;
    let st = studio.lock()?.load_trajectory(key)?;
    branch_index(&st, &live_branches(&st), leaf)?;
    drop(st);
    set_tag(
        studio,
        SetTagRequest {
            trajectory_id: req.trajectory_id,
            node_id: Some(leaf.0),
            tag,
            present: req.present,
        },
    )
}

/// `set_caption`: writes the caption of a state: a new version of its
/// newest note, or a new note; an empty text removes it (one change; none
/// when there is nothing to remove).
///
/// # Errors
/// [`ErrorCode::BadRequest`], [`ErrorCode::NotFound`] for an unknown state,
/// [`ErrorCode::Storage`].
pub fn set_caption(studio: &Studio, req: SetCaptionRequest) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let node = NodeId(req.node_id);
    let text = req.text.trim();
    let (change, kind) = {
        let mut ws = studio.lock()?;
        let newest = ws.notes(key)?.into_iter().rfind(|n| n.node == Some(node));
        let kind = match (newest, text.is_empty()) {
            (Some(note), _) if note.text == text => return Ok(ChangeResponse { change: None }),
            (Some(note), _) => {
                ws.edit_note(note.id, text)?;
                ChangeKind::EditNote
            }
            (None, true) => return Ok(ChangeResponse { change: None }),
            (None, false) => {
                ws.add_note(key, Some(node), text)?;
                ChangeKind::AddNote
            }
        };
        (ws.history(1)?.into_iter().next(), kind)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: kind.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// One branch of a lesson as read: its trajectory (shared between the
/// branches of one trajectory), its path and its place among the live
/// branches.
struct Part {
    key: TrajectoryKey,
    path: core::TreePath,
    index: usize,
}

/// A lesson read from the workspace: its branches and the trajectories they
/// belong to, each read once.
struct Resolved {
    title: String,
    lesson: Option<String>,
    parts: Vec<Part>,
    trajectories: HashMap<i64, StoredTrajectory>,
}

/// The trajectory `key`, read once.
fn load<'a>(
    ws: &mut Workspace,
    trajectories: &'a mut HashMap<i64, StoredTrajectory>,
    key: TrajectoryKey,
) -> Result<&'a StoredTrajectory, ApiError> {
    Ok(match trajectories.entry(key.0) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(ws.load_trajectory(key)?),
    })
}

/// Reads what `req` names: a lesson's live branches in order, or one branch.
///
/// # Errors
/// [`ErrorCode::BadRequest`] without a lesson nor a trajectory, or for bad
/// ids; [`ErrorCode::NotFound`] for an unknown lesson or branch.
fn resolve(ws: &mut Workspace, req: &LessonRequest) -> Result<Resolved, ApiError> {
    let mut trajectories: HashMap<i64, StoredTrajectory> = HashMap::new();
    let mut parts = Vec::new();
    if let Some(name) = &req.lesson {
        let tag = lesson_tag(name)?;
        let places = ws.tagged_in_order(&tag)?;
        if places.is_empty() {
            return Err(ApiError::not_found(format!(
                "no lesson `{}` (no branch carries the tag `{tag}`)",
                name.trim()
            )));
        }
        for place in places {
            let st = load(ws, &mut trajectories, place.trajectory)?;
            let paths = live_branches(st);
            let chosen: Vec<usize> = match place.node {
                // A tagged trajectory: every branch.
                None => (0..paths.len()).collect(),
                // The branch ending at the tagged leaf, else the first one
                // continuing it (turns appended past it); none when undone.
                Some(node) => paths
                    .iter()
                    .position(|p| p.nodes.last() == Some(&node))
                    .or_else(|| paths.iter().position(|p| p.nodes.contains(&node)))
                    .into_iter()
                    .collect(),
            };
            for index in chosen {
                parts.push(Part {
                    key: place.trajectory,
                    path: paths[index].clone(),
                    index,
                });
            }
        }
        return Ok(Resolved {
            title: name.trim().to_owned(),
            lesson: Some(name.trim().to_owned()),
            parts,
            trajectories,
        });
    }
    let Some(id) = &req.trajectory_id else {
        return Err(ApiError::bad_request(
            "lesson: give a lesson's name, or a trajectory_id (and branch_id) to show one branch",
        ));
    };
    let key = parse_trajectory_id(id)?;
    let st = load(ws, &mut trajectories, key)?;
    let paths = live_branches(st);
    let index = match &req.branch_id {
        None => 0,
        Some(b) => branch_index(st, &paths, parse_branch_id(b)?)?,
    };
    let summary = branch_summary(st, &paths[index], index, &paths[0]);
    parts.push(Part {
        key,
        path: paths[index].clone(),
        index,
    });
    Ok(Resolved {
        title: format!("{} · {}", st.trajectory.id, summary.name),
        lesson: None,
        parts,
        trajectories,
    })
}

/// The captions of a trajectory's states: the newest note on each.
fn captions_of(ws: &Workspace, key: TrajectoryKey) -> Result<BTreeMap<NodeId, String>, ApiError> {
    Ok(ws
        .notes(key)?
        .into_iter()
        .filter_map(|n| Some((n.node?, n.text)))
        .collect())
}

/// The view of a resolved lesson.
fn lesson_view(ws: &mut Workspace, r: &Resolved) -> Result<LessonView, ApiError> {
    let mut captions: HashMap<i64, BTreeMap<NodeId, String>> = HashMap::new();
    let mut branches = Vec::with_capacity(r.parts.len());
    for part in &r.parts {
        let st = &r.trajectories[&part.key.0];
        if let std::collections::hash_map::Entry::Vacant(e) = captions.entry(part.key.0) {
            e.insert(captions_of(ws, part.key)?);
        }
        let notes = &captions[&part.key.0];
        let paths = live_branches(st);
        let perturbations = ws.perturbations(part.key)?;
        branches.push(LessonBranch {
            trajectory_id: part.key.0.to_string(),
            trajectory_name: st.trajectory.id.clone(),
            goal: st.trajectory.goal.clone(),
            domain: st.trajectory.domain,
            branch: branch_summary(st, &part.path, part.index, &paths[0]),
            turns: path_turns(ws, st, &part.path, &perturbations)?,
            captions: part
                .path
                .nodes
                .iter()
                .map(|n| notes.get(n).cloned())
                .collect(),
        });
    }
    Ok(LessonView {
        title: r.title.clone(),
        lesson: r.lesson.clone(),
        branches,
    })
}

/// `get_lesson`: a lesson's branches in order with their turns and
/// captions, or one branch shown as a lesson.
///
/// # Errors
/// See [`resolve`]; [`ErrorCode::Storage`].
pub fn get_lesson(studio: &Studio, req: LessonRequest) -> Result<LessonView, ApiError> {
    let mut ws = studio.lock()?;
    let resolved = resolve(&mut ws, &req)?;
    lesson_view(&mut ws, &resolved)
}

/// `export_lesson`: the lesson as one self-contained HTML file
/// (`lesson_html`: no script, no external resource, navigation by anchors).
///
/// # Errors
/// See [`get_lesson`]; [`ErrorCode::ExportFailed`] when the file cannot be
/// written.
pub fn export_lesson(
    studio: &Studio,
    req: ExportLessonRequest,
) -> Result<ExportLessonResponse, ApiError> {
    let html = {
        let mut ws = studio.lock()?;
        let which = LessonRequest {
            lesson: req.lesson.clone(),
            trajectory_id: req.trajectory_id.clone(),
            branch_id: req.branch_id.clone(),
        };
        let resolved = resolve(&mut ws, &which)?;
        let view = lesson_view(&mut ws, &resolved)?;
        lesson_html::build(&lesson_doc(&resolved, &view))
    };
    let sections = html.sections;
    let content = html.html;
    let bytes = content.len() as u64;
    let path = write_export_file(req.path.as_deref(), &content)?;
    let stem = file_stem(req.lesson.as_deref().map(str::trim).unwrap_or("branch"));
    Ok(ExportLessonResponse {
        sections,
        bytes,
        content: path.is_none().then_some(content),
        path,
        file_name: format!("lesson-{stem}.html"),
    })
}

/// `text` with every run of characters outside `[A-Za-z0-9_-]` as one `-`.
fn file_stem(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        "lesson".into()
    } else {
        out.to_owned()
    }
}

/// The document the HTML builder writes: each branch's states with their
/// action, real and shown predicted texts, and captions.
fn lesson_doc<'a>(r: &'a Resolved, view: &'a LessonView) -> LessonDoc<'a> {
    let branches = r
        .parts
        .iter()
        .zip(&view.branches)
        .map(|(part, b)| {
            let st = &r.trajectories[&part.key.0];
            let steps = part
                .path
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let node = st.trajectory.node(*n);
                    let predicted = node.and_then(|node| {
                        let s = shown(node, None).ok()??;
                        let kind = match s {
                            Shown::Prediction(p) => format!("predicted by {}", p.engine),
                            Shown::Authored(..) => "authored".to_owned(),
                        };
                        shown_text(&s).0.map(|t| (kind, t))
                    });
                    DocStep {
                        turn: i as u32,
                        action: i
                            .checked_sub(1)
                            .and_then(|t| b.turns.get(t))
                            .map(|t| t.action.raw.as_str()),
                        real: node.and_then(|n| n.real.as_ref()).map(|o| o.text.as_str()),
                        predicted,
                        caption: b.captions.get(i).and_then(Option::as_deref),
                    }
                })
                .collect();
            DocBranch {
                heading: format!("{} · {}", b.trajectory_name, b.branch.name),
                goal: b.goal.as_deref(),
                steps,
            }
        })
        .collect();
    LessonDoc {
        title: &view.title,
        branches,
    }
}
