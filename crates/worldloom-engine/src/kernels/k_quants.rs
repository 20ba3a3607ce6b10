//! `x @ wᵀ` for f32 `x` and a Q4_K or Q6_K weight `w`, in llama.cpp's
//! arithmetic, with AVX-512 VNNI's `vpdpbusd`, on tiles of the blocks' size.
//!
//! llama.cpp multiplies a K-quant weight by quantizing the input to Q8_K
//! (per 256 values one f32 scale `d = max / -127` of the value with the
//! largest magnitude, 256 signed bytes rounded half to even, and the sums of
//! each 16 bytes); the products are integer per sub-block, scaled by the
//! sub-block's 6-bit (Q4_K) or 8-bit (Q6_K) scale, and the block's sum is
//! scaled by the two blocks' `d` (`ggml_vec_dot_q4_K_q8_K`,
//! `ggml_vec_dot_q6_K_q8_K`). The kernels here compute the same integer
//! sums; only the order of the f32 additions across blocks differs.
//!
//! Layout: one tile per 16 weight rows × 256 columns (one block per row),
//! the 16 rows' block parts interleaved so that one 64-byte load holds 4
//! columns' bytes for all 16 rows and one `vpdpbusd` multiplies them by one
//! broadcast group of 4 input bytes (16 row sums at once):
//!
//! - [`Q4KTile`] (2,368 bytes for 16 × 144 stored: 1.03×): the rows' `d` and
//!   `dmin` (f16), the 6-bit scales and minima unpacked to one byte each
//!   (`[sub-block][row]`), and the packed nibbles `[pair (4)][group of 4
//!   columns (8)][row (16)][4]` as stored: a byte's low nibble is column
//!   `64·pair + 4·group + i`, its high nibble that column + 32. Value =
//!   `d·scale·q − dmin·min`; the minima meet the input through the Q8_K
//!   sums, so they cost no product per value.
//! - [`Q6KTile`] (3,360 bytes, exactly 16 × 210): the rows' `d`, the signed
//!   scales `[sub-block (16)][row]`, then per half (2) and group of 4
//!   columns (8) the low nibbles of the columns and of the columns + 32 and
//!   the high bits, each `[row][4]` as stored: the order the kernel reads,
//!   so a tile streams front to back (with the three parts in three
//!   regions, a one-row decode of the Q4_K_M bench model took 1.7–1.9× as
//!   long, waiting on its loads). The unsigned 6-bit `q` goes into `vpdpbusd`; the stored value
//!   is `q − 32`, so `32 · Σ scale · (sum of 16 input bytes)` is subtracted
//!   per block, as llama.cpp does.
//!
//! Chosen at run time ([`super::q8_0::available`], and whole tiles:
//! [`applies`]); elsewhere the caller uses candle's kernels, which quantize
//! the input the same way.
//!
//! Allowed `unsafe`: the AVX-512 intrinsics (entered only after
//! [`super::q8_0::available`]) and their loads from slices whose bounds the
//! `matmul`s assert once.
#![allow(unsafe_code)]
// Off x86-64 only `applies` (false) and the packing are reachable.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_variables, unused_mut)
)]

use half::f16;

use super::q8_0::{MT, TILE_ROWS, available, run_tiles};

/// Values per K-quant block.
pub const QK_K: usize = 256;
/// Bytes per stored Q4_K block: `d`, `dmin` (f16), 12 bytes of packed
/// 6-bit scales and minima, 128 bytes of nibbles.
const Q4K_BLOCK_BYTES: usize = 144;
/// Bytes per stored Q6_K block: 128 bytes of low nibbles, 64 of high bits,
/// 16 signed scales, `d` (f16).
const Q6K_BLOCK_BYTES: usize = 210;

/// Whether a Q4_K or Q6_K weight [n, k] is multiplied by these kernels on
/// this CPU: AVX-512 VNNI, `n` a multiple of 16 rows, `k` of 256 columns.
pub fn applies(n: usize, k: usize) -> bool {
    available() && n > 0 && n.is_multiple_of(TILE_ROWS) && k > 0 && k.is_multiple_of(QK_K)
}

