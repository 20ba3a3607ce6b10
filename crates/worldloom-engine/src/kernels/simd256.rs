//! The 256-bit forms of the tile kernels' integer product (x86-64 only):
//! AVX-VNNI's `vpdpbusd` or AVX2's `vpmaddubsw` + `vpmaddwd`, behind one
//! trait so [`super::q8_0`] and [`super::k_quants`] write each 256-bit
//! kernel once.
//!
//! A 512-bit tile register holds 16 weight rows × 4 bytes; here one
//! register holds 8 rows, so the kernels walk a tile's two row halves
//! (rows 0–7, then 8–15: the first and second 32 bytes of each 64-byte
//! group) one after the other, each pass in 16 YMM registers.
//!
//! Each kernel body is an `#[inline(always)]` function generic over
//! [`Dot`]; [`entry_points!`] gives it one `#[target_feature]` entry per
//! form, so the body (and the trait's inlined intrinsics) compile for that
//! form's instructions alone.
//!
//! Allowed `unsafe`: the intrinsics, reached only through the entry points
//! (whose callers check [`super::q8_0::TileIsa::is_supported`]), and
//! unaligned loads whose bounds each caller states.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// The u8 × i8 dot product of four bytes per 32-bit lane, accumulated
/// (Q8_0's [`Dot::dot_q8`]; the K-quants' [`Dot::dot_run`] sums in the
/// form's run lanes: i16 pairs on AVX2, i32 with VNNI).
pub(crate) trait Dot {
    /// Whether [`Dot::dot_q8`] takes Q8_0's weights as stored in the
    /// tiles (+128, unsigned; the caller subtracts 128 × the input's sum
    /// per block), else as signed bytes from [`Dot::prep_q8`].
    const BIASED_Q8: bool;

    /// A Q8_0 tile register (bytes + 128) made ready for [`Dot::dot_q8`]:
    /// the operand pair it takes.
    ///
    /// # Safety
    /// The CPU has this form's features.
    unsafe fn prep_q8(w: __m256i) -> (__m256i, __m256i);

    /// `acc + Σ w·x` per lane for a Q8_0 register from [`Dot::prep_q8`]
    /// (with `w` + 128 where [`Dot::BIASED_Q8`]).
    ///
    /// # Safety
    /// The CPU has this form's features.
    unsafe fn dot_q8(acc: __m256i, w: (__m256i, __m256i), x: __m256i) -> __m256i;

    /// The most a run's lane may hold: the K-quant kernels sum a run of
    /// [`Dot::dot_run`] steps before [`Dot::close_run`] scales it into an
    /// i32 sum.
    const RUN_LIMIT: i32;

    /// The byte products one [`Dot::dot_run`] step adds to a run's lane:
    /// a `vpmaddubsw` pair on AVX2, a `vpdpbusd` quad with VNNI.
    const STEP_PRODUCTS: i32;

    /// How many [`Dot::dot_run`] steps a run may take for unsigned weight
    /// bytes up to `vmax` against input bytes in −128..=127 (the Q8_K
    /// quantizer's range) without leaving [`Dot::RUN_LIMIT`]: 8 for Q4_K's
    /// 15, 4 for Q5_K's 31, 2 for Q6_K's 63 on AVX2 (i16 lanes); any number
    /// the kernels take with VNNI (i32 lanes).
    #[inline(always)]
    fn run_steps(vmax: i32) -> usize {
        let steps = Self::RUN_LIMIT / (Self::STEP_PRODUCTS * 128 * vmax);
        assert!(steps > 0, "weight values up to {vmax} overflow one step");
        steps as usize
    }

    /// `run + Σ w·x` per lane for unsigned weight bytes (K-quant values,
    /// below 64) against signed input bytes, in the run's lanes: AVX2's
    /// `vpmaddubsw` pair sums added as i16 (no widening per step: half
    /// the multiply-port work of a widened sum), VNNI's `vpdpbusd` in i32.
    ///
    /// # Safety
    /// The CPU has this form's features.
    unsafe fn dot_run(run: __m256i, w: __m256i, x: __m256i) -> __m256i;

