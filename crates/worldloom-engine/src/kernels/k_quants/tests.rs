use super::*;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

/// A weight [n, k] quantized by candle (llama.cpp's quantizers) and its
/// stored bytes.
fn quantized(dtype: GgmlDType, n: usize, k: usize, seed: usize) -> (QTensor, Vec<u8>) {
    let val = |i: usize| (((i + seed) as f32 * 0.7312).sin() * 43758.545).fract() * 0.05;
    let w: Vec<f32> = (0..n * k).map(val).collect();
    let t = Tensor::from_vec(w, (n, k), &Device::Cpu).expect("tensor");
    let q = QTensor::quantize(&t, dtype).expect("quantizes");
    let bytes = q.data().expect("data").to_vec();
    (q, bytes)
}

/// llama.cpp's product in f64: the input quantized to Q8_K (as
/// [`Q8K::quantize`]), dequantized, times the dequantized weight.
fn reference(q: &QTensor, x: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let w: Vec<f32> = q
        .dequantize(&Device::Cpu)
        .and_then(|t| t.flatten_all()?.to_vec1())
        .expect("dequantizes");
    let acts = Q8K::quantize(x, m, k);
    let xq: Vec<f64> = (0..m * k)
        .map(|i| f64::from(acts.qs[i]) * f64::from(acts.d[i / QK_K]))
        .collect();
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|c| xq[i * k + c] * f64::from(w[j * k + c]))
                .sum();
        }
    }
    out
}

/// Input rows with an outlier, an all-zero block and a negative
/// largest value (the scale's sign).
fn input(m: usize, k: usize) -> Vec<f32> {
    let mut x: Vec<f32> = (0..m * k)
        .map(|i| ((i as f32 * 1.173).sin() * 9631.17).fract())
        .collect();
    x[5] = 40.0;
    x[QK_K + 3] = -30.0;
    if m > 1 {
        x[k..k + QK_K].fill(0.0);
    }
    x
}

fn check(got: &[f32], want: &[f64], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-4 * w.abs().max(1.0),
            "{what} at {i}: {g} against {w}"
        );
    }
}

/// The kernels compute llama.cpp's integer sums (only f32 rounding
/// differs) for every pass width and weights of several tiles and
/// blocks; a wrong nibble, fifth bit, scale, minimum or offset is off by
/// far more.
#[test]
fn match_llama_cpp_arithmetic() {
    if tile_isa().is_none() {
        return;
    }
    let (n, k) = (48, 512);
    let (q4, b4) = quantized(GgmlDType::Q4K, n, k, 1);
    let (q5, b5) = quantized(GgmlDType::Q5K, n, k, 3);
    let (q6, b6) = quantized(GgmlDType::Q6K, n, k, 2);
    let p4 = PackedQ4K::pack_q4k(&b4, n, k).expect("packs Q4_K");
    let p5 = PackedQ5K::pack_q5k(&b5, n, k).expect("packs Q5_K");
    let p6 = PackedQ6K::pack_q6k(&b6, n, k).expect("packs Q6_K");
    // Tiles of the blocks' size (Q4_K's scales unpacked: 1.03×).
    assert_eq!(p6.tiles.len() * size_of::<Q6KTile>(), b6.len());
    assert_eq!(p4.tiles.len() * size_of::<Q4KTile>(), b4.len() / 144 * 148);
    assert_eq!(p5.tiles.len() * size_of::<Q5KTile>(), b5.len() / 176 * 180);
    // Every pass width 1..=MT (9 = 8 + 1, 13 = 8 + 5, 14 = 8 + 6, 15 = 8 + 7).
    for m in [1, 2, 3, 4, 9, 13, 14, 15] {
        let x = input(m, k);
        let acts = Q8K::quantize(&x, m, k);
        let want = [
            reference(&q4, &x, m, n, k),
            reference(&q5, &x, m, n, k),
            reference(&q6, &x, m, n, k),
        ];
        for isa in TileIsa::ALL.into_iter().filter(|isa| isa.is_supported()) {
            let what = |t: &str| format!("{t} on {isa:?}, {m} rows");
            check(
                &p4.matmul_quantized_on(isa, &acts, true),
                &want[0],
                &what("Q4_K"),
            );
            check(
                &p5.matmul_quantized_on(isa, &acts, true),
                &want[1],
                &what("Q5_K"),
            );
            check(
                &p6.matmul_quantized_on(isa, &acts, true),
                &want[2],
                &what("Q6_K"),
            );
        }
    }
    assert!(PackedQ4K::pack_q4k(&b4, n, k - 256).is_none());
    assert!(PackedQ5K::pack_q5k(&b4, n, k).is_none());
    assert!(PackedQ6K::pack_q6k(&b6[..b6.len() - 1], n, k).is_none());
}

