//! Qwen3.5-MoE (`qwen3_5_moe`), the architecture of Qwen-AgentWorld-35B-A3B,
//! on candle.
//!
//! Follows the Hugging Face `transformers` reference
//! (`models/qwen3_5_moe/modeling_qwen3_5_moe.py`, transformers 5.24.0), which
//! the fixtures in `tests/fixtures/qwen3_5_moe/` were generated with. The
//! decoder interleaves two token mixers:
//!
//! - **Gated DeltaNet** (Yang, Kautz, Hatamizadeh, "Gated Delta Networks:
//!   Improving Mamba2 with Delta Rule", ICLR 2025): a depthwise causal conv1d
//!   over the q/k/v projections, then the gated delta rule on a per-head
//!   `d_k × d_v` fp32 state. Prefill uses the chunked (UT-transform) form with
//!   chunks of 64 tokens; decode uses the token recurrence. Both compute the
//!   same function.
//! - **Gated full attention**: `q_proj` yields per head a query and an output
//!   gate, zero-centred q/k RMSNorms, rotate-half RoPE on the first
//!   `head_dim × partial_rotary_factor` dimensions, GQA, output ×
//!   sigmoid(gate).
//!
//! Every layer's feed-forward is a sparse MoE: fp32 softmax router over all
//! experts, top-k, renormalised weights, SwiGLU experts, plus a shared
//! SwiGLU expert scaled by sigmoid(`shared_expert_gate`(x)) (in
//! [`crate::moe`], with its dispatch to the experts).
//!
//! Norms: `input_layernorm`, `post_attention_layernorm`, the final norm and
//! `q_norm`/`k_norm` are zero-centred (output = rmsnorm(x) · (1 + w), in f32);
//! the DeltaNet output norm is a plain gated RMSNorm (w · rmsnorm(x) ·
//! silu(z)).
//!
//! Precision follows the reference: projections run in the model dtype,
//! norms, the router softmax, the gated delta rule and its state run in f32.
//!
//! State ([`State`]): the DeltaNet states are rebuilt by each forward; the
//! KV caches are append-only buffers written in place, shared by clones
//! until one would overwrite positions another reads (then it copies), so
//! `State::clone` (which shares the tensors) is a snapshot that later steps
//! on either copy cannot disturb.
//!
//! Where things are: [`Config`] in `config.rs`, the mixers in
//! `attention.rs` and `deltanet.rs`, the norms in `norm.rs`; the decoder,
//! its state and the forward pass here. Tensors come by name from a
//! [`Weights`] handle ([`crate::weights`]); the CPU linear kernel is in
//! `crate::kernels`.

use candle_core::{DType, Device, Tensor};

use crate::lm::CausalLm;
use crate::moe::SparseMoe;
use crate::weights::{LinearWeight, LoadError, TensorSource, Weights};

mod attention;
mod config;
mod deltanet;
pub mod gguf;
mod norm;

pub use crate::moe::{MoeDispatch, MoeShape};
use attention::{FullAttention, KvCache};
pub use config::{Config, LayerKind, ParamCounts, RopeParameters};
pub use deltanet::DELTANET_CHUNK_TOKENS;
use deltanet::{DeltaNetState, GatedDeltaNet};
use norm::ZeroCentredRmsNorm;

#[derive(Debug, Clone)]
enum Mixer {
    Attention(FullAttention),
    DeltaNet(GatedDeltaNet),
}

#[derive(Debug, Clone)]
struct DecoderLayer {
    input_layernorm: ZeroCentredRmsNorm,
    post_attention_layernorm: ZeroCentredRmsNorm,
    mixer: Mixer,
    moe: SparseMoe,
}

/// Decode state of one layer.
#[derive(Debug, Clone)]
enum LayerState {
    Attention(Option<KvCache>),
    DeltaNet(DeltaNetState),
}

/// The decode state of one sequence: KV caches of the attention layers,
/// conv and recurrent states of the DeltaNet layers, and the position.
///
/// Cloning is cheap (tensors are shared) and is a snapshot: forwards never
/// write into shared tensors (a shared KV buffer is copied before its
/// first write).
#[derive(Debug, Clone)]
pub struct State {
    position: usize,
    layers: Vec<LayerState>,
}

impl State {
    /// Tokens seen so far.
    pub fn len(&self) -> usize {
        self.position
    }

    /// Whether no token has been fed yet.
    pub fn is_empty(&self) -> bool {
        self.position == 0
    }

