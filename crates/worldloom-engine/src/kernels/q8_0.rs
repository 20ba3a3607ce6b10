//! `x @ wᵀ` for f32 `x` and a Q8_0 weight `w`, in llama.cpp's arithmetic,
//! with `vpdpbusd` (or AVX2's pair products).
//!
//! llama.cpp multiplies a Q8_0 weight by quantizing the input to Q8_0 too:
//! per 32 values one scale `d = amax / 127` (rounded to f16) and 32 signed
//! bytes `round(x / d)`; each block's integer dot product is scaled by the
//! two blocks' scales (`ggml_vec_dot_q8_0_q8_0`). candle-core 0.11.1's x86
//! repacked Q8_0 path instead quantizes the input to Q8_K, one scale per 256
//! values: a block of 32 small values next to an outlier elsewhere in its
//! 256 gets a coarse step, and the products' error grows 2–4× (more where
//! activations have outliers, as the SwiGLU products entering the expert
//! down projections do). That was enough to change the first greedy token
//! of a real-width Q8_0 model against llama.cpp, while Q4_K (Q8_K inputs in
//! both engines) agreed token for token. This kernel keeps candle's fast
//! layout (weights tiled 16 rows at a time, stored +128 as unsigned bytes
//! for `vpdpbusd`) and takes the input in llama.cpp's Q8_0 blocks: the
//! integer sums are llama.cpp's exactly, and only the f32 summation order
//! differs.
//!
//! Layout: [`PackedQ8_0`] holds one tile per 16 weight rows × 32 columns:
//! the 16 rows' f16 scales and 512 bytes, `[group of 4 columns (8)][row
//! (16)][4]`, each weight byte + 128 — 544 bytes, the size of the 16 stored
//! blocks, so the packed copy replaces the mapped blocks in memory rather
//! than doubling them. One `vpdpbusd` multiplies 4 columns of 16 rows by one
//! broadcast group of 4 input bytes; Σ(w + 128)·a − 128·Σa gives Σw·a.
//!
//! Chosen at run time ([`tile_isa`], and a weight of whole tiles:
//! [`applies`]): AVX-512 VNNI here, AVX-VNNI or AVX2 on the same tiles in
//! `wide256` (AVX2 has no `vpdpbusd`: it flips each byte back to signed and
//! moves the weight's sign onto the input, as llama.cpp's AVX2 Q8_0 dot
//! product does, so no offset is subtracted); elsewhere the caller uses
//! candle's generic Q8_0 kernel on the stored blocks, which quantizes the
//! input the same way.
//!
//! Allowed `unsafe`: the intrinsics (entered only for a supported
//! [`TileIsa`]) and their loads from slices whose bounds
//! [`PackedQ8_0::matmul_quantized_on`] asserts once.
#![allow(unsafe_code)]
// Off x86-64 only `available` (false) and the packing are reachable.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_variables, unused_mut)
)]

use half::f16;

/// Values per Q8_0 block.
const QK: usize = 32;
/// Bytes per stored Q8_0 block: an f16 scale and 32 signed bytes.
const BLOCK_BYTES: usize = 2 + QK;
/// Weight rows per tile.
pub const TILE_ROWS: usize = 16;
/// Input rows multiplied together against one tile column (by every tile
/// kernel: [`run_tiles`] hands them out).
pub(crate) const MT: usize = 8;
// `for_rows!` has one arm per row count 1..=MT.
const _: () = assert!(MT == 8);

/// The instruction set the tile kernels of this module and [`super::k_quants`]
/// run on: the same tiles and the same integer sums on each (a test checks
/// every form against llama.cpp's arithmetic on a CPU that has them all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileIsa {
    /// 512-bit `vpdpbusd`, 16 weight rows a register, up to [`MT`] input
    /// rows a pass.
    Avx512Vnni,
    /// 256-bit `vpdpbusd` (VEX-encoded AVX-VNNI, as on CPUs without
    /// AVX-512): half a tile's rows a register.
    AvxVnni,
    /// AVX2 + FMA + F16C: `vpmaddubsw` and `vpmaddwd` in place of
    /// `vpdpbusd` (the pairs' i16 sums never saturate: K-quant weights are
    /// below 64, and Q8_0's take the sign trick).
    Avx2,
}