/// An input [m, k] quantized to Q8_K blocks as llama.cpp's
/// `quantize_row_q8_K_ref` does: per 256 values the scale `d = max / -127`
/// (`max` the value of largest magnitude, so `d` carries its sign), bytes
/// `round_ties_even(x / d)` capped at 127, and the sums of each 16 bytes.
pub(crate) struct Q8K {
    /// Blocks per row.
    kb: usize,
    /// `[m · k]` signed bytes.
    qs: Vec<i8>,
    /// `[m · kb]` scales.
    d: Vec<f32>,
    /// `[m · kb · 16]` sums of 16 consecutive bytes.
    bsums: Vec<i32>,
}

impl Q8K {
    /// Quantizes `x` [m, k] (row-major, `k` a multiple of 256), with
    /// AVX-512 where [`available`] (the same bytes as the scalar form; a
    /// test checks it).
    pub(crate) fn quantize(x: &[f32], m: usize, k: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if available() {
            return Self::quantize_with(x, m, k, |src, dst, sums| {
                // SAFETY: AVX-512 F/BW checked by `available`.
                unsafe { imp::quantize_block(src, dst, sums) }
            });
        }
        Self::quantize_with(x, m, k, quantize_block)
    }

    /// `block(src, dst, sums) -> d` for each block of 256 values.
    fn quantize_with(
        x: &[f32],
        m: usize,
        k: usize,
        block: impl Fn(&[f32], &mut [i8], &mut [i32]) -> f32,
    ) -> Self {
        let kb = k / QK_K;
        let mut qs = vec![0i8; m * k];
        let mut d = vec![0f32; m * kb];
        let mut bsums = vec![0i32; m * kb * (QK_K / 16)];
        for (((src, dst), scale), sums) in x
            .chunks_exact(QK_K)
            .zip(qs.chunks_exact_mut(QK_K))
            .zip(d.iter_mut())
            .zip(bsums.chunks_exact_mut(QK_K / 16))
        {
            *scale = block(src, dst, sums);
        }
        Self { kb, qs, d, bsums }
    }

    /// Input rows.
    pub(crate) fn rows(&self) -> usize {
        self.d.len().checked_div(self.kb).unwrap_or(0)
    }

    /// Input width.
    pub(crate) fn cols(&self) -> usize {
        self.kb * QK_K
    }

    /// Rows `rows` of the input, in that order (the same bytes, scales and
    /// sums: each row is quantized on its own).
    ///
    /// # Panics
    /// If a row is out of range.
    pub(crate) fn gather(&self, rows: &[u32]) -> Self {
        let (kb, k, s) = (self.kb, self.kb * QK_K, self.kb * QK_K / 16);
        let mut out = Self {
            kb,
            qs: Vec::with_capacity(rows.len() * k),
            d: Vec::with_capacity(rows.len() * kb),
            bsums: Vec::with_capacity(rows.len() * s),
        };
        for &r in rows {
            let r = r as usize;
            out.qs.extend_from_slice(&self.qs[r * k..(r + 1) * k]);
            out.d.extend_from_slice(&self.d[r * kb..(r + 1) * kb]);
            out.bsums.extend_from_slice(&self.bsums[r * s..(r + 1) * s]);
        }
        out
    }
}

/// One block of 256 values to Q8_K (scalar): the bytes into `dst`, the
/// 16-byte sums into `sums`; returns the scale. An all-zero block gives
/// scale 0 and leaves `dst` and `sums` zero.
fn quantize_block(src: &[f32], dst: &mut [i8], sums: &mut [i32]) -> f32 {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in src {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        return 0.0;
    }
    let iscale = -127.0 / max;
    for (q, &v) in dst.iter_mut().zip(src) {
        *q = (iscale * v).round_ties_even().min(127.0) as i8;
    }
    for (sum, group) in sums.iter_mut().zip(dst.chunks_exact(16)) {
        *sum = group.iter().map(|&q| i32::from(q)).sum();
    }
    1.0 / iscale
}

/// One Q4_K tile: 16 weight rows × 256 columns.
#[repr(C)]
#[derive(Clone)]
pub(crate) struct Q4KTile {
    d: [f16; TILE_ROWS],
    dmin: [f16; TILE_ROWS],
    /// `[sub-block (8)][row (16)]` 6-bit scales.
    sc: [u8; 8 * TILE_ROWS],
    /// `[sub-block (8)][row (16)]` 6-bit minima.
    mn: [u8; 8 * TILE_ROWS],
    /// `[pair (4)][group (8)][row (16)][4]` bytes of two nibbles.
    qs: [u8; QK_K / 2 * TILE_ROWS],
}

