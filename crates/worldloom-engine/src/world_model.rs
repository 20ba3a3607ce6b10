//! The [`WorldModel`] trait: given chat messages and generation parameters,
//! stream the predicted next observation.
//!
//! Every engine (the local candle model, an OpenAI-compatible endpoint, the
//! `copy` and `replay` baselines) implements it. `predict` returns at once;
//! the work happens on the engine's own thread and arrives as
//! [`EngineEvent`]s on a channel, so callers never block on the model and can
//! cancel at any time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

use serde::{Deserialize, Serialize};
use worldloom_core::{ChatMessage, ModelOutput, OutputDelta};

/// Sampling and stopping parameters for one prediction.
///
/// Defaults follow the Qwen-AgentWorld model card (temperature 0.6, top-p
/// 0.95, top-k 20); a model directory's `generation_config.json` overrides
/// them where present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationParams {
    /// Softmax temperature; `0.0` means greedy (argmax) decoding.
    pub temperature: f32,
    /// Nucleus sampling mass in (0, 1]; `1.0` disables it.
    pub top_p: f32,
    /// Keep only the `top_k` most likely tokens; `0` disables it.
    pub top_k: usize,
    /// Seed of the sampler's random generator.
    pub seed: u64,
    /// Upper bound on generated tokens.
    pub max_new_tokens: usize,
    /// Extra stop strings; generation ends when the output contains one.
    pub stop: Vec<String>,
    /// Stop right after the observation block closes.
    pub stop_after_observation: bool,
    /// Passed to the chat template as `enable_thinking`.
    pub enable_thinking: bool,
    /// Report per-token log-probabilities in [`EngineEvent::Token`].
    pub logprobs: bool,
    /// With [`GenerationParams::logprobs`], how many of the most likely
    /// alternatives each [`Token::top`] lists (OpenAI's `top_logprobs`);
    /// `0` lists none.
    pub top_logprobs: usize,
    /// Token ids that end generation like the end-of-turn token (vLLM's
    /// `stop_token_ids`); the stopping token's text is not part of the output.
    pub stop_token_ids: Vec<u32>,
    /// Subtracted from the logit of every token generated at least once
    /// (OpenAI/vLLM `presence_penalty`, in [-2, 2]); `0` disables it.
    pub presence_penalty: f32,
    /// Subtracted from a token's logit once per time it was generated
    /// (OpenAI/vLLM `frequency_penalty`, in [-2, 2]); `0` disables it.
    pub frequency_penalty: f32,
    /// vLLM/`transformers` `repetition_penalty` (> 0) over the generated
    /// tokens: a positive logit is divided by it, a negative one multiplied;
    /// `1` disables it.
    pub repetition_penalty: f32,
    /// Drop tokens whose probability (after temperature) is below `min_p`
    /// times the most likely token's (vLLM `min_p`, in [0, 1]); `0` disables
    /// it.
    pub min_p: f32,
    /// Leave special tokens (other than the end of turn, which never has
    /// text) out of the generated text, as vLLM does by default.
    pub skip_special_tokens: bool,
    /// Let an engine that drafts (the local engine with drafting on) draft
    /// and verify tokens for this request; `false` decodes one token a
    /// forward. The output is the same either way (greedy: token for token;
    /// sampled: the same distribution); only speed differs.
    pub speculative: bool,
}

impl Default for GenerationParams {
    fn default() -> Self {
        Self {
            temperature: 0.6,
            top_p: 0.95,
            top_k: 20,
            seed: 0,
            max_new_tokens: 4096,
            stop: Vec::new(),
            stop_after_observation: true,
            enable_thinking: true,
            logprobs: false,
            top_logprobs: 0,
            stop_token_ids: Vec::new(),
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repetition_penalty: 1.0,
            min_p: 0.0,
            skip_special_tokens: true,
            speculative: true,
        }
    }
}

