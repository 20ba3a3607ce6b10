//! Quantized projections at the real model's widths, op by op: for every
//! block type the GGUF loader keeps quantized and every projection shape of
//! Qwen3.5-MoE (hidden 2048, expert 512, shared expert 512, the DeltaNet and
//! attention projections, lm_head rows), the quantized path the model runs
//! (a GGUF written to a temporary file, mapped by [`GgufFile`], read as a
//! [`LinearWeight`] or one expert of an [`ExpertWeights`] stack, prepared as
//! the loader prepares it) against the same blocks dequantized and
//! multiplied in f32.
//!
//! Tolerance: normalised mean squared error (Σ(y − ŷ)² / Σŷ²) at most
//! [`MAX_NMSE`] = 5e-4, the bound llama.cpp's `test-backend-ops` puts on a
//! quantized `MUL_MAT`. Against dequantize-then-f32 the only error left is
//! the input's quantization to 8 bits, which gives an NMSE of 1e-5 to 2e-4
//! (more with outliers); a wrong block, row, offset or scale gives ~1.
//!
//! And the input is quantized as llama.cpp quantizes it for that weight
//! type (Q8_0 blocks of 32 values for Q8_0, Q4_0 and Q5_0; Q8_K blocks of
//! 256 for the K-quants): against that input, dequantized, times the
//! dequantized weight in f32, the NMSE is at most [`MAX_NMSE_SAME_INPUT`]
//! (f32 rounding). candle-core 0.11.1's x86 repacked Q8_0 path quantized
//! the input to Q8_K instead (NMSE ~1e-4 against llama.cpp's arithmetic),
//! which changed a real-width Q8_0 model's first greedy token against
//! llama.cpp; this bound catches it. (Q4_1 and Q5_1 take Q8_1 inputs, which
//! candle cannot dequantize: for those only the first bound is checked.)
//!
//! Row counts are cut where they do not change the kernel taken (a
//! multiple of 16 rows keeps candle's x86 repacked tiles); the inner width
//! `k` is always the real one, and experts are read from a multi-expert
//! tensor at indices above 0, so the per-expert byte offsets are exercised.
//! Inputs of 1 row (decode), 7 rows (a small prefill or expert batch) and 40
//! rows (past 31, where Q4_K switches to chunks and Q6_K to its stored
//! blocks) are multiplied.

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use worldloom_engine::weights::gguf::{dtype_name, quantized_rows_supported};
use worldloom_engine::weights::{ExpertWeights, GgufFile, LinearWeight};

/// llama.cpp `test-backend-ops`' bound on a quantized matmul's NMSE.
const MAX_NMSE: f64 = 5e-4;

/// Bound on the NMSE against llama.cpp's arithmetic (the input quantized
/// to the weight type's dot-product blocks): f32 summation order only.
const MAX_NMSE_SAME_INPUT: f64 = 1e-9;

/// The block type llama.cpp quantizes the input to for a weight of
/// `dtype` (ggml's `vec_dot_type`), where candle can dequantize it.
fn input_type(dtype: GgmlDType) -> Option<GgmlDType> {
    match dtype {
        GgmlDType::Q8_0 | GgmlDType::Q4_0 | GgmlDType::Q5_0 => Some(GgmlDType::Q8_0),
        GgmlDType::Q2K | GgmlDType::Q3K | GgmlDType::Q4K | GgmlDType::Q5K | GgmlDType::Q6K => {
            Some(GgmlDType::Q8K)
        }
        _ => None,
    }
}

/// Input row counts: decode, a small batch, past the 31-row chunk size.
const BATCHES: [usize; 3] = [1, 7, 40];

/// One projection: its GGUF name, the dims written (`[rows, k]`, or
/// `[experts, rows, k]`) and the real `[out, in]` it stands for.
struct Projection {
    name: &'static str,
    dims: &'static [usize],
    real: [usize; 2],
}

