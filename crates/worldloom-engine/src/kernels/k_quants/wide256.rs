//! The K-quant tile columns on 256-bit registers
//! ([`super::super::q8_0::TileIsa::AvxVnni`] and `Avx2`): the same tiles
//! and integer sums as the AVX-512 kernels ([`super::imp`]), one 8-row half
//! of a tile at a time, 2 input rows a pass (per row two sub-block sums,
//! the block's sum and the accumulator fit 16 YMM registers for Q4_K and
//! Q5_K; Q6_K's four sums per row spill a few); a single input row
//! (decode) takes both halves in one pass.

use std::arch::x86_64::*;

use super::{MT, NibbleTile, Q6KTile, Q8K, QK_K, TILE_ROWS};
use crate::kernels::simd256::{
    Dot, bcast4, entry_points, extreme_f32x8, i16_pairs, load_f16x8, load_i8x8, load_u8x8, load32,
    pack_i8x16, pack_i16, prefetch, sum_i32x8,
};

/// Input rows multiplied together against one row half.
const ROWS: usize = 2;
/// How many tiles ahead the first row-half pass asks for (2–3 KB tiles,
/// as the AVX-512 kernels).
const PREFETCH_TILES: usize = 2;

entry_points!(
    nibble_column,
    nibble_column_vnni,
    nibble_column_avx2,
    [const QH: usize],
    (
        tiles: &[NibbleTile<QH>],
        acts: &Q8K,
        m0: usize,
        rows: usize,
        out: &mut [f32]
    )
);

entry_points!(
    q6k_column,
    q6k_column_vnni,
    q6k_column_avx2,
    [],
    (
        tiles: &[Q6KTile],
        acts: &Q8K,
        m0: usize,
        rows: usize,
        out: &mut [f32]
    )
);

/// Checks a column's arguments: `rows` ≤ [`MT`] input rows from `m0`
/// inside the input, `kb` tiles as wide as it, `out` [rows, 16].
#[inline(always)]
fn check(kb: usize, acts: &Q8K, m0: usize, rows: usize, out: &[f32]) {
    assert!(rows <= MT && kb == acts.kb && out.len() == rows * TILE_ROWS);
    assert!((m0 + rows) * kb <= acts.d.len() && (m0 + rows) * kb * QK_K <= acts.qs.len());
}

/// The 16 outputs of one Q4_K (`QH` = 0) or Q5_K tile column for input
/// rows `m0..m0 + rows` (at most [`MT`]) into `out` [rows, 16].
///
/// # Safety
/// The CPU has `D`'s features, AVX2, FMA and F16C.
#[inline(always)]
unsafe fn nibble_column<D: Dot, const QH: usize>(
    tiles: &[NibbleTile<QH>],
    acts: &Q8K,
    m0: usize,
    rows: usize,
    out: &mut [f32],
) {
    check(tiles.len(), acts, m0, rows, out);
    for r0 in (0..rows).step_by(ROWS) {
        let out = &mut out[r0 * TILE_ROWS..];
        // SAFETY: rows m0 + r0 .. + 1 or ROWS lie in the input (checked);
        // the features are the caller's. Called directly (not from a
        // closure), so the body compiles with the entry point's features.
        unsafe {
            if rows - r0 == 1 {
                nibble_rows::<D, 1, 2, QH>(tiles, acts, m0 + r0, out);
            } else {
                nibble_rows::<D, ROWS, 1, QH>(tiles, acts, m0 + r0, out);
            }
        }
    }
}

