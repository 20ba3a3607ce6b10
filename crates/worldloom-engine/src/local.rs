//! [`LocalEngine`]: a [`WorldModel`] that runs any [`CausalLm`] in-process.
//!
//! The model lives on its own thread, fed by a channel of jobs (the design of
//! mistral.rs' engine loop): [`WorldModel::predict`] renders nothing and
//! computes nothing on the caller's thread, it only queues the request and
//! returns the event receiver. One job runs at a time:
//!
//! 1. render the chat with the model directory's template
//!    ([`ChatTemplate`]) and tokenize it ([`Tokenizer`]);
//! 2. **prefill**: resume from the longest cached state snapshot whose token
//!    prefix the prompt starts with ([`SnapshotCache`]), then feed the rest in
//!    chunks cut at turn boundaries (after each end-of-turn token), storing a
//!    snapshot at every boundary and at the end of the prompt (with its
//!    logits). Stepping turn k+1 after turn k, or branching at an earlier
//!    turn, therefore re-reads only the new tokens;
//! 3. **decode**: sample ([`Sampler`]), detokenize incrementally
//!    ([`StreamDecoder`]), run the text through `worldloom_core`'s
//!    [`OutputParser`], and stream [`EngineEvent`]s until a stop condition:
//!    the end-of-turn token (`<|im_end|>` and `generation_config.json`'s
//!    `eos_token_id`), a stop string ([`StopStrings`]), the end of the
//!    observation block (when asked), `max_new_tokens`, or cancellation
//!    (checked before and after every model call). With drafting on
//!    ([`Drafting`]), drafted tokens are verified in one forward and kept
//!    by the request's own rule, greedy or sampled ([`speculative`]).
//!
//! Qwen3.5 templates open the think block inside the generation prompt when
//! thinking is enabled ([`opens_reasoning`]), so the parser starts inside
//! reasoning; a model that opens the block itself is handled too.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::chat_template::{ChatTemplate, RenderOptions};
use crate::lm::CausalLm;
use crate::sampling::{GenerationConfig, Sampler, top_logprobs, top_logprobs_tensor};
use crate::snapshot::SnapshotCache;
use crate::tokenizer::{StreamDecoder, Tokenizer};
use worldloom_core::output::{OutputParser, opens_reasoning};

use crate::world_model::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    PredictionStream, StopReason, Token, TopLogprob, WorldModel,
};

/// The ChatML end-of-turn token of Qwen vocabularies.
pub const END_OF_TURN_TOKEN: &str = "<|im_end|>";

/// Settings of a [`LocalEngine`].
#[derive(Debug, Clone)]
pub struct LocalEngineOptions {
    /// Name reported by [`WorldModel::name`] (e.g. `qwen3_5_moe@/models/x`).
    pub name: String,
    /// Byte budget of the state-snapshot LRU (states plus stored logits).
    pub snapshot_budget_bytes: usize,
    /// Longest piece of prompt fed to the model in one call; cancellation is
    /// checked between pieces.
    pub prefill_chunk_tokens: usize,
    /// End-of-turn ids in addition to `<|im_end|>` and the
    /// `generation_config.json` ones.
    pub extra_end_of_turn_ids: Vec<u32>,
    /// The model's context length in tokens; `None` leaves it unknown
    /// ([`LocalEngine::from_dir`] then reads `max_position_embeddings` from
    /// the directory's `config.json`, or its `text_config`). Reported by
    /// [`WorldModel::context_tokens`] for servers to check requests against
    /// (the engine itself does not refuse longer prompts).
    pub context_tokens: Option<usize>,
    /// Speculative decoding ([`Drafting`]); off by
    /// default.
    pub drafting: Drafting,
}

impl Default for LocalEngineOptions {
    fn default() -> Self {
        Self {
            name: "local".into(),
            snapshot_budget_bytes: 2 << 30,
            prefill_chunk_tokens: 512,
            extra_end_of_turn_ids: Vec::new(),
            context_tokens: None,
            drafting: Drafting::Off,
        }
    }
}

