use super::*;
use crate::weights::QuantizedWeight;
use candle_core::IndexOp;

/// A CPU model of the grouped-GEMM contract that candle-kernels'
/// `moe_gemm_wmma` implements: it counts `expert_of_sorted` per expert,
/// turns the counts into segment offsets, and computes the pairs of
/// segment e (positions `offsets[e]..offsets[e + 1]` of `sorted_pairs`)
/// with expert e's weights. A routing whose pairs are not grouped by
/// expert therefore gives wrong rows here as it would on the GPU.
fn grouped_gemm_cpu(call: &GroupedGemmCall<'_>) -> candle_core::Result<Tensor> {
    let GroupedGemmCall {
        input,
        weights,
        pair_weights,
        routing,
        top_k,
        ..
    } = *call;
    let num_experts = weights.dim(0)?;
    let sorted: Vec<u32> = routing.sorted_pairs.to_vec1()?;
    let experts: Vec<u32> = routing.expert_of_sorted.to_vec1()?;
    let scale: Option<Vec<f32>> = pair_weights.map(|w| w.to_vec1()).transpose()?;
    let mut counts = vec![0usize; num_experts];
    for &e in &experts {
        counts[e as usize] += 1;
    }
    let mut rows: Vec<Option<Tensor>> = vec![None; sorted.len()];
    let mut start = 0;
    for (e, &count) in counts.iter().enumerate() {
        let w = weights.i(e)?.to_dtype(DType::F32)?;
        for &pair in &sorted[start..start + count] {
            let row = if scale.is_some() {
                pair as usize
            } else {
                pair as usize / top_k
            };
            let mut y = input
                .narrow(0, row, 1)?
                .to_dtype(DType::F32)?
                .matmul(&w.t()?)?;
            if let Some(scale) = &scale {
                y = (y * f64::from(scale[pair as usize]))?;
            }
            rows[pair as usize] = Some(y.to_dtype(input.dtype())?);
        }
        start += count;
    }
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(pair, r)| r.ok_or_else(|| candle_core::Error::Msg(format!("pair {pair} unset"))))
        .collect::<candle_core::Result<Vec<_>>>()?;
    Tensor::cat(&rows, 0)
}

fn random_moe(
    experts: usize,
    top_k: usize,
    hidden: usize,
    inter: usize,
    dtype: DType,
) -> SparseMoe {
    let dev = Device::Cpu;
    let r = |shape: &[usize]| {
        Tensor::randn(0f32, 0.5, shape, &dev)
            .and_then(|t| t.to_dtype(dtype))
            .expect("randn")
    };
    let d = |shape: &[usize]| LinearWeight::Dense(r(shape));
    SparseMoe {
        router: d(&[experts, hidden]),
        gate_up: GateUp::Joined(ExpertWeights::Dense(r(&[experts, 2 * inter, hidden]))),
        down: ExpertWeights::Dense(r(&[experts, hidden, inter])),
        shared: SwiGlu {
            gate_proj: d(&[24, hidden]),
            up_proj: d(&[24, hidden]),
            down_proj: d(&[hidden, 24]),
        },
        shared_gate: d(&[1, hidden]),
        top_k,
        intermediate: inter,
    }
}

/// The device-side routing (top-k, renormalised weights, pairs grouped
/// by expert) through the grouped-GEMM contract gives what the
/// per-expert dispatch gives: for prefill and decode shapes, with and
/// without token chunking.
#[test]
fn grouped_routing_matches_per_expert_dispatch() -> candle_core::Result<()> {
    let moe = random_moe(8, 3, 32, 16, DType::F32);
    for t in [1, 2, 13, 40] {
        let x = Tensor::randn(0f32, 1.0, (t, 32), &Device::Cpu)?;
        let want = moe.routed_per_expert(&x, false)?;
        let scale = want.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(scale > 0.1, "routed output is not trivially small: {scale}");
        for max_pairs in [FUSED_MOE_MAX_PAIRS, 9, 1] {
            for fused_router in [false, true] {
                let got = moe.routed_grouped(&x, max_pairs, &grouped_gemm_cpu, fused_router)?;
                assert_eq!(got.dims(), &[t, 32]);
                // f32 rounding of differently blocked matmuls, relative
                // to the output's scale (a routing mistake is of that
                // scale).
                let diff = max_abs_diff(&got, &want);
                assert!(
                    diff <= 1e-5 * scale,
                    "T={t} max_pairs={max_pairs} fused_router={fused_router}: {diff} of \
                     {scale}"
                );
            }
        }
        let fused = moe.routed_per_expert(&x, true)?;
        let diff = max_abs_diff(&fused, &want);
        assert!(
            diff <= 1e-6 * scale,
            "T={t} per expert, fused router: {diff}"
        );
    }
    Ok(())
}

