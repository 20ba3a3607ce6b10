//! The Q8_0 tile column on 256-bit registers ([`super::TileIsa::AvxVnni`]
//! and [`super::TileIsa::Avx2`]): the same tiles and integer sums as the
//! AVX-512 kernel, one 8-row half of a tile at a time, up to 4 input rows
//! a pass (a sum and an accumulator per row in registers).

use std::arch::x86_64::*;

use super::{Activations, MT, QK, TILE_ROWS, Tile};
use crate::kernels::simd256::{Dot, bcast4, entry_points, load_f16x8, load32, prefetch};

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
                1 => half_rows::<D, 1>(tiles, acts, m0 + r0, out),
                2 => half_rows::<D, 2>(tiles, acts, m0 + r0, out),
                3 => half_rows::<D, 3>(tiles, acts, m0 + r0, out),
                _ => half_rows::<D, ROWS>(tiles, acts, m0 + r0, out),
            }
        }
    }
}

/// [`column()`] for exactly `R` input rows from `m0`, both row halves.
///
/// # Safety
/// As [`column()`]; rows `m0..m0 + R` lie in the input and `out` holds
/// `R · 16` floats.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
unsafe fn half_rows<D: Dot, const R: usize>(
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
        for half in 0..2 {
            let mut acc = [_mm256_setzero_ps(); R];
            for (b, tile) in tiles.iter().enumerate() {
                let mut sum = [_mm256_setzero_si256(); R];
                let ahead = tiles.get(b + PREFETCH_TILES).filter(|_| half == 0);
                for g in 0..QK / 4 {
                    if let Some(ahead) = ahead {
                        prefetch(ahead.qs.as_ptr().add(g * 64));
                    }
                    let w = D::prep_q8(load32(tile.qs.as_ptr().add(g * 64 + half * 32)));
                    for i in 0..R {
                        let at = ((m0 + i) * kb + b) * QK + g * 4;
                        sum[i] = D::dot_q8(sum[i], w, bcast4(acts.qs.as_ptr().add(at)));
                    }
                }
                let dw = load_f16x8(tile.d.as_ptr().add(half * 8));
                for i in 0..R {
                    let a = (m0 + i) * kb + b;
                    let offset = if D::BIASED_Q8 { acts.offset[a] } else { 0.0 };
                    let f = _mm256_sub_ps(_mm256_cvtepi32_ps(sum[i]), _mm256_set1_ps(offset));
                    let scale = _mm256_mul_ps(dw, _mm256_set1_ps(acts.d[a]));
                    acc[i] = _mm256_fmadd_ps(f, scale, acc[i]);
                }
            }
            for i in 0..R {
                _mm256_storeu_ps(out.as_mut_ptr().add(i * TILE_ROWS + half * 8), acc[i]);
            }
        }
    }
}
