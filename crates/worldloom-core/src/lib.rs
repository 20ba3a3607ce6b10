//! Worldloom core: the trajectory tree, observations and actions, trajectory
//! formats, prompt building and model-output parsing.
//!
//! This crate knows nothing of UI, HTTP, SQLite or model execution.
//!
//! - [`trajectory`]: the tree ([`Trajectory`], [`Node`], [`Edge`],
//!   [`Prediction`]) and its editing API.
//! - [`observation`], [`action`]: what states and actions hold.
//! - [`native`]: the versioned native JSON file.
//! - [`output`]: reasoning / observation extraction from model output.

pub mod action;
pub mod domain;
pub mod error;
pub mod input;
pub mod judge;
pub mod native;
pub mod observation;
pub mod output;
pub mod prompt;
pub mod screenshot;
pub mod text;
pub mod trajectory;

pub use action::{
    Action, ActionFormat, ActionTarget, AndroidAction, AndroidTarget, ParsedAction, PythonCall,
};
pub use domain::{ChatMessage, ChatRole, Domain, Representation};
pub use error::{CoreError, ImportWarning};
pub use native::{NATIVE_FORMAT, NATIVE_VERSION, TrajectoryFile};
pub use observation::{
    Observation, ObservationMeta, ObservationView, ScreenSize, StepError, StepErrorKind,
};
pub use output::{
    ModelOutput, OutputDelta, OutputParser, OutputStatus, ParsedOutput, output_status,
    parse_model_output, parse_openai_message,
};
pub use prompt::{PromptOptions, PromptTemplates, build_messages, default_system_prompt};
pub use screenshot::{ImageType, MAX_SCREENSHOT_BYTES, Screenshot};
pub use trajectory::{
    AuthoredObservation, AwbRowInfo, ContextMode, Edge, EdgeId, Node, NodeId, Prediction,
    PredictionId, Source, Trajectory, TreePath,
};
pub mod formats;
pub use formats::{ImportOptions, Imported, InputFormat, detect_format, import_path};
