//! The f32 vector operations the float kernels are written in, on 512-bit
//! ([`Zmm`], AVX-512F) and 256-bit ([`Ymm`], AVX2 + FMA) registers.
//! Every method is `#[inline(always)]`: a kernel body is generic over
//! [`Lanes`] and compiles inside one `#[target_feature]` entry per form.
//!
//! Allowed `unsafe`: the intrinsics, each method's caller holding the
//! form's features and the pointers' bounds it names.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// One form's f32 vectors and the lane masks of a row's first keys.
pub(crate) trait Lanes {
    /// A vector of [`Lanes::W`] f32.
    type V: Copy;
    /// Which lanes of a vector hold keys a row sees.
    type M: Copy;
    /// Lanes per vector.
    const W: usize;

    /// # Safety (every method)
    /// The CPU has the form's features; pointers as each names.
    unsafe fn zero() -> Self::V;
    /// All lanes `x`.
    unsafe fn set1(x: f32) -> Self::V;
    /// `W` floats readable at `p`.
    unsafe fn load(p: *const f32) -> Self::V;
    /// `W` floats writable at `p`.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// `a · b + c`, fused.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a · b`.
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a − b`.
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    /// `a + b`.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    /// The lane-wise minimum (`b` where either is NaN).
    unsafe fn min(a: Self::V, b: Self::V) -> Self::V;
    /// 2^x for x ≤ 127: 2^round(x) times a degree-7 Taylor polynomial of
    /// 2^f on [−½, ½] (relative error ≤ 6e-9 before rounding); inputs
    /// below the form's floor give 2^floor (−150: 0 once rounded; −125:
    /// 2^−125).
    unsafe fn exp2(x: Self::V) -> Self::V;
    /// The first `n` lanes (all where `n` ≥ `W`).
    unsafe fn first(n: usize) -> Self::M;
    /// The largest of the lanes in `m` (−∞ where none).
    unsafe fn max_in(m: Self::M, v: Self::V) -> f32;
    /// `v` with the lanes outside `m` zero.
    unsafe fn keep(m: Self::M, v: Self::V) -> Self::V;
    /// The sum of the lanes.
    unsafe fn sum(v: Self::V) -> f32;
}

/// The Taylor coefficients of 2^f = e^(f ln 2): (ln 2)^i / i!.
const EXP2_TAYLOR: [f32; 8] = [
    1.0,
    std::f32::consts::LN_2,
    0.240_226_5,
    0.055_504_11,
    0.009_618_129,
    0.001_333_355_8,
    0.000_154_035_3,
    0.000_015_252_734,
];

/// AVX-512F: 16 lanes, `vscalefps` for 2^n.
pub(crate) struct Zmm;

impl Lanes for Zmm {
    type V = __m512;
    type M = __mmask16;
    const W: usize = 16;

    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: the caller has AVX-512F.
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn set1(x: f32) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: as above; 16 floats at `p` (the caller's).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: as above; 16 floats at `p` (the caller's).
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m512, b: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: __m512, b: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_min_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn exp2(x: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe {
            let x = _mm512_max_ps(x, _mm512_set1_ps(-150.0));
            let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
            let f = _mm512_sub_ps(x, n);
            let mut p = _mm512_set1_ps(EXP2_TAYLOR[7]);
            for &c in EXP2_TAYLOR[..7].iter().rev() {
                p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c));
            }
            _mm512_scalef_ps(p, n)
        }
    }
    #[inline(always)]
    unsafe fn first(n: usize) -> __mmask16 {
        if n >= 16 { u16::MAX } else { (1u16 << n) - 1 }
    }
    #[inline(always)]
    unsafe fn max_in(m: __mmask16, v: __m512) -> f32 {
        // SAFETY: as above.
        unsafe { _mm512_reduce_max_ps(_mm512_mask_mov_ps(_mm512_set1_ps(f32::NEG_INFINITY), m, v)) }
    }
    #[inline(always)]
    unsafe fn keep(m: __mmask16, v: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_maskz_mov_ps(m, v) }
    }
    #[inline(always)]
    unsafe fn sum(v: __m512) -> f32 {
        // SAFETY: as above.
        unsafe { _mm512_reduce_add_ps(v) }
    }
}

/// AVX2 + FMA: 8 lanes, 2^n built in the exponent field.
pub(crate) struct Ymm;

impl Lanes for Ymm {
    type V = __m256;
    type M = __m256;
    const W: usize = 8;

    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: the caller has AVX2 and FMA.
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn set1(x: f32) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: as above; 8 floats at `p` (the caller's).
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: as above; 8 floats at `p` (the caller's).
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m256, b: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m256, b: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: __m256, b: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_min_ps(a, b) }
    }
    /// The floor is −125, so 2^n (n ≥ −125) is a normal float whose bits
    /// are (n + 127) << 23.
    #[inline(always)]
    unsafe fn exp2(x: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe {
            let x = _mm256_max_ps(x, _mm256_set1_ps(-125.0));
            let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
            let f = _mm256_sub_ps(x, n);
            let mut p = _mm256_set1_ps(EXP2_TAYLOR[7]);
            for &c in EXP2_TAYLOR[..7].iter().rev() {
                p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c));
            }
            let bits = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
            _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32::<23>(bits)))
        }
    }
    #[inline(always)]
    unsafe fn first(n: usize) -> __m256 {
        // SAFETY: as above.
        unsafe {
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let n = _mm256_set1_epi32(n.min(8) as i32);
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(n, lane))
        }
    }
    #[inline(always)]
    unsafe fn max_in(m: __m256, v: __m256) -> f32 {
        // SAFETY: as above.
        unsafe {
            let v = _mm256_blendv_ps(_mm256_set1_ps(f32::NEG_INFINITY), v, m);
            let x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let x = _mm_max_ps(x, _mm_movehl_ps(x, x));
            _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps::<0b01>(x, x)))
        }
    }
    #[inline(always)]
    unsafe fn keep(m: __m256, v: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_and_ps(v, m) }
    }
    #[inline(always)]
    unsafe fn sum(v: __m256) -> f32 {
        // SAFETY: as above.
        unsafe {
            let x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let x = _mm_add_ps(x, _mm_movehl_ps(x, x));
            _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps::<0b01>(x, x)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each operation's lanes, for the points of [`check`].
    struct Seen {
        exp2: Vec<f32>,
        max: Vec<f32>,
        kept: Vec<f32>,
        sum: f32,
    }

    /// `exp2` of `xs` (a multiple of W long); for each `n` in `firsts` the
    /// largest of `row`'s first n lanes and `row` with the others zeroed;
    /// the sum of `row`.
    #[inline(always)]
    unsafe fn run<L: Lanes>(xs: &[f32], row: &[f32], firsts: &[usize]) -> Seen {
        let mut exp2 = vec![0f32; xs.len()];
        let mut kept = vec![0f32; firsts.len() * L::W];
        let mut max = Vec::new();
        // SAFETY: the caller has L's features; every load and store is W
        // floats inside its slice.
        unsafe {
            for (x, e) in xs.chunks_exact(L::W).zip(exp2.chunks_exact_mut(L::W)) {
                L::store(e.as_mut_ptr(), L::exp2(L::load(x.as_ptr())));
            }
            let v = L::load(row.as_ptr());
            for (&n, k) in firsts.iter().zip(kept.chunks_exact_mut(L::W)) {
                max.push(L::max_in(L::first(n), v));
                L::store(k.as_mut_ptr(), L::keep(L::first(n), v));
            }
            Seen {
                exp2,
                max,
                kept,
                sum: L::sum(v),
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn run_zmm(xs: &[f32], row: &[f32], firsts: &[usize]) -> Seen {
        // SAFETY: the features are enabled here.
        unsafe { run::<Zmm>(xs, row, firsts) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_ymm(xs: &[f32], row: &[f32], firsts: &[usize]) -> Seen {
        // SAFETY: the features are enabled here.
        unsafe { run::<Ymm>(xs, row, firsts) }
    }

    /// `exp2` within 2e-7 relative of the standard library's (plus a few
    /// subnormal steps below 2^−126) from 127 past the floor, the masks of the first n lanes
    /// (none, one, all, more than all), their maxima and the lane sum.
    fn check(w: usize, run: impl Fn(&[f32], &[f32], &[usize]) -> Seen, floor: f32) {
        // 127 down to −160, past both floors.
        let xs: Vec<f32> = (0..32 * w)
            .map(|i| 127.0 - (i as f32) * 287.0 / (32 * w - 1) as f32)
            .collect();
        let row: Vec<f32> = (0..w).map(|i| (i as f32 * 1.7).sin() * 9.0 - 1.0).collect();
        let firsts = [0, 1, w - 1, w, w + 3];
        let seen = run(&xs, &row, &firsts);
        for (&x, &e) in xs.iter().zip(&seen.exp2) {
            let want = x.max(floor).exp2();
            assert!(
                (e - want).abs() <= 2e-7 * want + 1e-44,
                "exp2({x}) = {e}, not {want}"
            );
        }
        for (&n, (&m, k)) in firsts
            .iter()
            .zip(seen.max.iter().zip(seen.kept.chunks_exact(w)))
        {
            let lanes = &row[..n.min(w)];
            let want = lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(m, want, "max of the first {n}");
            let zeroed: Vec<f32> = (0..w).map(|i| if i < n { row[i] } else { 0.0 }).collect();
            assert_eq!(k, &zeroed[..], "first {n} kept");
        }
        let want: f32 = row.iter().sum();
        assert!((seen.sum - want).abs() <= 1e-5 * want.abs().max(1.0));
    }

    #[test]
    fn each_form_computes_its_operations() {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") {
            // SAFETY: AVX-512F checked.
            check(16, |x, r, f| unsafe { run_zmm(x, r, f) }, -150.0);
        }
        if has!("avx2") && has!("fma") {
            // SAFETY: AVX2 and FMA checked.
            check(8, |x, r, f| unsafe { run_ymm(x, r, f) }, -125.0);
        }
    }
}
