//! World-model engines: predict the next observation, streaming.
//!
//! - [`world_model`]: the [`WorldModel`] trait every engine implements, its
//!   request, events and statistics.
//! - [`collect`]: the one helper that drains a prediction stream (with
//!   cancellation and a deadline) into a [`Collected`] prediction.
//! - [`lm`]: the [`CausalLm`] contract between a model file and the generation
//!   runtime (tokens in, last-position logits out, explicit decode state).
//! - [`local`]: [`LocalEngine`], the generation runtime over any [`CausalLm`]
//!   (engine thread, [`tokenizer`], [`chat_template`], [`sampling`],
//!   [`snapshot`] reuse of decode state).
//! - [`draft`]: drafters for speculative decoding (the observation-aligned
//!   one and prompt lookup) and their simulation against a known output.
//! - [`pool`]: several engines serving one model used as one (least
//!   outstanding requests, a failed request retried on another).

pub mod baseline;
pub mod chat_template;
pub mod collect;
pub mod draft;
mod kernels;
pub mod lm;
pub mod loading;
pub mod local;
pub mod local_model;
pub mod moe;
pub mod openai;
pub mod pool;
pub mod qwen3_5_moe;
pub mod record;
pub mod sampling;
pub mod snapshot;
pub mod tokenizer;
pub mod weights;
pub mod world_model;

pub use collect::{CollectError, Collected, ObservationTokens, collect, collect_to_end};
pub use kernels::{CpuKernels, cpu_kernels};
pub use lm::CausalLm;
pub use local::{LocalEngine, LocalEngineOptions};
pub use world_model::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    PredictionStream, StopReason, Token, TopLogprob, WorldModel,
};