    /// Bytes the state's tensors occupy.
    pub fn size_bytes(&self) -> usize {
        let bytes = |t: &Tensor| t.elem_count() * t.dtype().size_in_bytes();
        self.layers
            .iter()
            .map(|l| match l {
                LayerState::Attention(Some(c)) => c.size_bytes(),
                LayerState::Attention(None) => 0,
                LayerState::DeltaNet(s) => {
                    bytes(&s.conv) + bytes(&s.recurrent) + s.trail_size_bytes()
                }
            })
            .sum()
    }
}

/// A [`State`] as it was at [`CausalLm::checkpoint`]: its position, the
/// KV caches' lengths and the DeltaNet states (tensor handles: forwards
/// replace them and never write into them, and positions past a KV length
/// are never read, so nothing is copied).
pub struct Checkpoint {
    position: usize,
    layers: Vec<SavedLayer>,
}

/// What a step must put back into a layer's state if it fails.
enum SavedLayer {
    /// The KV cache's length before the step (`None`: no cache yet).
    Attention(Option<usize>),
    DeltaNet(DeltaNetState),
}

impl SavedLayer {
    fn of(layer: &LayerState) -> Self {
        match layer {
            LayerState::Attention(cache) => Self::Attention(cache.as_ref().map(KvCache::len)),
            LayerState::DeltaNet(s) => Self::DeltaNet(s.clone()),
        }
    }

    fn restore(self, layer: &mut LayerState) {
        match (self, layer) {
            (Self::Attention(None), LayerState::Attention(cache)) => *cache = None,
            (Self::Attention(Some(len)), LayerState::Attention(Some(cache))) => cache.truncate(len),
            (Self::DeltaNet(saved), LayerState::DeltaNet(s)) => *s = saved,
            _ => {}
        }
    }
}

/// How [`Qwen3_5Moe::forward_with`] runs the DeltaNet layers on a
/// multi-token input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeltaNetMode {
    /// Chunked form for inputs longer than one token, recurrence for one
    /// token (what the reference does).
    #[default]
    Auto,
    /// The token recurrence for every input (a test oracle).
    Recurrent,
}

/// Qwen3.5-MoE causal language model (text part).
#[derive(Debug, Clone)]
pub struct Qwen3_5Moe {
    config: Config,
    embed_tokens: LinearWeight,
    layers: Vec<DecoderLayer>,
    norm: ZeroCentredRmsNorm,
    lm_head: LinearWeight,
    /// RoPE inverse frequencies θ^(−2j/rot), f32, [rot/2].
    inv_freq: Vec<f32>,
    dtype: DType,
    device: Device,
    moe_dispatch: MoeDispatch,
    /// Whether norms, the DeltaNet decode step and the router run as fused
    /// ops (`crate::kernels::fused`).
    fused_ops: bool,
}