/// [`nibble_column`] for exactly `R` input rows from `m0`, `H` of the
/// tile's two row halves a pass (both for one row, so a decode step
/// reads each tile and input byte once: the broadcasts are shared);
/// Q5_K's fifth bits as in the AVX-512 kernel.
///
/// # Safety
/// As [`nibble_column`]; rows `m0..m0 + R` lie in the input and `out`
/// holds `R · 16` floats; `H` is 1 or 2.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
unsafe fn nibble_rows<D: Dot, const R: usize, const H: usize, const QH: usize>(
    tiles: &[NibbleTile<QH>],
    acts: &Q8K,
    m0: usize,
    out: &mut [f32],
) {
    let kb = acts.kb;
    let k = kb * QK_K;
    // SAFETY: the caller's features; every tile offset below is inside its
    // array (64-byte groups, 8-byte row halves of 16-row arrays); input
    // bytes at row·k + b·256 + at + 32 + 4 ≤ m·k for the rows stated.
    unsafe {
        let low = _mm256_set1_epi8(0x0F);
        let bit4 = _mm256_set1_epi8(0x10);
        let steps = D::run_steps(if QH > 0 { 31 } else { 15 });
        for h0 in (0..2).step_by(H) {
            let mut acc = [[_mm256_setzero_ps(); R]; H];
            for (b, tile) in tiles.iter().enumerate() {
                let xs: [*const i8; R] =
                    std::array::from_fn(|i| acts.qs.as_ptr().add((m0 + i) * k + b * QK_K));
                let mut isum = [[_mm256_setzero_si256(); R]; H];
                let ahead = tiles.get(b + PREFETCH_TILES).filter(|_| h0 == 0);
                for pair in 0..4 {
                    let mut lo_run = [[_mm256_setzero_si256(); R]; H];
                    let mut hi_run = [[_mm256_setzero_si256(); R]; H];
                    for g in 0..8 {
                        if let Some(ahead) = ahead {
                            prefetch(ahead.qs.as_ptr().add((pair * 8 + g) * 64));
                            if QH > 0 && pair == 0 {
                                prefetch(ahead.qh.as_ptr().add(g * 64));
                            }
                        }
                        let at = pair * 64 + g * 4;
                        let mut x_lo = [_mm256_setzero_si256(); R];
                        let mut x_hi = [_mm256_setzero_si256(); R];
                        for i in 0..R {
                            x_lo[i] = bcast4(xs[i].add(at));
                            x_hi[i] = bcast4(xs[i].add(at + 32));
                        }
                        for h in 0..H {
                            let half = h0 + h;
                            let w = load32(tile.qs.as_ptr().add((pair * 8 + g) * 64 + half * 32));
                            let mut lo = _mm256_and_si256(w, low);
                            let mut hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), low);
                            if QH > 0 {
                                let qh = load32(tile.qh.as_ptr().add(g * 64 + half * 32));
                                let bits = _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * pair as i32));
                                let lo5 = _mm256_and_si256(_mm256_slli_epi16::<4>(bits), bit4);
                                let hi5 = _mm256_and_si256(_mm256_slli_epi16::<3>(bits), bit4);
                                lo = _mm256_or_si256(lo, lo5);
                                hi = _mm256_or_si256(hi, hi5);
                            }
                            for i in 0..R {
                                lo_run[h][i] = D::dot_run(lo_run[h][i], lo, x_lo[i]);
                                hi_run[h][i] = D::dot_run(hi_run[h][i], hi, x_hi[i]);
                            }
                        }
                        // A run ends with the sub-block pair, or sooner where
                        // its lanes would overflow (AVX2's i16 with Q5_K).
                        if (g + 1) % steps != 0 && g != 7 {
                            continue;
                        }
                        for h in 0..H {
                            let half = h0 + h;
                            let sc = tile.sc.as_ptr().cast::<i8>();
                            let sc_lo = D::run_scale(sc.add(2 * pair * TILE_ROWS + half * 8));
                            let sc_hi = D::run_scale(sc.add((2 * pair + 1) * TILE_ROWS + half * 8));
                            for i in 0..R {
                                isum[h][i] = D::close_run(isum[h][i], lo_run[h][i], sc_lo);
                                isum[h][i] = D::close_run(isum[h][i], hi_run[h][i], sc_hi);
                                lo_run[h][i] = _mm256_setzero_si256();
                                hi_run[h][i] = _mm256_setzero_si256();
                            }
                        }
                    }
                }
                for h in 0..H {
                    let half = h0 + h;
                    let d = load_f16x8(tile.d.as_ptr().add(half * 8));
                    let dmin = load_f16x8(tile.dmin.as_ptr().add(half * 8));
                    for i in 0..R {
                        let a = (m0 + i) * kb + b;
                        let sums = &acts.bsums[a * 16..a * 16 + 16];
                        let mut imin = _mm256_setzero_si256();
                        for t in 0..4 {
                            let mn = i16_pairs(
                                load_u8x8(tile.mn.as_ptr().add(2 * t * TILE_ROWS + half * 8)),
                                load_u8x8(tile.mn.as_ptr().add((2 * t + 1) * TILE_ROWS + half * 8)),
                            );
                            let lo = sums[4 * t] + sums[4 * t + 1];
                            let hi = sums[4 * t + 2] + sums[4 * t + 3];
                            let x = _mm256_set1_epi32(pack_i16(lo, hi));
                            imin = _mm256_add_epi32(imin, _mm256_madd_epi16(mn, x));
                        }
                        let da = _mm256_set1_ps(acts.d[a]);
                        let isum = _mm256_cvtepi32_ps(isum[h][i]);
                        acc[h][i] = _mm256_fmadd_ps(isum, _mm256_mul_ps(d, da), acc[h][i]);
                        let imin = _mm256_cvtepi32_ps(imin);
                        acc[h][i] = _mm256_fnmadd_ps(imin, _mm256_mul_ps(dmin, da), acc[h][i]);
                    }
                }
            }
            for h in 0..H {
                for i in 0..R {
                    let at = i * TILE_ROWS + (h0 + h) * 8;
                    _mm256_storeu_ps(out.as_mut_ptr().add(at), acc[h][i]);
                }
            }
        }
    }
}