/// A world model running a [`CausalLm`] on its own thread.
///
/// Dropping the engine stops the thread after the job in progress.
pub struct LocalEngine<M: CausalLm> {
    name: String,
    jobs: Option<Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    default_params: GenerationParams,
    end_of_turn_ids: Vec<u32>,
    context_tokens: Option<usize>,
    tokenizer: Arc<Tokenizer>,
    template: Arc<ChatTemplate>,
    _model: PhantomData<fn() -> M>,
}

impl<M: CausalLm> std::fmt::Debug for LocalEngine<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEngine")
            .field("name", &self.name)
            .finish()
    }
}

struct Job {
    request: PredictRequest,
    events: Sender<EngineEvent>,
    cancel: CancelToken,
}

impl<M: CausalLm> LocalEngine<M> {
    /// Starts an engine for `model` with the tokenizer, chat template and
    /// `generation_config.json` of model directory `dir`.
    ///
    /// # Errors
    /// [`EngineError::Setup`] naming the file when the tokenizer, template or
    /// generation config cannot be loaded, or when the tokenizer has more ids
    /// than the model has logits.
    pub fn from_dir(
        model: M,
        dir: &Path,
        mut options: LocalEngineOptions,
    ) -> Result<Self, EngineError> {
        if options.context_tokens.is_none() {
            options.context_tokens = context_of_dir(dir);
        }
        let tokenizer = Tokenizer::from_dir(dir).map_err(|e| EngineError::Setup(e.to_string()))?;
        let template =
            ChatTemplate::from_dir(dir).map_err(|e| EngineError::Setup(e.to_string()))?;
        let generation =
            GenerationConfig::from_dir(dir).map_err(|e| EngineError::Setup(e.to_string()))?;
        Self::new(model, tokenizer, template, &generation, options)
    }

    /// Starts an engine from its parts.
    ///
    /// # Errors
    /// [`EngineError::Setup`] when the tokenizer has more ids than the model
    /// has logits, or the thread cannot be spawned.
    pub fn new(
        model: M,
        tokenizer: Tokenizer,
        template: ChatTemplate,
        generation: &GenerationConfig,
        options: LocalEngineOptions,
    ) -> Result<Self, EngineError> {
        if tokenizer.vocab_size() > model.vocab_size() {
            return Err(EngineError::Setup(format!(
                "{} has {} ids but the model has {} logits",
                tokenizer.path().display(),
                tokenizer.vocab_size(),
                model.vocab_size()
            )));
        }
        let mut end_of_turn_ids: Vec<u32> =
            tokenizer.token_id(END_OF_TURN_TOKEN).into_iter().collect();
        for &id in generation
            .eos_token_ids
            .iter()
            .chain(&options.extra_end_of_turn_ids)
        {
            if !end_of_turn_ids.contains(&id) {
                end_of_turn_ids.push(id);
            }
        }
        let turn_end_id = tokenizer
            .token_id(END_OF_TURN_TOKEN)
            .or(end_of_turn_ids.first().copied());
        let newline_ids: Vec<u32> = ["\n", "Ċ"]
            .iter()
            .filter_map(|t| tokenizer.token_id(t))
            .collect();
        let tokenizer = Arc::new(tokenizer);
        let template = Arc::new(template);
        let special_ids = tokenizer.special_ids();
        let worker = Worker {
            model,
            tokenizer: Arc::clone(&tokenizer),
            template: Arc::clone(&template),
            special_ids,
            end_of_turn_ids: end_of_turn_ids.clone(),
            turn_end_id,
            newline_ids,
            snapshots: SnapshotCache::new(options.snapshot_budget_bytes),
            prefill_chunk_tokens: options.prefill_chunk_tokens.max(1),
            drafting: options.drafting.clone(),
        };
        let (jobs, inbox) = channel::<Job>();
        let handle = std::thread::Builder::new()
            .name("worldloom-engine".into())
            .spawn(move || worker.run(inbox))
            .map_err(|e| EngineError::Setup(format!("cannot start the engine thread: {e}")))?;
        Ok(Self {
            name: options.name,
            jobs: Some(jobs),
            worker: Some(handle),
            default_params: generation.default_params(),
            end_of_turn_ids,
            context_tokens: options.context_tokens,
            tokenizer,
            template,
            _model: PhantomData,
        })
    }