/// Quantized experts on the packed CPU kernels: the grouped dispatch
/// gives the op-by-op per-expert dispatch's output — bit for bit where
/// SiLU runs scalar (no vector form, or the cap `off`), within 1e-2 of
/// the output's scale where its `e^−g` runs on vector registers (a few
/// ulp, which can move bytes of the down projection's quantized input)
/// — for experts in Q4_K, Q6_K and Q8_0 (gate and up apart, or joined),
/// from one token (decode) to more tokens than experts.
#[test]
fn packed_dispatch_equals_per_expert_dispatch() -> candle_core::Result<()> {
    use candle_core::quantized::{GgmlDType, QTensor};
    if !crate::kernels::PackedWeight::applies(GgmlDType::Q4K, 256, 256) {
        return Ok(());
    }
    let (e, hidden, inter) = (6, 256, 256);
    let dev = Device::Cpu;
    let quantized = |dtype, rows, cols| -> candle_core::Result<ExpertWeights> {
        (0..e)
            .map(|_| {
                let w = Tensor::randn(0f32, 0.5, (rows, cols), &dev)?;
                Ok(QuantizedWeight::new(QTensor::quantize(&w, dtype)?))
            })
            .collect::<candle_core::Result<Vec<_>>>()
            .map(ExpertWeights::Quantized)
    };
    for (gate_type, down_type, joined) in [
        (GgmlDType::Q4K, GgmlDType::Q6K, false),
        (GgmlDType::Q4K, GgmlDType::Q4K, true),
        (GgmlDType::Q8_0, GgmlDType::Q8_0, false),
        (GgmlDType::Q8_0, GgmlDType::Q6K, false),
    ] {
        let mut moe = random_moe(e, 2, hidden, inter, DType::F32);
        moe.gate_up = if joined {
            GateUp::Joined(quantized(gate_type, 2 * inter, hidden)?)
        } else {
            GateUp::Split {
                gate: quantized(gate_type, inter, hidden)?,
                up: quantized(gate_type, inter, hidden)?,
            }
        };
        moe.down = quantized(down_type, hidden, inter)?;
        for t in [1, 5, 17] {
            let x = Tensor::randn(0f32, 1.0, (t, hidden), &dev)?;
            let want = moe.routed_per_expert(&x, false)?;
            let got = moe
                .routed_packed(&x, false)?
                .expect("the packed dispatch applies");
            let scale = want.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert!(scale > 0.1, "{gate_type:?}: trivially small output {scale}");
            // A changed ulp of SiLU can move a byte of the down
            // projection's quantized input by one step: max|h| / 127 · |w|,
            // about 2e-3 of the output's scale at these widths; allow a few.
            let within = if crate::kernels::lanes::form().is_some() {
                1e-2 * scale
            } else {
                0.0
            };
            let diff = max_abs_diff(&got, &want);
            assert!(
                diff <= within,
                "{gate_type:?}/{down_type:?} joined={joined} T={t}: {diff} off"
            );
        }
    }
    // Dense experts and a bf16 input are not the packed dispatch's.
    let dense = random_moe(e, 2, hidden, inter, DType::F32);
    let x = Tensor::randn(0f32, 1.0, (3, hidden), &dev)?;
    assert!(dense.routed_packed(&x, false)?.is_none());
    Ok(())
}

/// bf16 experts held dense on an AVX512-BF16 CPU: the grouped dispatch
/// gives the op-by-op per-expert dispatch's output bit for bit (every
/// rounding to bf16 in the same place), gate and up joined or apart,
/// from one token to more tokens than experts.
#[test]
fn dense_bf16_dispatch_equals_per_expert_dispatch() -> candle_core::Result<()> {
    let (e, hidden, inter) = (6, 96, 40);
    let dev = Device::Cpu;
    if !crate::kernels::avx512_bf16::available() {
        let moe = random_moe(e, 2, hidden, inter, DType::BF16);
        let x = Tensor::randn(0f32, 1.0, (3, hidden), &dev)?.to_dtype(DType::BF16)?;
        assert!(moe.routed_dense_bf16(&x, false)?.is_none());
        return Ok(());
    }
    for joined in [true, false] {
        let mut moe = random_moe(e, 2, hidden, inter, DType::BF16);
        if !joined {
            let r = |shape: &[usize]| Tensor::randn(0f32, 0.5, shape, &dev)?.to_dtype(DType::BF16);
            moe.gate_up = GateUp::Split {
                gate: ExpertWeights::Dense(r(&[e, inter, hidden])?),
                up: ExpertWeights::Dense(r(&[e, inter, hidden])?),
            };
        }
        for t in [1, 5, 17] {
            let x = Tensor::randn(0f32, 1.0, (t, hidden), &dev)?.to_dtype(DType::BF16)?;
            let want = moe.routed_per_expert(&x, false)?;
            let got = moe
                .routed_dense_bf16(&x, false)?
                .expect("the dense bf16 dispatch applies");
            assert_eq!(got.dtype(), DType::BF16);
            let scale = want
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_dtype(DType::F32)?
                .to_scalar::<f32>()?;
            assert!(scale > 0.1, "trivially small output {scale}");
            assert_eq!(max_abs_diff(&got, &want), 0.0, "joined={joined} T={t}");
        }
    }
    // f32 experts or input are not this dispatch's.
    let f32_moe = random_moe(e, 2, hidden, inter, DType::F32);
    let x = Tensor::randn(0f32, 1.0, (3, hidden), &dev)?;
    assert!(f32_moe.routed_dense_bf16(&x, false)?.is_none());
    Ok(())
}

