//! Sparse mixture-of-experts blocks and how tokens reach their experts.
//!
//! A `SparseMoe` block (Qwen3.5-MoE's `mlp`): an fp32 softmax router over
//! all experts, top-k, renormalised weights (rounded to the model dtype, as
//! the reference does), SwiGLU experts held stacked, plus a shared SwiGLU
//! expert scaled by sigmoid(`shared_expert_gate`(x)).
//!
//! Two dispatches ([`MoeDispatch`]) compute the routed part:
//!
//! - **Per expert**: routing on the host, tokens grouped by expert, one
//!   matmul pair per chosen expert. Every device and dtype. Where the
//!   experts are quantized CPU weights on the crate's packed kernels
//!   ([`crate::kernels::PackedWeight`]) and the compute dtype is f32, the
//!   same grouping runs without candle ops: the input quantized once, each
//!   expert's rows gathered, its gate/up, SwiGLU and down projection
//!   computed in one task, experts spread over rayon's threads, the
//!   weighted rows added in expert order (the op-by-op form's values but
//!   for SiLU's `e^−g`, taken on vector registers: `kernels::silu`).
//! - **Indexed** (quantized GGUF experts on CUDA, held as 3-D stacks):
//!   routing on the device, then candle's indexed MoE kernel
//!   (`QTensor::indexed_moe_forward`) for every (token, slot) pair at once.
//! - **Grouped** ([`MoeDispatch::FusedCuda`]): routing on the device
//!   (`PairRouting`: (token, expert) pairs sorted by expert), then one
//!   grouped GEMM launch for all experts' gate/up projections and one for
//!   their down projections, through candle's fused CUDA kernels
//!   (`candle_nn::moe::moe_gemm`). The grouped path is written against the
//!   kernel's contract (`GroupedGemm`), so the CPU tests check its routing
//!   against the per-expert path.
//!
//! The block's widths come as a [`MoeShape`]; this module knows no model
//! config.

use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use crate::weights::{ExpertWeights, LinearWeight, LoadError, Weights};

/// The widths of a sparse MoE block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeShape {
    /// Residual width (the block's input and output).
    pub hidden: usize,
    /// Routed experts.
    pub experts: usize,
    /// Experts chosen per token.
    pub top_k: usize,
    /// Hidden width of one routed expert.
    pub expert_intermediate: usize,
    /// Hidden width of the shared expert.
    pub shared_intermediate: usize,
}

/// A SwiGLU MLP with separate projections (the shared expert).
#[derive(Debug, Clone)]
struct SwiGlu {
    gate_proj: LinearWeight,
    up_proj: LinearWeight,
    down_proj: LinearWeight,
}

impl SwiGlu {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let g = candle_nn::ops::silu(&self.gate_proj.forward(x)?)?;
        let u = self.up_proj.forward(x)?;
        self.down_proj.forward(&(g * u)?)
    }
}

/// The routed experts' gate and up projections.
#[derive(Debug, Clone)]
enum GateUp {
    /// Gate and up together [E, 2I, hidden] (gate rows first); dense ones
    /// are packed for the fused kernels.
    Joined(ExpertWeights),
    /// Gate and up apart, each [E, I, hidden] (quantized GGUF experts).
    Split {
        gate: ExpertWeights,
        up: ExpertWeights,
    },
}

/// Sparse MoE block (`mlp`) with a sigmoid-gated shared expert.
#[derive(Debug, Clone)]
pub(crate) struct SparseMoe {
    /// Router weight [E, hidden].
    router: LinearWeight,
    /// Expert gate and up projections.
    gate_up: GateUp,
    /// Expert down projections [E, hidden, I].
    down: ExpertWeights,
    shared: SwiGlu,
    /// [1, hidden].
    shared_gate: LinearWeight,
    top_k: usize,
    intermediate: usize,
}

