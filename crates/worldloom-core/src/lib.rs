//! Worldloom core: the trajectory tree, observations and actions, trajectory
//! formats, prompt building and model-output parsing.
//!
//! This crate knows nothing of UI, HTTP, SQLite or model execution.

pub mod domain;

pub use domain::{ChatMessage, ChatRole, Domain, Representation};