/// The projections of one layer of each kind plus the vocabulary ones, at
/// the released model's inner widths (Qwen3.5-MoE 35B-A3B).
const PROJECTIONS: &[Projection] = &[
    // Gated attention: q carries the output gate (2 × 16 heads × 256).
    Projection {
        name: "attn_q",
        dims: &[64, 2048],
        real: [8192, 2048],
    },
    Projection {
        name: "attn_k",
        dims: &[512, 2048],
        real: [512, 2048],
    },
    Projection {
        name: "attn_output",
        dims: &[48, 4096],
        real: [2048, 4096],
    },
    // Gated DeltaNet: in_proj_qkv, in_proj_z, in_proj_b / in_proj_a, out_proj.
    Projection {
        name: "attn_qkv",
        dims: &[64, 2048],
        real: [8192, 2048],
    },
    Projection {
        name: "attn_gate",
        dims: &[64, 2048],
        real: [4096, 2048],
    },
    Projection {
        name: "ssm_beta",
        dims: &[32, 2048],
        real: [32, 2048],
    },
    Projection {
        name: "ssm_out",
        dims: &[48, 4096],
        real: [2048, 4096],
    },
    // MoE: router, shared expert (gate/up, down, its scalar gate), experts.
    Projection {
        name: "ffn_gate_inp",
        dims: &[256, 2048],
        real: [256, 2048],
    },
    Projection {
        name: "ffn_gate_shexp",
        dims: &[512, 2048],
        real: [512, 2048],
    },
    Projection {
        name: "ffn_down_shexp",
        dims: &[2048, 512],
        real: [2048, 512],
    },
    Projection {
        name: "ffn_gate_inp_shexp",
        dims: &[1, 2048],
        real: [1, 2048],
    },
    Projection {
        name: "ffn_gate_exps",
        dims: &[3, 512, 2048],
        real: [512, 2048],
    },
    Projection {
        name: "ffn_down_exps",
        dims: &[3, 2048, 512],
        real: [2048, 512],
    },
    // Vocabulary: rows of the output matrix (248320 × 2048).
    Projection {
        name: "output",
        dims: &[96, 2048],
        real: [248320, 2048],
    },
];

/// Deterministic N(0, σ²) values (SplitMix64 and Box–Muller), so a failure
/// reproduces.
fn normal(seed: u64, len: usize, sigma: f32) -> Vec<f32> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..len)
        .map(|_| {
            let (u, v) = (next(), next());
            let r = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            (r as f32) * sigma
        })
        .collect()
}

/// Normalised mean squared error of `got` against `want`.
fn nmse(got: &Tensor, want: &Tensor) -> f64 {
    let got: Vec<f32> = got.flatten_all().and_then(|t| t.to_vec1()).expect("got");
    let want: Vec<f32> = want.flatten_all().and_then(|t| t.to_vec1()).expect("want");
    assert_eq!(got.len(), want.len());
    let (mut err, mut norm) = (0f64, 0f64);
    for (a, b) in got.iter().zip(&want) {
        err += f64::from(a - b).powi(2);
        norm += f64::from(*b).powi(2);
    }
    err / norm
}

/// Inputs [rows, k] like the model's normed hidden states: N(0, 1) with a
/// few outlier channels (×8), as real activations have.
fn input(seed: u64, rows: usize, k: usize) -> Tensor {
    let mut x = normal(seed, rows * k, 1.0);
    for row in x.chunks_exact_mut(k) {
        for c in [3, k / 3, k - 5] {
            row[c] *= 8.0;
        }
    }
    Tensor::from_vec(x, (rows, k), &Device::Cpu).expect("input")
}

/// Multiplies `weight` (the model's path) and `dense` (the same blocks
/// dequantized) [out, k] by inputs of every batch size; returns the worst
/// NMSE against dequantize-then-f32 and against llama.cpp's arithmetic,
/// and fails naming `what` past [`MAX_NMSE`] or [`MAX_NMSE_SAME_INPUT`].
fn check(
    what: &str,
    dtype: GgmlDType,
    weight: &LinearWeight,
    dense: &Tensor,
    seed: u64,
) -> [f64; 2] {
    let k = dense.dims()[1];
    let wt = dense.t().expect("t");
    let mut worst = [0f64; 2];
    for (i, rows) in BATCHES.into_iter().enumerate() {
        let x = input(seed ^ ((i as u64 + 1) << 32), rows, k);
        let got = weight.forward(&x).expect("quantized forward");
        let want = x.matmul(&wt).expect("dense matmul");
        assert_eq!(got.dims(), want.dims(), "{what}");
        let e = nmse(&got, &want);
        assert!(
            e <= MAX_NMSE,
            "{what}, {rows} input rows: NMSE {e:.3e} against dequantize-then-f32 (bound {MAX_NMSE:e})"
        );
        worst[0] = worst[0].max(e);
        if let Some(input_type) = input_type(dtype) {
            let xq = QTensor::quantize(&x, input_type)
                .and_then(|q| q.dequantize(&Device::Cpu))
                .expect("input quantized");
            let want = xq.matmul(&wt).expect("matmul of the quantized input");
            let e = nmse(&got, &want);
            assert!(
                e <= MAX_NMSE_SAME_INPUT,
                "{what}, {rows} input rows: NMSE {e:.3e} against the input quantized to \
                 {input_type:?} as llama.cpp does (bound {MAX_NMSE_SAME_INPUT:e})"
            );
            worst[1] = worst[1].max(e);
        }
    }
    worst
}