impl SparseMoe {
    /// Reads the block under `vb` (the layer's `mlp`): `gate.weight`, the
    /// experts stacked (`experts.gate_up_proj` [E, 2I, H],
    /// `experts.down_proj` [E, H, I]) or one per expert
    /// (`experts.{e}.{gate,up,down}_proj.weight`), and the shared expert.
    /// Experts are held stacked either way.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`] / [`LoadError::ShapeMismatch`] naming
    /// the tensor.
    pub(crate) fn load(shape: &MoeShape, vb: &Weights<'_>) -> Result<Self, LoadError> {
        let (h, e, i, is) = (
            shape.hidden,
            shape.experts,
            shape.expert_intermediate,
            shape.shared_intermediate,
        );
        let experts = vb.pp("experts");
        let (gate_up, down) = if experts.contains("gate_up_proj") {
            (
                GateUp::Joined(experts.get_experts("gate_up_proj", &[e, 2 * i, h])?),
                experts.get_experts("down_proj", &[e, h, i])?,
            )
        } else if experts.contains("gate_proj") {
            // Stacked but apart (GGUF `ffn_gate_exps` / `ffn_up_exps`).
            let gate = experts.get_experts("gate_proj", &[e, i, h])?;
            let up = experts.get_experts("up_proj", &[e, i, h])?;
            let gate_up = match (gate, up) {
                (ExpertWeights::Dense(g), ExpertWeights::Dense(u)) => {
                    GateUp::Joined(ExpertWeights::Dense(
                        Tensor::cat(&[&g, &u], 1).map_err(experts.error("gate_up_proj"))?,
                    ))
                }
                (gate, up) => GateUp::Split { gate, up },
            };
            (gate_up, experts.get_experts("down_proj", &[e, h, i])?)
        } else {
            // Gate rows first: expert e's [2I, H] is its gate then its up.
            let gate = experts.get_stacked(e, "gate_proj.weight", &[i, h])?;
            let up = experts.get_stacked(e, "up_proj.weight", &[i, h])?;
            (
                GateUp::Joined(ExpertWeights::Dense(
                    Tensor::cat(&[&gate, &up], 1).map_err(experts.error("gate_up_proj"))?,
                )),
                ExpertWeights::Dense(experts.get_stacked(e, "down_proj.weight", &[h, i])?),
            )
        };
        // The fused kernels read the stacked buffers from their start.
        let gate_up = match gate_up {
            GateUp::Joined(ExpertWeights::Dense(t)) => GateUp::Joined(ExpertWeights::Dense(
                packed(&t).map_err(experts.error("gate_up_proj"))?,
            )),
            other => other,
        };
        let down = match down {
            ExpertWeights::Dense(t) => {
                ExpertWeights::Dense(packed(&t).map_err(experts.error("down_proj"))?)
            }
            other => other,
        };
        let shared = vb.pp("shared_expert");
        Ok(Self {
            router: vb.get_linear("gate.weight", &[e, h])?,
            gate_up,
            down,
            shared: SwiGlu {
                gate_proj: shared.get_linear("gate_proj.weight", &[is, h])?,
                up_proj: shared.get_linear("up_proj.weight", &[is, h])?,
                down_proj: shared.get_linear("down_proj.weight", &[h, is])?,
            },
            shared_gate: vb.get_linear("shared_expert_gate.weight", &[1, h])?,
            top_k: shape.top_k,
            intermediate: i,
        })
    }

    /// Whether the routed experts are dense stacked tensors (what the
    /// grouped dispatch needs); quantized experts run per expert.
    pub(crate) fn experts_are_dense(&self) -> bool {
        matches!(
            (&self.gate_up, &self.down),
            (
                GateUp::Joined(ExpertWeights::Dense(_)),
                ExpertWeights::Dense(_)
            )
        )
    }

