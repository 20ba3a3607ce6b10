//! World-model engines: predict the next observation, streaming.
//!
//! - [`world_model`]: the [`WorldModel`] trait every engine implements, its
//!   request, events and statistics.
//! - [`lm`]: the [`CausalLm`] contract between a model file and the generation
//!   runtime (tokens in, last-position logits out, explicit decode state).

pub mod baseline;
pub mod lm;
pub mod openai;
pub mod world_model;

pub use lm::CausalLm;
pub use world_model::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    PredictionStream, StopReason, WorldModel,
};