    /// Eight sub-block scales at `p` (signed bytes, one per output row;
    /// Q4_K's and Q5_K's unsigned 6-bit scales read the same) as the
    /// operand [`Dot::close_run`] takes: AVX2 each scale in both i16 of its
    /// row's lane, VNNI one i32 a lane.
    ///
    /// # Safety
    /// The CPU has this form's features; 8 bytes are readable at `p`.
    unsafe fn run_scale(p: *const i8) -> __m256i;

    /// `isum + scale · Σ run` per output row (i32 lanes): AVX2 `vpmaddwd`
    /// of the run's i16 pair by the scale in both halves, VNNI `vpmulld`.
    ///
    /// # Safety
    /// The CPU has this form's features.
    unsafe fn close_run(isum: __m256i, run: __m256i, scale: __m256i) -> __m256i;
}

/// AVX-VNNI: `vpdpbusd` on 256-bit registers.
pub(crate) struct Vnni;

impl Dot for Vnni {
    const BIASED_Q8: bool = true;

    #[inline(always)]
    unsafe fn prep_q8(w: __m256i) -> (__m256i, __m256i) {
        (w, w)
    }

    #[inline(always)]
    unsafe fn dot_q8(acc: __m256i, w: (__m256i, __m256i), x: __m256i) -> __m256i {
        // SAFETY: the caller has AVX-VNNI.
        unsafe { _mm256_dpbusd_avx_epi32(acc, w.0, x) }
    }

    const RUN_LIMIT: i32 = i32::MAX;
    const STEP_PRODUCTS: i32 = 4;

    #[inline(always)]
    unsafe fn dot_run(run: __m256i, w: __m256i, x: __m256i) -> __m256i {
        // SAFETY: the caller has AVX-VNNI.
        unsafe { _mm256_dpbusd_avx_epi32(run, w, x) }
    }

    #[inline(always)]
    unsafe fn run_scale(p: *const i8) -> __m256i {
        // SAFETY: stated by the caller.
        unsafe { load_i8x8(p) }
    }

    #[inline(always)]
    unsafe fn close_run(isum: __m256i, run: __m256i, scale: __m256i) -> __m256i {
        // SAFETY: the caller has AVX-VNNI (and so AVX2).
        unsafe { _mm256_add_epi32(isum, _mm256_mullo_epi32(run, scale)) }
    }
}

/// AVX2: `vpmaddubsw` (u8 × i8 pairs summed to i16), then for Q8_0
/// `vpmaddwd` by ones (i16 pairs summed to i32) each step, for the
/// K-quants `vpaddw` into an i16 run that one `vpmaddwd` by the scale
/// widens.
pub(crate) struct Avx2;

impl Avx2 {
    /// `acc + Σ u·s` per lane; each pair's `u·s` sum must fit an i16.
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2.
        unsafe {
            let pairs = _mm256_maddubs_epi16(u, s);
            _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
        }
    }
}

impl Dot for Avx2 {
    const BIASED_Q8: bool = false;

    /// The signed weight `w` (the stored byte with its top bit flipped)
    /// as `(|w|, w)`: `|w|` ≤ 128 goes in unsigned, `w`'s sign onto the
    /// input (`vpsignb`), so a pair's sum is at most 2 · 128 · 127 — for
    /// input bytes in −127..=127, which the quantizers give for finite
    /// inputs (−128 would not survive `vpsignb`).
    #[inline(always)]
    unsafe fn prep_q8(w: __m256i) -> (__m256i, __m256i) {
        // SAFETY: the caller has AVX2.
        unsafe {
            let signed = _mm256_xor_si256(w, _mm256_set1_epi8(i8::MIN));
            (_mm256_abs_epi8(signed), signed)
        }
    }