    /// x [T, hidden] → [T, hidden]: the routed experts' weighted sum plus
    /// the gated shared expert. `fused_router` routes with the fused router
    /// op ([`crate::kernels::fused::router_top_k`]: softmax, top-k and
    /// weights in one kernel; only [T, 2k] values reach the host in the
    /// per-expert dispatch instead of the [T, E] probabilities).
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        dispatch: MoeDispatch,
        fused_router: bool,
    ) -> candle_core::Result<Tensor> {
        let routed = match dispatch {
            MoeDispatch::FusedCuda if self.experts_are_dense() => self.routed_grouped(
                x,
                FUSED_MOE_MAX_PAIRS,
                &fused_cuda_grouped_gemm,
                fused_router,
            )?,
            _ => {
                if let Some(routed) = self.routed_indexed(x)? {
                    routed
                } else if let Some(routed) = self.routed_packed(x, fused_router)? {
                    routed
                } else if let Some(routed) = self.routed_dense_bf16(x, fused_router)? {
                    routed
                } else {
                    self.routed_per_expert(x, fused_router)?
                }
            }
        };
        let shared = self.shared.forward(x)?;
        let shared_gate = candle_nn::ops::sigmoid(&self.shared_gate.forward(x)?)?;
        routed + shared.broadcast_mul(&shared_gate)?
    }

    /// Routed experts held as quantized 3-D stacks on a CUDA device
    /// ([`ExpertWeights::QuantizedStack`]): routing on the device (top-k of
    /// the f32 softmax, renormalised, rounded to the model dtype as the
    /// reference does), then candle's indexed MoE kernel for the gate/up
    /// projections of every (token, slot) pair, SwiGLU, the indexed down
    /// projections, and the weighted sum over the slots, in f32. `None`
    /// when the experts are held otherwise.
    fn routed_indexed(&self, x: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let stacked = |w: &ExpertWeights| matches!(w, ExpertWeights::QuantizedStack(_));
        let gate_up_stacked = match &self.gate_up {
            GateUp::Joined(w) => stacked(w),
            GateUp::Split { gate, up } => stacked(gate) && stacked(up),
        };
        if !gate_up_stacked || !stacked(&self.down) {
            return Ok(None);
        }
        let (t, hidden) = x.dims2()?;
        let (k, i, dtype) = (self.top_k, self.intermediate, x.dtype());
        let logits = self.router.forward(x)?;
        let probs = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32)?)?;
        let ids = probs
            .arg_sort_last_dim(false)?
            .narrow(1, 0, k)?
            .contiguous()?; // [T, k] u32
        let top_p = probs.contiguous()?.gather(&ids, 1)?;
        let weights = top_p
            .broadcast_div(&top_p.sum_keepdim(1)?)?
            .to_dtype(dtype)?
            .to_dtype(DType::F32)?; // [T, k]
        let xs = x
            .to_dtype(DType::F32)?
            .reshape((t, 1, hidden))?
            .contiguous()?;
        let indexed = |w: &ExpertWeights, input: &Tensor| -> candle_core::Result<Tensor> {
            w.indexed_forward(input, &ids)?
                .ok_or_else(|| candle_core::Error::Msg("experts are not an indexed stack".into()))
        };
        let (g, u) = match &self.gate_up {
            GateUp::Joined(w) => {
                let gate_up = indexed(w, &xs)?; // [T, k, 2I]
                (gate_up.narrow(2, 0, i)?, gate_up.narrow(2, i, i)?)
            }
            GateUp::Split { gate, up } => (indexed(gate, &xs)?, indexed(up, &xs)?),
        };
        let act = (candle_nn::ops::silu(&g)? * u)?.contiguous()?; // [T, k, I]
        let down = indexed(&self.down, &act)?; // [T, k, hidden]
        let routed = down
            .broadcast_mul(&weights.unsqueeze(2)?)?
            .sum(1)?
            .to_dtype(dtype)?;
        Ok(Some(routed))
    }

    /// The per-expert dispatch on the CPU's packed quantized kernels, for an
    /// f32 input `x` [T, hidden]: routing on the host as
    /// [`SparseMoe::routed_per_expert`] routes, the input quantized once
    /// (per input kind the gate and up weights take), then per expert with
    /// tokens, in one rayon task: its rows gathered, gate and up
    /// projections, `silu(g) · u` in f32 ([`crate::kernels::silu`]), the
    /// down projection, each row times its routing weight; then the rows
    /// added into the output in expert order. Computes what the op-by-op
    /// form computes, in the same order (SiLU's `e^−g` within a few ulp of
    /// libm's), without per-expert candle ops or a parallel region per
    /// matmul. `None` when the experts are not all on packed CPU kernels or
    /// `x` is not f32 on the CPU.
    fn routed_packed(&self, x: &Tensor, fused_router: bool) -> candle_core::Result<Option<Tensor>> {
        use rayon::prelude::*;
        if !x.device().is_cpu() || x.dtype() != DType::F32 {
            return Ok(None);
        }
        let (gate, up) = match &self.gate_up {
            GateUp::Joined(w) => (w.packed_experts(), None),
            GateUp::Split { gate, up } => match up.packed_experts() {
                Some(up) => (gate.packed_experts(), Some(up)),
                None => return Ok(None),
            },
        };
        let (Some(gate), Some(down)) = (gate, self.down.packed_experts()) else {
            return Ok(None);
        };
        let (t, hidden) = x.dims2()?;
        let i = self.intermediate;
        let (Some(gate0), Some(down0)) = (gate.first(), down.first()) else {
            return Ok(None);
        };
        if gate0.cols() != hidden || down0.cols() != i {
            return Ok(None);
        }
        let (tokens_of, weights_of) = self.host_routing(x, fused_router)?;
        let xs = x.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let x_gate = gate0.quantize_input(&xs, t);
        // The up projection's input: the gate's unless it takes another kind.
        let x_up = match up.as_ref().and_then(|u| u.first()) {
            Some(up0) if !up0.takes_input_of(gate0) => Some(up0.quantize_input(&xs, t)),
            _ => None,
        };
        let mismatch = || candle_core::Error::Msg("an expert's weight takes another input".into());
        let experts: Vec<usize> = (0..tokens_of.len())
            .filter(|&e| !tokens_of[e].is_empty())
            .collect();
        let rows: Vec<candle_core::Result<Vec<f32>>> = experts
            .par_iter()
            .map(|&e| {
                let toks = &tokens_of[e];
                let n = toks.len();
                let xg = x_gate.gather(toks);
                let mut h = vec![0f32; n * i];
                match &up {
                    None => {
                        let gu = gate[e].matmul_quantized(&xg, false).ok_or_else(mismatch)?;
                        // Each row [g | u] read in place.
                        for (row, h) in gu.chunks_exact(2 * i).zip(h.chunks_exact_mut(i)) {
                            crate::kernels::silu::silu_times(&row[..i], &row[i..], h);
                        }
                    }
                    Some(up) => {
                        let xu = match &x_up {
                            Some(x_up) => &x_up.gather(toks),
                            None => &xg,
                        };
                        let g = gate[e].matmul_quantized(&xg, false).ok_or_else(mismatch)?;
                        let u = up[e].matmul_quantized(xu, false).ok_or_else(mismatch)?;
                        crate::kernels::silu::silu_times(&g, &u, &mut h);
                    }
                }
                let mut y = down[e]
                    .matmul_quantized(&down[e].quantize_input(&h, n), false)
                    .ok_or_else(mismatch)?;
                for (row, &w) in y.chunks_exact_mut(hidden).zip(&weights_of[e]) {
                    row.iter_mut().for_each(|v| *v *= w);
                }
                Ok(y)
            })
            .collect();
        let mut out = vec![0f32; t * hidden];
        for (&e, y) in experts.iter().zip(rows) {
            for (&tok, row) in tokens_of[e].iter().zip(y?.chunks_exact(hidden)) {
                let dst = &mut out[tok as usize * hidden..][..hidden];
                dst.iter_mut().zip(row).for_each(|(o, v)| *o += v);
            }
        }
        Ok(Some(Tensor::from_vec(out, (t, hidden), x.device())?))
    }

    /// The per-expert dispatch for bf16 experts held dense on a CPU with
    /// AVX512-BF16, for a bf16 input `x` [T, hidden]: routing on the host as
    /// [`SparseMoe::routed_per_expert`] routes, then per expert with tokens,
    /// in one rayon task: its rows gathered, gate and up projections
    /// ([`crate::kernels::bf16_matmul_bt`] on that thread), candle's
    /// bf16 SiLU and product, the down projection, each row times its
    /// routing weight; then the rows added into a bf16 output in expert
    /// order. Every step rounds to bf16 where the op-by-op form rounds, so
    /// the values are that form's bit for bit, without its ten candle ops
    /// and parallel region per expert. `None` when the experts are not
    /// dense bf16 stacks on the CPU, `x` is not bf16 or the CPU lacks
    /// AVX512-BF16.
    fn routed_dense_bf16(
        &self,
        x: &Tensor,
        fused_router: bool,
    ) -> candle_core::Result<Option<Tensor>> {
        use crate::kernels::avx512_bf16;
        use candle_core::op::{Silu, UnaryOpT};
        use candle_core::{CpuStorage, Storage};
        use half::bf16;
        use rayon::prelude::*;
        if !x.device().is_cpu() || x.dtype() != DType::BF16 || !avx512_bf16::available() {
            return Ok(None);
        }
        let dense = |w: &ExpertWeights| match w {
            ExpertWeights::Dense(t) if t.dtype() == DType::BF16 && t.device().is_cpu() => {
                Some(t.clone())
            }
            _ => None,
        };
        let (gate_up, up) = match &self.gate_up {
            GateUp::Joined(w) => (dense(w), None),
            GateUp::Split { gate, up } => match dense(up) {
                Some(up) => (dense(gate), Some(up)),
                None => return Ok(None),
            },
        };
        let (Some(gate_up), Some(down)) = (gate_up, dense(&self.down)) else {
            return Ok(None);
        };
        let (t, hidden) = x.dims2()?;
        let i = self.intermediate;
        // Rows of the gate (or joined gate/up) stack per expert.
        let gate_rows = if up.is_some() { i } else { 2 * i };
        let experts = down.dim(0)?;
        if gate_up.dims() != [experts, gate_rows, hidden] || down.dims() != [experts, hidden, i] {
            return Ok(None);
        }
        if up
            .as_ref()
            .is_some_and(|u| u.dims() != [experts, i, hidden])
        {
            return Ok(None);
        }
        let (tokens_of, weights_of) = self.host_routing(x, fused_router)?;
        let x = x.contiguous()?;
        let xs: Vec<bf16> = x.flatten_all()?.to_vec1()?;
        let storages =
            [Some(&gate_up), up.as_ref(), Some(&down)].map(|w| w.map(Tensor::storage_and_layout));
        let slice = |i: usize| -> Option<&[bf16]> {
            let (storage, layout) = storages[i].as_ref()?;
            let (start, end) = layout.contiguous_offsets()?;
            match &**storage {
                Storage::Cpu(CpuStorage::BF16(v)) => Some(&v[start..end]),
                _ => None,
            }
        };
        let (Some(w_gate), w_up, Some(w_down)) = (slice(0), slice(1), slice(2)) else {
            return Ok(None);
        };
        if up.is_some() && w_up.is_none() {
            return Ok(None);
        }
        let active: Vec<usize> = (0..experts).filter(|&e| !tokens_of[e].is_empty()).collect();
        let rows: Vec<Vec<bf16>> = active
            .par_iter()
            .map(|&e| {
                let toks = &tokens_of[e];
                let n = toks.len();
                let mut xg = Vec::with_capacity(n * hidden);
                for &tok in toks {
                    xg.extend_from_slice(&xs[tok as usize * hidden..][..hidden]);
                }
                let project = |w: &[bf16], rows: usize, cols: usize, input: &[bf16]| {
                    let mut out = vec![bf16::ZERO; n * rows];
                    let w = &w[e * rows * cols..][..rows * cols];
                    crate::kernels::bf16_matmul_bt(input, w, (n, cols, rows), &mut out, false);
                    out
                };
                let g = project(w_gate, gate_rows, hidden, &xg);
                let u = w_up.map(|w| project(w, i, hidden, &xg));
                // silu(g) · u as candle computes them in bf16.
                let mut h = Vec::with_capacity(n * i);
                for r in 0..n {
                    let (g_row, u_row) = match &u {
                        Some(u) => (&g[r * i..][..i], &u[r * i..][..i]),
                        None => (&g[r * 2 * i..][..i], &g[r * 2 * i + i..][..i]),
                    };
                    h.extend(g_row.iter().zip(u_row).map(|(&g, &u)| Silu::bf16(g) * u));
                }
                let mut y = project(w_down, hidden, i, &h);
                for (row, &w) in y.chunks_exact_mut(hidden).zip(&weights_of[e]) {
                    let w = bf16::from_f32(w);
                    row.iter_mut().for_each(|v| *v *= w);
                }
                y
            })
            .collect();
        drop(storages);
        let mut out = vec![bf16::ZERO; t * hidden];
        for (&e, y) in active.iter().zip(&rows) {
            for (&tok, row) in tokens_of[e].iter().zip(y.chunks_exact(hidden)) {
                let dst = &mut out[tok as usize * hidden..][..hidden];
                dst.iter_mut().zip(row).for_each(|(o, &v)| *o += v);
            }
        }
        Ok(Some(Tensor::from_vec(out, (t, hidden), x.device())?))
    }

    /// Routed experts, one matmul pair per chosen expert; routing on the
    /// host. Works on every device and dtype.
    fn routed_per_expert(&self, x: &Tensor, fused_router: bool) -> candle_core::Result<Tensor> {
        let (t, _) = x.dims2()?;
        let dtype = x.dtype();
        let (tokens_of, weights_of) = self.host_routing(x, fused_router)?;
        // Each expert's weighted rows are collected and added into the
        // output once at the end, in expert order (the order the additions
        // always had), instead of one whole-output `index_add` copy per
        // expert.
        let mut rows: Vec<Tensor> = Vec::new();
        let mut row_tokens: Vec<u32> = Vec::new();
        let i = self.intermediate;
        for (e, toks) in tokens_of.iter().enumerate() {
            if toks.is_empty() {
                continue;
            }
            let idx = Tensor::new(toks.as_slice(), x.device())?;
            let xs = if t == toks.len() {
                x.clone()
            } else {
                x.index_select(&idx, 0)?
            };
            let (g, u) = match &self.gate_up {
                GateUp::Joined(w) => {
                    let gate_up = w.expert(e)?.forward(&xs)?; // [n, 2I]
                    (gate_up.narrow(1, 0, i)?, gate_up.narrow(1, i, i)?)
                }
                GateUp::Split { gate, up } => {
                    (gate.expert(e)?.forward(&xs)?, up.expert(e)?.forward(&xs)?)
                }
            };
            let g = candle_nn::ops::silu(&g)?;
            let y = self.down.expert(e)?.forward(&(g * u)?)?; // [n, hidden]
            let w = Tensor::new(weights_of[e].as_slice(), x.device())?
                .to_dtype(dtype)?
                .unsqueeze(1)?;
            rows.push(y.broadcast_mul(&w)?);
            row_tokens.extend_from_slice(toks);
        }
        let out = Tensor::zeros_like(x)?;
        if rows.is_empty() {
            return Ok(out);
        }
        let idx = Tensor::new(row_tokens.as_slice(), x.device())?;
        out.index_add(&idx, &Tensor::cat(&rows, 0)?, 0)
    }

    /// The tokens each expert serves and their routing weights (rounded to
    /// x's dtype), routed on the host from the router probabilities, or
    /// with `fused` from the fused router op's [T, k] ids and weights.
    fn host_routing(&self, x: &Tensor, fused: bool) -> candle_core::Result<HostRouting> {
        let dtype = x.dtype();
        let logits = self.router.forward(x)?;
        let num_experts = self.down.len();
        let mut tokens_of: Vec<Vec<u32>> = vec![Vec::new(); num_experts];
        let mut weights_of: Vec<Vec<f32>> = vec![Vec::new(); num_experts];
        if fused {
            // One copy of [T, 2k] values: each row the k expert ids (as
            // f32, exact), then their weights.
            let k = self.top_k;
            let rows: Vec<Vec<f32>> =
                crate::kernels::fused::router_top_k_packed(&logits, k, dtype)?.to_vec2()?;
            for (tok, row) in rows.iter().enumerate() {
                let (ids, weights) = row.split_at(k);
                for (&e, &w) in ids.iter().zip(weights) {
                    let e = e as usize;
                    let Some(toks) = tokens_of.get_mut(e) else {
                        candle_core::bail!("router chose expert {e} of {num_experts}");
                    };
                    toks.push(tok as u32);
                    weights_of[e].push(w);
                }
            }
            return Ok((tokens_of, weights_of));
        }
        let probs = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32)?)?;
        let probs: Vec<Vec<f32>> = probs.to_vec2()?;
        // Route on the host: top-k per token, renormalised, then group the
        // tokens by expert so each chosen expert runs one matmul.
        let mut order: Vec<usize> = Vec::with_capacity(num_experts);
        for (tok, p) in probs.iter().enumerate() {
            order.clear();
            order.extend(0..p.len());
            // Descending probability; ties to the lower index, like topk.
            order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
            let chosen = &order[..self.top_k];
            let sum: f32 = chosen.iter().map(|&e| p[e]).sum();
            for &e in chosen {
                tokens_of[e].push(tok as u32);
                // The reference casts the renormalised weights to the model
                // dtype before use.
                weights_of[e].push(round_to(p[e] / sum, dtype));
            }
        }
        Ok((tokens_of, weights_of))
    }

    /// Routed experts through a grouped GEMM over all experts at once
    /// (candle's fused CUDA kernels in production, see
    /// [`fused_cuda_grouped_gemm`]). Routing stays on the device: no host
    /// round trip per layer. Inputs of more than `max_pairs` (token, expert)
    /// pairs run in token chunks (the device sort keeps one row in shared
    /// memory).
    fn routed_grouped(
        &self,
        x: &Tensor,
        max_pairs: usize,
        gemm: &GroupedGemm,
        fused_router: bool,
    ) -> candle_core::Result<Tensor> {
        let (t, _) = x.dims2()?;
        let k = self.top_k;
        let chunk = (max_pairs / k).max(1);
        if t > chunk {
            let mut parts = Vec::with_capacity(t.div_ceil(chunk));
            for start in (0..t).step_by(chunk) {
                let len = chunk.min(t - start);
                parts.push(self.routed_grouped(
                    &x.narrow(0, start, len)?,
                    max_pairs,
                    gemm,
                    fused_router,
                )?);
            }
            return Tensor::cat(&parts, 0);
        }
        let (
            GateUp::Joined(ExpertWeights::Dense(gate_up_weights)),
            ExpertWeights::Dense(down_weights),
        ) = (&self.gate_up, &self.down)
        else {
            candle_core::bail!("the grouped MoE dispatch needs dense stacked experts");
        };
        let x = packed(x)?;
        let (t, hidden) = x.dims2()?;
        let logits = self.router.forward(&x)?;
        let routing = if fused_router {
            let (ids, weights) = crate::kernels::fused::router_top_k(&logits, k, x.dtype())?;
            PairRouting::from_top_k(&ids, &weights)?
        } else {
            let probs = candle_nn::ops::softmax_last_dim(&logits.to_dtype(DType::F32)?)?;
            PairRouting::from_probs(&probs, k, x.dtype())?
        };
        // Pass 1: every pair's gate/up rows, [T·k, 2I], input row = pair / k.
        let gate_up_call = GroupedGemmCall {
            input: &x,
            weights: gate_up_weights,
            pair_weights: None,
            routing: &routing,
            top_k: k,
            is_prefill: t > 1,
        };
        let gate_up = gemm(&gate_up_call)?;
        let i = self.intermediate;
        let act = (candle_nn::ops::silu(&gate_up.narrow(1, 0, i)?)? * gate_up.narrow(1, i, i)?)?;
        // Pass 2: every pair's down projection scaled by its routing weight,
        // [T·k, hidden], input row = pair.
        let down = gemm(&GroupedGemmCall {
            input: &packed(&act)?,
            weights: down_weights,
            pair_weights: Some(&routing.pair_weights),
            ..gate_up_call
        })?;
        down.reshape((t, k, hidden))?.sum(1)
    }
}

