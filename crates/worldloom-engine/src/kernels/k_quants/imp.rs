//! The AVX-512 VNNI forms of the K-quant kernels.

use super::super::q8_0::for_rows;
use super::{MT, NibbleTile, Q6KTile, Q8K, QK_K, TILE_ROWS};
use std::arch::x86_64::*;

/// How many tiles ahead a column's loop asks for the bytes it will read
/// (`prefetcht0`, one line for each line it reads now): a tile is
/// 2–3 KB and its column's tiles are contiguous, but the hardware's
/// stream prefetcher stops at each 4 KiB page, so without the hint most
/// tiles of a decode step (bound by memory) started on a miss. Q4_K_M
/// decode on the bench file: 23–25 → 28–29 tokens/s with the Q6_K hint
/// alone (docs/engine.md, "CPU speed", item 21).
const PREFETCH_TILES: usize = 2;

/// [`super::quantize_block`] with AVX-512: the largest magnitude from
/// the block's maximum and minimum (where both have it, the positive
/// one: the scale's sign flips with every byte's, so the products are
/// the same), the products `iscale · x` rounded half to even by
/// `vcvtps2dq` under the default rounding mode, capped at 127.
///
/// # Safety
/// The CPU has AVX-512 F/BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn quantize_block(src: &[f32], dst: &mut [i8], sums: &mut [i32]) -> f32 {
    let (src, dst, sums) = (&src[..QK_K], &mut dst[..QK_K], &mut sums[..QK_K / 16]);
    let load = |c: usize| {
        // SAFETY: 16 floats at 16·c < 256.
        unsafe { _mm512_loadu_ps(src[16 * c..].as_ptr()) }
    };
    let (mut hi, mut lo) = (load(0), load(0));
    for c in 1..QK_K / 16 {
        hi = _mm512_max_ps(hi, load(c));
        lo = _mm512_min_ps(lo, load(c));
    }
    let (hi, lo) = (_mm512_reduce_max_ps(hi), _mm512_reduce_min_ps(lo));
    let max = if hi >= -lo { hi } else { lo };
    if max == 0.0 {
        return 0.0;
    }
    let iscale = -127.0 / max;
    let scale = _mm512_set1_ps(iscale);
    let cap = _mm512_set1_epi32(127);
    for (c, sum) in sums.iter_mut().enumerate() {
        let q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(load(c), scale)), cap);
        *sum = _mm512_reduce_add_epi32(q);
        // SAFETY: 16 bytes at 16·c < 256.
        unsafe { _mm_storeu_si128(dst[16 * c..].as_mut_ptr().cast(), _mm512_cvtsepi32_epi8(q)) };
    }
    1.0 / iscale
}

/// 16 bytes at `p` widened to 16 i32 lanes, unsigned.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_u8x16(p: &[u8]) -> __m512i {
    // SAFETY: 16 bytes read from a slice of at least 16.
    _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(p[..16].as_ptr().cast()) })
}

/// 16 bytes at `p` widened to 16 i32 lanes, signed.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_i8x16(p: &[i8]) -> __m512i {
    // SAFETY: 16 bytes read from a slice of at least 16.
    _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(p[..16].as_ptr().cast()) })
}

/// The 16 rows' f16 values widened to f32.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_f16x16(p: &[half::f16; TILE_ROWS]) -> __m512 {
    // SAFETY: 16 f16 values, 32 bytes.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.as_ptr().cast()) })
}

/// The 16 outputs of one Q4_K (`QH` = 0) or Q5_K tile column (16
/// weight rows, all of k) for input rows `m0..m0 + rows` (at most [`MT`]),
/// written to `out` [rows, 16].
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn nibble_column<const QH: usize>(
    tiles: &[NibbleTile<QH>],
    acts: &Q8K,
    m0: usize,
    rows: usize,
    out: &mut [f32],
) {
    debug_assert!(rows <= MT && tiles.len() == acts.kb && out.len() == rows * TILE_ROWS);
    for_rows!(nibble_rows, rows, [QH], (tiles, acts, m0, out))
}