impl TileIsa {
    /// Every form, fastest first.
    pub const ALL: [Self; 3] = [Self::Avx512Vnni, Self::AvxVnni, Self::Avx2];

    /// The form's name in [`TILE_ISA_ENV`].
    pub fn name(self) -> &'static str {
        match self {
            Self::Avx512Vnni => "avx512vnni",
            Self::AvxVnni => "avxvnni",
            Self::Avx2 => "avx2",
        }
    }

    /// Whether this CPU runs this form (the standard library's cached
    /// feature checks).
    pub fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = || has!("avx2") && has!("fma") && has!("f16c");
            match self {
                Self::Avx512Vnni => available(),
                Self::AvxVnni => avx2() && has!("avxvnni"),
                Self::Avx2 => avx2(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Environment variable that caps the tile kernels' instruction set below
/// the CPU's best (`avx2`, `avxvnni`, `avx512vnni`, or `off` for candle's
/// kernels): to measure one form on a CPU that has several. The input
/// quantizers and prefill attention ([`super::flash_f32`]) follow it too
/// (`avx2` and `avxvnni` hold them to 256-bit registers), so a capped run
/// is the quantized path a CPU without AVX-512 takes. Another value is
/// reported once on standard error and ignored.
pub const TILE_ISA_ENV: &str = "WORLDLOOM_CPU_TILES";

/// The tile kernels' instruction set on this CPU (read once): the fastest
/// supported [`TileIsa`] at or below [`TILE_ISA_ENV`]'s cap; `None`
/// where there is none (or the cap is `off`), and the callers use candle's
/// kernels.
pub fn tile_isa() -> Option<TileIsa> {
    static ISA: std::sync::OnceLock<Option<TileIsa>> = std::sync::OnceLock::new();
    *ISA.get_or_init(|| {
        TileIsa::ALL[cap()?..]
            .iter()
            .copied()
            .find(|isa| isa.is_supported())
    })
}

/// Whether [`TILE_ISA_ENV`]'s cap lets kernels of `isa`'s level run
/// (whether or not this CPU has it): the f32 vector kernels (prefill
/// attention, the experts' SiLU: [`super::lanes::form`]), whose forms are
/// not tile kernels, ask this.
pub(crate) fn allows(isa: TileIsa) -> bool {
    cap().is_some_and(|from| TileIsa::ALL[from..].contains(&isa))
}

/// [`TILE_ISA_ENV`] read once: the position in [`TileIsa::ALL`] from which
/// forms may run, `None` for `off`.
fn cap() -> Option<usize> {
    static CAP: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        let value = std::env::var(TILE_ISA_ENV).unwrap_or_default();
        parse_cap(&value).unwrap_or_else(|message| {
            eprintln!("{message}: ignored (the CPU's fastest tile kernels run)");
            Some(0)
        })
    })
}

/// A [`TILE_ISA_ENV`] value (case and surrounding space ignored) as the
/// position in [`TileIsa::ALL`] from which forms may run (`""` gives 0),
/// or `None` for `off`.
///
/// # Errors
/// Another value, with a message naming the variable and the values it takes.
fn parse_cap(value: &str) -> Result<Option<usize>, String> {
    let value = value.trim().to_ascii_lowercase();
    match value.as_str() {
        "off" => Ok(None),
        "" => Ok(Some(0)),
        name => TileIsa::ALL
            .iter()
            .position(|isa| isa.name() == name)
            .map(Some)
            .ok_or_else(|| {
                format!("{TILE_ISA_ENV}={name:?} is not one of avx512vnni, avxvnni, avx2, off")
            }),
    }
}