/// The 16 outputs of one Q6_K tile column for input rows `m0..m0 + rows`
/// (at most [`MT`]) into `out` [rows, 16].
///
/// # Safety
/// The CPU has `D`'s features, AVX2, FMA and F16C.
#[inline(always)]
unsafe fn q6k_column<D: Dot>(
    tiles: &[Q6KTile],
    acts: &Q8K,
    m0: usize,
    rows: usize,
    out: &mut [f32],
) {
    check(tiles.len(), acts, m0, rows, out);
    for r0 in (0..rows).step_by(ROWS) {
        let out = &mut out[r0 * TILE_ROWS..];
        // SAFETY: as in `nibble_column`.
        unsafe {
            if rows - r0 == 1 {
                q6k_rows::<D, 1, 2>(tiles, acts, m0 + r0, out);
            } else {
                q6k_rows::<D, ROWS, 1>(tiles, acts, m0 + r0, out);
            }
        }
    }
}

/// [`q6k_column`] for exactly `R` input rows from `m0`, `H` row halves a
/// pass (as [`nibble_rows`]), in the AVX-512 kernel's order (per block
/// half and group of 4 columns, the 6-bit values of 4 columns 32 apart
/// from one load each of the low nibbles, the next low nibbles and the
/// high bits).
///
/// # Safety
/// As [`q6k_column`]; rows `m0..m0 + R` lie in the input and `out` holds
/// `R · 16` floats; `H` is 1 or 2.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
unsafe fn q6k_rows<D: Dot, const R: usize, const H: usize>(
    tiles: &[Q6KTile],
    acts: &Q8K,
    m0: usize,
    out: &mut [f32],
) {
    let kb = acts.kb;
    let k = kb * QK_K;
    // SAFETY: as in `nibble_rows`: groups of 192 bytes inside the 3,072 of
    // `q`, row halves of the 16-row scale arrays, input bytes inside the
    // rows stated.
    unsafe {
        let low = _mm256_set1_epi8(0x0F);
        let high = _mm256_set1_epi8(0x30);
        let steps = D::run_steps(63);
        for h0 in (0..2).step_by(H) {
            let mut acc = [[_mm256_setzero_ps(); R]; H];
            for (b, tile) in tiles.iter().enumerate() {
                let xs: [*const i8; R] =
                    std::array::from_fn(|i| acts.qs.as_ptr().add((m0 + i) * k + b * QK_K));
                let mut isum = [[_mm256_setzero_si256(); R]; H];
                let ahead = tiles.get(b + PREFETCH_TILES).filter(|_| h0 == 0);
                for half in 0..2 {
                    for g_half in 0..2 {
                        let mut run = [[[_mm256_setzero_si256(); R]; H]; 4];
                        for g in 4 * g_half..4 * g_half + 4 {
                            if let Some(ahead) = ahead {
                                let p = ahead.q.as_ptr().add((half * 8 + g) * 3 * 64);
                                prefetch(p);
                                prefetch(p.add(64));
                                prefetch(p.add(128));
                            }
                            for h in 0..H {
                                let rh = h0 + h;
                                let p = tile.q.as_ptr().add((half * 8 + g) * 3 * 64 + rh * 32);
                                let (ql_a, ql_b, qh) =
                                    (load32(p), load32(p.add(64)), load32(p.add(128)));
                                let q = [
                                    six_bits(ql_a, _mm256_slli_epi16::<4>(qh), low, high),
                                    six_bits(ql_b, _mm256_slli_epi16::<2>(qh), low, high),
                                    six_bits(_mm256_srli_epi16::<4>(ql_a), qh, low, high),
                                    six_bits(
                                        _mm256_srli_epi16::<4>(ql_b),
                                        _mm256_srli_epi16::<2>(qh),
                                        low,
                                        high,
                                    ),
                                ];
                                let at = half * 128 + g * 4;
                                for i in 0..R {
                                    for t in 0..4 {
                                        let x = bcast4(xs[i].add(at + 32 * t));
                                        run[t][h][i] = D::dot_run(run[t][h][i], q[t], x);
                                    }
                                }
                            }
                            // A run ends with the 16-column sub-block, or
                            // sooner where its lanes would overflow (AVX2).
                            let done = g + 1 - 4 * g_half;
                            if done % steps != 0 && done != 4 {
                                continue;
                            }
                            for t in 0..4 {
                                let s = half * 8 + 2 * t + g_half;
                                for h in 0..H {
                                    let at = s * TILE_ROWS + (h0 + h) * 8;
                                    let sc = D::run_scale(tile.sc.as_ptr().add(at));
                                    for i in 0..R {
                                        isum[h][i] = D::close_run(isum[h][i], run[t][h][i], sc);
                                        run[t][h][i] = _mm256_setzero_si256();
                                    }
                                }
                            }
                        }
                    }
                }
                for h in 0..H {
                    let rh = h0 + h;
                    let d = load_f16x8(tile.d.as_ptr().add(rh * 8));
                    for i in 0..R {
                        let a = (m0 + i) * kb + b;
                        let sums = &acts.bsums[a * 16..a * 16 + 16];
                        let mut offset = _mm256_setzero_si256();
                        for t in 0..8 {
                            let sc = i16_pairs(
                                load_i8x8(tile.sc.as_ptr().add(2 * t * TILE_ROWS + rh * 8)),
                                load_i8x8(tile.sc.as_ptr().add((2 * t + 1) * TILE_ROWS + rh * 8)),
                            );
                            let x = _mm256_set1_epi32(pack_i16(sums[2 * t], sums[2 * t + 1]));
                            offset = _mm256_add_epi32(offset, _mm256_madd_epi16(sc, x));
                        }
                        let total = _mm256_sub_epi32(isum[h][i], _mm256_slli_epi32::<5>(offset));
                        let da = _mm256_set1_ps(acts.d[a]);
                        let total = _mm256_cvtepi32_ps(total);
                        acc[h][i] = _mm256_fmadd_ps(total, _mm256_mul_ps(d, da), acc[h][i]);
                    }
                }
            }
            for h in 0..H {
                for i in 0..R {
                    let at = i * TILE_ROWS + (h0 + h) * 8;
                    _mm256_storeu_ps(out.as_mut_ptr().add(at), acc[h][i]);
                }
            }
        }
    }
}