/// [`nibble_column`] for exactly `R` input rows (the row loops unrolled,
/// the sums in registers). Q5_K's fifth bits for pair `p` are bits `2p`
/// and `2p + 1` of each `qh` byte, moved to bit 4 of the low and high
/// nibbles' bytes (16-bit shifts: a bit never crosses into the next byte
/// at its target position, and the mask drops the rest).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI.
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn nibble_rows<const R: usize, const QH: usize>(
    tiles: &[NibbleTile<QH>],
    acts: &Q8K,
    m0: usize,
    out: &mut [f32],
) {
    let kb = acts.kb;
    let k = kb * QK_K;
    let low = _mm512_set1_epi8(0x0F);
    let bit4 = _mm512_set1_epi8(0x10);
    let mut acc = [_mm512_setzero_ps(); R];
    for (b, tile) in tiles.iter().enumerate() {
        let ahead = tiles.get(b + PREFETCH_TILES);
        // Each input row's block as a fixed-size array: the offsets
        // below are constants once the loops unroll, so no bounds
        // check is left in the product loop.
        let xs: [&[i8; QK_K]; R] =
            std::array::from_fn(|i| block_of(&acts.qs, (m0 + i) * k + b * QK_K));
        let mut isum = [_mm512_setzero_si512(); R];
        for pair in 0..4 {
            let mut lo_sum = [_mm512_setzero_si512(); R];
            let mut hi_sum = [_mm512_setzero_si512(); R];
            for g in 0..8 {
                if let Some(ahead) = ahead {
                    // SAFETY: a hint; the address lies in `ahead`'s
                    // 2,048 bytes of `qs`.
                    unsafe {
                        let p = ahead.qs.as_ptr().add((pair * 8 + g) * 64);
                        _mm_prefetch::<_MM_HINT_T0>(p.cast());
                    }
                    if QH > 0 && pair == 0 {
                        // SAFETY: a hint inside `ahead`'s 512 bytes of `qh`.
                        unsafe {
                            _mm_prefetch::<_MM_HINT_T0>(ahead.qh.as_ptr().add(g * 64).cast())
                        };
                    }
                }
                // SAFETY: (pair·8 + g + 1)·64 ≤ 2,048 bytes of `qs`.
                let w =
                    unsafe { _mm512_loadu_si512(tile.qs.as_ptr().add((pair * 8 + g) * 64).cast()) };
                let mut lo = _mm512_and_si512(w, low);
                let mut hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
                if QH > 0 {
                    // SAFETY: (g + 1)·64 ≤ 512 bytes of `qh`.
                    let qh = unsafe { _mm512_loadu_si512(tile.qh.as_ptr().add(g * 64).cast()) };
                    let bits = _mm512_srl_epi16(qh, _mm_cvtsi32_si128(2 * pair as i32));
                    // lo | (bits << 4 & 0x10), hi | (bits << 3 & 0x10).
                    lo = _mm512_ternarylogic_epi32::<0xF8>(lo, _mm512_slli_epi16(bits, 4), bit4);
                    hi = _mm512_ternarylogic_epi32::<0xF8>(hi, _mm512_slli_epi16(bits, 3), bit4);
                }
                let at = pair * 64 + g * 4;
                for i in 0..R {
                    // SAFETY: at + 32 + 4 ≤ 256.
                    let (xl, xh) = unsafe { (bcast_block(xs[i], at), bcast_block(xs[i], at + 32)) };
                    lo_sum[i] = _mm512_dpbusd_epi32(lo_sum[i], lo, xl);
                    hi_sum[i] = _mm512_dpbusd_epi32(hi_sum[i], hi, xh);
                }
            }
            let sc_lo = load_u8x16(&tile.sc[2 * pair * TILE_ROWS..]);
            let sc_hi = load_u8x16(&tile.sc[(2 * pair + 1) * TILE_ROWS..]);
            for i in 0..R {
                isum[i] = _mm512_add_epi32(
                    isum[i],
                    _mm512_add_epi32(
                        _mm512_mullo_epi32(lo_sum[i], sc_lo),
                        _mm512_mullo_epi32(hi_sum[i], sc_hi),
                    ),
                );
            }
        }
        let d = load_f16x16(&tile.d);
        let dmin = load_f16x16(&tile.dmin);
        // The minima of sub-blocks 2t and 2t + 1 as two i16 per row,
        // to meet pairs of input sums in one `vpdpwssd`.
        let mn: [__m512i; 4] = std::array::from_fn(|t| {
            i16_pairs(
                load_u8x16(&tile.mn[2 * t * TILE_ROWS..]),
                load_u8x16(&tile.mn[(2 * t + 1) * TILE_ROWS..]),
            )
        });
        for i in 0..R {
            let a = (m0 + i) * kb + b;
            let sums: &[i32; 16] = acts.bsums[a * 16..a * 16 + 16].try_into().expect("16 sums");
            let mut imin = _mm512_setzero_si512();
            for (t, mn) in mn.iter().enumerate() {
                // A sub-block's sum of 32 bytes fits an i16 (|·| ≤ 4,064).
                let lo = sums[4 * t] + sums[4 * t + 1];
                let hi = sums[4 * t + 2] + sums[4 * t + 3];
                imin = _mm512_dpwssd_epi32(imin, *mn, _mm512_set1_epi32(pack_i16(lo, hi)));
            }
            let da = _mm512_set1_ps(acts.d[a]);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, da), acc[i]);
            acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, da), acc[i]);
        }
    }
    for (i, row) in out.chunks_exact_mut(TILE_ROWS).enumerate().take(R) {
        // SAFETY: `row` is 16 floats.
        unsafe { _mm512_storeu_ps(row.as_mut_ptr(), acc[i]) };
    }
}