/// One Q6_K tile: 16 weight rows × 256 columns.
#[repr(C)]
#[derive(Clone)]
pub(crate) struct Q6KTile {
    d: [f16; TILE_ROWS],
    /// `[sub-block (16)][row (16)]` signed scales.
    sc: [i8; 16 * TILE_ROWS],
    /// `[half (2)][group (8)][part (3)][row (16)][4]`: part 0 the low
    /// nibbles `ql[c]`, part 1 `ql[c + 32]`, part 2 the high bits `qh[c]`
    /// of the group's columns `c` — in the order the kernel reads them, so
    /// a tile streams from memory front to back.
    q: [u8; 3 * QK_K / 4 * TILE_ROWS],
}

/// Q4_K's 6-bit scale and minimum of sub-block `j` (0..8) from a block's
/// 12 packed bytes (ggml's `get_scale_min_k4`).
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// A K-quant weight [n, k] in tiles, tile `(row tile t, block b)` at
/// `t · (k / 256) + b`.
pub struct PackedKQuant<T> {
    n: usize,
    k: usize,
    tiles: Vec<T>,
}

/// A Q4_K weight on [`Q4KTile`]s.
pub type PackedQ4K = PackedKQuant<Q4KTile>;
/// A Q6_K weight on [`Q6KTile`]s.
pub type PackedQ6K = PackedKQuant<Q6KTile>;

impl<T> std::fmt::Debug for PackedKQuant<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedKQuant [{}, {}]", self.n, self.k)
    }
}

impl<T> PackedKQuant<T> {
    /// Rows of the weight.
    pub fn rows(&self) -> usize {
        self.n
    }

    /// Columns of the weight (the input's width).
    pub fn cols(&self) -> usize {
        self.k
    }

    /// Interleaves the stored blocks (row-major, `k / 256` blocks of
    /// `block_bytes` per row) tile by tile with `fill(tile, row, block)`.
    fn pack(
        blocks: &[u8],
        n: usize,
        k: usize,
        block_bytes: usize,
        empty: impl Fn() -> T,
        fill: impl Fn(&mut T, usize, &[u8]),
    ) -> Option<Self> {
        if !applies(n, k) || blocks.len() != n * (k / QK_K) * block_bytes {
            return None;
        }
        let kb = k / QK_K;
        let mut tiles = Vec::with_capacity(n / TILE_ROWS * kb);
        for t in 0..n / TILE_ROWS {
            for b in 0..kb {
                let mut tile = empty();
                for r in 0..TILE_ROWS {
                    let at = ((t * TILE_ROWS + r) * kb + b) * block_bytes;
                    fill(&mut tile, r, &blocks[at..at + block_bytes]);
                }
                tiles.push(tile);
            }
        }
        Some(Self { n, k, tiles })
    }

    /// `x @ wᵀ` for an input quantized to Q8_K [m, k]: [m, n] f32, with
    /// `column(tiles, acts, m0, rows, out)` computing one tile column for
    /// at most [`MT`] rows, tile columns over rayon's threads when
    /// `parallel`.
    fn matmul_with(
        &self,
        acts: &Q8K,
        parallel: bool,
        column: unsafe fn(&[T], &Q8K, usize, usize, &mut [f32]),
    ) -> Vec<f32>
    where
        T: Sync,
    {
        let (n, k, m) = (self.n, self.k, acts.rows());
        assert_eq!(acts.kb * QK_K, k, "K-quant input is not {k} wide");
        assert!(
            available(),
            "AVX-512 VNNI kernel called on a CPU without it"
        );
        let kb = k / QK_K;
        run_tiles(m, n, parallel, |t, m0, rows, buf| {
            // SAFETY: `available` was asserted; the tile slice holds kb
            // tiles, the activations m rows of kb blocks, `buf` rows × 16
            // floats.
            unsafe { column(&self.tiles[t * kb..(t + 1) * kb], acts, m0, rows, buf) };
        })
    }
}