/// `(ql & low) | (qh & high)`: a 6-bit Q6_K value from its low nibble and
/// its two high bits already shifted to bits 4–5.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn six_bits(ql: __m256i, qh: __m256i, low: __m256i, high: __m256i) -> __m256i {
    // SAFETY: the caller has AVX2.
    unsafe { _mm256_or_si256(_mm256_and_si256(ql, low), _mm256_and_si256(qh, high)) }
}

/// [`super::quantize_block`] on 256-bit registers (the same bytes), as
/// the AVX-512 form ([`super::imp::quantize_block`]): the largest
/// magnitude from the block's maximum and minimum, the products rounded
/// half to even by `vcvtps2dq`, capped at 127.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_block(src: &[f32], dst: &mut [i8], sums: &mut [i32]) -> f32 {
    let (src, dst, sums) = (&src[..QK_K], &mut dst[..QK_K], &mut sums[..QK_K / 16]);
    // SAFETY: 8 floats at 8·c < 256 for c < 32.
    let load = |c: usize| unsafe { _mm256_loadu_ps(src[8 * c..].as_ptr()) };
    let (mut hi, mut lo) = (load(0), load(0));
    for c in 1..QK_K / 8 {
        hi = _mm256_max_ps(hi, load(c));
        lo = _mm256_min_ps(lo, load(c));
    }
    // SAFETY: the caller has AVX2 (and so AVX).
    let (hi, lo) = unsafe { (extreme_f32x8::<true>(hi), extreme_f32x8::<false>(lo)) };
    let max = if hi >= -lo { hi } else { lo };
    if max == 0.0 {
        return 0.0;
    }
    let iscale = -127.0 / max;
    let scale = _mm256_set1_ps(iscale);
    let cap = _mm256_set1_epi32(127);
    for (c, sum) in sums.iter_mut().enumerate() {
        let a = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(load(2 * c), scale)), cap);
        let b = _mm256_min_epi32(
            _mm256_cvtps_epi32(_mm256_mul_ps(load(2 * c + 1), scale)),
            cap,
        );
        // SAFETY: the caller has AVX2; 16 bytes at 16·c < 256.
        unsafe {
            *sum = sum_i32x8(_mm256_add_epi32(a, b));
            _mm_storeu_si128(dst[16 * c..].as_mut_ptr().cast(), pack_i8x16(a, b));
        }
    }
    1.0 / iscale
}
