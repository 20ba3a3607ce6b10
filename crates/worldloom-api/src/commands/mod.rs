//! The command functions, by group. Each takes the [`Studio`](crate::Studio)
//! and a request type and returns a response type or an
//! [`ApiError`](crate::ApiError); [`crate::dispatch`] maps command names to
//! them. This module only declares the groups and re-exports their commands.

mod atlas;
mod history;
mod import_export;
mod notes_tags;
mod predictions;
mod runs;
mod screenshots;
mod trajectories;
mod turns;
mod workspace;

pub use crate::curriculum::export_curriculum;
pub use crate::editing::{
    action_space, append_turn, author_observation, compare_branches, edit_action, format_action,
    parse_action, set_perturbation, validate_observation,
};
pub use crate::engine::{endpoint_key_status, set_endpoint_key};
pub use crate::engine::{engine_status, inspect_model_dir, set_engine};
pub use crate::lesson::{add_to_lesson, export_lesson, get_lesson, list_lessons, set_caption};
pub use crate::recording::{record_trajectory, record_turn};
pub use crate::run_jobs::{cancel_run_job, list_run_jobs, resume_run, start_judge, start_run};
pub use crate::scoring::METRICS_PRODUCER;
pub use crate::stepping::{cancel_step, preview_prompt, rollout, step};
pub use crate::tree_rows::{
    FIRST_WINDOW_ROWS, SEARCH_MAX_MATCHES, TEXT_MAX_BYTES, TREE_WINDOW_MAX_ROWS,
    WHOLE_TREE_MAX_NODES,
};
pub use atlas::{atlas_rows, branches_atlas, run_atlas};
pub use history::{history, redo, undo};
pub use import_export::{export, import_files, workspace_trajectories};
pub use notes_tags::{add_note, list_notes, set_tag};
pub use predictions::{choose_prediction, list_predictions};
pub use runs::{
    compare_runs, export_run_rows, get_run_dashboard, label_set, list_run_rows, list_runs,
    run_drift, search_runs, set_label_set, set_row_label, set_row_note,
};
pub use screenshots::{get_screenshot, screenshot_bytes, set_screenshot};
pub use trajectories::{get_branch, get_trajectory, list_trajectories};
pub use turns::{get_tree_rows, get_turn, search_tree};
pub use workspace::workspace_info;
