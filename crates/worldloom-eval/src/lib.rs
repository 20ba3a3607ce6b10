//! Batch evaluation on AgentWorldBench, as library functions behind
//! `worldloom eval`, `worldloom judge` and `worldloom score`.
//!
//! - [`bench`]: rows, the chat the official script builds from them, ground
//!   truth.
//! - [`run`]: predictions for every row through any `WorldModel`, written
//!   as JSON Lines the official judge step reads unchanged; resumable.
//! - [`judge`]: LLM-judge scoring on the five AgentWorldBench dimensions
//!   with Worldloom's own rubric prompts (or a user folder), and robust
//!   parsing of judge answers.
//! - [`atlas`]: the fidelity atlas, each turn's error taxonomy
//!   (`worldloom_obs::findings`) counted over a run by domain, role,
//!   attribute, action type and turn, and two runs side by side.
//! - [`score`]: per-domain and overall aggregation as `(mean − 1) / 4 × 100`
//!   beside the deterministic fidelity metrics.

pub mod atlas;
pub mod bench;
pub mod judge;
pub mod run;
pub mod score;

use std::path::Path;

/// Errors of the evaluation functions.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Input that is not what it should be; the message names file, line
    /// and field.
    #[error("{0}")]
    Input(String),
    /// The judge or engine could not be used at all.
    #[error("{0}")]
    Engine(String),
}

impl EvalError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
