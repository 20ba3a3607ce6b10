//! The contract between a causal language model (e.g. the `qwen3_5_moe`
//! module) and the generation runtime (sampling, snapshots, the engine
//! thread).

use candle_core::{Result, Tensor};

/// A decoder-only language model with explicit, cloneable decode state.
///
/// The state holds everything needed to continue from a position: for
/// Qwen3.5-MoE the KV cache of full-attention layers and the conv and
/// recurrent states of Gated DeltaNet layers. Cloning a state is a snapshot:
/// feeding the same tokens to a clone gives the same logits as feeding them
/// to the original.
pub trait CausalLm: Send + 'static {
    /// The decode state (caches) of one sequence.
    type State: Clone + Send + 'static;

    /// What [`CausalLm::rewind`] needs to put a state back where
    /// [`CausalLm::checkpoint`] found it (for Qwen3.5-MoE: the position, the
    /// KV lengths and the DeltaNet states, which forwards replace rather
    /// than write into).
    type Checkpoint: Send;

    /// A fresh state at position 0.
    fn new_state(&self) -> Result<Self::State>;

    /// Feeds `input_ids` (one sequence, any length ≥ 1) after the tokens the
    /// state has already seen, advances the state, and returns the logits of
    /// the **last** position as an f32 tensor of shape `[vocab_size]`.
    fn forward(&self, input_ids: &[u32], state: &mut Self::State) -> Result<Tensor>;

    /// Feeds `input_ids` as [`CausalLm::forward`] does and returns the
    /// logits of **every** position, f32 `[T, vocab_size]`: row i is the
    /// distribution of the token after `input_ids[i]` (speculative decoding
    /// verifies a draft with it). The default feeds one token at a time.
    fn forward_all(&self, input_ids: &[u32], state: &mut Self::State) -> Result<Tensor> {
        let rows = input_ids
            .iter()
            .map(|&id| self.forward(&[id], state))
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&rows, 0)
    }

    /// A checkpoint of `state`, cheap to take: no copy of its caches.
    fn checkpoint(state: &Self::State) -> Self::Checkpoint;

    /// Puts `state` back where `checkpoint` found it; the checkpoint must
    /// have been taken from this state, with only forwards since (the
    /// tokens fed after it are forgotten: a rejected draft).
    fn rewind(state: &mut Self::State, checkpoint: Self::Checkpoint);

    /// Puts `state` where it was after the first `keep` tokens of the one
    /// forward made since `checkpoint` (a draft kept in part), without
    /// feeding them again; `Ok(false)` when the model cannot (then `state`
    /// is unchanged and the caller rewinds to the checkpoint and feeds the
    /// kept tokens). The default cannot.
    ///
    /// # Errors
    /// The device's errors while recomputing a recurrent state.
    fn rewind_within(
        _state: &mut Self::State,
        _checkpoint: &Self::Checkpoint,
        _keep: usize,
    ) -> Result<bool> {
        Ok(false)
    }

    /// Number of tokens the state has seen.
    fn state_len(state: &Self::State) -> usize;

    /// Bytes the state occupies on its device (for the snapshot LRU budget).
    fn state_size_bytes(state: &Self::State) -> usize;

    /// Vocabulary size (length of the logits vector).
    fn vocab_size(&self) -> usize;
}