/// Per expert: the tokens it serves and their routing weights.
type HostRouting = (Vec<Vec<u32>>, Vec<Vec<f32>>);

/// How the sparse MoE blocks send tokens to their experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoeDispatch {
    /// candle's fused grouped-GEMM CUDA kernels
    /// (`candle_nn::moe::moe_gemm`, WMMA tensor-core tiles): top-k routing
    /// on the device, then one launch for all experts' gate/up projections
    /// and one for their down projections. bf16/f16 weights on a CUDA device
    /// in a `--features cuda` build only (see [`MoeDispatch::fused_applies`]).
    FusedCuda,
    /// Routing on the host, then one matmul pair per chosen expert. Every
    /// device and dtype; the CPU path.
    PerExpert,
}

impl MoeDispatch {
    /// Whether [`MoeDispatch::FusedCuda`] can run MoE blocks of `shape` (or
    /// of a model config that converts into one) in `dtype` on `device`: a
    /// build with the `cuda` feature, a CUDA device, bf16 or f16, and hidden
    /// and expert widths that are multiples of 8 (the kernels load 8 values
    /// at a time).
    pub fn fused_applies(shape: impl Into<MoeShape>, dtype: DType, device: &Device) -> bool {
        let shape = shape.into();
        cfg!(feature = "cuda")
            && device.is_cuda()
            && matches!(dtype, DType::BF16 | DType::F16)
            && shape.hidden.is_multiple_of(8)
            && shape.expert_intermediate.is_multiple_of(8)
    }