/// Whether this CPU has AVX-512 F/BW and VNNI (checked once by the standard
/// library and cached): the 512-bit tile kernels and input quantizers
/// ([`TileIsa::Avx512Vnni`]).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether a Q8_0 weight [n, k] is multiplied by this kernel on this CPU:
/// a [`tile_isa`], `n` a multiple of 16 rows and `k` of 64 columns (two
/// blocks per step).
pub fn applies(n: usize, k: usize) -> bool {
    tile_isa().is_some()
        && n > 0
        && n.is_multiple_of(TILE_ROWS)
        && k > 0
        && k.is_multiple_of(2 * QK)
}

/// One tile: 16 weight rows × 32 columns.
#[repr(C)]
#[derive(Clone)]
struct Tile {
    /// The 16 rows' block scales.
    d: [f16; TILE_ROWS],
    /// `[group (8)][row (16)][4]`, each byte the weight + 128.
    qs: [u8; QK * TILE_ROWS],
}

/// A Q8_0 weight [n, k] in tiles, tile `(row tile t, block b)` at
/// `t · (k / 32) + b`.
pub struct PackedQ8_0 {
    n: usize,
    k: usize,
    tiles: Vec<Tile>,
}

impl std::fmt::Debug for PackedQ8_0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedQ8_0 [{}, {}]", self.n, self.k)
    }
}

impl PackedQ8_0 {
    /// Packs the stored Q8_0 blocks of a weight [n, k] (row-major, `k / 32`
    /// blocks of 34 bytes per row, as GGUF stores them). `None` when
    /// [`applies`] is false or `blocks` is not `n · k / 32` blocks long.
    pub fn pack(blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        if !applies(n, k) || blocks.len() != n * (k / QK) * BLOCK_BYTES {
            return None;
        }
        let kb = k / QK;
        let mut tiles = Vec::with_capacity(n / TILE_ROWS * kb);
        for t in 0..n / TILE_ROWS {
            for b in 0..kb {
                let mut tile = Tile {
                    d: [f16::ZERO; TILE_ROWS],
                    qs: [0; QK * TILE_ROWS],
                };
                for r in 0..TILE_ROWS {
                    let at = ((t * TILE_ROWS + r) * kb + b) * BLOCK_BYTES;
                    let block = &blocks[at..at + BLOCK_BYTES];
                    tile.d[r] = f16::from_le_bytes([block[0], block[1]]);
                    for (i, &q) in block[2..].iter().enumerate() {
                        let (g, j) = (i / 4, i % 4);
                        tile.qs[(g * TILE_ROWS + r) * 4 + j] = (q as i8 as i16 + 128) as u8;
                    }
                }
                tiles.push(tile);
            }
        }
        Some(Self { n, k, tiles })
    }

    /// Rows of the weight.
    pub fn rows(&self) -> usize {
        self.n
    }

    /// Columns of the weight (the input's width).
    pub fn cols(&self) -> usize {
        self.k
    }