impl PackedQ4K {
    /// Packs the stored Q4_K blocks of a weight [n, k]. `None` when
    /// [`applies`] is false or `blocks` is not `n · k / 256` blocks long.
    pub fn pack_q4k(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        let empty = || Q4KTile {
            d: [f16::ZERO; TILE_ROWS],
            dmin: [f16::ZERO; TILE_ROWS],
            sc: [0; 8 * TILE_ROWS],
            mn: [0; 8 * TILE_ROWS],
            qs: [0; QK_K / 2 * TILE_ROWS],
        };
        Self::pack(blocks, n, k, Q4K_BLOCK_BYTES, empty, |tile, r, block| {
            tile.d[r] = f16::from_le_bytes([block[0], block[1]]);
            tile.dmin[r] = f16::from_le_bytes([block[2], block[3]]);
            let scales = &block[4..16];
            for j in 0..8 {
                let (sc, mn) = scale_min_k4(j, scales);
                tile.sc[j * TILE_ROWS + r] = sc;
                tile.mn[j * TILE_ROWS + r] = mn;
            }
            for (idx, &q) in block[16..].iter().enumerate() {
                let (pair, g, i) = (idx / 32, idx % 32 / 4, idx % 4);
                tile.qs[((pair * 8 + g) * TILE_ROWS + r) * 4 + i] = q;
            }
        })
    }

    /// `x @ wᵀ` for `x` [m, k] f32 (row-major): [m, n] f32, the input
    /// quantized to Q8_K as llama.cpp quantizes it.
    ///
    /// # Panics
    /// If `x.len() != m · k` or the CPU lacks AVX-512 VNNI (a packed weight
    /// exists only where it has it).
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        assert_eq!(x.len(), m * self.k, "Q4_K input is not [{m}, {}]", self.k);
        self.matmul_quantized(&Q8K::quantize(x, m, self.k), true)
    }

    /// `x @ wᵀ` for an input already quantized to Q8_K: [m, n] f32, tile
    /// columns over rayon's threads when `parallel`.
    ///
    /// # Panics
    /// If the input's width is not `k` or the CPU lacks AVX-512 VNNI.
    pub(crate) fn matmul_quantized(&self, acts: &Q8K, parallel: bool) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        return self.matmul_with(acts, parallel, imp::q4k_column);
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("packed only on x86-64")
    }
}

impl PackedQ6K {
    /// Packs the stored Q6_K blocks of a weight [n, k]. `None` when
    /// [`applies`] is false or `blocks` is not `n · k / 256` blocks long.
    pub fn pack_q6k(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        let empty = || Q6KTile {
            d: [f16::ZERO; TILE_ROWS],
            sc: [0; 16 * TILE_ROWS],
            q: [0; 3 * QK_K / 4 * TILE_ROWS],
        };
        Self::pack(blocks, n, k, Q6K_BLOCK_BYTES, empty, |tile, r, block| {
            let (ql, qh, sc) = (&block[..128], &block[128..192], &block[192..208]);
            tile.d[r] = f16::from_le_bytes([block[208], block[209]]);
            for (s, &v) in sc.iter().enumerate() {
                tile.sc[s * TILE_ROWS + r] = v as i8;
            }
            let mut put = |half: usize, g: usize, part: usize, i: usize, q: u8| {
                tile.q[(((half * 8 + g) * 3 + part) * TILE_ROWS + r) * 4 + i] = q;
            };
            // ql: half h holds 64 bytes, its first 32 part 0, the next part 1.
            for (idx, &q) in ql.iter().enumerate() {
                put(idx / 64, idx % 32 / 4, idx % 64 / 32, idx % 4, q);
            }
            for (idx, &q) in qh.iter().enumerate() {
                put(idx / 32, idx % 32 / 4, 2, idx % 4, q);
            }
        })
    }