    /// Request parameters this model directory recommends:
    /// `generation_config.json` over the model card's defaults.
    pub fn default_params(&self) -> &GenerationParams {
        &self.default_params
    }

    /// Token ids that end a turn.
    pub fn end_of_turn_ids(&self) -> &[u32] {
        &self.end_of_turn_ids
    }
}

/// `max_position_embeddings` of `dir/config.json` (top level or
/// `text_config`), if the file reads and has it.
pub(crate) fn context_of_dir(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let field = |v: &serde_json::Value| v.get("max_position_embeddings")?.as_u64();
    let n = field(&value).or_else(|| value.get("text_config").and_then(field))?;
    usize::try_from(n).ok()
}

/// Renders and tokenizes a chat as a prediction would.
fn render_prompt(
    template: &ChatTemplate,
    tokenizer: &Tokenizer,
    messages: &[worldloom_core::ChatMessage],
    enable_thinking: bool,
) -> Result<(String, Vec<u32>), EngineError> {
    let options = RenderOptions {
        add_generation_prompt: true,
        enable_thinking,
    };
    let text = template
        .render(messages, options)
        .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
    let prompt = tokenizer
        .encode(&text)
        .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
    Ok((text, prompt))
}

/// The refusal of a request longer than the context, worded as vLLM's.
pub fn context_length_error(context: usize, prompt: usize, completion: usize) -> EngineError {
    EngineError::InvalidRequest(format!(
        "This model's maximum context length is {context} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
        prompt + completion
    ))
}

impl<M: CausalLm> Drop for LocalEngine<M> {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(handle) = self.worker.take() {
            let _ = handle.join();
        }
    }
}

impl<M: CausalLm> WorldModel for LocalEngine<M> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        if request.messages.is_empty() {
            return Err(EngineError::InvalidRequest(
                "the chat has no messages".into(),
            ));
        }
        Sampler::from_params(&request.params)
            .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
        let (events, receiver) = channel();
        let cancel = CancelToken::new();
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| EngineError::Stopped("the engine was shut down".into()))?;
        jobs.send(Job {
            request,
            events,
            cancel: cancel.clone(),
        })
        .map_err(|_| EngineError::Stopped("the engine thread has exited".into()))?;
        Ok(PredictionStream {
            events: receiver,
            cancel,
        })
    }

    fn context_tokens(&self) -> Option<usize> {
        self.context_tokens
    }

    fn count_prompt_tokens(
        &self,
        messages: &[worldloom_core::ChatMessage],
        enable_thinking: bool,
    ) -> Option<Result<usize, EngineError>> {
        Some(
            render_prompt(&self.template, &self.tokenizer, messages, enable_thinking)
                .map(|(_, prompt)| prompt.len()),
        )
    }
}

/// A cached state: the model state after a token prefix, and for the end of
/// a prompt the logits of its last position.
struct Snapshot<S> {
    state: S,
    logits: Option<Arc<Vec<f32>>>,
}

/// The logits a decode step samples from: on the host (the CPU, and the
/// prompt's last position, which snapshots keep), or on the model's device.
enum StepLogits {
    Host(Arc<Vec<f32>>),
    Device(candle_core::Tensor),
}

/// The outcome of a prefill: the state after the prompt, the logits of its
/// last position, and how many prompt tokens were fed to the model.
struct Prefilled<S> {
    state: S,
    logits: Arc<Vec<f32>>,
    computed: usize,
}