/// Writes every projection quantized to `dtype` into one GGUF file, maps
/// it, and checks each projection (each expert of a stack) and the lm_head
/// row lookups against the dequantized blocks.
fn check_type(dtype: GgmlDType) {
    let dev = Device::Cpu;
    let type_name = dtype_name(dtype);
    let owned: Vec<QTensor> = PROJECTIONS
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let k = *p.dims.last().expect("k");
            assert!(quantized_rows_supported(dtype, k), "{type_name} at k={k}");
            let elems: usize = p.dims.iter().product();
            let w = Tensor::from_vec(
                normal(0x5EED + i as u64, elems, 1.0 / (k as f32).sqrt()),
                p.dims,
                &dev,
            )
            .expect("weights");
            QTensor::quantize(&w, dtype).expect("quantize")
        })
        .collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join(format!("{type_name}.gguf"));
    let names: Vec<String> = PROJECTIONS
        .iter()
        .map(|p| format!("blk.1.{}.weight", p.name))
        .collect();
    {
        let mut out = std::fs::File::create(&path).expect("create");
        let tensors: Vec<(&str, &QTensor)> = names.iter().map(|n| n.as_str()).zip(&owned).collect();
        let arch = Value::String("qwen35moe".into());
        gguf_file::write(&mut out, &[("general.architecture", &arch)], &tensors).expect("write");
    }
    let file = GgufFile::open(&path).expect("open");
    let mut report = Vec::new();
    for ((p, name), q) in PROJECTIONS.iter().zip(&names).zip(&owned) {
        let full = q.dequantize(&dev).expect("dequantize");
        let what = |e: Option<usize>| {
            let at = e.map(|e| format!(" expert {e}")).unwrap_or_default();
            format!(
                "{type_name} {}{at} ({:?} of the real {}×{})",
                p.name, p.dims, p.real[0], p.real[1]
            )
        };
        let worst: [f64; 2] = if p.dims.len() == 3 {
            let slices = file.read_qtensor_slices(name, &dev).expect("slices");
            for s in &slices {
                s.prepare().expect("prepare");
            }
            let experts = ExpertWeights::Quantized(slices);
            assert_eq!(experts.len(), p.dims[0]);
            let mut worst = [0f64; 2];
            // Experts 1 and 2: byte ranges that start inside the tensor.
            for e in 1..p.dims[0] {
                let weight = experts.expert(e).expect("expert");
                let dense = full.get(e).expect("expert rows");
                let mapped = match &weight {
                    LinearWeight::Quantized(w) => w.tensor().dequantize(&dev).expect("mapped"),
                    LinearWeight::Dense(_) => panic!("{}: read dense", what(Some(e))),
                };
                assert_eq!(
                    max_abs(&(mapped - &dense).expect("diff")),
                    0.0,
                    "{}: the mapped expert's blocks are not the expert's",
                    what(Some(e))
                );
                let [a, b] = check(&what(Some(e)), dtype, &weight, &dense, e as u64);
                worst = [worst[0].max(a), worst[1].max(b)];
            }
            worst
        } else {
            let w = file.read_qtensor(name, &dev).expect("read");
            w.prepare().expect("prepare");
            let weight = LinearWeight::Quantized(w);
            if p.name == "output" {
                // The same matrix looked up by rows (a tied embedding).
                let ids = Tensor::new(&[0u32, 17, 95, 17], &dev).expect("ids");
                let rows = weight.rows(&ids, DType::F32).expect("rows");
                let want = full.index_select(&ids, 0).expect("want rows");
                assert_eq!(
                    max_abs(&(rows - want).expect("diff")),
                    0.0,
                    "{}: rows",
                    what(None)
                );
            }
            check(&what(None), dtype, &weight, &full, 0)
        };
        report.push(format!("{} {:.1e}/{:.1e}", p.name, worst[0], worst[1]));
    }
    eprintln!(
        "{type_name}: worst NMSE against dequantize-then-f32 / llama.cpp's input: {}",
        report.join(", ")
    );
}

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.max(0))
        .and_then(|t| t.to_scalar())
        .expect("max")
}

/// One test per block type the loader keeps quantized on the CPU.
macro_rules! per_type {
    ($($test:ident => $dtype:expr),* $(,)?) => {$(
        #[test]
        fn $test() {
            check_type($dtype);
        }
    )*};
}

per_type! {
    q8_0_at_real_widths => GgmlDType::Q8_0,
    q4_0_at_real_widths => GgmlDType::Q4_0,
    q4_1_at_real_widths => GgmlDType::Q4_1,
    q5_0_at_real_widths => GgmlDType::Q5_0,
    q5_1_at_real_widths => GgmlDType::Q5_1,
    q2_k_at_real_widths => GgmlDType::Q2K,
    q3_k_at_real_widths => GgmlDType::Q3K,
    q4_k_at_real_widths => GgmlDType::Q4K,
    q5_k_at_real_widths => GgmlDType::Q5K,
    q6_k_at_real_widths => GgmlDType::Q6K,
}
