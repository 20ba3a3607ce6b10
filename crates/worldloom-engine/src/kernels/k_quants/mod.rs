//! `x @ wᵀ` for f32 `x` and a Q4_K, Q5_K or Q6_K weight `w`, in llama.cpp's
//! arithmetic, with `vpdpbusd` (or AVX2's pair products), on tiles of the
//! blocks' size.
//!
//! llama.cpp multiplies a K-quant weight by quantizing the input to Q8_K
//! (per 256 values one f32 scale `d = max / -127` of the value with the
//! largest magnitude, 256 signed bytes rounded half to even, and the sums of
//! each 16 bytes); the products are integer per sub-block, scaled by the
//! sub-block's 6-bit (Q4_K, Q5_K) or 8-bit (Q6_K) scale, and the block's
//! sum is scaled by the two blocks' `d` (`ggml_vec_dot_q4_K_q8_K`,
//! `ggml_vec_dot_q5_K_q8_K`, `ggml_vec_dot_q6_K_q8_K`). The kernels here compute the same integer
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
//! - [`Q5KTile`] (2,880 bytes for 16 × 176 stored: 1.02×): a Q4_K tile
//!   and the fifth bits, `[group (8)][row (16)][4]` as stored (byte
//!   `qh[4·group + i]`: bit `2·pair` for the low nibble's column,
//!   `2·pair + 1` for the high one's), OR-ed in as bit 4 before the
//!   product.
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
//! Chosen at run time ([`super::q8_0::tile_isa`], and whole tiles:
//! [`applies`]): the AVX-512 VNNI kernels in `imp`, the AVX-VNNI and AVX2
//! ones on the same tiles in `wide256`; elsewhere the caller uses candle's
//! kernels, which quantize the input the same way.
//!
//! Allowed `unsafe`: the intrinsics (entered only for a supported
//! [`super::q8_0::TileIsa`]) and their loads from slices whose bounds the
//! `matmul`s assert once.
#![allow(unsafe_code)]
// Off x86-64 only `applies` (false) and the packing are reachable.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_variables, unused_mut)
)]

use half::f16;

use super::q8_0::{MT, TILE_ROWS, TileIsa, run_tiles, tile_isa};

/// Values per K-quant block.
pub const QK_K: usize = 256;
/// Bytes per stored Q4_K block: `d`, `dmin` (f16), 12 bytes of packed
/// 6-bit scales and minima, 128 bytes of nibbles.
const Q4K_BLOCK_BYTES: usize = 144;
/// Bytes per stored Q5_K block: a Q4_K block's `d`, `dmin` and scales,
/// 32 bytes of fifth bits, 128 bytes of nibbles.
const Q5K_BLOCK_BYTES: usize = 176;
/// Bytes per stored Q6_K block: 128 bytes of low nibbles, 64 of high bits,
/// 16 signed scales, `d` (f16).
const Q6K_BLOCK_BYTES: usize = 210;