struct Worker<M: CausalLm> {
    model: M,
    tokenizer: Arc<Tokenizer>,
    template: Arc<ChatTemplate>,
    /// Special token ids, left out of the text when `skip_special_tokens`.
    special_ids: Vec<u32>,
    end_of_turn_ids: Vec<u32>,
    turn_end_id: Option<u32>,
    newline_ids: Vec<u32>,
    snapshots: SnapshotCache<Snapshot<M::State>>,
    prefill_chunk_tokens: usize,
    drafting: Drafting,
}

/// A model or sampling error as a job's failure.
fn model_error(e: impl std::fmt::Display) -> Halt {
    Halt::Failed(EngineError::Model(e.to_string()))
}

/// Why a job ended early without a model error.
enum Halt {
    Cancelled,
    /// The caller dropped the receiver: nobody listens.
    Gone,
    Failed(EngineError),
}

impl<M: CausalLm> Worker<M> {
    fn run(mut self, inbox: Receiver<Job>) {
        while let Ok(job) = inbox.recv() {
            let events = job.events.clone();
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.predict(&job)));
            match outcome {
                Ok(Ok(())) | Ok(Err(Halt::Gone)) => {}
                Ok(Err(Halt::Cancelled)) => {
                    // Cancelled before generation began.
                    let stats = GenerationStats {
                        stop_reason: Some(StopReason::Cancelled),
                        ..Default::default()
                    };
                    let output = OutputParser::new(false).finish_output();
                    let _ = events.send(EngineEvent::Done { stats, output });
                }
                Ok(Err(Halt::Failed(error))) => {
                    let _ = events.send(EngineEvent::Error { error });
                }
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    let _ = events.send(EngineEvent::Error {
                        error: EngineError::Model(format!("the model panicked: {message}")),
                    });
                    // The state may be inconsistent: start over.
                    self.snapshots.clear();
                }
            }
        }
    }

    /// Positions (token counts) right after each end-of-turn token of the
    /// prompt, including a directly following newline token.
    fn turn_boundaries(&self, prompt: &[u32]) -> Vec<usize> {
        let Some(end) = self.turn_end_id else {
            return Vec::new();
        };
        let mut cuts = Vec::new();
        for (i, &id) in prompt.iter().enumerate() {
            if id == end {
                let mut cut = i + 1;
                if prompt
                    .get(cut)
                    .is_some_and(|next| self.newline_ids.contains(next))
                {
                    cut += 1;
                }
                if cut < prompt.len() {
                    cuts.push(cut);
                }
            }
        }
        cuts
    }

    /// The `n` most likely tokens of `logits` under the model's own
    /// distribution, with their texts (special tokens as their strings).
    fn top_alternatives(&self, logits: &StepLogits, n: usize) -> Result<Vec<TopLogprob>, Halt> {
        let top = match logits {
            StepLogits::Host(l) => top_logprobs(l, n),
            StepLogits::Device(t) => top_logprobs_tensor(t, n),
        }
        .map_err(model_error)?;
        top.into_iter()
            .map(|(id, logprob)| {
                let text = self.tokenizer.decode(&[id], false).map_err(model_error)?;
                Ok(TopLogprob {
                    text,
                    id: Some(id),
                    logprob,
                })
            })
            .collect()
    }

    /// A decode step's logits: kept on the model's device when that is not
    /// the CPU, so that sampling copies back only its candidates
    /// ([`Sampler::sample_tensor`]).
    fn forward_step(&self, ids: &[u32], state: &mut M::State) -> Result<StepLogits, Halt> {
        let logits = self.model.forward(ids, state).map_err(model_error)?;
        if logits.device().is_cpu() {
            let host = logits.to_vec1::<f32>().map_err(model_error)?;
            self.check_vocab(host.len())?;
            return Ok(StepLogits::Host(Arc::new(host)));
        }
        self.check_vocab(logits.elem_count())?;
        Ok(StepLogits::Device(logits))
    }

    fn check_vocab(&self, n: usize) -> Result<(), Halt> {
        if n != self.model.vocab_size() {
            return Err(Halt::Failed(EngineError::Model(format!(
                "the model returned {n} logits, expected {}",
                self.model.vocab_size()
            ))));
        }
        Ok(())
    }

    fn forward(&self, ids: &[u32], state: &mut M::State) -> Result<Vec<f32>, Halt> {
        let logits = self
            .model
            .forward(ids, state)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(model_error)?;
        self.check_vocab(logits.len())?;
        Ok(logits)
    }

    /// Reads the prompt, reusing the longest cached snapshot; returns the
    /// state after the prompt, its last logits and how many tokens were fed.
    fn prefill(
        &mut self,
        prompt: &[u32],
        cancel: &CancelToken,
    ) -> Result<Prefilled<M::State>, Halt> {
        let total = prompt.len();
        let hit = self
            .snapshots
            .lookup_where(prompt, |len, s| len < total || s.logits.is_some())
            .map(|hit| {
                (
                    hit.prefix_len,
                    hit.value.state.clone(),
                    hit.value.logits.clone(),
                )
            });
        let (start, mut state, mut logits) = match hit {
            Some((len, state, logits)) => (len, state, if len == total { logits } else { None }),
            None => {
                let state = self.model.new_state().map_err(model_error)?;
                (0, state, None)
            }
        };
        if let Some(logits) = logits.take()
            && start == total
        {
            return Ok(Prefilled {
                state,
                logits,
                computed: 0,
            });
        }
        let boundaries = self.turn_boundaries(prompt);
        let mut cuts: Vec<usize> = boundaries.iter().copied().filter(|&b| b > start).collect();
        cuts.push(total);
        let mut position = start;
        let mut last = Vec::new();
        for cut in cuts {
            while position < cut {
                if cancel.is_cancelled() {
                    return Err(Halt::Cancelled);
                }
                let end = (position + self.prefill_chunk_tokens).min(cut);
                last = self.forward(&prompt[position..end], &mut state)?;
                position = end;
            }
            if cut < total && !self.snapshots.contains(&prompt[..cut]) {
                let size = M::state_size_bytes(&state);
                self.snapshots.insert(
                    prompt[..cut].to_vec(),
                    Snapshot {
                        state: state.clone(),
                        logits: None,
                    },
                    size,
                );
            }
        }
        let logits = Arc::new(last);
        let size = M::state_size_bytes(&state) + logits.len() * std::mem::size_of::<f32>();
        self.snapshots.insert(
            prompt.to_vec(),
            Snapshot {
                state: state.clone(),
                logits: Some(Arc::clone(&logits)),
            },
            size,
        );
        Ok(Prefilled {
            state,
            logits,
            computed: total - start,
        })
    }

    /// The request's drafting ([`speculative`]), when the engine drafts and
    /// the request allows it (`GenerationParams::speculative`): the
    /// drafter over the prompt and the current observation as the answer
    /// frames it ([`AnswerFrame`]; without one, the last assistant message
    /// as it is). `reasoning_open`: the prompt leaves a think block open.
    fn speculation(
        &self,
        request: &PredictRequest,
        prompt: &[u32],
        reasoning_open: bool,
    ) -> Result<Option<Speculation>, Halt> {
        if self.drafting.is_off() || !speculative::applies(&request.params) {
            return Ok(None);
        }
        let encode = |text: &str| self.tokenizer.encode(text);
        let frame = if let Some(observation) = &request.current_observation {
            AnswerFrame::new(observation, reasoning_open, encode).map_err(model_error)?
        } else {
            let last_answer = request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == worldloom_core::ChatRole::Assistant);
            let tokens = match last_answer {
                Some(m) => encode(&m.content).map_err(model_error)?,
                None => Vec::new(),
            };
            AnswerFrame::verbatim(tokens, reasoning_open)
        };
        Ok(self.drafting.drafter(prompt, &frame).map(Speculation::new))
    }

    fn predict(&mut self, job: &Job) -> Result<(), Halt> {
        let Job {
            request,
            events,
            cancel,
        } = job;
        let params = &request.params;
        let send = |event: EngineEvent| events.send(event).map_err(|_| Halt::Gone);
        if cancel.is_cancelled() {
            return Err(Halt::Cancelled);
        }
        let start = Instant::now();
        let (text, prompt) = render_prompt(
            &self.template,
            &self.tokenizer,
            &request.messages,
            params.enable_thinking,
        )
        .map_err(Halt::Failed)?;
        if prompt.is_empty() {
            return Err(Halt::Failed(EngineError::InvalidRequest(format!(
                "{} rendered an empty prompt",
                self.template.source_name()
            ))));
        }
        let mut sampler = Sampler::from_params(params)
            .map_err(|e| Halt::Failed(EngineError::InvalidRequest(e.to_string())))?;

        let Prefilled {
            mut state,
            logits: prompt_logits,
            computed,
        } = self.prefill(&prompt, cancel)?;
        let prefill_ms = start.elapsed().as_secs_f64() * 1e3;
        let decode_start = Instant::now();
        let reasoning_open = opens_reasoning(&text);
        let mut speculation = self.speculation(request, &prompt, reasoning_open)?;

        let mut parser = OutputParser::new(reasoning_open);
        let mut stops = StopStrings::new(&params.stop);
        let mut decoder = StreamDecoder::new();
        let mut logits = StepLogits::Host(prompt_logits);
        let mut completion_tokens = 0usize;
        let mut plain_forwards = 0usize;
        // Runs released text through the parser; true when the observation
        // closed and generation must stop there.
        let parse = |text: &str, parser: &mut OutputParser| -> Result<bool, Halt> {
            let delta = if params.stop_after_observation {
                parser.push_to_close(text).0
            } else {
                parser.push(text)
            };
            let closed = params.stop_after_observation && delta.observation_closed;
            for event in EngineEvent::from_delta(delta) {
                send(event)?;
            }
            Ok(closed)
        };
        let stop_reason = loop {
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if completion_tokens >= params.max_new_tokens {
                break StopReason::MaxTokens;
            }
            // A token a verification chose (a kept draft token, already fed,
            // or a replacement), else one chosen from the logits.
            let chosen = speculation.as_mut().and_then(Speculation::next_chosen);
            let from_draft = chosen.as_ref().is_some_and(|c| c.fed);
            // The logits the token was chosen from (a drafted token's own
            // row of the verifying forward), for its top alternatives.
            let judged_on = chosen
                .as_ref()
                .map(|c| StepLogits::Host(Arc::clone(&c.row)));
            let token = match (chosen, &logits) {
                (Some(c), _) => c.token,
                (None, StepLogits::Host(l)) => sampler.sample(l).map_err(model_error)?,
                (None, StepLogits::Device(t)) => sampler.sample_tensor(t).map_err(model_error)?,
            };
            if let Some(s) = speculation.as_mut() {
                s.push(token.id);
            }
            completion_tokens += 1;
            let end_of_turn = self.end_of_turn_ids.contains(&token.id)
                || params.stop_token_ids.contains(&token.id);
            let skipped = params.skip_special_tokens && self.special_ids.contains(&token.id);
            let piece = if end_of_turn || skipped {
                String::new()
            } else {
                decoder
                    .step(&self.tokenizer, token.id)
                    .map_err(model_error)?
                    .unwrap_or_default()
            };
            let top = if params.logprobs && params.top_logprobs > 0 {
                self.top_alternatives(judged_on.as_ref().unwrap_or(&logits), params.top_logprobs)?
            } else {
                Vec::new()
            };
            send(EngineEvent::Token(Token {
                text: piece.clone(),
                id: Some(token.id),
                logprob: params.logprobs.then_some(token.logprob),
                top,
            }))?;
            if end_of_turn {
                break StopReason::EndOfTurn;
            }
            let (released, stopped) = stops.push(&piece);
            if parse(&released, &mut parser)? {
                break StopReason::ObservationClosed;
            }
            if stopped {
                break StopReason::StopString;
            }
            if completion_tokens >= params.max_new_tokens {
                break StopReason::MaxTokens;
            }
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if from_draft {
                // The verifying forward fed every kept token: the state and
                // the logits are already past this one.
                continue;
            }
            if let Some(s) = speculation.as_mut() {
                let room = params.max_new_tokens - completion_tokens;
                let verified = s
                    .verify(
                        &self.model,
                        &mut sampler,
                        token.id,
                        room.saturating_sub(1),
                        &mut state,
                    )
                    .map_err(model_error)?;
                if let Some(next) = verified {
                    self.check_vocab(next.len())?;
                    logits = StepLogits::Host(Arc::new(next));
                    continue;
                }
            }
            logits = self.forward_step(&[token.id], &mut state)?;
            plain_forwards += 1;
        };
        if matches!(
            stop_reason,
            StopReason::EndOfTurn | StopReason::MaxTokens | StopReason::Cancelled
        ) {
            let tail = decoder.pending_text(&self.tokenizer).map_err(model_error)?;
            let (released, stopped) = stops.push(&tail);
            let released = if stopped {
                released
            } else {
                released + &stops.flush()
            };
            parse(&released, &mut parser)?;
        }
        for event in EngineEvent::from_delta(parser.flush()) {
            send(event)?;
        }
        let decode_ms = decode_start.elapsed().as_secs_f64() * 1e3;
        let (drafted, accepted, verifying) = speculation
            .as_ref()
            .map_or((0, 0, 0), |s| (s.drafted, s.accepted, s.forwards));
        let stats = GenerationStats {
            prompt_tokens: prompt.len(),
            prompt_tokens_computed: computed,
            completion_tokens,
            prefill_ms,
            decode_ms,
            decode_tokens_per_sec: GenerationStats::decode_rate(completion_tokens, decode_ms),
            stop_reason: Some(stop_reason),
            decode_forwards: plain_forwards + verifying,
            drafted_tokens: drafted,
            accepted_tokens: accepted,
        };
        let mut output = parser.finish_output();
        output.settle(stats.stop_reason);
        send(EngineEvent::Done { stats, output })
    }
}