/// Bytes `at..at + 4` of an input block broadcast to 16 lanes.
///
/// # Safety
/// `at + 4 ≤ 256` (not checked: this is the product loop's operand).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn bcast_block(x: &[i8; QK_K], at: usize) -> __m512i {
    debug_assert!(at + 4 <= QK_K);
    // SAFETY: the caller keeps the 4 bytes inside the block.
    _mm512_set1_epi32(unsafe { x.as_ptr().add(at).cast::<i32>().read_unaligned() })
}

/// The 256 input bytes of one block from `at`.
#[inline]
fn block_of(qs: &[i8], at: usize) -> &[i8; QK_K] {
    qs[at..at + QK_K].try_into().expect("a whole block")
}

/// Two i16 (`lo` in the low half) as the i32 `vpdpwssd` broadcasts;
/// both must fit an i16.
#[inline]
fn pack_i16(lo: i32, hi: i32) -> i32 {
    debug_assert!(i16::try_from(lo).is_ok() && i16::try_from(hi).is_ok());
    (lo & 0xFFFF) | (hi << 16)
}

/// Per 32-bit lane the i16 pair (`lo` lane, `hi` lane) of two vectors
/// of small non-negative or sign-extended i32.
#[inline]
#[target_feature(enable = "avx512f")]
fn i16_pairs(lo: __m512i, hi: __m512i) -> __m512i {
    _mm512_or_si512(
        _mm512_and_si512(lo, _mm512_set1_epi32(0xFFFF)),
        _mm512_slli_epi32::<16>(hi),
    )
}

/// The 16 outputs of one Q6_K tile column for input rows `m0..m0 +
/// rows` (at most [`MT`]), written to `out` [rows, 16].
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn q6k_column(
    tiles: &[Q6KTile],
    acts: &Q8K,
    m0: usize,
    rows: usize,
    out: &mut [f32],
) {
    debug_assert!(rows <= MT && tiles.len() == acts.kb && out.len() == rows * TILE_ROWS);
    for_rows!(q6k_rows, rows, (tiles, acts, m0, out))
}