/// Whether a Q4_K, Q5_K or Q6_K weight [n, k] is multiplied by these kernels on
/// this CPU: a [`tile_isa`], `n` a multiple of 16 rows, `k` of 256 columns.
pub fn applies(n: usize, k: usize) -> bool {
    tile_isa().is_some() && n > 0 && n.is_multiple_of(TILE_ROWS) && k > 0 && k.is_multiple_of(QK_K)
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
    /// Quantizes `x` [m, k] (row-major, `k` a multiple of 256) on the
    /// vector registers of [`tile_isa`]'s form (the same bytes as the
    /// scalar form where the block's largest magnitude is above ~1e-36 and
    /// occurs with one sign — else bytes and scale flip sign together, the
    /// same products; a test checks each form).
    pub(crate) fn quantize(x: &[f32], m: usize, k: usize) -> Self {
        Self::quantize_on(tile_isa(), x, m, k)
    }

    /// [`Q8K::quantize`] on `isa`'s registers (scalar for `None`).
    ///
    /// # Panics
    /// If this CPU lacks `isa`.
    fn quantize_on(isa: Option<TileIsa>, x: &[f32], m: usize, k: usize) -> Self {
        assert!(
            isa.is_none_or(TileIsa::is_supported),
            "{isa:?} quantizer on a CPU without it"
        );
        match isa {
            #[cfg(target_arch = "x86_64")]
            Some(TileIsa::Avx512Vnni) => Self::quantize_with(x, m, k, |src, dst, sums| {
                // SAFETY: AVX-512 F/BW, part of the form (asserted).
                unsafe { imp::quantize_block(src, dst, sums) }
            }),
            #[cfg(target_arch = "x86_64")]
            Some(TileIsa::AvxVnni | TileIsa::Avx2) => {
                Self::quantize_with(x, m, k, |src, dst, sums| {
                    // SAFETY: AVX2, part of both forms (asserted).
                    unsafe { wide256::quantize_block(src, dst, sums) }
                })
            }
            _ => Self::quantize_with(x, m, k, quantize_block),
        }
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

/// One Q4_K (`QH` = 0) or Q5_K (`QH` = 512) tile: 16 weight rows × 256
/// columns.
#[repr(C)]
#[derive(Clone)]
pub(crate) struct NibbleTile<const QH: usize> {
    d: [f16; TILE_ROWS],
    dmin: [f16; TILE_ROWS],
    /// `[sub-block (8)][row (16)]` 6-bit scales.
    sc: [u8; 8 * TILE_ROWS],
    /// `[sub-block (8)][row (16)]` 6-bit minima.
    mn: [u8; 8 * TILE_ROWS],
    /// `[pair (4)][group (8)][row (16)][4]` bytes of two nibbles.
    qs: [u8; QK_K / 2 * TILE_ROWS],
    /// Q5_K's `[group (8)][row (16)][4]` bytes of fifth bits.
    qh: [u8; QH],
}

/// One Q4_K tile.
pub(crate) type Q4KTile = NibbleTile<0>;
/// One Q5_K tile.
pub(crate) type Q5KTile = NibbleTile<{ QK_K / 8 * TILE_ROWS }>;

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
/// A Q5_K weight on [`Q5KTile`]s.
pub type PackedQ5K = PackedKQuant<Q5KTile>;
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
}

impl<T: KQuantTile> PackedKQuant<T> {
    /// `x @ wᵀ` for `x` [m, k] f32 (row-major): [m, n] f32, the input
    /// quantized to Q8_K as llama.cpp quantizes it.
    ///
    /// # Panics
    /// If `x.len() != m · k` or the CPU has no tile kernel (a packed weight
    /// exists only where it has one).
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        let k = self.k;
        assert_eq!(x.len(), m * k, "K-quant input is not [{m}, {k}]");
        self.matmul_quantized(&Q8K::quantize(x, m, k), true)
    }

    /// `x @ wᵀ` for an input already quantized to Q8_K: [m, n] f32, tile
    /// columns over rayon's threads when `parallel`, on [`tile_isa`]'s
    /// kernel.
    ///
    /// # Panics
    /// If the input's width is not `k` or the CPU has no tile kernel.
    pub(crate) fn matmul_quantized(&self, acts: &Q8K, parallel: bool) -> Vec<f32> {
        let isa = tile_isa().expect("K-quant tiles multiplied on a CPU without a tile kernel");
        self.matmul_quantized_on(isa, acts, parallel)
    }

    /// [`Self::matmul_quantized`] on the kernel for `isa`: one tile column
    /// for at most [`MT`] input rows a call, tile columns over rayon's
    /// threads when `parallel`.
    ///
    /// # Panics
    /// If the input's width is not `k` or this CPU does not run `isa`.
    pub(crate) fn matmul_quantized_on(&self, isa: TileIsa, acts: &Q8K, parallel: bool) -> Vec<f32> {
        let (n, k, m) = (self.n, self.k, acts.rows());
        assert_eq!(acts.kb * QK_K, k, "K-quant input is not {k} wide");
        assert!(
            isa.is_supported(),
            "{isa:?} kernel called on a CPU without it"
        );
        let column = T::column(isa);
        let kb = k / QK_K;
        run_tiles(m, n, parallel, |t, m0, rows, buf| {
            // SAFETY: `isa` runs here (asserted); the tile slice holds kb
            // tiles, the activations m rows of kb blocks, `buf` rows × 16
            // floats.
            unsafe { column(&self.tiles[t * kb..(t + 1) * kb], acts, m0, rows, buf) };
        })
    }
}