/// Blocks at the top of each type's range (every Q4_K nibble 15, every
/// Q5_K value 31, every Q6_K value 63, the largest scales) against input
/// bytes of ±127: the largest sums a kernel's narrow run can meet. A run
/// one step longer than its lanes hold (AVX2's i16) wraps and is off by
/// far more than the tolerance.
#[test]
fn extreme_blocks_do_not_overflow_a_run() {
    if tile_isa().is_none() {
        return;
    }
    let (n, k) = (16, 512);
    let one = half::f16::ONE.to_le_bytes();
    let quarter = half::f16::from_f32(0.25).to_le_bytes();
    let block = |dtype: GgmlDType| -> Vec<u8> {
        match dtype {
            // d, dmin, 12 scale bytes (all 6-bit scales and minima 63), qs.
            GgmlDType::Q4K => [&one[..], &quarter, &[0xFF; 12], &[0xFF; 128]].concat(),
            // As Q4_K with every fifth bit set (qh).
            GgmlDType::Q5K => [&one[..], &quarter, &[0xFF; 12], &[0xFF; 32], &[0xFF; 128]].concat(),
            // ql, qh, 16 signed scales (127 and −128 in turn), d.
            _ => [&[0xFF; 128][..], &[0xFF; 64], &[0x7F, 0x80].repeat(8), &one].concat(),
        }
    };
    // Every input byte −127 (each row's largest magnitude), or +127 but
    // the first (a positive largest value flips the scale's sign).
    let same = vec![-1.0f32; k];
    let mut flipped = vec![-0.999f32; k];
    flipped[0] = 1.0;
    for dtype in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
        let bytes = block(dtype).repeat(n * k / QK_K);
        let q = candle_core::quantized::ggml_file::qtensor_from_ggml(
            dtype,
            &bytes,
            vec![n, k],
            &Device::Cpu,
        )
        .expect("blocks");
        for m in [1, 2, 3] {
            let x: Vec<f32> = (0..m)
                .flat_map(|r| {
                    if r % 2 == 0 {
                        same.clone()
                    } else {
                        flipped.clone()
                    }
                })
                .collect();
            let acts = Q8K::quantize(&x, m, k);
            assert!(acts.qs.iter().all(|&b| b.unsigned_abs() == 127));
            let want = reference(&q, &x, m, n, k);
            for isa in TileIsa::ALL.into_iter().filter(|isa| isa.is_supported()) {
                let got = match dtype {
                    GgmlDType::Q4K => PackedQ4K::pack_q4k(&bytes, n, k)
                        .expect("packs")
                        .matmul_quantized_on(isa, &acts, false),
                    GgmlDType::Q5K => PackedQ5K::pack_q5k(&bytes, n, k)
                        .expect("packs")
                        .matmul_quantized_on(isa, &acts, false),
                    _ => PackedQ6K::pack_q6k(&bytes, n, k)
                        .expect("packs")
                        .matmul_quantized_on(isa, &acts, false),
                };
                check(&got, &want, &format!("{dtype:?} on {isa:?}, {m} rows"));
            }
        }
    }
}

/// Each form's quantizer gives the scalar one's bytes, sums and scale
/// (on blocks whose largest magnitude occurs with one sign; otherwise
/// scale and bytes flip sign together and the products are the same).
#[test]
fn q8k_simd_quantization_equals_scalar() {
    let (m, k) = (3, 4 * QK_K);
    let mut x = input(m, k);
    x[2 * QK_K + 7] = 0.5; // a tie to even after scaling below
    x[2 * QK_K + 9] = 127.0;
    x[5 * QK_K..6 * QK_K].fill(0.0);
    let scalar = Q8K::quantize_on(None, &x, m, k);
    assert_eq!(scalar.qs[2 * QK_K + 7], 0); // −0.5 → 0 (even)
    assert_eq!(scalar.d[2], -1.0);
    assert_eq!(scalar.d[5], 0.0);
    for isa in TileIsa::ALL.into_iter().filter(|isa| isa.is_supported()) {
        let simd = Q8K::quantize_on(Some(isa), &x, m, k);
        assert_eq!(simd.qs, scalar.qs, "{isa:?}");
        assert_eq!(simd.d, scalar.d, "{isa:?}");
        assert_eq!(simd.bsums, scalar.bsums, "{isa:?}");
    }
}

/// The input's quantization is llama.cpp's: the scale carries the sign
/// of the largest-magnitude value, halves round to even, and the
/// 16-byte sums add up.
#[test]
fn q8k_quantization_follows_llama_cpp() {
    let mut x = vec![0.0f32; QK_K];
    x[0] = 127.0; // largest magnitude, positive: d = −1
    x[1] = 2.5; // −2.5 rounds to even: −2
    x[2] = 3.5; // −3.5 → −4
    x[17] = 100.0;
    let q = Q8K::quantize(&x, 1, QK_K);
    assert_eq!(q.d, vec![-1.0]);
    assert_eq!(&q.qs[..3], &[-127, -2, -4]);
    assert_eq!(q.qs[17], -100);
    assert_eq!(q.bsums[0], -127 - 2 - 4);
    assert_eq!(q.bsums[1], -100);
}