/// [`q6k_column`] for exactly `R` input rows. Per half (128 columns)
/// and group of 4 columns `c`, one load each of `ql[c]`, `ql[c + 32]`
/// and `qh[c]` gives the 6-bit values of columns `c`, `c + 32`,
/// `c + 64`, `c + 96` (low nibbles, then high nibbles, with bits 0–1,
/// 2–3, 4–5, 6–7 of `qh`); four groups fill one 16-column sub-block
/// of each quarter, whose sums are then scaled.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI.
#[allow(clippy::needless_range_loop)] // index loops mirror the register tile
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn q6k_rows<const R: usize>(tiles: &[Q6KTile], acts: &Q8K, m0: usize, out: &mut [f32]) {
    let kb = acts.kb;
    let k = kb * QK_K;
    let low = _mm512_set1_epi8(0x0F);
    let high = _mm512_set1_epi8(0x30);
    let mut acc = [_mm512_setzero_ps(); R];
    for (b, tile) in tiles.iter().enumerate() {
        let ahead = tiles.get(b + PREFETCH_TILES);
        let xs: [&[i8; QK_K]; R] =
            std::array::from_fn(|i| block_of(&acts.qs, (m0 + i) * k + b * QK_K));
        let mut isum = [_mm512_setzero_si512(); R];
        for half in 0..2 {
            for g_half in 0..2 {
                let mut sum = [[_mm512_setzero_si512(); R]; 4];
                for g in 4 * g_half..4 * g_half + 4 {
                    let at = (half * 8 + g) * 3 * 64;
                    if let Some(ahead) = ahead {
                        // SAFETY: a hint; the address lies in `ahead`'s
                        // 3,072 bytes of `q`.
                        unsafe {
                            let p = ahead.q.as_ptr().add(at);
                            _mm_prefetch::<_MM_HINT_T0>(p.cast());
                            _mm_prefetch::<_MM_HINT_T0>(p.add(64).cast());
                            _mm_prefetch::<_MM_HINT_T0>(p.add(128).cast());
                        }
                    }
                    // SAFETY: at + 192 ≤ 3,072 bytes of `q`.
                    let (ql_a, ql_b, qh) = unsafe {
                        let p = tile.q.as_ptr().add(at);
                        (
                            _mm512_loadu_si512(p.cast()),
                            _mm512_loadu_si512(p.add(64).cast()),
                            _mm512_loadu_si512(p.add(128).cast()),
                        )
                    };
                    let q = [
                        _mm512_or_si512(
                            _mm512_and_si512(ql_a, low),
                            _mm512_and_si512(_mm512_slli_epi16(qh, 4), high),
                        ),
                        _mm512_or_si512(
                            _mm512_and_si512(ql_b, low),
                            _mm512_and_si512(_mm512_slli_epi16(qh, 2), high),
                        ),
                        _mm512_or_si512(
                            _mm512_and_si512(_mm512_srli_epi16(ql_a, 4), low),
                            _mm512_and_si512(qh, high),
                        ),
                        _mm512_or_si512(
                            _mm512_and_si512(_mm512_srli_epi16(ql_b, 4), low),
                            _mm512_and_si512(_mm512_srli_epi16(qh, 2), high),
                        ),
                    ];
                    for i in 0..R {
                        let at = half * 128 + g * 4;
                        for t in 0..4 {
                            // SAFETY: at + 32·3 + 4 ≤ 256.
                            let x = unsafe { bcast_block(xs[i], at + 32 * t) };
                            sum[t][i] = _mm512_dpbusd_epi32(sum[t][i], q[t], x);
                        }
                    }
                }
                for t in 0..4 {
                    // Columns half·128 + 32·t + 16·g_half .. + 16.
                    let s = half * 8 + 2 * t + g_half;
                    let sc = load_i8x16(&tile.sc[s * TILE_ROWS..]);
                    for i in 0..R {
                        isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(sum[t][i], sc));
                    }
                }
            }
        }
        let d = load_f16x16(&tile.d);
        // The scales of sub-blocks 2t and 2t + 1 as two i16 per row.
        let sc: [__m512i; 8] = std::array::from_fn(|t| {
            i16_pairs(
                load_i8x16(&tile.sc[2 * t * TILE_ROWS..]),
                load_i8x16(&tile.sc[(2 * t + 1) * TILE_ROWS..]),
            )
        });
        for i in 0..R {
            let a = (m0 + i) * kb + b;
            let sums: &[i32; 16] = acts.bsums[a * 16..a * 16 + 16].try_into().expect("16 sums");
            let mut offset = _mm512_setzero_si512();
            for (t, sc) in sc.iter().enumerate() {
                // A sum of 16 bytes fits an i16 (|·| ≤ 2,032).
                let pair = pack_i16(sums[2 * t], sums[2 * t + 1]);
                offset = _mm512_dpwssd_epi32(offset, *sc, _mm512_set1_epi32(pair));
            }
            let total = _mm512_sub_epi32(isum[i], _mm512_slli_epi32(offset, 5));
            let da = _mm512_set1_ps(acts.d[a]);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, da), acc[i]);
        }
    }
    for (i, row) in out.chunks_exact_mut(TILE_ROWS).enumerate().take(R) {
        // SAFETY: `row` is 16 floats.
        unsafe { _mm512_storeu_ps(row.as_mut_ptr(), acc[i]) };
    }
}