    /// `x @ wᵀ` for `x` [m, k] f32 (row-major): [m, n] f32. The input is
    /// quantized to Q8_0 blocks as llama.cpp quantizes it.
    ///
    /// # Panics
    /// If `x.len() != m · k` or the CPU has no tile kernel (a packed
    /// weight exists only where it has one: [`tile_isa`]).
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        assert_eq!(x.len(), m * self.k, "Q8_0 input is not [{m}, {}]", self.k);
        self.matmul_quantized(&Activations::quantize(x, m, self.k), true)
    }

    /// `x @ wᵀ` for an input already quantized ([`Activations`], [m, k]):
    /// [m, n] f32, tile columns over rayon's threads when `parallel`.
    ///
    /// # Panics
    /// If the input's width is not `k` or the CPU has no tile kernel.
    pub(crate) fn matmul_quantized(&self, acts: &Activations, parallel: bool) -> Vec<f32> {
        let isa = tile_isa().expect("Q8_0 tiles multiplied on a CPU without a tile kernel");
        self.matmul_quantized_on(isa, acts, parallel)
    }

    /// [`PackedQ8_0::matmul_quantized`] on the kernel for `isa`.
    ///
    /// # Panics
    /// If the input's width is not `k` or this CPU does not run `isa`.
    pub(crate) fn matmul_quantized_on(
        &self,
        isa: TileIsa,
        acts: &Activations,
        parallel: bool,
    ) -> Vec<f32> {
        let (n, k, m) = (self.n, self.k, acts.rows());
        assert_eq!(acts.kb * QK, k, "Q8_0 input is not {k} wide");
        assert!(
            isa.is_supported(),
            "{isa:?} kernel called on a CPU without it"
        );
        let kb = k / QK;
        #[cfg(target_arch = "x86_64")]
        let column: unsafe fn(&[Tile], &Activations, usize, usize, &mut [f32]) = match isa {
            TileIsa::Avx512Vnni => imp::tile_column,
            TileIsa::AvxVnni => wide256::column_vnni,
            TileIsa::Avx2 => wide256::column_avx2,
        };
        run_tiles(m, n, parallel, |t, m0, rows, buf| {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `isa` runs here (asserted); the tile slice holds kb
            // tiles, the activations m rows of kb blocks, and `buf` rows ×
            // 16 floats.
            unsafe {
                column(&self.tiles[t * kb..(t + 1) * kb], acts, m0, rows, buf)
            };
        })
    }
}

/// `[m, n]` f32 outputs of a weight in tiles of 16 rows: `column(t, m0,
/// rows, buf)` computes tile column `t` for input rows `m0..m0 + rows` (at
/// most [`MT`]) into `buf` `[rows, 16]`, which is then copied into the
/// output's rows (no second `[m, n]` buffer). Tile columns go over rayon's
/// threads when `parallel` (else in the calling thread, for callers that
/// spread larger units of work themselves).
pub(crate) fn run_tiles(
    m: usize,
    n: usize,
    parallel: bool,
    column: impl Fn(usize, usize, usize, &mut [f32]) + Sync,
) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    let ptr = super::disjoint::DisjointOut::new(&mut out);
    let task = |t: usize| {
        let mut buf = [0f32; MT * TILE_ROWS];
        for m0 in (0..m).step_by(MT) {
            let rows = MT.min(m - m0);
            column(t, m0, rows, &mut buf[..rows * TILE_ROWS]);
            for (i, vals) in buf.chunks_exact(TILE_ROWS).take(rows).enumerate() {
                // SAFETY: row m0 + i < m and columns t·16 .. t·16 + 16 ≤ n
                // lie inside `out` [m, n]; only this task writes them.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        vals.as_ptr(),
                        ptr.get().add((m0 + i) * n + t * TILE_ROWS),
                        TILE_ROWS,
                    )
                };
            }
        }
    };
    super::disjoint::run_tasks(n / TILE_ROWS, parallel, task);
    out
}

/// One block of 32 values to Q8_0 bytes (scalar): returns the unrounded
/// scale `amax / 127` and the bytes' sum.
fn quantize_block(src: &[f32], dst: &mut [i8]) -> (f32, i32) {
    let amax = src.iter().fold(0f32, |a, v| a.max(v.abs()));
    let step = amax / 127.0;
    let inv = if step != 0.0 { 1.0 / step } else { 0.0 };
    let mut sum = 0i32;
    for (q, &v) in dst.iter_mut().zip(src) {
        *q = (v * inv).round() as i8;
        sum += i32::from(*q);
    }
    (step, sum)
}

/// An input [m, k] quantized to Q8_0 blocks: per block 32 signed bytes,
/// the scale (the f16-rounded `amax / 127`, as f32) and 128 × the bytes'
/// sum (the correction for the weights' +128).
pub(crate) struct Activations {
    kb: usize,
    qs: Vec<i8>,
    d: Vec<f32>,
    offset: Vec<f32>,
}