/// One prediction request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictRequest {
    /// The chat: system prompt, history (user prompt / assistant observation
    /// pairs) and the current turn's user prompt, as built by
    /// `worldloom_core`'s prompt builder.
    pub messages: Vec<ChatMessage>,
    /// Sampling and stopping parameters.
    pub params: GenerationParams,
    /// The current environment state (the observation the action is taken
    /// from), verbatim, when the caller knows it. Engines that model the
    /// state explicitly use it; the `copy` baseline predicts it unchanged.
    /// `None` when unknown (then baselines fall back to the last assistant
    /// message in `messages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_observation: Option<String>,
}

impl PredictRequest {
    /// A request with the given chat and parameters and no
    /// `current_observation`.
    pub fn new(messages: Vec<ChatMessage>, params: GenerationParams) -> Self {
        Self {
            messages,
            params,
            current_observation: None,
        }
    }
}

/// Why generation ended: `worldloom_core`'s [`StopReason`], which the
/// output status is decided from ([`worldloom_core::output::output_status`]).
pub use worldloom_core::output::StopReason;

/// Counts and timings of one finished prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GenerationStats {
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens that were actually fed to the model (the rest came from
    /// a state snapshot); equals `prompt_tokens` when nothing was reused.
    pub prompt_tokens_computed: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Time spent reading the prompt, in milliseconds.
    pub prefill_ms: f64,
    /// Time spent generating, in milliseconds.
    pub decode_ms: f64,
    /// `completion_tokens / decode time`, tokens per second.
    pub decode_tokens_per_sec: f64,
    /// Why generation ended (`None` only for engines that cannot say).
    pub stop_reason: Option<StopReason>,
    /// Forward passes of the model while decoding (the prefill not
    /// counted): one a token without drafting, fewer where drafts are kept
    /// (a draft cut short costs a second forward on a model without
    /// `CausalLm::rewind_within`); 0 for engines that cannot say.
    #[serde(default)]
    pub decode_forwards: usize,
    /// Tokens a drafter proposed (speculative decoding); 0 when off.
    #[serde(default)]
    pub drafted_tokens: usize,
    /// Proposed tokens that verification kept.
    #[serde(default)]
    pub accepted_tokens: usize,
}

impl GenerationStats {
    /// Generated tokens per decode forward (`None` when the engine counted
    /// no forwards).
    pub fn tokens_per_forward(&self) -> Option<f64> {
        (self.decode_forwards > 0)
            .then(|| self.completion_tokens as f64 / self.decode_forwards as f64)
    }

    /// `completion_tokens` over `decode_ms` milliseconds in tokens per
    /// second (the `decode_tokens_per_sec` figure); 0 when no decode time
    /// passed.
    pub fn decode_rate(completion_tokens: usize, decode_ms: f64) -> f64 {
        if decode_ms > 0.0 {
            completion_tokens as f64 / (decode_ms / 1e3)
        } else {
            0.0
        }
    }
}

/// One alternative to a generated token, with its log-probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The alternative's text.
    pub text: String,
    /// Its id, when the engine knows ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// Its log-probability (natural log).
    pub logprob: f32,
}

/// One generated token.
///
/// Local engines send one per sampled token, and their texts concatenate to
/// the generated text ([`ModelOutput::raw`]); the end-of-turn token has an
/// empty text, and a token that ends inside a multi-byte character has an
/// empty text while the next carries the character. Remote endpoints send
/// the tokens they report log-probabilities for (`logprobs.content[]`) or,
/// without log-probabilities, one per streamed text chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Token {
    /// The text this token added.
    pub text: String,
    /// The token id, when the engine knows ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// Log-probability (natural log) under the model's own distribution
    /// (softmax of the raw logits, as OpenAI-compatible servers report it),
    /// when requested ([`GenerationParams::logprobs`]) and available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprob: Option<f32>,
    /// The most likely alternatives under the same distribution as
    /// `logprob`, most likely first, when the engine reports them (local
    /// engines: [`GenerationParams::top_logprobs`] of them, the sampled
    /// token possibly among them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopLogprob>,
}

