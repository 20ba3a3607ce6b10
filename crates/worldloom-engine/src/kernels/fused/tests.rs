//! The CUDA twins against the CPU implementations, on the device named
//! by `WORLDLOOM_TEST_DEVICE` when it is a CUDA device (skipped
//! otherwise). The CPU implementations themselves are tested against
//! the unfused path beside their callers (`qwen3_5_moe::norm`,
//! `qwen3_5_moe::deltanet`, `moe`, `sampling`).
use super::*;
use crate::qwen3_5_moe::max_rel_diff;
use candle_core::Device;

fn cuda_test_device() -> Option<Device> {
    let spec = std::env::var("WORLDLOOM_TEST_DEVICE").unwrap_or_default();
    if spec == "cpu-self" {
        // Checks these tests' own plumbing: the CPU against itself.
        return Some(Device::Cpu);
    }
    if !spec.starts_with("cuda") {
        eprintln!("no CUDA test device (WORLDLOOM_TEST_DEVICE={spec:?}): skipped");
        return None;
    }
    Some(crate::loading::parse_device(&spec).expect("WORLDLOOM_TEST_DEVICE"))
}

fn randn(shape: &[usize], std: f32, dtype: DType) -> Tensor {
    Tensor::randn(0f32, std, shape, &Device::Cpu)
        .and_then(|t| t.to_dtype(dtype))
        .expect("randn")
}

/// Tolerance of CUDA vs CPU, relative to the output's scale: f32
/// differ in summation order, fused multiply-adds and the last bits of
/// expf; in bf16/f16 such a difference sometimes flips a rounding to
/// the dtype (one unit in the last place: 0.4 % in bf16, 0.05 % in f16),
/// which later steps can carry a little further.
fn tol(dtype: DType) -> f32 {
    match dtype {
        DType::F32 => 2e-5,
        DType::F16 => 5e-3,
        _ => 3e-2,
    }
}

const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

/// The prefill conv + SiLU equals candle's op-by-op form (products,
/// sums and SiLU in the dtype) bit for bit, in f32, bf16 and f16, for
/// one new row and several.
#[test]
fn conv_silu_rows_equals_the_op_by_op_form() -> candle_core::Result<()> {
    use candle_core::IndexOp;
    let (kernel, c) = (4, 37);
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for t in [1, 6] {
            let padded =
                Tensor::randn(0f32, 1.5, (kernel - 1 + t, c), &Device::Cpu)?.to_dtype(dtype)?;
            let taps = Tensor::randn(0f32, 0.7, (kernel, c), &Device::Cpu)?.to_dtype(dtype)?;
            let mut want = padded.narrow(0, 0, t)?.broadcast_mul(&taps.i(0)?)?;
            for j in 1..kernel {
                want = (want + padded.narrow(0, j, t)?.broadcast_mul(&taps.i(j)?)?)?;
            }
            let want = candle_nn::ops::silu(&want)?;
            let got = conv_silu_rows(&padded, &taps)?.expect("CPU dtypes");
            assert_eq!(got.dims(), &[t, c]);
            assert_eq!(got.dtype(), dtype);
            let (got, want) = (
                got.to_dtype(DType::F32)?.to_vec2::<f32>()?,
                want.to_dtype(DType::F32)?.to_vec2::<f32>()?,
            );
            assert!(
                want.iter().flatten().any(|v| v.abs() > 0.5),
                "{dtype:?}: trivial"
            );
            assert_eq!(got, want, "{dtype:?} T={t}");
        }
    }
    let bad = Tensor::zeros((2, 5), DType::F32, &Device::Cpu)?;
    assert!(conv_silu_rows(&bad, &Tensor::zeros((4, 5), DType::F32, &Device::Cpu)?).is_err());
    Ok(())
}