impl Activations {
    /// llama.cpp's `quantize_row_q8_0` (its reference form, which candle's
    /// `BlockQ8_0::from_float` follows): `d = amax / 127`, bytes
    /// `round(x / d)` (halves away from zero), `d` stored as f16. On the
    /// vector registers of [`tile_isa`]'s form (the same bytes; a test
    /// checks each form).
    pub(crate) fn quantize(x: &[f32], m: usize, k: usize) -> Self {
        Self::quantize_on(tile_isa(), x, m, k)
    }

    /// [`Activations::quantize`] on `isa`'s registers (scalar for `None`).
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
            Some(TileIsa::Avx512Vnni) => Self::quantize_with(x, m, k, |src, dst| {
                // SAFETY: AVX-512 F/BW, part of the form (asserted).
                unsafe { imp::quantize_block(src, dst) }
            }),
            #[cfg(target_arch = "x86_64")]
            Some(TileIsa::AvxVnni | TileIsa::Avx2) => Self::quantize_with(x, m, k, |src, dst| {
                // SAFETY: AVX2, part of both forms (asserted).
                unsafe { wide256::quantize_block(src, dst) }
            }),
            _ => Self::quantize_with(x, m, k, quantize_block),
        }
    }

    /// `block(src, dst) -> (unrounded scale, byte sum)` for each block of 32.
    fn quantize_with(
        x: &[f32],
        m: usize,
        k: usize,
        block: impl Fn(&[f32], &mut [i8]) -> (f32, i32),
    ) -> Self {
        let kb = k / QK;
        let mut qs = vec![0i8; m * k];
        let mut d = vec![0f32; m * kb];
        let mut offset = vec![0f32; m * kb];
        for (((src, dst), scale), off) in x
            .chunks_exact(QK)
            .zip(qs.chunks_exact_mut(QK))
            .zip(d.iter_mut())
            .zip(offset.iter_mut())
        {
            let (step, sum) = block(src, dst);
            *scale = f16::from_f32(step).to_f32();
            *off = 128.0 * sum as f32;
        }
        Self { kb, qs, d, offset }
    }

    /// Input rows.
    pub(crate) fn rows(&self) -> usize {
        self.d.len().checked_div(self.kb).unwrap_or(0)
    }

    /// Input width.
    pub(crate) fn cols(&self) -> usize {
        self.kb * QK
    }

    /// Rows `rows` of the input, in that order (the same bytes and scales:
    /// each row is quantized on its own).
    ///
    /// # Panics
    /// If a row is out of range.
    pub(crate) fn gather(&self, rows: &[u32]) -> Self {
        let (kb, k) = (self.kb, self.kb * QK);
        let mut out = Self {
            kb,
            qs: Vec::with_capacity(rows.len() * k),
            d: Vec::with_capacity(rows.len() * kb),
            offset: Vec::with_capacity(rows.len() * kb),
        };
        for &r in rows {
            let r = r as usize;
            out.qs.extend_from_slice(&self.qs[r * k..(r + 1) * k]);
            out.d.extend_from_slice(&self.d[r * kb..(r + 1) * kb]);
            out.offset
                .extend_from_slice(&self.offset[r * kb..(r + 1) * kb]);
        }
        out
    }
}

