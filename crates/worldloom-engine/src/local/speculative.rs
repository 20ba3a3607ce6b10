//! Speculative decoding in the [`LocalEngine`](super::LocalEngine): a
//! drafter ([`crate::draft`]) proposes the tokens after the one just
//! chosen, the model reads that token and the draft in one forward
//! ([`CausalLm::forward_all`], the prefill path), and the longest prefix of
//! the draft that greedy decoding would have chosen is kept.
//!
//! Exactness: a draft token is kept only where it is the argmax of the
//! verifying forward's logits at its position (the rule greedy decoding
//! applies, lowest id among ties). When a draft is cut short the state is
//! rewound to before the forward ([`CausalLm::rewind`]: KV lengths and
//! recurrent states put back) and the kept tokens are fed again, whose
//! last-position logits then choose the next token, so a draft rejected at
//! its first token leaves generation exactly as without drafting. Kept
//! tokens were chosen from a multi-token forward, whose arithmetic (chunked
//! DeltaNet, batched matmuls) can differ from one-token steps in the last
//! bits; the tests check the outputs are the same token for token.
//!
//! Only greedy requests without penalties or log-probabilities draft
//! ([`applies`]); others decode one token at a time.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::draft::{Drafter, NgramDrafter, ObservationDrafter};
use crate::lm::CausalLm;
use crate::sampling::{Sampler, argmax};
use crate::world_model::GenerationParams;

/// The longest draft verified in one forward, in tokens.
pub const MAX_VERIFIED: usize = crate::draft::MAX_DRAFT;

/// Makes a request's drafter from the prompt's tokens and the current
/// observation's tokens.
pub type DrafterFactory = Arc<dyn Fn(&[u32], &[u32]) -> Box<dyn Drafter> + Send + Sync>;

/// How a [`LocalEngine`](super::LocalEngine) drafts tokens for greedy
/// requests.
#[derive(Clone, Default)]
pub enum Drafting {
    /// No drafting: one token a forward.
    #[default]
    Off,
    /// [`ObservationDrafter`] over the request's current observation (else
    /// the last assistant message), with the prompt as its history.
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
    pub(super) fn drafter(&self, prompt: &[u32], observation: &[u32]) -> Option<Box<dyn Drafter>> {
        match self {
            Self::Off => None,
            Self::Observation => Some(Box::new(ObservationDrafter::new(
                observation.to_vec(),
                vec![prompt.to_vec()],
            ))),
            Self::PromptLookup => Some(Box::new(NgramDrafter::new(prompt.to_vec(), 3, 8))),
            Self::Custom(make) => Some(make(prompt, observation)),
        }
    }
}

/// Whether a request may draft: greedy, no penalties, no log-probabilities
/// (the tokens kept from a draft were not sampled one by one).
pub(super) fn applies(sampler: &Sampler, params: &GenerationParams) -> bool {
    sampler.is_plain_greedy() && !params.logprobs
}

/// One generation's drafting: the drafter, the tokens generated so far and
/// the kept draft tokens not yet emitted.
pub(super) struct Speculation {
    drafter: Box<dyn Drafter>,
    generated: Vec<u32>,
    pending: VecDeque<u32>,
}

impl Speculation {
    pub(super) fn new(drafter: Box<dyn Drafter>) -> Self {
        Self {
            drafter,
            generated: Vec::new(),
            pending: VecDeque::new(),
        }
    }

    /// The next kept draft token to emit, if any.
    pub(super) fn next_pending(&mut self) -> Option<u32> {
        self.pending.pop_front()
    }

    /// Notes a token as generated (sampled or kept from a draft).
    pub(super) fn push(&mut self, token: u32) {
        self.generated.push(token);
    }

    /// Verifies a draft after `token` (just generated, not yet fed): feeds
    /// `token` and the draft (at most `room` tokens) and returns the
    /// logits after the last kept token, or `None` when the drafter had
    /// nothing to propose (the caller then feeds `token` alone). The kept
    /// draft tokens wait in the pending queue.
    ///
    /// # Errors
    /// The model's errors.
    pub(super) fn verify<M: CausalLm>(
        &mut self,
        model: &M,
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
        let rows = model.forward_all(&input, state)?.to_vec2::<f32>()?;
        let mut kept = 0;
        while kept < draft.len() {
            let choice = argmax(&rows[kept]).map_err(|e| candle_core::Error::Msg(e.to_string()))?;
            if choice != draft[kept] {
                break;
            }
            kept += 1;
        }
        self.drafter.accepted(draft.len(), kept);
        self.pending.extend(&draft[..kept]);
        if kept == draft.len() {
            return Ok(rows.into_iter().nth(kept));
        }
        // Cut short: back to before the forward, then the kept tokens again.
        M::rewind(state, checkpoint);
        let logits = model.forward(&input[..=kept], state)?.to_vec1::<f32>()?;
        Ok(Some(logits))
    }
}
