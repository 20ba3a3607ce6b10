//! The Q8_0 tile column on 256-bit registers ([`super::TileIsa::AvxVnni`]
//! and [`super::TileIsa::Avx2`]): the same tiles and integer sums as the
//! AVX-512 kernel, one 8-row half of a tile at a time, up to 4 input rows
//! a pass (a sum and an accumulator per row in registers); a single input
//! row (decode) takes both halves in one pass.

use std::arch::x86_64::*;

use super::{Activations, MT, QK, TILE_ROWS, Tile};
use crate::kernels::simd256::{
    Dot, bcast4, entry_points, extreme_f32x8, load_f16x8, load32, pack_i8x16, prefetch, sum_i32x8,
};

/// Input rows multiplied together against one row half.
const ROWS: usize = 4;
/// How many tiles ahead the first row-half pass asks for (544-byte tiles,
/// as the AVX-512 kernel).
const PREFETCH_TILES: usize = 6;

entry_points!(
    column,
    column_vnni,
    column_avx2,
    [],
    (
        tiles: &[Tile],
        acts: &Activations,
        m0: usize,
        rows: usize,
        out: &mut [f32]
    )
);

/// The 16 outputs of one tile column for input rows `m0..m0 + rows` (at
/// most [`MT`]) into `out` [rows, 16].
///
/// # Safety
/// The CPU has `D`'s features, AVX2, FMA and F16C.
#[inline(always)]
unsafe fn column<D: Dot>(
    tiles: &[Tile],
    acts: &Activations,
    m0: usize,
    rows: usize,
    out: &mut [f32],
) {
    assert!(rows <= MT && tiles.len() == acts.kb && out.len() == rows * TILE_ROWS);
    assert!((m0 + rows) * acts.kb <= acts.d.len() && (m0 + rows) * acts.kb * QK <= acts.qs.len());
    for r0 in (0..rows).step_by(ROWS) {
        let out = &mut out[r0 * TILE_ROWS..];
        // SAFETY: rows m0 + r0 .. + R lie in the input (asserted); the
        // features are the caller's.
        unsafe {
            match rows - r0 {
                1 => half_rows::<D, 1, 2>(tiles, acts, m0 + r0, out),
                2 => half_rows::<D, 2, 1>(tiles, acts, m0 + r0, out),
                3 => half_rows::<D, 3, 1>(tiles, acts, m0 + r0, out),
                _ => half_rows::<D, ROWS, 1>(tiles, acts, m0 + r0, out),
            }
        }
    }
}

/// [`column()`] for exactly `R` input rows from `m0`, `H` of the tile's
/// two row halves a pass (both for one row, so a decode step reads each
/// tile and input byte once).
///
/// # Safety
/// As [`column()`]; rows `m0..m0 + R` lie in the input and `out` holds
/// `R · 16` floats; `H` is 1 or 2.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
unsafe fn half_rows<D: Dot, const R: usize, const H: usize>(
    tiles: &[Tile],
    acts: &Activations,
    m0: usize,
    out: &mut [f32],
) {
    let kb = acts.kb;
    // SAFETY: the caller's features; 32 bytes at g·64 + half·32 < 512
    // bytes of `qs`; input bytes at row·k + b·32 + g·4 + 4 ≤ m·k for the
    // rows stated; 8 scales from half·8 of 16; 8 floats at i·16 + half·8
    // of `out`'s R · 16.
    unsafe {
        for h0 in (0..2).step_by(H) {
            let mut acc = [[_mm256_setzero_ps(); R]; H];
            for (b, tile) in tiles.iter().enumerate() {
                let mut sum = [[_mm256_setzero_si256(); R]; H];
                let ahead = tiles.get(b + PREFETCH_TILES).filter(|_| h0 == 0);
                for g in 0..QK / 4 {
                    if let Some(ahead) = ahead {
                        prefetch(ahead.qs.as_ptr().add(g * 64));
                    }
                    for h in 0..H {
                        let at = g * 64 + (h0 + h) * 32;
                        let w = D::prep_q8(load32(tile.qs.as_ptr().add(at)));
                        for i in 0..R {
                            let at = ((m0 + i) * kb + b) * QK + g * 4;
                            sum[h][i] = D::dot_q8(sum[h][i], w, bcast4(acts.qs.as_ptr().add(at)));
                        }
                    }
                }
                for h in 0..H {
                    let dw = load_f16x8(tile.d.as_ptr().add((h0 + h) * 8));
                    for i in 0..R {
                        let a = (m0 + i) * kb + b;
                        let offset = if D::BIASED_Q8 { acts.offset[a] } else { 0.0 };
                        let f =
                            _mm256_sub_ps(_mm256_cvtepi32_ps(sum[h][i]), _mm256_set1_ps(offset));
                        let scale = _mm256_mul_ps(dw, _mm256_set1_ps(acts.d[a]));
                        acc[h][i] = _mm256_fmadd_ps(f, scale, acc[h][i]);
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

/// [`super::quantize_block`] on 256-bit registers (the same bytes):
/// halves rounded away from zero as `roundf` does (truncate, then step
/// away where the dropped part is at least one half; both exact in f32).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_block(src: &[f32], dst: &mut [i8]) -> (f32, i32) {
    let (src, dst) = (&src[..QK], &mut dst[..QK]);
    let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
    let mut v = [_mm256_setzero_ps(); 4];
    let mut top = _mm256_setzero_ps();
    for (c, v) in v.iter_mut().enumerate() {
        // SAFETY: 8 floats at 8·c < 32.
        *v = unsafe { _mm256_loadu_ps(src[8 * c..].as_ptr()) };
        top = _mm256_max_ps(top, _mm256_and_ps(*v, magnitude));
    }
    // SAFETY: the caller has AVX2 (and so AVX).
    let step = unsafe { extreme_f32x8::<true>(top) } / 127.0;
    let inv = _mm256_set1_ps(if step != 0.0 { 1.0 / step } else { 0.0 });
    let mut q = [_mm256_setzero_si256(); 4];
    let mut sums = _mm256_setzero_si256();
    for (q, &v) in q.iter_mut().zip(&v) {
        let x = _mm256_mul_ps(v, inv);
        let t = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
        let dropped = _mm256_and_ps(_mm256_sub_ps(x, t), magnitude);
        let away = _mm256_cmp_ps::<_CMP_GE_OQ>(dropped, _mm256_set1_ps(0.5));
        let unit = _mm256_or_ps(_mm256_andnot_ps(magnitude, x), _mm256_set1_ps(1.0));
        *q = _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(away, unit)));
        sums = _mm256_add_epi32(sums, *q);
    }
    // SAFETY: the caller has AVX2; 2 × 16 bytes of the 32.
    unsafe {
        _mm_storeu_si128(dst.as_mut_ptr().cast(), pack_i8x16(q[0], q[1]));
        _mm_storeu_si128(dst[16..].as_mut_ptr().cast(), pack_i8x16(q[2], q[3]));
        (step, sum_i32x8(sums))
    }
}