/// An event of a streaming prediction, in order: any number of `Token`,
/// `Reasoning`, `Answer` and `Observation` events, then exactly one `Done`
/// or `Error`.
///
/// Engines run the generated text through `worldloom_core`'s
/// [`OutputParser`](worldloom_core::OutputParser): the `Reasoning`, `Answer`
/// and `Observation` events a token releases follow its `Token` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    /// A generated token.
    Token(Token),
    /// New reasoning text (the think block, tags removed; or reasoning an
    /// endpoint delivers separately).
    Reasoning {
        /// The new text.
        text: String,
    },
    /// New answer text: the generated text after the think block, with the
    /// observation block's tags (what an OpenAI-compatible server returns as
    /// `content`).
    Answer {
        /// The new text.
        text: String,
    },
    /// New observation text (tags, marker and surrounding whitespace
    /// removed).
    Observation {
        /// The new text.
        text: String,
    },
    /// Generation finished.
    Done {
        /// Counts and timings.
        stats: GenerationStats,
        /// The generated text and its parse.
        output: ModelOutput,
    },
    /// Generation failed; no further events follow.
    Error {
        /// The error, classified for the UI.
        error: EngineError,
    },
}

impl EngineEvent {
    /// The `Reasoning`, `Answer` and `Observation` events of a parser delta,
    /// in that order, leaving out empty ones.
    pub fn from_delta(delta: OutputDelta) -> impl Iterator<Item = EngineEvent> {
        let OutputDelta {
            reasoning,
            observation,
            answer,
            ..
        } = delta;
        [
            (!reasoning.is_empty()).then_some(EngineEvent::Reasoning { text: reasoning }),
            (!answer.is_empty()).then_some(EngineEvent::Answer { text: answer }),
            (!observation.is_empty()).then_some(EngineEvent::Observation { text: observation }),
        ]
        .into_iter()
        .flatten()
    }
}

/// Errors an engine reports, classified so the UI never matches strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum EngineError {
    /// The engine could not be loaded or configured (bad model directory,
    /// not enough memory, unknown device…).
    #[error("engine setup failed: {0}")]
    Setup(String),
    /// The request was invalid (empty chat, prompt longer than the context…).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A remote endpoint could not be reached or answered badly.
    #[error("remote engine error: {0}")]
    Remote(String),
    /// The model failed while running.
    #[error("model error: {0}")]
    Model(String),
    /// The engine thread is gone.
    #[error("engine stopped: {0}")]
    Stopped(String),
}

/// A cancellation flag shared between a caller and an engine.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the engine to stop as soon as possible.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl From<Arc<AtomicBool>> for CancelToken {
    /// A token that is cancelled when `flag` is set (and sets it).
    fn from(flag: Arc<AtomicBool>) -> Self {
        Self(flag)
    }
}

/// The receiving end of one prediction: events arrive on `events`; `cancel`
/// stops the prediction (a `Done` with [`StopReason::Cancelled`] follows).
#[derive(Debug)]
pub struct PredictionStream {
    /// Events, ending with `Done` or `Error`.
    pub events: Receiver<EngineEvent>,
    /// Cancels this prediction.
    pub cancel: CancelToken,
}

/// A world model: predicts the next environment observation, streaming.
pub trait WorldModel: Send + Sync {
    /// A short name for provenance (`qwen3_5_moe@/models/x`, `openai:NAME`, `copy`).
    fn name(&self) -> String;

    /// Starts a prediction and returns at once; the engine works on its own
    /// thread. Errors here are immediate refusals (e.g. invalid request);
    /// failures during generation arrive as [`EngineEvent::Error`].
    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError>;

    /// The model's context length in tokens (prompt and generated tokens
    /// together), when the engine knows it; `None` (the default) when it
    /// does not or has no limit.
    fn context_tokens(&self) -> Option<usize> {
        None
    }

    /// How many tokens `messages` take once rendered with the chat template
    /// (generation prompt included, `enable_thinking` passed to the
    /// template), when the engine can count them; `None` (the default) when
    /// it cannot.
    ///
    /// # Errors
    /// [`EngineError::InvalidRequest`] when the chat cannot be rendered or
    /// tokenized.
    fn count_prompt_tokens(
        &self,
        messages: &[ChatMessage],
        enable_thinking: bool,
    ) -> Option<Result<usize, EngineError>> {
        let _ = (messages, enable_thinking);
        None
    }
}