/// The tabled SiLU of the 16-bit dtypes equals candle's `silu` on every
/// one of the 65,536 bit patterns (NaN for NaN).
#[test]
fn silu_tables_equal_candle_on_every_bit_pattern() -> candle_core::Result<()> {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let check = |got: Vec<u16>, want: Vec<u16>, nan: fn(u16) -> bool, what: &str| {
        let mut finite = 0;
        for (b, (g, w)) in got.iter().zip(&want).enumerate() {
            if nan(*w) {
                assert!(nan(*g), "{what} {b:#06x}: {g:#06x}, want NaN");
            } else {
                assert_eq!(g, w, "{what} {b:#06x}");
                finite += 1;
            }
        }
        assert!(finite > 60_000, "{what}: only {finite} non-NaN results");
    };
    let x: Vec<bf16> = all.iter().map(|&b| bf16::from_bits(b)).collect();
    let want =
        candle_nn::ops::silu(&Tensor::new(x.as_slice(), &Device::Cpu)?)?.to_vec1::<bf16>()?;
    check(
        x.iter().map(|v| v.silu().to_bits()).collect(),
        want.iter().map(|v| v.to_bits()).collect(),
        |b| bf16::from_bits(b).is_nan(),
        "bf16",
    );
    let x: Vec<f16> = all.iter().map(|&b| f16::from_bits(b)).collect();
    let want = candle_nn::ops::silu(&Tensor::new(x.as_slice(), &Device::Cpu)?)?.to_vec1::<f16>()?;
    check(
        x.iter().map(|v| v.silu().to_bits()).collect(),
        want.iter().map(|v| v.to_bits()).collect(),
        |b| f16::from_bits(b).is_nan(),
        "f16",
    );
    Ok(())
}

#[test]
fn cuda_rms_norms_match_cpu() -> candle_core::Result<()> {
    let Some(dev) = cuda_test_device() else {
        return Ok(());
    };
    for dtype in DTYPES {
        for (rows, dim) in [(3, 2048), (5, 256), (2, 100)] {
            let x = randn(&[rows, dim], 1.5, dtype);
            let scale = (randn(&[dim], 0.3, DType::F32) + 1.0)?;
            let want = rms_norm_scaled(&x, &scale, 1e-6)?;
            let got = rms_norm_scaled(&x.to_device(&dev)?, &scale.to_device(&dev)?, 1e-6)?;
            let d = max_rel_diff(&got, &want);
            assert!(d <= tol(dtype), "rms {dtype:?} {rows}x{dim}: {d}");
        }
        let o = randn(&[6, 128], 1.0, DType::F32);
        let z = randn(&[6, 128], 1.0, dtype);
        let w = (randn(&[128], 0.2, DType::F32) + 1.0)?.to_dtype(dtype)?;
        let want = gated_rms_norm(&o, &z, &w, 1e-6)?;
        let got = gated_rms_norm(
            &o.to_device(&dev)?,
            &z.to_device(&dev)?,
            &w.to_device(&dev)?,
            1e-6,
        )?;
        let d = max_rel_diff(&got, &want);
        assert!(d <= tol(dtype), "gated {dtype:?}: {d}");
    }
    Ok(())
}

