//! Speculative decoding in the [`LocalEngine`](super::LocalEngine): a
//! drafter ([`crate::draft`]) proposes the tokens after the one just
//! chosen, the model reads that token and the draft in one forward
//! ([`CausalLm::forward_all`], the prefill path), and the longest prefix of
//! the draft that greedy decoding would have chosen is kept.
//!
//! Exactness ([`Sampler::judge_draft`]): greedy, a draft token is kept
//! only where it is the argmax of the verifying forward's logits at its
//! position (penalties applied, lowest id among ties); sampling, it is kept
//! with its probability under the request's distribution and, when not, a
//! token is drawn from that distribution without it (renormalised), so
//! every token has the distribution plain sampling gives it. When a draft
//! is cut short the state is put where it was after the kept tokens
//! ([`CausalLm::rewind_within`]: KV caches cut, Qwen3.5-MoE's recurrent
//! states recomputed from the inputs the forward kept) and the next token
//! comes from the kept tokens' last row of the same forward; a model that
//! cannot is rewound to before the forward ([`CausalLm::rewind`]) and fed
//! the kept tokens again. Kept tokens were chosen from a multi-token forward,
//! whose arithmetic (chunked DeltaNet, batched matmuls) can differ from
//! one-token steps in the last bits; the tests check greedy outputs are the
//! same token for token and sampled ones have the same distribution.
//!
//! A kept token carries its log-probability and the logits row it was
//! judged on, so requests for log-probabilities (and their top
//! alternatives) draft too; a request turning drafting off
//! (`GenerationParams::speculative`) decodes one token at a time
//! ([`applies`]).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::draft::{Drafter, NgramDrafter, ObservationDrafter, Start};
use crate::lm::CausalLm;
use crate::sampling::{DraftVerdict, SampledToken, Sampler};
use crate::world_model::GenerationParams;
use worldloom_core::output::{THINK_CLOSE, format_observation};

/// The longest draft verified in one forward, in tokens.
pub const MAX_VERIFIED: usize = crate::draft::MAX_DRAFT;

/// Makes a request's drafter from the prompt's tokens and the current
/// observation's tokens as the answer frames them ([`AnswerFrame::tokens`]:
/// the tags, and the reasoning's close where the prompt leaves it open).
pub type DrafterFactory = Arc<dyn Fn(&[u32], &[u32]) -> Box<dyn Drafter> + Send + Sync>;

/// How a [`LocalEngine`](super::LocalEngine) drafts tokens for greedy
/// requests.
#[derive(Clone, Default)]
pub enum Drafting {
    /// No drafting: one token a forward.
    #[default]
    Off,
    /// [`ObservationDrafter`] over the request's current observation as the
    /// answer frames it ([`AnswerFrame`]; else the last assistant message),
    /// with the prompt as its history.
    Observation,
    /// [`NgramDrafter`] over the prompt (prompt lookup: matches of up to 3
    /// tokens, 8 tokens a draft).
    PromptLookup,
    /// A drafter made per request by this function (tests use one whose
    /// drafts are always wrong).
    Custom(DrafterFactory),
}

impl std::fmt::Debug for Drafting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Off => "Off",
            Self::Observation => "Observation",
            Self::PromptLookup => "PromptLookup",
            Self::Custom(_) => "Custom",
        })
    }
}

impl Drafting {
    /// Whether drafting is off.
    pub fn is_off(&self) -> bool {
        matches!(self, Self::Off)
    }

    /// The drafter for one request, `None` when drafting is off.
    pub(super) fn drafter(&self, prompt: &[u32], frame: &AnswerFrame) -> Option<Box<dyn Drafter>> {
        match self {
            Self::Off => None,
            Self::Observation => Some(Box::new(
                ObservationDrafter::new(frame.tokens.clone(), vec![prompt.to_vec()])
                    .starting_at(frame.start),
            )),
            Self::PromptLookup => Some(Box::new(NgramDrafter::new(prompt.to_vec(), 3, 8))),
            Self::Custom(make) => Some(make(prompt, &frame.tokens)),
        }
    }
}

/// The current observation's tokens as the answer will spell them, and
/// where the answer starts in them: the AgentWorldBench answer format
/// (the observation inside one closed `<predicted_observation>` block, as
/// its system prompts ask, laid out as
/// [`format_observation`] writes it), after the reasoning's close as the
/// Qwen3.5 chat template writes it (`</think>` and a blank line). Drafting
/// from the frame proposes the tags and the observation's first tokens as
/// soon as the reasoning closes, instead of waiting for two of the
/// observation's own tokens to re-synchronise on; a model that lays the
/// block out otherwise re-synchronises as after any edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerFrame {
    /// When the answer opens with reasoning, its close: `</think>` and a
    /// blank line (`\n</think>\n\n` where the tokenizer spells `</think>`
    /// in several tokens); then
    /// `<predicted_observation>\n{observation}\n</predicted_observation>`;
    /// each part tokenized on its own.
    pub tokens: Vec<u32>,
    /// Where the drafter's pointer starts: at the opening tag when the
    /// prompt closed the reasoning (the answer is the frame); after the
    /// reasoning's close when that is one token (Qwen3.5's tokenizers have
    /// `</think>` as an added token, so the close alone places the pointer
    /// however the text before it was split); else lost until two tokens
    /// match.
    pub start: Start,
}