/// The fused router op (CPU implementation) routes as the host does:
/// the same experts per token in the same order and the same weights
/// (to 1e-6), in f32 and with the weights rounded to bf16 and f16.
#[test]
fn fused_router_matches_host_routing() -> candle_core::Result<()> {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let moe = random_moe(16, 4, 32, 8, dtype);
        for t in [1, 7, 33] {
            let x = Tensor::randn(0f32, 1.0, (t, 32), &Device::Cpu)?.to_dtype(dtype)?;
            let (want_tokens, want_weights) = moe.host_routing(&x, false)?;
            let (got_tokens, got_weights) = moe.host_routing(&x, true)?;
            assert_eq!(got_tokens, want_tokens, "{dtype:?} T={t}");
            assert_eq!(want_tokens.iter().map(Vec::len).sum::<usize>(), 4 * t);
            for (g, w) in got_weights
                .iter()
                .flatten()
                .zip(want_weights.iter().flatten())
            {
                assert!((g - w).abs() <= 1e-6, "{dtype:?} T={t}: {g} vs {w}");
            }
        }
    }
    // Ties go to the lower expert, as in the host sort.
    let logits = Tensor::new(&[[1f32, 3.0, 3.0, 0.5, 3.0]], &Device::Cpu)?;
    let (ids, weights) = crate::kernels::fused::router_top_k(&logits, 2, DType::F32)?;
    assert_eq!(ids.to_vec2::<u32>()?, vec![vec![1, 2]]);
    assert_eq!(weights.to_vec2::<f32>()?, vec![vec![0.5, 0.5]]);
    Ok(())
}

/// The pair layout the kernels rely on: pair p = token · k + slot, the
/// sorted pairs grouped by ascending expert id, every pair once, each
/// token's weights summing to one.
#[test]
fn pair_routing_groups_pairs_by_expert() -> candle_core::Result<()> {
    let probs = Tensor::new(
        &[
            [0.1f32, 0.5, 0.3, 0.1],
            [0.4, 0.1, 0.2, 0.3],
            [0.05, 0.15, 0.2, 0.6],
        ],
        &Device::Cpu,
    )?;
    let r = PairRouting::from_probs(&probs, 2, DType::F32)?;
    let pairs: Vec<u32> = r.sorted_pairs.to_vec1()?;
    let experts: Vec<u32> = r.expert_of_sorted.to_vec1()?;
    let weights: Vec<f32> = r.pair_weights.to_vec1()?;
    // Top-2: token 0 → experts 1, 2; token 1 → 0, 3; token 2 → 3, 2.
    let chosen = [1u32, 2, 0, 3, 3, 2];
    let mut seen = pairs.clone();
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2, 3, 4, 5]);
    assert!(experts.windows(2).all(|w| w[0] <= w[1]), "{experts:?}");
    for (&pair, &expert) in pairs.iter().zip(&experts) {
        assert_eq!(chosen[pair as usize], expert, "pair {pair}");
    }
    let want = [0.625f32, 0.375, 4.0 / 7.0, 3.0 / 7.0, 0.75, 0.25];
    for (got, want) in weights.iter().zip(want) {
        assert!((got - want).abs() < 1e-6, "{weights:?}");
    }
    Ok(())
}

/// Fused dispatch is never chosen where it cannot run: the CPU, or f32.
#[test]
fn fused_dispatch_needs_cuda_and_half_precision() {
    let shape = MoeShape {
        hidden: 16,
        experts: 4,
        top_k: 2,
        expert_intermediate: 8,
        shared_intermediate: 512,
    };
    for dtype in [DType::BF16, DType::F16, DType::F32] {
        assert!(!MoeDispatch::fused_applies(shape, dtype, &Device::Cpu));
        assert_eq!(
            MoeDispatch::best_for(shape, dtype, &Device::Cpu),
            MoeDispatch::PerExpert
        );
    }
}