impl Qwen3_5Moe {
    /// Builds the model from named tensors in `src`, in `dtype` on `device`
    /// (see [`Qwen3_5Moe::from_weights`]).
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`] / [`LoadError::ShapeMismatch`] naming the
    /// tensor, [`LoadError::InvalidConfig`] for an unusable config.
    pub fn load(
        config: Config,
        src: &dyn TensorSource,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, LoadError> {
        Self::from_weights(config, &Weights::new(src, dtype, device))
    }

    /// Builds the model from the tensors under `vb` (the checkpoint's root),
    /// in `vb`'s dtype on its device.
    ///
    /// Tensor names follow the Hugging Face checkpoints: `model.…` (flat
    /// ForCausalLM) or `model.language_model.…` (released form), experts per
    /// expert (`mlp.experts.{e}.{gate,up,down}_proj.weight`) or stacked
    /// (`mlp.experts.gate_up_proj` [E, 2I, H], `mlp.experts.down_proj`
    /// [E, H, I]); `model.visual.*` and `mtp.*` are not read. Experts are
    /// held stacked either way.
    ///
    /// The MoE dispatch is [`MoeDispatch::best_for`] the config, dtype and
    /// device: the fused CUDA kernels for bf16/f16 on CUDA, else one matmul
    /// pair per expert.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`] / [`LoadError::ShapeMismatch`] naming the
    /// tensor, [`LoadError::InvalidConfig`] for an unusable config.
    pub fn from_weights(config: Config, vb: &Weights<'_>) -> Result<Self, LoadError> {
        config
            .validate()
            .map_err(|(field, message)| LoadError::InvalidConfig {
                path: "config.json".into(),
                field,
                message,
            })?;
        let (dtype, device) = (vb.dtype(), vb.device());
        let text = if vb.contains("model.language_model.embed_tokens.weight") {
            vb.pp("model.language_model")
        } else {
            vb.pp("model")
        };
        let (h, v) = (config.hidden_size, config.vocab_size);
        let embed_tokens = text.get_embedding("embed_tokens.weight", &[v, h])?;
        let lm_head = if vb.contains("lm_head.weight") || !config.tie_word_embeddings {
            vb.get_linear("lm_head.weight", &[v, h])?
        } else {
            embed_tokens.clone()
        };
        let eps = config.rms_norm_eps;
        let moe_shape = MoeShape::from(&config);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let layer = text.pp("layers").pp(i);
            let mixer = match config.layer_kind(i) {
                LayerKind::FullAttention => {
                    Mixer::Attention(FullAttention::load(&config, &layer.pp("self_attn"))?)
                }
                LayerKind::LinearAttention => {
                    Mixer::DeltaNet(GatedDeltaNet::load(&config, &layer.pp("linear_attn"))?)
                }
            };
            layers.push(DecoderLayer {
                input_layernorm: ZeroCentredRmsNorm::load(
                    &layer,
                    "input_layernorm.weight",
                    h,
                    eps,
                )?,
                post_attention_layernorm: ZeroCentredRmsNorm::load(
                    &layer,
                    "post_attention_layernorm.weight",
                    h,
                    eps,
                )?,
                mixer,
                moe: SparseMoe::load(&moe_shape, &layer.pp("mlp"))?,
            });
        }
        let norm = ZeroCentredRmsNorm::load(&text, "norm.weight", h, eps)?;
        let rot = config.rotary_dim();
        let theta = config.rope_theta();
        let inv_freq = (0..rot / 2)
            .map(|j| (1.0 / theta.powf((2 * j) as f64 / rot as f64)) as f32)
            .collect();
        let dense_experts = layers.iter().all(|l| l.moe.experts_are_dense());
        let moe_dispatch = if dense_experts {
            MoeDispatch::best_for(&config, dtype, device)
        } else {
            MoeDispatch::PerExpert
        };
        Ok(Self {
            config,
            embed_tokens,
            layers,
            norm,
            lm_head,
            inv_freq,
            dtype,
            device: device.clone(),
            moe_dispatch,
            fused_ops: device.is_cuda(),
        })
    }

    /// How the MoE blocks dispatch tokens to experts.
    pub fn moe_dispatch(&self) -> MoeDispatch {
        self.moe_dispatch
    }

    /// Chooses the MoE dispatch (for comparisons and benchmarks; loading
    /// already picks the fastest that applies).
    ///
    /// # Errors
    /// [`MoeDispatch::FusedCuda`] where [`MoeDispatch::fused_applies`] is
    /// false for this model's config, dtype and device.
    pub fn set_moe_dispatch(&mut self, dispatch: MoeDispatch) -> candle_core::Result<()> {
        if dispatch == MoeDispatch::FusedCuda
            && (!MoeDispatch::fused_applies(&self.config, self.dtype, &self.device)
                || !self.layers.iter().all(|l| l.moe.experts_are_dense()))
        {
            candle_core::bail!(
                "the fused CUDA MoE kernels need a `cuda` build, a CUDA device and dense \
                 bf16/f16 experts (model: {:?} on {:?})",
                self.dtype,
                self.device.location()
            );
        }
        self.moe_dispatch = dispatch;
        Ok(())
    }

    /// Whether the RMSNorms, the DeltaNet decode step and output norm and
    /// the MoE router run as fused ops (one kernel each instead of several
    /// candle ops; `docs/engine.md`, "Fused decode ops"). Loading turns them
    /// on for CUDA devices.
    pub fn fused_ops(&self) -> bool {
        self.fused_ops
    }

    /// Turns the fused ops on or off (comparisons and benchmarks). Both
    /// compute the same function; the fused ops' CPU implementations are
    /// the reference of their CUDA twins.
    pub fn set_fused_ops(&mut self, on: bool) {
        self.fused_ops = on;
    }

    /// The config the model was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The compute dtype of the weights.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// A fresh decode state at position 0.
    ///
    /// # Errors
    /// candle allocation errors.
    pub fn new_state(&self) -> candle_core::Result<State> {
        let layers = self
            .layers
            .iter()
            .map(|l| match &l.mixer {
                Mixer::Attention(_) => Ok(LayerState::Attention(None)),
                Mixer::DeltaNet(d) => {
                    Ok(LayerState::DeltaNet(d.new_state(self.dtype, &self.device)?))
                }
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(State {
            position: 0,
            layers,
        })
    }

    /// cos and sin [T, rot/2] (model dtype) for positions
    /// `offset..offset+T`, computed in f32 as the reference does.
    fn rope_tables(&self, offset: usize, t: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let half = self.inv_freq.len();
        let mut cos = Vec::with_capacity(t * half);
        let mut sin = Vec::with_capacity(t * half);
        for p in offset..offset + t {
            for f in &self.inv_freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let cos = Tensor::from_vec(cos, (t, half), &self.device)?.to_dtype(self.dtype)?;
        let sin = Tensor::from_vec(sin, (t, half), &self.device)?.to_dtype(self.dtype)?;
        Ok((cos, sin))
    }

    /// Runs the decoder over `input_ids` after the tokens in `state` and
    /// returns the final hidden states [T, hidden] (after the final norm).
    /// `keep_trail`: the DeltaNet layers keep this forward's inputs for
    /// [`CausalLm::rewind_within`] (a verified draft: [`Qwen3_5Moe::forward_all`]
    /// only, never a prompt or a decode step).
    fn hidden_states(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
        keep_trail: bool,
    ) -> candle_core::Result<Tensor> {
        let t = input_ids.len();
        if t == 0 {
            candle_core::bail!("forward needs at least one input token");
        }
        let vocab = self.config.vocab_size;
        if let Some(bad) = input_ids.iter().find(|&&id| id as usize >= vocab) {
            candle_core::bail!("token id {bad} is outside the vocabulary of {vocab}");
        }
        // A failing step leaves `state` as it was: the DeltaNet states (cheap
        // tensor handles) and the KV lengths are saved and put back on error;
        // KV positions written past the saved length are never read.
        let saved: Vec<SavedLayer> = state.layers.iter().map(SavedLayer::of).collect();
        match self.run_layers(
            input_ids,
            state.position,
            &mut state.layers,
            mode,
            keep_trail,
        ) {
            Ok(out) => {
                state.position += t;
                Ok(out)
            }
            Err(e) => {
                for (layer, saved) in state.layers.iter_mut().zip(saved) {
                    saved.restore(layer);
                }
                Err(e)
            }
        }
    }

    /// The decoder layers and the final norm over `input_ids` at positions
    /// `offset..`, updating `layers` (a [`State`]'s layer states; its
    /// position is the caller's to advance).
    fn run_layers(
        &self,
        input_ids: &[u32],
        offset: usize,
        layers: &mut [LayerState],
        mode: DeltaNetMode,
        keep_trail: bool,
    ) -> candle_core::Result<Tensor> {
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.embed_tokens.rows(&ids, self.dtype)?; // [T, H]
        let t = input_ids.len();
        let (cos, sin) = self.rope_tables(offset, t)?;
        let chunked = t > 1 && mode == DeltaNetMode::Auto;
        for (layer, layer_state) in self.layers.iter().zip(layers.iter_mut()) {
            let fused = self.fused_ops;
            let normed = layer.input_layernorm.forward_with(&x, fused)?;
            let mixed = match (&layer.mixer, layer_state) {
                (Mixer::Attention(a), LayerState::Attention(cache)) => {
                    a.forward(&normed, &cos, &sin, offset, cache, fused)?
                }
                (Mixer::DeltaNet(d), LayerState::DeltaNet(s)) => {
                    d.forward(&normed, s, chunked, fused, keep_trail)?
                }
                _ => candle_core::bail!("decode state does not match the model's layers"),
            };
            x = (x + mixed)?;
            let normed = layer.post_attention_layernorm.forward_with(&x, fused)?;
            x = (x + layer.moe.forward(&normed, self.moe_dispatch, fused)?)?;
        }
        self.norm.forward_with(&x, self.fused_ops)
    }

    /// Feeds `input_ids` and returns the f32 logits of **every** position,
    /// [T, vocab]. Advances `state`; an input of 2 to
    /// [`deltanet::TRAIL_MAX_TOKENS`] tokens (a verified draft) leaves in
    /// each DeltaNet layer's state what [`CausalLm::rewind_within`] needs,
    /// until the next forward.
    ///
    /// # Errors
    /// Empty input, a token id outside the vocabulary, candle errors.
    pub fn forward_all(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
    ) -> candle_core::Result<Tensor> {
        crate::kernels::on_pool(&self.device, || {
            self.lm_head
                .forward(&self.hidden_states(input_ids, state, mode, true)?)?
                .to_dtype(DType::F32)
        })
    }

    /// Feeds `input_ids` and returns the f32 logits of the last position,
    /// `[vocab]`. Advances `state`.
    ///
    /// # Errors
    /// As [`Qwen3_5Moe::forward_all`].
    pub fn forward_with(
        &self,
        input_ids: &[u32],
        state: &mut State,
        mode: DeltaNetMode,
    ) -> candle_core::Result<Tensor> {
        crate::kernels::on_pool(&self.device, || {
            let hidden = self.hidden_states(input_ids, state, mode, false)?;
            let last = hidden.narrow(0, input_ids.len() - 1, 1)?;
            self.lm_head
                .forward(&last)?
                .squeeze(0)?
                .to_dtype(DType::F32)
        })
    }
}

impl CausalLm for Qwen3_5Moe {
    type State = State;
    type Checkpoint = Checkpoint;

    fn new_state(&self) -> candle_core::Result<State> {
        Qwen3_5Moe::new_state(self)
    }

    fn forward(&self, input_ids: &[u32], state: &mut State) -> candle_core::Result<Tensor> {
        self.forward_with(input_ids, state, DeltaNetMode::Auto)
    }

    fn forward_all(&self, input_ids: &[u32], state: &mut State) -> candle_core::Result<Tensor> {
        Qwen3_5Moe::forward_all(self, input_ids, state, DeltaNetMode::Auto)
    }

    fn checkpoint(state: &State) -> Checkpoint {
        Checkpoint {
            position: state.position,
            layers: state.layers.iter().map(SavedLayer::of).collect(),
        }
    }

    fn rewind(state: &mut State, checkpoint: Checkpoint) {
        for (layer, saved) in state.layers.iter_mut().zip(checkpoint.layers) {
            saved.restore(layer);
        }
        state.position = checkpoint.position;
    }

    /// KV caches cut to their checkpoint length + `keep`; each DeltaNet
    /// layer's conv and recurrent state recomputed from the inputs its last
    /// forward kept (a [`Qwen3_5Moe::forward_all`] of at most
    /// [`deltanet::TRAIL_MAX_TOKENS`] tokens), the delta rule only.
    fn rewind_within(
        state: &mut State,
        checkpoint: &Checkpoint,
        keep: usize,
    ) -> candle_core::Result<bool> {
        let Some(forwarded) = state.position.checked_sub(checkpoint.position) else {
            return Ok(false);
        };
        // Every DeltaNet layer kept the inputs of exactly that forward.
        let trails_cover = state.layers.iter().all(|layer| match layer {
            LayerState::DeltaNet(s) => s.trail_len() == Some(forwarded),
            LayerState::Attention(_) => true,
        });
        if keep > forwarded || !trails_cover {
            return Ok(false);
        }
        // The delta rule's recomputation is candle ops over [n_v, d_k, d_v]
        // states, parallel ones at real widths: on the pool, as a forward.
        let device = state.layers.iter().find_map(|layer| match layer {
            LayerState::DeltaNet(s) => Some(s.recurrent.device().clone()),
            LayerState::Attention(_) => None,
        });
        let layers = &mut state.layers;
        crate::kernels::on_pool(&device.unwrap_or(candle_core::Device::Cpu), || {
            for (layer, saved) in layers.iter_mut().zip(&checkpoint.layers) {
                match (layer, saved) {
                    (LayerState::Attention(Some(cache)), SavedLayer::Attention(len)) => {
                        cache.truncate(len.unwrap_or(0) + keep);
                    }
                    (LayerState::DeltaNet(s), _) => s.rewind_within(keep)?,
                    _ => {}
                }
            }
            candle_core::Result::Ok(())
        })?;
        state.position = checkpoint.position + keep;
        Ok(true)
    }

    fn state_len(state: &State) -> usize {
        state.position
    }

    fn state_size_bytes(state: &State) -> usize {
        state.size_bytes()
    }

    fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }
}

/// max |a − b| / max |b| over all elements, in f32 on the CPU: how far a
/// fused op's output is from the unfused path's, in the module's tests.
#[cfg(test)]
pub(crate) fn max_rel_diff(a: &Tensor, b: &Tensor) -> f32 {
    let flat_f32 = |t: &Tensor| {
        t.to_device(&candle_core::Device::Cpu)?
            .to_dtype(DType::F32)?
            .flatten_all()
    };
    let max_abs = |t: Tensor| t.abs()?.max(0)?.to_scalar::<f32>();
    let measure = || -> candle_core::Result<f32> {
        let (a, b) = (flat_f32(a)?, flat_f32(b)?);
        Ok(max_abs((&a - &b)?)? / max_abs(b)?.max(1e-30))
    };
    measure().expect("relative difference")
}
