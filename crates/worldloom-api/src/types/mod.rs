//! Request, response and view types of every command, one file per
//! command group (beside `commands/`), all re-exported here so every type
//! is `crate::types::Name`. These are the contract
//! with the user interface: TypeScript declarations are generated from them
//! (see [`crate::bindings`]) into `ui/src/bindings/api.ts`.
//!
//! The domain types travel as they are: domains, representations, context
//! modes, chat messages, observation facts and action formats are the
//! `worldloom-core` types, UI trees, field changes, line diffs and anchors
//! the `worldloom-obs` ones (both crates derive `ts_rs::TS` behind their
//! `ts` feature, which this crate turns on); they are re-exported here. A
//! type is defined here only for a request, a response, or a view whose
//! shape differs from the domain type, and its doc says why.
//!
//! Conventions: field names are snake_case; ids of trajectories and branches
//! are strings (decimal workspace keys), node, edge and prediction ids are
//! numbers (the `worldloom-core` ids); fractions are in `[0, 1]`; times carry
//! their unit in the name. Optional values of the API's own types are
//! `null`, never absent; the domain types leave out empty optional fields
//! (their TypeScript field is then `name?: T | null`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::run_job_types::*;
pub use worldloom_core::action::form::{
    ActionFields, ActionParam, ActionSpec, FieldProblem, ParamKind,
};
pub use worldloom_core::action::{
    ActionFormat, ActionTarget, AndroidAction, AndroidTarget, ParsedAction, PythonCall,
};
pub use worldloom_core::domain::{ChatMessage, ChatRole, Domain, Representation};
pub use worldloom_core::formats::ExportFormat;
pub use worldloom_core::observation::{ObservationMeta, ScreenSize};
pub use worldloom_core::output::{OutputStatus, StopReason};
pub use worldloom_core::screenshot::{ImageType, Screenshot};
pub use worldloom_core::trajectory::ContextMode;
pub use worldloom_obs::diff::{FieldChange, LineDiff, LineOp, LineTag};
pub use worldloom_obs::metrics::{Anchor, AnchorStatus};
pub use worldloom_obs::tree::{
    Attribute, BoundsAnomaly, BoundsPx, NodeId, NodeStates, SourceSpan, Truncation,
    TruncationReason, UiNode, UiTree,
};

mod atlas;
mod curriculum;
mod editing;
mod engine;
mod events;
mod history;
mod import_export;
mod lessons;
mod notes_tags;
mod predictions;
mod recording;
mod runs;
mod stepping;
mod trajectories;
mod turns;
mod workspace;

pub use atlas::*;
pub use curriculum::*;
pub use editing::*;
pub use engine::*;
pub use events::*;
pub use history::*;
pub use import_export::*;
pub use lessons::*;
pub use notes_tags::*;
pub use predictions::*;
pub use recording::*;
pub use runs::*;
pub use stepping::*;
pub use trajectories::*;
pub use turns::*;
pub use workspace::*;

/// `undo` / `redo` / `history` request (no fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct EmptyRequest {}