    #[inline(always)]
    unsafe fn dot_q8(acc: __m256i, w: (__m256i, __m256i), x: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2.
        unsafe { Self::dot(acc, w.0, _mm256_sign_epi8(x, w.1)) }
    }

    const RUN_LIMIT: i32 = i16::MAX as i32;
    const STEP_PRODUCTS: i32 = 2;

    #[inline(always)]
    unsafe fn dot_run(run: __m256i, w: __m256i, x: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2; the caller's run length keeps each
        // i16 lane within `RUN_LIMIT` (`run_steps`), so the adds do not wrap.
        unsafe { _mm256_add_epi16(run, _mm256_maddubs_epi16(w, x)) }
    }

    #[inline(always)]
    unsafe fn run_scale(p: *const i8) -> __m256i {
        // SAFETY: stated by the caller: 8 bytes at `p`, each doubled to
        // 16, widened to 16 i16 (row r's scale at 2r and 2r + 1).
        unsafe {
            let bytes = _mm_loadl_epi64(p.cast());
            _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(bytes, bytes))
        }
    }

    #[inline(always)]
    unsafe fn close_run(isum: __m256i, run: __m256i, scale: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2.
        unsafe { _mm256_add_epi32(isum, _mm256_madd_epi16(run, scale)) }
    }
}

/// Asks for the cache line at `p` (`prefetcht0`): the tile kernels'
/// first row-half pass asks for the tile it will read a few tiles ahead,
/// as the AVX-512 kernels do (the hardware's stream prefetcher stops at
/// each 4 KiB page). A hint: any address is allowed.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    // SAFETY: `prefetcht0` never faults; SSE is part of x86-64.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
}

/// 32 bytes at `p` (a row half of a 64-byte tile group).
///
/// # Safety
/// The CPU has AVX; 32 bytes are readable at `p`.
#[inline(always)]
pub(crate) unsafe fn load32(p: *const u8) -> __m256i {
    // SAFETY: stated by the caller.
    unsafe { _mm256_loadu_si256(p.cast()) }
}

/// Four input bytes at `p` broadcast to every 32-bit lane.
///
/// # Safety
/// The CPU has AVX; 4 bytes are readable at `p`.
#[inline(always)]
pub(crate) unsafe fn bcast4(p: *const i8) -> __m256i {
    // SAFETY: stated by the caller.
    unsafe { _mm256_set1_epi32(p.cast::<i32>().read_unaligned()) }
}

/// Eight f16 values at `p` widened to f32.
///
/// # Safety
/// The CPU has F16C; 16 bytes are readable at `p`.
#[inline(always)]
pub(crate) unsafe fn load_f16x8(p: *const half::f16) -> __m256 {
    // SAFETY: stated by the caller.
    unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p.cast())) }
}

/// Eight bytes at `p` widened to i32 lanes, unsigned.
///
/// # Safety
/// The CPU has AVX2; 8 bytes are readable at `p`.
#[inline(always)]
pub(crate) unsafe fn load_u8x8(p: *const u8) -> __m256i {
    // SAFETY: stated by the caller.
    unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.cast())) }
}

/// Eight bytes at `p` widened to i32 lanes, signed.
///
/// # Safety
/// The CPU has AVX2; 8 bytes are readable at `p`.
#[inline(always)]
pub(crate) unsafe fn load_i8x8(p: *const i8) -> __m256i {
    // SAFETY: stated by the caller.
    unsafe { _mm256_cvtepi8_epi32(_mm_loadl_epi64(p.cast())) }
}

/// Per 32-bit lane the i16 pair (`lo` lane, `hi` lane) of two vectors of
/// i32 that fit an i16, for `vpmaddwd`.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
pub(crate) unsafe fn i16_pairs(lo: __m256i, hi: __m256i) -> __m256i {
    // SAFETY: the caller has AVX2.
    unsafe {
        _mm256_or_si256(
            _mm256_and_si256(lo, _mm256_set1_epi32(0xFFFF)),
            _mm256_slli_epi32::<16>(hi),
        )
    }
}