/// Stop strings, matched on the whole generated text: text that may be the
/// start of one is held back until the next piece decides it, and, like
/// OpenAI's `stop`, a matched string is not part of the output.
#[derive(Debug, Clone, Default)]
pub struct StopStrings {
    stops: Vec<String>,
    pending: String,
}

impl StopStrings {
    /// A matcher for the non-empty strings of `stops`.
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            pending: String::new(),
        }
    }

    /// Adds generated text; returns the text it releases and whether a stop
    /// string was reached (the released text then ends right before it and
    /// nothing more is held).
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.pending.push_str(text);
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min()
        {
            let mut released = std::mem::take(&mut self.pending);
            released.truncate(at);
            return (released, true);
        }
        let mut held = 0;
        for stop in &self.stops {
            for k in (held + 1..stop.len()).rev() {
                if let Some(prefix) = stop.get(..k)
                    && self.pending.ends_with(prefix)
                {
                    held = k;
                    break;
                }
            }
        }
        let rest = self.pending.split_off(self.pending.len() - held);
        (std::mem::replace(&mut self.pending, rest), false)
    }

    /// Releases what is held (end of generation).
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

mod speculative;
use speculative::Speculation;
pub use speculative::{AnswerFrame, DrafterFactory, Drafting, MAX_VERIFIED};

#[cfg(test)]
mod tests;