    /// `x @ wᵀ` for `x` [m, k] f32 (row-major): [m, n] f32, the input
    /// quantized to Q8_K as llama.cpp quantizes it.
    ///
    /// # Panics
    /// If `x.len() != m · k` or the CPU lacks AVX-512 VNNI.
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        assert_eq!(x.len(), m * self.k, "Q6_K input is not [{m}, {}]", self.k);
        self.matmul_quantized(&Q8K::quantize(x, m, self.k), true)
    }

    /// `x @ wᵀ` for an input already quantized to Q8_K: [m, n] f32, tile
    /// columns over rayon's threads when `parallel`.
    ///
    /// # Panics
    /// If the input's width is not `k` or the CPU lacks AVX-512 VNNI.
    pub(crate) fn matmul_quantized(&self, acts: &Q8K, parallel: bool) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        return self.matmul_with(acts, parallel, imp::q6k_column);
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("packed only on x86-64")
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::super::q8_0::for_rows;
    use super::{MT, Q4KTile, Q6KTile, Q8K, QK_K, TILE_ROWS};
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
            unsafe {
                _mm_storeu_si128(dst[16 * c..].as_mut_ptr().cast(), _mm512_cvtsepi32_epi8(q))
            };
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

    /// The 16 outputs of one Q4_K tile column (16 weight rows, all of k)
    /// for input rows `m0..m0 + rows` (at most [`MT`]), written to `out`
    /// [rows, 16].
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn q4k_column(
        tiles: &[Q4KTile],
        acts: &Q8K,
        m0: usize,
        rows: usize,
        out: &mut [f32],
    ) {
        debug_assert!(rows <= MT && tiles.len() == acts.kb && out.len() == rows * TILE_ROWS);
        for_rows!(q4k_rows, rows, (tiles, acts, m0, out))
    }

    /// [`q4k_column`] for exactly `R` input rows (the row loops unrolled,
    /// the sums in registers).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VNNI.
    #[allow(clippy::needless_range_loop)] // index loops mirror the register tile
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn q4k_rows<const R: usize>(tiles: &[Q4KTile], acts: &Q8K, m0: usize, out: &mut [f32]) {
        let kb = acts.kb;
        let k = kb * QK_K;
        let low = _mm512_set1_epi8(0x0F);
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
                    }
                    // SAFETY: (pair·8 + g + 1)·64 ≤ 2,048 bytes of `qs`.
                    let w = unsafe {
                        _mm512_loadu_si512(tile.qs.as_ptr().add((pair * 8 + g) * 64).cast())
                    };
                    let lo = _mm512_and_si512(w, low);
                    let hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
                    let at = pair * 64 + g * 4;
                    for i in 0..R {
                        // SAFETY: at + 32 + 4 ≤ 256.
                        let (xl, xh) =
                            unsafe { (bcast_block(xs[i], at), bcast_block(xs[i], at + 32)) };
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
                acc[i] =
                    _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, da), acc[i]);
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
}

#[cfg(test)]
mod tests {
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
    /// differs) for 1 to 9 input rows and weights of several tiles and
    /// blocks; a wrong nibble, scale, minimum or offset is off by far more.
    #[test]
    fn match_llama_cpp_arithmetic() {
        if !available() {
            return;
        }
        let (n, k) = (48, 512);
        let (q4, b4) = quantized(GgmlDType::Q4K, n, k, 1);
        let (q6, b6) = quantized(GgmlDType::Q6K, n, k, 2);
        let p4 = PackedQ4K::pack_q4k(&b4, n, k).expect("packs Q4_K");
        let p6 = PackedQ6K::pack_q6k(&b6, n, k).expect("packs Q6_K");
        // Tiles of the blocks' size (Q4_K's scales unpacked: 1.03×).
        assert_eq!(p6.tiles.len() * size_of::<Q6KTile>(), b6.len());
        assert_eq!(p4.tiles.len() * size_of::<Q4KTile>(), b4.len() / 144 * 148);
        // Every pass width 1..=MT (9 = 8 + 1, 13 = 8 + 5, 14 = 8 + 6, 15 = 8 + 7).
        for m in [1, 2, 3, 4, 9, 13, 14, 15] {
            let x = input(m, k);
            check(&p4.matmul(&x, m), &reference(&q4, &x, m, n, k), "Q4_K");
            check(&p6.matmul(&x, m), &reference(&q6, &x, m, n, k), "Q6_K");
        }
        assert!(PackedQ4K::pack_q4k(&b4, n, k - 256).is_none());
        assert!(PackedQ6K::pack_q6k(&b6[..b6.len() - 1], n, k).is_none());
    }

    /// The AVX-512 quantizer gives the scalar one's bytes, sums and scale
    /// (on blocks whose largest magnitude occurs with one sign; otherwise
    /// scale and bytes flip sign together and the products are the same).
    #[test]
    fn q8k_simd_quantization_equals_scalar() {
        if !available() {
            return;
        }
        let (m, k) = (3, 4 * QK_K);
        let mut x = input(m, k);
        x[2 * QK_K + 7] = 0.5; // a tie to even after scaling below
        x[2 * QK_K + 9] = 127.0;
        let simd = Q8K::quantize(&x, m, k);
        let scalar = Q8K::quantize_with(&x, m, k, quantize_block);
        assert_eq!(simd.qs, scalar.qs);
        assert_eq!(simd.d, scalar.d);
        assert_eq!(simd.bsums, scalar.bsums);
        assert_eq!(simd.qs[2 * QK_K + 7], 0); // −0.5 → 0 (even)
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
}