/// Two i16 (`lo` in the low half) as the i32 that `vpmaddwd`'s broadcast
/// operand takes; both must fit an i16.
#[inline(always)]
pub(crate) fn pack_i16(lo: i32, hi: i32) -> i32 {
    debug_assert!(i16::try_from(lo).is_ok() && i16::try_from(hi).is_ok());
    (lo & 0xFFFF) | (hi << 16)
}

/// Sixteen i32 lanes (`lo` then `hi`, each value within −128..=127) as
/// sixteen i8 in the same order.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
pub(crate) unsafe fn pack_i8x16(lo: __m256i, hi: __m256i) -> __m128i {
    // SAFETY: the caller has AVX2.
    unsafe {
        // i16 lanes [lo 0–3, hi 0–3 | lo 4–7, hi 4–7], then in order.
        let words = _mm256_permute4x64_epi64::<0xD8>(_mm256_packs_epi32(lo, hi));
        _mm_packs_epi16(
            _mm256_castsi256_si128(words),
            _mm256_extracti128_si256::<1>(words),
        )
    }
}

/// The sum of eight i32 lanes (wrapping, as `vpaddd`).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
pub(crate) unsafe fn sum_i32x8(v: __m256i) -> i32 {
    // SAFETY: the caller has AVX2.
    unsafe {
        let x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
        let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
        _mm_cvtsi128_si32(x)
    }
}

/// The largest (`MAX` true) or smallest of eight f32 lanes (no NaN).
///
/// # Safety
/// The CPU has AVX.
#[inline(always)]
pub(crate) unsafe fn extreme_f32x8<const MAX: bool>(v: __m256) -> f32 {
    // SAFETY: the caller has AVX.
    unsafe {
        let x = pick::<MAX>(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let x = pick::<MAX>(x, _mm_movehl_ps(x, x));
        let x = pick::<MAX>(x, _mm_shuffle_ps::<0b01>(x, x));
        _mm_cvtss_f32(x)
    }
}

/// Lane-wise max (`MAX` true) or min of four f32 (SSE, part of x86-64).
#[inline(always)]
fn pick<const MAX: bool>(a: __m128, b: __m128) -> __m128 {
    // SAFETY: SSE is part of x86-64.
    unsafe {
        if MAX {
            _mm_max_ps(a, b)
        } else {
            _mm_min_ps(a, b)
        }
    }
}

/// Writes an AVX-VNNI and an AVX2 entry point for a tile-column body
/// `$body::<D>(args)`: `$vnni` and `$avx2`, `unsafe fn(args)` with the
/// form's `#[target_feature]`s, so the body compiles once per form.
macro_rules! entry_points {
    ($body:ident, $vnni:ident, $avx2:ident, [$(const $g:ident: $gt:ty),*], ($($arg:ident: $ty:ty),*)) => {
        /// The AVX-VNNI form.
        ///
        /// # Safety
        /// The CPU has AVX2, FMA, F16C and AVX-VNNI.
        #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
        pub(crate) unsafe fn $vnni<$(const $g: $gt),*>($($arg: $ty),*) {
            // SAFETY: the features are enabled here.
            unsafe { $body::<$crate::kernels::simd256::Vnni $(, $g)*>($($arg),*) }
        }

        /// The AVX2 form.
        ///
        /// # Safety
        /// The CPU has AVX2, FMA and F16C.
        #[target_feature(enable = "avx2,fma,f16c")]
        pub(crate) unsafe fn $avx2<$(const $g: $gt),*>($($arg: $ty),*) {
            // SAFETY: the features are enabled here.
            unsafe { $body::<$crate::kernels::simd256::Avx2 $(, $g)*>($($arg),*) }
        }
    };
}
pub(crate) use entry_points;