    /// The fastest dispatch that applies: [`MoeDispatch::FusedCuda`] where
    /// [`MoeDispatch::fused_applies`], else [`MoeDispatch::PerExpert`].
    pub fn best_for(shape: impl Into<MoeShape>, dtype: DType, device: &Device) -> Self {
        if Self::fused_applies(shape, dtype, device) {
            Self::FusedCuda
        } else {
            Self::PerExpert
        }
    }
}

/// Most (token, expert) pairs one grouped MoE call routes: the device sort of
/// the pairs' expert ids keeps the padded row (4 bytes per entry) in 48 KiB
/// of shared memory, so 8192 (1024 tokens at top-8); longer inputs run in
/// token chunks.
const FUSED_MOE_MAX_PAIRS: usize = 8192;

/// One call of a grouped GEMM over stacked experts, with the contract of
/// `candle_nn::moe::moe_gemm`: every (token, expert) pair of `routing`
/// multiplied by its expert's weights, giving `[pairs, N]`.
struct GroupedGemmCall<'a> {
    /// Without pair weights [T, K], pair p reading row p / top_k; with them
    /// [T·top_k, K], pair p reading row p.
    input: &'a Tensor,
    /// Stacked expert weights [E, N, K].
    weights: &'a Tensor,
    /// Scales each pair's output row (f32, [T·top_k]).
    pair_weights: Option<&'a Tensor>,
    /// The pairs, grouped by expert.
    routing: &'a PairRouting,
    top_k: usize,
    /// More than one token (the kernels tile prefill and decode apart).
    is_prefill: bool,
}