#[test]
fn cuda_gdn_decode_step_matches_cpu() -> candle_core::Result<()> {
    let Some(dev) = cuda_test_device() else {
        return Ok(());
    };
    let shapes = [
        // The released model's widths, and a small odd one.
        GdnDims {
            n_k: 16,
            n_v: 32,
            d_k: 128,
            d_v: 128,
            kernel: 4,
            tiled: false,
        },
        GdnDims {
            n_k: 2,
            n_v: 4,
            d_k: 16,
            d_v: 12,
            kernel: 4,
            tiled: true,
        },
    ];
    for dtype in DTYPES {
        for dims in shapes {
            let c = dims.conv_dim();
            let (n_v, d_k, d_v) = (dims.n_v, dims.d_k, dims.d_v);
            let padded = randn(&[dims.kernel, c], 1.0, dtype);
            let taps = randn(&[dims.kernel, c], 0.5, dtype);
            let z = randn(&[n_v * d_v], 1.0, dtype);
            let b = randn(&[n_v], 1.0, dtype);
            let a = randn(&[n_v], 1.0, dtype);
            let neg_a = randn(&[n_v], 0.5, DType::F32).exp()?.neg()?;
            let dt_bias = randn(&[n_v], 0.5, DType::F32);
            let w = (randn(&[d_v], 0.2, DType::F32) + 1.0)?.to_dtype(dtype)?;
            let state = randn(&[n_v, d_k, d_v], 0.1, DType::F32);
            let on = |t: &Tensor, d: &Device| t.to_device(d).expect("to device");
            let run = |d: &Device| {
                let (taps, z, b, a) = (on(&taps, d), on(&z, d), on(&b, d), on(&a, d));
                let (neg_a, dt_bias, w, state) =
                    (on(&neg_a, d), on(&dt_bias, d), on(&w, d), on(&state, d));
                let inputs = GdnStepInputs {
                    taps: &taps,
                    z: &z,
                    b: &b,
                    a: &a,
                    neg_a: &neg_a,
                    dt_bias: &dt_bias,
                    norm_weight: &w,
                    state: &state,
                };
                gdn_decode_step(&on(&padded, d), &inputs, dims, 1e-6)
            };
            let (want_out, want_state) = run(&Device::Cpu)?;
            let (got_out, got_state) = run(&dev)?;
            let d = max_rel_diff(&got_out, &want_out);
            assert!(d <= tol(dtype), "{dtype:?} {dims:?}: output {d}");
            // The state is f32, but its q, k and v went through the
            // dtype's roundings.
            let d = max_rel_diff(&got_state, &want_state);
            assert!(d <= tol(dtype), "{dtype:?} {dims:?}: state {d}");
        }
    }
    Ok(())
}

#[test]
fn cuda_router_top_k_matches_cpu() -> candle_core::Result<()> {
    let Some(dev) = cuda_test_device() else {
        return Ok(());
    };
    for dtype in DTYPES {
        let logits = randn(&[5, 256], 2.0, dtype);
        let (want_ids, want_w) = router_top_k(&logits, 8, dtype)?;
        let (got_ids, got_w) = router_top_k(&logits.to_device(&dev)?, 8, dtype)?;
        assert_eq!(
            got_ids.to_vec2::<u32>()?,
            want_ids.to_vec2::<u32>()?,
            "{dtype:?}"
        );
        let d = max_rel_diff(&got_w, &want_w);
        assert!(d <= tol(dtype), "{dtype:?}: weights {d}");
    }
    Ok(())
}

#[test]
fn cuda_sample_candidates_match_cpu() -> candle_core::Result<()> {
    let Some(dev) = cuda_test_device() else {
        return Ok(());
    };
    let v = 248_320;
    let mut logits: Vec<f32> = randn(&[v], 3.0, DType::F32).to_vec1()?;
    for (i, x) in logits.iter_mut().enumerate() {
        match i % 1001 {
            3 => *x = f32::NEG_INFINITY,
            5 => *x = f32::NAN,
            7 => *x = f32::INFINITY,
            _ => {}
        }
    }
    logits[1000] = 20.0;
    logits[200_000] = 20.0; // a tie for the best
    let cpu = Tensor::new(logits.as_slice(), &Device::Cpu)?;
    let gpu = cpu.to_device(&dev)?;
    for (k, temperature) in [(1, 1.0), (20, 0.7), (64, 1.3)] {
        let want = sample_candidates(&cpu, k, temperature)?;
        let got = sample_candidates(&gpu, k, temperature)?;
        assert_eq!(got.scaled, want.scaled, "k={k}");
        assert_eq!(got.raw, want.raw, "k={k}");
        assert_eq!(got.max, want.max, "k={k}");
        assert!((got.log_sum - want.log_sum).abs() <= 1e-5, "k={k}");
    }
    Ok(())
}