impl AnswerFrame {
    /// Frames `observation` (its text as the request gives it) with
    /// `encode`, the model's tokenizer; `reasoning_open` when the prompt
    /// leaves a think block open ([`opens_reasoning`]).
    ///
    /// [`opens_reasoning`]: worldloom_core::output::opens_reasoning
    ///
    /// # Errors
    /// `encode`'s.
    pub fn new<E>(
        observation: &str,
        reasoning_open: bool,
        encode: impl Fn(&str) -> Result<Vec<u32>, E>,
    ) -> Result<Self, E> {
        let (mut tokens, start) = if reasoning_open {
            let close = encode(THINK_CLOSE)?;
            if close.len() == 1 {
                let mut tokens = close;
                tokens.extend(encode("\n\n")?);
                (tokens, Start::After(0))
            } else {
                (encode(&format!("\n{THINK_CLOSE}\n\n"))?, Start::Lost)
            }
        } else {
            (Vec::new(), Start::At(0))
        };
        tokens.extend(encode(&format_observation(observation))?);
        Ok(Self { tokens, start })
    }

    /// Text to draft from as it is (an earlier answer): from its start,
    /// or lost while the answer reasons first (`reasoning_open`).
    pub fn verbatim(tokens: Vec<u32>, reasoning_open: bool) -> Self {
        let start = if reasoning_open {
            Start::Lost
        } else {
            Start::At(0)
        };
        Self { tokens, start }
    }
}

/// Whether a request may draft: one that allows it
/// ([`GenerationParams::speculative`]).
pub(super) fn applies(params: &GenerationParams) -> bool {
    params.speculative
}

/// A token verification chose: a kept draft token (already fed) or a
/// replacement (not fed), with the logits row it was judged on (for the
/// request's top log-probabilities).
pub(super) struct Chosen {
    pub(super) token: SampledToken,
    pub(super) fed: bool,
    pub(super) row: Arc<Vec<f32>>,
}

/// One generation's drafting: the drafter, the tokens generated so far,
/// the kept draft tokens not yet emitted (already fed) and the token drawn
/// in place of a rejected one (not fed yet), each with the row it was
/// judged on.
pub(super) struct Speculation {
    drafter: Box<dyn Drafter>,
    /// Tokens proposed, tokens kept and forwards run by [`Self::verify`].
    pub(super) drafted: usize,
    pub(super) accepted: usize,
    pub(super) forwards: usize,
    generated: Vec<u32>,
    pending: VecDeque<Chosen>,
    replacement: Option<Chosen>,
}

impl Speculation {
    pub(super) fn new(drafter: Box<dyn Drafter>) -> Self {
        Self {
            drafter,
            drafted: 0,
            accepted: 0,
            forwards: 0,
            generated: Vec::new(),
            pending: VecDeque::new(),
            replacement: None,
        }
    }

    /// The next token already chosen by a verification, if any.
    pub(super) fn next_chosen(&mut self) -> Option<Chosen> {
        self.pending.pop_front().or_else(|| self.replacement.take())
    }

    /// Notes a token as generated (sampled or kept from a draft).
    pub(super) fn push(&mut self, token: u32) {
        self.generated.push(token);
    }

    /// Verifies a draft after `token` (just generated, not yet fed): feeds
    /// `token` and the draft (at most `room` tokens), judges each drafted
    /// token with `sampler`, and returns the logits after the last kept
    /// token, or `None` when the drafter had nothing to propose (the caller
    /// then feeds `token` alone). The kept draft tokens, and a token drawn
    /// in place of a rejected one, wait for [`Speculation::next_chosen`].
    ///
    /// # Errors
    /// The model's and the sampler's errors.
    pub(super) fn verify<M: CausalLm>(
        &mut self,
        model: &M,
        sampler: &mut Sampler,
        token: u32,
        room: usize,
        state: &mut M::State,
    ) -> candle_core::Result<Option<Vec<f32>>> {
        let max = room.min(MAX_VERIFIED);
        if max == 0 {
            return Ok(None);
        }
        let draft = self.drafter.draft(&self.generated, max);
        if draft.is_empty() {
            return Ok(None);
        }
        let checkpoint = M::checkpoint(state);
        let mut input = Vec::with_capacity(draft.len() + 1);
        input.push(token);
        input.extend_from_slice(&draft);
        let mut rows: Vec<Arc<Vec<f32>>> = model
            .forward_all(&input, state)?
            .to_vec2::<f32>()?
            .into_iter()
            .map(Arc::new)
            .collect();
        let mut kept = 0;
        while kept < draft.len() {
            let row = &rows[kept];
            let verdict = sampler
                .judge_draft(row, draft[kept])
                .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
            let chosen = |token, fed| Chosen {
                token,
                fed,
                row: Arc::clone(row),
            };
            match verdict {
                DraftVerdict::Kept(token) => {
                    self.pending.push_back(chosen(token, true));
                    kept += 1;
                }
                DraftVerdict::Rejected => break,
                DraftVerdict::Replaced(drawn) => {
                    self.replacement = Some(chosen(drawn, false));
                    break;
                }
            }
        }
        self.drafter.accepted(draft.len(), kept);
        self.drafted += draft.len();
        self.accepted += kept;
        self.forwards += 1;
        if kept == draft.len() {
            let last = rows.swap_remove(kept);
            return Ok(Some(Arc::unwrap_or_clone(last)));
        }
        // Cut short: the state after the token and the kept draft, and the
        // logits after them (their row of this forward). Recomputed from
        // what the forward kept where the model can, else back to before
        // the forward and the kept tokens fed again.
        if M::rewind_within(state, &checkpoint, kept + 1)? {
            return Ok(Some(Arc::unwrap_or_clone(rows.swap_remove(kept))));
        }
        M::rewind(state, checkpoint);
        self.forwards += 1;
        let logits = model.forward(&input[..=kept], state)?.to_vec1::<f32>()?;
        Ok(Some(logits))
    }
}