impl<const QH: usize> PackedKQuant<NibbleTile<QH>> {
    /// Packs stored Q4_K (`QH` = 0) or Q5_K (`QH` = 512) blocks of a weight
    /// [n, k]. `None` when [`applies`] is false or `blocks` is not
    /// `n · k / 256` blocks long.
    fn pack_nibbles(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        let empty = || NibbleTile {
            d: [f16::ZERO; TILE_ROWS],
            dmin: [f16::ZERO; TILE_ROWS],
            sc: [0; 8 * TILE_ROWS],
            mn: [0; 8 * TILE_ROWS],
            qs: [0; QK_K / 2 * TILE_ROWS],
            qh: [0; QH],
        };
        // Q5_K's 32 bytes of fifth bits sit between the scales and the nibbles.
        let qh_bytes = QH / TILE_ROWS;
        let block_bytes = if QH == 0 {
            Q4K_BLOCK_BYTES
        } else {
            Q5K_BLOCK_BYTES
        };
        debug_assert_eq!(block_bytes, Q4K_BLOCK_BYTES + qh_bytes);
        Self::pack(blocks, n, k, block_bytes, empty, |tile, r, block| {
            tile.d[r] = f16::from_le_bytes([block[0], block[1]]);
            tile.dmin[r] = f16::from_le_bytes([block[2], block[3]]);
            let scales = &block[4..16];
            for j in 0..8 {
                let (sc, mn) = scale_min_k4(j, scales);
                tile.sc[j * TILE_ROWS + r] = sc;
                tile.mn[j * TILE_ROWS + r] = mn;
            }
            for (idx, &q) in block[16..16 + qh_bytes].iter().enumerate() {
                let (g, i) = (idx / 4, idx % 4);
                tile.qh[(g * TILE_ROWS + r) * 4 + i] = q;
            }
            for (idx, &q) in block[16 + qh_bytes..].iter().enumerate() {
                let (pair, g, i) = (idx / 32, idx % 32 / 4, idx % 4);
                tile.qs[((pair * 8 + g) * TILE_ROWS + r) * 4 + i] = q;
            }
        })
    }
}

impl PackedQ4K {
    /// Packs the stored Q4_K blocks of a weight [n, k]. `None` when
    /// [`applies`] is false or `blocks` is not `n · k / 256` blocks long.
    pub fn pack_q4k(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        Self::pack_nibbles(blocks, n, k)
    }
}

impl PackedQ5K {
    /// Packs the stored Q5_K blocks of a weight [n, k]. `None` when
    /// [`applies`] is false or `blocks` is not `n · k / 256` blocks long.
    pub fn pack_q5k(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        Self::pack_nibbles(blocks, n, k)
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
}

#[cfg(target_arch = "x86_64")]
mod imp;
#[cfg(target_arch = "x86_64")]
mod wide256;

/// A tile column kernel: `column(tiles, acts, m0, rows, out)` writes the
/// 16 outputs of one tile column for input rows `m0..m0 + rows` (at most
/// [`MT`]) into `out` [rows, 16]; `unsafe` for its CPU features.
type Column<T> = unsafe fn(&[T], &Q8K, usize, usize, &mut [f32]);

/// A K-quant tile type and its column kernel on each [`TileIsa`].
pub(crate) trait KQuantTile: Sized + Sync {
    /// The kernel for `isa` (on x86-64; elsewhere no tile is packed).
    fn column(isa: TileIsa) -> Column<Self>;
}

#[cfg(target_arch = "x86_64")]
impl<const QH: usize> KQuantTile for NibbleTile<QH> {
    fn column(isa: TileIsa) -> Column<Self> {
        match isa {
            TileIsa::Avx512Vnni => imp::nibble_column::<QH>,
            TileIsa::AvxVnni => wide256::nibble_column_vnni::<QH>,
            TileIsa::Avx2 => wide256::nibble_column_avx2::<QH>,
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl KQuantTile for Q6KTile {
    fn column(isa: TileIsa) -> Column<Self> {
        match isa {
            TileIsa::Avx512Vnni => imp::q6k_column,
            TileIsa::AvxVnni => wide256::q6k_column_vnni,
            TileIsa::Avx2 => wide256::q6k_column_avx2,
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl<T: Sync> KQuantTile for T {
    fn column(_: TileIsa) -> Column<Self> {
        unreachable!("packed only on x86-64")
    }
}

#[cfg(test)]
mod tests;