/// Calls `$f::<R>($args)` (or `$f::<R, $g…>` with const arguments `[$g…]`
/// after the row count) for `R` = `$rows` (1 to 7, else 8 = [`MT`]): the tile
/// kernels' row loops are unrolled per row count, so their sums stay in
/// registers (with a run-time count they spilled, and a one-row decode ran
/// at about half speed). Expands inside an `unsafe fn` with the callee's
/// CPU features.
#[cfg(target_arch = "x86_64")]
macro_rules! for_rows {
    ($f:ident, $rows:expr, ($($arg:expr),*)) => {
        for_rows!($f, $rows, [], ($($arg),*))
    };
    ($f:ident, $rows:expr, [$($g:tt),*], ($($arg:expr),*)) => {
        // SAFETY: the caller has the callee's CPU features.
        match $rows {
            1 => unsafe { $f::<1 $(, $g)*>($($arg),*) },
            2 => unsafe { $f::<2 $(, $g)*>($($arg),*) },
            3 => unsafe { $f::<3 $(, $g)*>($($arg),*) },
            4 => unsafe { $f::<4 $(, $g)*>($($arg),*) },
            5 => unsafe { $f::<5 $(, $g)*>($($arg),*) },
            6 => unsafe { $f::<6 $(, $g)*>($($arg),*) },
            7 => unsafe { $f::<7 $(, $g)*>($($arg),*) },
            _ => unsafe { $f::<8 $(, $g)*>($($arg),*) },
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use for_rows;

#[cfg(target_arch = "x86_64")]
mod wide256;

#[cfg(target_arch = "x86_64")]
pub(crate) mod imp {
    use super::{Activations, MT, QK, TILE_ROWS, Tile};
    use std::arch::x86_64::*;

    /// [`super::quantize_block`] with AVX-512: halves rounded away from
    /// zero as `roundf` does (truncate, then step away where the dropped
    /// part is at least one half; both exact in f32).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize_block(src: &[f32], dst: &mut [i8]) -> (f32, i32) {
        let (src, dst) = (&src[..QK], &mut dst[..QK]);
        // SAFETY: 2 × 16 floats of the 32.
        let v = unsafe {
            [
                _mm512_loadu_ps(src.as_ptr()),
                _mm512_loadu_ps(src[16..].as_ptr()),
            ]
        };
        let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
        let step = amax / 127.0;
        let inv = _mm512_set1_ps(if step != 0.0 { 1.0 / step } else { 0.0 });
        let sign = _mm512_set1_epi32(i32::MIN);
        let one = _mm512_castps_si512(_mm512_set1_ps(1.0));
        let mut sum = 0;
        for (half, v) in v.into_iter().enumerate() {
            let x = _mm512_mul_ps(v, inv);
            let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
            let away = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(
                _mm512_abs_ps(_mm512_sub_ps(x, t)),
                _mm512_set1_ps(0.5),
            );
            let unit = _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_and_si512(_mm512_castps_si512(x), sign),
                one,
            ));
            let q = _mm512_cvttps_epi32(_mm512_mask_add_ps(t, away, t, unit));
            sum += _mm512_reduce_add_epi32(q);
            // SAFETY: 16 bytes at 16 · half < 32.
            unsafe {
                _mm_storeu_si128(
                    dst[16 * half..].as_mut_ptr().cast(),
                    _mm512_cvtsepi32_epi8(q),
                )
            };
        }
        (step, sum)
    }

    /// Four input bytes `qs[at..at + 4]` broadcast to every 32-bit lane
    /// (the `vpdpbusd` operand of every tile kernel).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn broadcast4(qs: &[i8], at: usize) -> __m512i {
        let b = &qs[at..at + 4];
        _mm512_set1_epi32(i32::from_le_bytes([
            b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8,
        ]))
    }

    /// How many tiles ahead [`tile_rows`] asks for the bytes it will read
    /// (`prefetcht0`, one line for each line it reads now; 544-byte tiles,
    /// so about 3 KB ahead): as for the K-quant tiles (`k_quants`), the
    /// hardware's stream prefetcher stops at each 4 KiB page.
    const PREFETCH_TILES: usize = 6;

    /// The 16 outputs of one tile column (16 weight rows, all of k) for
    /// input rows `m0..m0 + rows` (at most [`MT`]), written to `out`
    /// [rows, 16]. Two blocks per step with their own integer sums, so the
    /// `vpdpbusd` chains interleave.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile_column(
        tiles: &[Tile],
        acts: &Activations,
        m0: usize,
        rows: usize,
        out: &mut [f32],
    ) {
        debug_assert!(rows <= MT && tiles.len() == acts.kb && out.len() == rows * TILE_ROWS);
        for_rows!(tile_rows, rows, (tiles, acts, m0, out))
    }

    /// [`tile_column`] for exactly `R` input rows (the row loops unrolled,
    /// the sums in registers).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VNNI.
    #[allow(clippy::needless_range_loop)] // index loops mirror the register tile
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn tile_rows<const R: usize>(
        tiles: &[Tile],
        acts: &Activations,
        m0: usize,
        out: &mut [f32],
    ) {
        let kb = acts.kb;
        let mut acc = [_mm512_setzero_ps(); R];
        for b in (0..kb).step_by(2) {
            let (t0, t1) = (&tiles[b], &tiles[b + 1]);
            let ahead = tiles.get(b + PREFETCH_TILES..).unwrap_or(&[]);
            let ahead = &ahead[..ahead.len().min(2)];
            let mut sum0 = [_mm512_setzero_si512(); R];
            let mut sum1 = [_mm512_setzero_si512(); R];
            for g in 0..QK / 4 {
                for ahead in ahead {
                    // SAFETY: a hint; the address lies in `ahead`'s 512
                    // bytes of `qs` (its scales share the last line's
                    // neighbour and come with the stream).
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.qs.as_ptr().add(g * 64).cast()) };
                }
                // SAFETY: 64 bytes at g · 64 lie inside the 512-byte `qs`.
                let w0 = unsafe { _mm512_loadu_si512(t0.qs.as_ptr().add(g * 64).cast()) };
                let w1 = unsafe { _mm512_loadu_si512(t1.qs.as_ptr().add(g * 64).cast()) };
                for i in 0..R {
                    let base = (m0 + i) * kb * QK;
                    sum0[i] = _mm512_dpbusd_epi32(
                        sum0[i],
                        w0,
                        broadcast4(&acts.qs, base + b * QK + g * 4),
                    );
                    sum1[i] = _mm512_dpbusd_epi32(
                        sum1[i],
                        w1,
                        broadcast4(&acts.qs, base + (b + 1) * QK + g * 4),
                    );
                }
            }
            for (blk, sums, tile) in [(b, &sum0, t0), (b + 1, &sum1, t1)] {
                // SAFETY: 16 f16 scales, 32 bytes.
                let dw = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(tile.d.as_ptr().cast()) });
                for i in 0..R {
                    let a = (m0 + i) * kb + blk;
                    let f =
                        _mm512_sub_ps(_mm512_cvtepi32_ps(sums[i]), _mm512_set1_ps(acts.offset[a]));
                    acc[i] =
                        _mm512_fmadd_ps(f, _mm512_mul_ps(dw, _mm512_set1_ps(acts.d[a])), acc[i]);
                }
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

    /// Q8_0 blocks of `w` [n, k] (llama.cpp's quantizer), as stored.
    fn blocks_of(w: &[f32]) -> Vec<u8> {
        let mut out = Vec::new();
        for block in w.chunks_exact(QK) {
            let amax = block.iter().fold(0f32, |a, v| a.max(v.abs()));
            let d = amax / 127.0;
            let inv = if d != 0.0 { 1.0 / d } else { 0.0 };
            out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
            out.extend(block.iter().map(|&v| (v * inv).round() as i8 as u8));
        }
        out
    }

    /// llama.cpp's Q8_0 × Q8_0 product in f64: per block the integer dot
    /// product times both scales.
    fn reference(blocks: &[u8], x: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
        let xq = blocks_of(x);
        let kb = k / QK;
        let block = |bytes: &[u8], i: usize| {
            let b = &bytes[i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES];
            let d = f64::from(f16::from_le_bytes([b[0], b[1]]).to_f32());
            (
                d,
                b[2..]
                    .iter()
                    .map(|&q| i32::from(q as i8))
                    .collect::<Vec<_>>(),
            )
        };
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..kb)
                    .map(|b| {
                        let (dw, w) = block(blocks, j * kb + b);
                        let (dx, a) = block(&xq, i * kb + b);
                        let dot: i32 = w.iter().zip(&a).map(|(p, q)| p * q).sum();
                        dw * dx * f64::from(dot)
                    })
                    .sum();
            }
        }
        out
    }

    /// The cap's values: each form's name (any case, spaces around), `off`,
    /// nothing; another value is refused with a message naming the
    /// variable.
    #[test]
    fn tile_cap_values() {
        assert_eq!(parse_cap(""), Ok(Some(0)));
        assert_eq!(parse_cap(" AVX2 "), Ok(Some(2)));
        assert_eq!(parse_cap("avxvnni"), Ok(Some(1)));
        assert_eq!(parse_cap("avx512vnni"), Ok(Some(0)));
        assert_eq!(parse_cap("Off"), Ok(None));
        let refused = parse_cap("avx-vnni").expect_err("not a form");
        assert!(
            refused.contains("WORLDLOOM_CPU_TILES=\"avx-vnni\""),
            "{refused}"
        );
    }

    /// Each form's quantizer gives the scalar one's bytes, scales and sums,
    /// halves included (rounded away from zero).
    #[test]
    fn simd_quantization_equals_scalar() {
        let k = 128;
        let mut x: Vec<f32> = (0..2 * k)
            .map(|i| ((i as f32 * 0.917).sin() * 517.3).fract() * 3.0)
            .collect();
        // Block 1: amax 127 (step 1), so 2.5 and −0.5 are exact halves.
        x[32] = 127.0;
        x[33] = 2.5;
        x[34] = -0.5;
        x[64..96].fill(0.0);
        let scalar = Activations::quantize_on(None, &x, 2, k);
        assert_eq!(&scalar.qs[32..35], &[127, 3, -1]);
        assert_eq!(scalar.d[1], 1.0);
        assert_eq!((scalar.d[2], scalar.offset[2]), (0.0, 0.0));
        for isa in TileIsa::ALL.into_iter().filter(|isa| isa.is_supported()) {
            let simd = Activations::quantize_on(Some(isa), &x, 2, k);
            assert_eq!(simd.qs, scalar.qs, "{isa:?}");
            assert_eq!(simd.d, scalar.d, "{isa:?}");
            assert_eq!(simd.offset, scalar.offset, "{isa:?}");
        }
    }

    /// Each kernel form's sums are llama.cpp's integer sums (only f32
    /// rounding differs), for every pass width, weights of several tiles
    /// and an input with outliers and an all-zero block.
    #[test]
    fn matches_llama_cpp_arithmetic() {
        if tile_isa().is_none() {
            return;
        }
        let (n, k) = (48, 256);
        let val = |i: usize, s: f32| ((i as f32 * 0.7312).sin() * 43758.545).fract() * s;
        let w: Vec<f32> = (0..n * k).map(|i| val(i, 0.05)).collect();
        let blocks = blocks_of(&w);
        let packed = PackedQ8_0::pack(&blocks, n, k).expect("packs");
        // The tiles are the blocks' size.
        assert_eq!(packed.tiles.len() * size_of::<Tile>(), blocks.len());
        // Every pass width 1..=MT (9 = 8 + 1, 13 = 8 + 5, 14 = 8 + 6, 15 = 8 + 7).
        for m in [1, 2, 3, 4, 9, 13, 14, 15] {
            let mut x: Vec<f32> = (0..m * k).map(|i| val(i + 7, 1.0)).collect();
            x[5] = 40.0;
            if m > 1 {
                x[k + 64..k + 96].fill(0.0);
            }
            let want = reference(&blocks, &x, m, n, k);
            let acts = Activations::quantize(&x, m, k);
            for isa in TileIsa::ALL.into_iter().filter(|isa| isa.is_supported()) {
                let got = packed.matmul_quantized_on(isa, &acts, true);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (f64::from(*g) - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{isa:?}, {m} rows: {g} against {w}"
                    );
                }
            }
        }
        assert!(PackedQ8_0::pack(&blocks, n, k - 32).is_none());
        assert!(PackedQ8_0::pack(&blocks[..blocks.len() - 1], n, k).is_none());
    }
}