/// A grouped GEMM ([`GroupedGemmCall`]): candle's fused CUDA kernels in
/// production, a CPU model of their contract in the tests.
type GroupedGemm = dyn Fn(&GroupedGemmCall<'_>) -> candle_core::Result<Tensor>;

/// candle's fused MoE GEMM (`candle_nn::moe::moe_gemm`). The kernel reads
/// raw device buffers from their start, so every operand must be packed
/// (contiguous at offset 0); [`SparseMoe::routed_grouped`] and the loader
/// make sure of it. Without the `cuda` feature candle's function returns
/// an error; [`MoeDispatch::fused_applies`] keeps it from being chosen.
fn fused_cuda_grouped_gemm(call: &GroupedGemmCall<'_>) -> candle_core::Result<Tensor> {
    candle_nn::moe::moe_gemm(
        call.input,
        call.weights,
        &call.pair_weights.cloned(),
        &call.routing.sorted_pairs,
        &call.routing.expert_of_sorted,
        call.top_k,
        call.is_prefill,
    )
}

/// The routing of T tokens to their top-k experts as a grouped GEMM wants
/// it. Pair p = token · k + slot stands for the token's slot-th choice.
struct PairRouting {
    /// Pair ids ordered by expert id, [T·k] u32: the rows of one expert
    /// are contiguous.
    sorted_pairs: Tensor,
    /// Expert id of each entry of `sorted_pairs` (ascending), [T·k] u32.
    expert_of_sorted: Tensor,
    /// Renormalised routing weight of each pair (rounded to the model dtype,
    /// as the reference does, then held in f32), [T·k] f32.
    pair_weights: Tensor,
}

impl PairRouting {
    /// From each token's chosen experts `ids` [T, k] (u32) and their
    /// weights [T, k] (f32, already renormalised and rounded): pairs sorted
    /// by expert.
    fn from_top_k(ids: &Tensor, weights: &Tensor) -> candle_core::Result<Self> {
        let (expert_of_sorted, sorted_pairs) = ids.flatten_all()?.sort_last_dim(true)?;
        Ok(Self {
            sorted_pairs: packed(&sorted_pairs)?,
            expert_of_sorted: packed(&expert_of_sorted)?,
            pair_weights: packed(&weights.flatten_all()?)?,
        })
    }

    /// From router probabilities [T, E] (f32): top-k per token (descending),
    /// weights divided by their sum, pairs sorted by expert. All tensor ops,
    /// so it stays on the probabilities' device.
    fn from_probs(probs: &Tensor, k: usize, dtype: DType) -> candle_core::Result<Self> {
        let top = probs
            .arg_sort_last_dim(false)?
            .narrow(1, 0, k)?
            .contiguous()?; // [T, k]
        let top_p = probs.contiguous()?.gather(&top, 1)?; // [T, k]
        let weights = top_p.broadcast_div(&top_p.sum_keepdim(1)?)?;
        let pair_weights = weights
            .to_dtype(dtype)?
            .to_dtype(DType::F32)?
            .flatten_all()?;
        let (expert_of_sorted, sorted_pairs) = top.flatten_all()?.sort_last_dim(true)?;
        Ok(Self {
            sorted_pairs: packed(&sorted_pairs)?,
            expert_of_sorted: packed(&expert_of_sorted)?,
            pair_weights: packed(&pair_weights)?,
        })
    }
}

/// `x` itself when it is contiguous from the start of its storage, else a
/// packed copy (kernels that read raw buffers need that).
fn packed(x: &Tensor) -> candle_core::Result<Tensor> {
    if x.is_contiguous() && x.layout().start_offset() == 0 {
        Ok(x.clone())
    } else {
        x.force_contiguous()
    }
}

/// Rounds an f32 to the nearest value representable in `dtype`.
fn round_to(x: f32, dtype: DType) -> f32 {
    match dtype {
        DType::BF16 => half::bf16::from_f32(x).to_f32(),
        DType::F16 => half::f16::from_f32(x).to_f32(),
        _ => x,
    }
}

/// max |a − b| over all elements of two tensors of one shape, in f32: how
/// far an op's output is from its reference, in the engine's unit tests.
#[cfg(test)]
pub(crate) fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a.to_dtype(DType::F32).expect("f32") - b.to_dtype(DType::F32).expect("f32"))
        .and_then(|d| d.abs())
        .and_then(|d| d.flatten_all())
        .and_then(|d| d.max(0))
        .and_then(|d| d.to_scalar::<f32>())
        .expect("diff")
}

#[cfg(test)]
mod tests;
