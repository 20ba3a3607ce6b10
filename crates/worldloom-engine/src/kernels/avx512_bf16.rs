//! `x @ wᵀ` for bf16 `x` and bf16 `w` with AVX512-BF16's `vdpbf16ps`, for
//! every row count (decode, per-expert batches, prefill).
//!
//! `vdpbf16ps` multiplies 32 bf16 pairs and adds each neighbouring pair of
//! products into one of 16 f32 lanes. A bf16 × bf16 product is exact in
//! f32, so this is the f32 dot product of the widened operands up to the
//! order of the additions (and denormal inputs read as zero, which
//! `vdpbf16ps` does by definition). Results are rounded to bf16 once, as
//! candle's `to_dtype` does (round to nearest even).
//!
//! Two blockings, by input row:
//! - groups of 16 rows (prefill, expert batches; a last partial group of
//!   at least [`PACK_MIN_ROWS`]): an outer product.
//!   `x` is packed once per call into groups of 16 rows whose `k` pairs
//!   are interleaved (one 64-byte line holds pair `p` of all 16 rows: the
//!   16 f32 lanes are 16 input rows). A tile of up to [`RB`] such groups
//!   × [`CB`] weight rows keeps `RB·CB` zmm accumulators; each `k` pair
//!   loads the tile's packed lines and broadcasts one bf16 pair of each
//!   weight row, read in place from its row-major storage (the weight is
//!   never copied). Every load is sequential and no horizontal sum is
//!   taken. `CB` stays at 8 because weight rows of 2,048 bf16 lie 4 KiB
//!   apart, so all of a tile's rows share one L1 set: 14 rows (12 ways)
//!   evicted each other and ran 25 % slower.
//! - the other rows (decode, the rest of a batch): inner-product tiles of
//!   [`MR`] × [`NR`] dot products (1 × [`NR_ONE`] for one row) read
//!   straight from both row-major operands; a decode step reads each
//!   weight once and is bound by memory.
//!
//! Input rows go in blocks of [`ROW_BLOCK`] (kept in L2), weight rows in
//! tasks of [`COLS_PER_TASK`] over rayon, so each weight row is read from
//! memory once per row block.
//!
//! Chosen at run time ([`available`]); the crate still builds for, and
//! runs on, baseline x86-64 and other architectures.
//!
//! This is the one module of the workspace that allows `unsafe`: the
//! AVX512-BF16 intrinsics have no safe wrapper (neither in `std::arch` nor
//! in `pulp`). The unsafe surface is the target-feature calls (entered only
//! after [`available`]) and raw-pointer tile loads and stores whose bounds
//! [`matmul_bt`] asserts once; every block says why it holds.
#![allow(unsafe_code)]
// Off x86-64 only `available` (false) is reachable.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused_variables))]

use half::bf16;

/// Input rows per tile.
const MR: usize = 4;
/// Weight rows per tile.
const NR: usize = 4;
/// Weight rows per tile when there is a single input row.
const NR_ONE: usize = 8;
/// Input rows processed per pass over the weight (512 KiB of bf16 at
/// k = 2048: stays in L2 while every weight row of a task meets it).
const ROW_BLOCK: usize = 128;
/// Weight rows per parallel task (a multiple of [`CB`] and of `NR`).
const COLS_PER_TASK: usize = 56;
/// A partial group of this many rows (of 16) or more goes packed: below,
/// the lanes it would leave empty cost more than the inner-product tiles
/// (measured on Emerald Rapids: a full group runs at ~88 % of the
/// `vdpbf16ps` throughput, the inner-product tiles at 60–75 %).
const PACK_MIN_ROWS: usize = 12;
/// Packed 16-row groups per outer-product tile (zmm of input rows).
const RB: usize = 3;
/// Weight rows per outer-product tile (at most 8: see the module docs).
const CB: usize = 8;

/// Whether this CPU has AVX-512 F/BW and AVX512-BF16 (checked once by the
/// standard library and cached).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// out [m, n] = x [m, k] · w [n, k]ᵀ, all row-major; sums in f32, the
/// result rounded to bf16. The weight rows go in tasks over rayon with
/// `parallel`, else all on the calling thread (for callers that already
/// run one task per matmul); the values are the same either way.
///
/// # Panics
/// If a slice is shorter than its shape or [`available`] is false (the
/// caller checks it).
pub fn matmul_bt(
    x: &[bf16],
    w: &[bf16],
    (m, k, n): (usize, usize, usize),
    out: &mut [bf16],
    parallel: bool,
) {
    assert!(available(), "AVX512-BF16 kernel called on a CPU without it");
    assert!(x.len() >= m * k && w.len() >= n * k && out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("`available` is false off x86-64");
    #[cfg(target_arch = "x86_64")]
    {
        let ptr = super::disjoint::DisjointOut::new(out);
        let tasks = n.div_ceil(COLS_PER_TASK);
        // Whole 16-row groups go packed; a last partial group too when it
        // would fill at least `PACK_MIN_ROWS` of its 16 lanes, else its
        // rows take the inner-product tiles.
        let packed_rows = if m % 16 >= PACK_MIN_ROWS {
            m
        } else {
            m / 16 * 16
        };
        let xp = pack_rows(x, packed_rows, k);
        for i0 in (0..m).step_by(ROW_BLOCK) {
            let rows = ROW_BLOCK.min(m - i0);
            let split = packed_rows.clamp(i0, i0 + rows);
            let task = |task: usize| {
                let j0 = task * COLS_PER_TASK;
                let cols = COLS_PER_TASK.min(n - j0);
                // SAFETY: the feature check above; the bounds were asserted,
                // `xp` packs rows 0..packed_rows ⊇ i0..split, and the block
                // [i0..i0+rows] × [j0..j0+cols] lies inside them; tasks
                // write disjoint columns of `out`.
                unsafe {
                    let span = |i0, rows| imp::Span {
                        k,
                        n,
                        i0,
                        rows,
                        j0,
                        cols,
                        out: ptr.get(),
                    };
                    if split > i0 {
                        imp::packed_block(&xp, w, span(i0, split - i0));
                    }
                    if split < i0 + rows {
                        imp::block(x, w, span(split, i0 + rows - split));
                    }
                };
            };
            super::disjoint::run_tasks(tasks, parallel, task);
        }
    }
}

/// `x` [m, k] in groups of 16 rows with their `k` pairs interleaved: the
/// `u32` at `(g·⌈k/2⌉ + p)·16 + l` holds elements `2p` (low half) and
/// `2p + 1` (high half, zero past `k`) of row `16g + l` (zero past `m`) —
/// the layout of one `vdpbf16ps` operand whose 16 lanes are 16 rows.
fn pack_rows(x: &[bf16], m: usize, k: usize) -> Vec<u32> {
    let kp = k.div_ceil(2);
    let mut out = vec![0u32; m.div_ceil(16) * kp * 16];
    for (i, row) in x.chunks_exact(k).take(m).enumerate() {
        let base = (i / 16) * kp * 16 + i % 16;
        for (p, pair) in row.chunks(2).enumerate() {
            let hi = pair.get(1).map_or(0, |v| u32::from(v.to_bits()));
            out[base + p * 16] = u32::from(pair[0].to_bits()) | hi << 16;
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
pub(super) mod imp {
    use super::{CB, MR, NR, NR_ONE, RB};
    use half::bf16;
    use std::arch::x86_64::*;

    /// 32 bf16 from `p` (only the first `mask` bits' lanes; the others 0).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn load(p: *const bf16, mask: __mmask32) -> __m512bh {
        // SAFETY: masked lanes are not read; the caller keeps the unmasked
        // ones in bounds.
        let v = unsafe { _mm512_maskz_loadu_epi16(mask, p.cast::<i16>()) };
        // SAFETY: same size, both plain bit vectors.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// The [R × C] dot products of rows `x + i·k` and `w + j·k` (length
    /// `k`), written as bf16 to `out + i·ldo + j`.
    #[inline]
    #[allow(clippy::needless_range_loop)] // index loops mirror the register tile
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn tile<const R: usize, const C: usize>(
        x: *const bf16,
        w: *const bf16,
        k: usize,
        out: *mut bf16,
        ldo: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        let full = k / 32;
        let rem = k % 32;
        let all: __mmask32 = u32::MAX;
        for c in 0..full {
            let off = c * 32;
            if R == 1 {
                // One input row (decode): the next tile's C weight rows at
                // this offset. At k = 2,048 a weight row is one 4 KiB page
                // and the stream prefetcher starts over at every page.
                // `wrapping_add` (past the last tile the address may lie
                // outside `w`: a prefetch is a hint and never faults).
                for j in 0..C {
                    let ahead = w.wrapping_add((C + j) * k + off);
                    _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
                }
            }
            let mut xv = [unsafe { load(x, 0) }; R];
            for (i, v) in xv.iter_mut().enumerate() {
                // SAFETY: row i, columns off..off + 32 < k.
                *v = unsafe { load(x.add(i * k + off), all) };
            }
            for j in 0..C {
                // SAFETY: as above for weight row j.
                let wv = unsafe { load(w.add(j * k + off), all) };
                for i in 0..R {
                    acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
                }
            }
        }
        if rem > 0 {
            let mask: __mmask32 = (1u32 << rem) - 1;
            let off = full * 32;
            for j in 0..C {
                // SAFETY: only the first `rem` lanes, all before k.
                let wv = unsafe { load(w.add(j * k + off), mask) };
                for i in 0..R {
                    let xv = unsafe { load(x.add(i * k + off), mask) };
                    acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv);
                }
            }
        }
        for (i, row) in acc.iter().enumerate() {
            for (j, a) in row.iter().enumerate() {
                // SAFETY: the caller keeps (i, j) inside the output.
                unsafe { *out.add(i * ldo + j) = bf16::from_f32(_mm512_reduce_add_ps(*a)) };
            }
        }
    }

    /// The 512 bits as the bf16-pair operand type.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn bh(v: __m512i) -> __m512bh {
        // SAFETY: same size, both plain bit vectors.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// 16 f32 lanes rounded to bf16 bits (nearest even; NaN kept quiet), as
    /// `half::bf16::from_f32` does lane by lane (the AMX path rounds its
    /// sums with it too).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(in crate::kernels) fn round_bf16(a: __m512) -> __m256i {
        let x = _mm512_castps_si512(a);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
        let up = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
        let quiet = _mm512_or_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(0x40));
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a);
        let bits = _mm512_mask_blend_epi32(nan, _mm512_srli_epi32::<16>(up), quiet);
        _mm512_cvtepi32_epi16(bits)
    }

    /// The outer-product tile: output rows `0..rows` (≤ 16·G, the rows of
    /// `G` packed groups from `xg`, `gs` `u32`s apart) × weight rows
    /// `w + c·k` for `c < C`, written as bf16 to `out + i·ldo + c`.
    #[inline]
    #[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    unsafe fn outer<const G: usize, const C: usize>(
        xg: *const u32,
        gs: usize,
        w: *const bf16,
        k: usize,
        out: *mut bf16,
        ldo: usize,
        rows: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); G]; C];
        let mut xv = [bh(_mm512_setzero_si512()); G];
        let pairs = k / 2;
        for p in 0..pairs {
            for g in 0..G {
                // SAFETY: group g's line p lies inside the packed rows.
                xv[g] = bh(unsafe { _mm512_loadu_si512(xg.add(g * gs + p * 16).cast()) });
            }
            for c in 0..C {
                // SAFETY: elements 2p, 2p + 1 < k of weight row c.
                let pair = unsafe { w.add(c * k + 2 * p).cast::<u32>().read_unaligned() };
                let wb = bh(_mm512_set1_epi32(pair as i32));
                for g in 0..G {
                    acc[c][g] = _mm512_dpbf16_ps(acc[c][g], xv[g], wb);
                }
            }
        }
        if k % 2 == 1 {
            for g in 0..G {
                // SAFETY: the packed rows hold ⌈k/2⌉ pairs.
                xv[g] = bh(unsafe { _mm512_loadu_si512(xg.add(g * gs + pairs * 16).cast()) });
            }
            for c in 0..C {
                // SAFETY: the last element of weight row c.
                let last = unsafe { *w.add(c * k + k - 1) };
                let wb = bh(_mm512_set1_epi32(i32::from(last.to_bits())));
                for g in 0..G {
                    acc[c][g] = _mm512_dpbf16_ps(acc[c][g], xv[g], wb);
                }
            }
        }
        let mut lanes = [0u16; 16];
        for c in 0..C {
            for g in 0..G {
                let valid = rows.saturating_sub(g * 16).min(16);
                // SAFETY: 32 bytes into a 16-lane u16 array.
                unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), round_bf16(acc[c][g])) };
                for (l, &b) in lanes.iter().enumerate().take(valid) {
                    // SAFETY: row g·16 + l < rows and column c < C lie
                    // inside the output (the caller's bounds).
                    unsafe { *out.add((g * 16 + l) * ldo + c) = bf16::from_bits(b) };
                }
            }
        }
    }

    /// `outer::<G, C>` for a run-time `C` in `1..=max`.
    macro_rules! outer_dispatch {
        ($g:literal, $c:expr, $args:tt, $($n:literal)*) => {
            match $c {
                $($n => outer::<$g, $n> $args,)*
                c => unreachable!("tile of {c} weight rows"),
            }
        };
    }

    /// Where a task writes: output rows `i0..i0 + rows` × columns
    /// `j0..j0 + cols` of `out` [_, n] (row stride `n`), inner size `k`.
    #[derive(Clone, Copy)]
    pub(super) struct Span {
        pub(super) k: usize,
        pub(super) n: usize,
        pub(super) i0: usize,
        pub(super) rows: usize,
        pub(super) j0: usize,
        pub(super) cols: usize,
        pub(super) out: *mut bf16,
    }

    /// The `span` of out [_, n] = x [_, k] · w [n, k]ᵀ with `x` packed by
    /// [`super::pack_rows`]; `span.i0` is a multiple of 16.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and AVX512-BF16; `xp` packs every row of
    /// the block; the block lies inside `w` and `out` (stride `n`); nobody
    /// else writes it meanwhile.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn packed_block(xp: &[u32], w: &[bf16], span: Span) {
        let Span {
            k,
            n,
            i0,
            rows,
            j0,
            cols,
            out,
        } = span;
        debug_assert_eq!(i0 % 16, 0);
        let gs = k.div_ceil(2) * 16;
        let (xq, wp) = (xp.as_ptr(), w.as_ptr());
        let mut j = j0;
        while j < j0 + cols {
            let c = CB.min(j0 + cols - j);
            let mut i = i0;
            while i < i0 + rows {
                let r = (RB * 16).min(i0 + rows - i);
                // SAFETY: groups i/16 .. i/16 + ⌈r/16⌉ lie inside `xp`;
                // weight rows j..j + c and output rows i..i + r inside the
                // block.
                unsafe {
                    let (xg, wj, o) = (xq.add(i / 16 * gs), wp.add(j * k), out.add(i * n + j));
                    match r.div_ceil(16) {
                        1 => outer_dispatch!(1, c, (xg, gs, wj, k, o, n, r), 1 2 3 4 5 6 7 8),
                        2 => outer_dispatch!(2, c, (xg, gs, wj, k, o, n, r), 1 2 3 4 5 6 7 8),
                        _ => outer_dispatch!(3, c, (xg, gs, wj, k, o, n, r), 1 2 3 4 5 6 7 8),
                    }
                }
                i += r;
            }
            j += c;
        }
    }

    /// The `span` of out [_, n] = x [_, k] · w [n, k]ᵀ.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and AVX512-BF16; the block lies inside
    /// `x`, `w` and `out` (stride `n`); nobody else writes it meanwhile.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn block(x: &[bf16], w: &[bf16], span: Span) {
        let Span {
            k,
            n,
            i0,
            rows,
            j0,
            cols,
            out,
        } = span;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        // SAFETY (all calls below): tiles stay inside the block.
        unsafe {
            if rows == 1 {
                let xr = xp.add(i0 * k);
                let o = out.add(i0 * n);
                let mut j = j0;
                while j + NR_ONE <= j0 + cols {
                    tile::<1, NR_ONE>(xr, wp.add(j * k), k, o.add(j), n);
                    j += NR_ONE;
                }
                while j < j0 + cols {
                    tile::<1, 1>(xr, wp.add(j * k), k, o.add(j), n);
                    j += 1;
                }
                return;
            }
            let mut j = j0;
            while j < j0 + cols {
                let c = NR.min(j0 + cols - j);
                let wj = wp.add(j * k);
                let mut i = i0;
                while i < i0 + rows {
                    let r = MR.min(i0 + rows - i);
                    let (xi, o) = (xp.add(i * k), out.add(i * n + j));
                    match (r, c) {
                        (MR, NR) => tile::<MR, NR>(xi, wj, k, o, n),
                        (MR, _) => {
                            for jj in 0..c {
                                tile::<MR, 1>(xi, wj.add(jj * k), k, o.add(jj), n);
                            }
                        }
                        (_, NR) => {
                            for ii in 0..r {
                                tile::<1, NR>(xi.add(ii * k), wj, k, o.add(ii * n), n);
                            }
                        }
                        _ => {
                            for ii in 0..r {
                                for jj in 0..c {
                                    tile::<1, 1>(
                                        xi.add(ii * k),
                                        wj.add(jj * k),
                                        k,
                                        o.add(ii * n + jj),
                                        n,
                                    );
                                }
                            }
                        }
                    }
                    i += r;
                }
                j += c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against an f64 reference of the widened operands, for decode,
    /// expert-batch and prefill row counts and lengths that are not
    /// multiples of 32 (masked tails) or of 2 (the packed pairs' zero
    /// half), with tile remainders on both sides: rows all inner-product
    /// (m < 12), all packed (whole groups, a last group of ≥ 12 rows, tiles
    /// of 1–3 groups), and packed groups followed by inner-product rows,
    /// across a row-block boundary; on one thread the same bits as over
    /// rayon.
    #[test]
    fn matches_widened_reference() {
        if !available() {
            eprintln!("no AVX512-BF16 on this CPU: kernel not exercised");
            return;
        }
        let mut seed = 0x2545_f491_u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bf16::from_f32((seed % 20_001) as f32 / 10_000.0 - 1.0)
        };
        for &(m, k, n) in &[
            (1, 64, 40),
            (1, 37, 9),
            (3, 100, 7),
            (5, 2048, 13),
            (16, 96, 33),
            (7, 64, 29),
            (8, 33, 57),
            (17, 2048, 61),
            (45, 511, 30),
            (28, 2049, 9),
            (130, 70, 41),
            (150, 64, 113),
        ] {
            let x: Vec<bf16> = (0..m * k).map(|_| rnd()).collect();
            let w: Vec<bf16> = (0..n * k).map(|_| rnd()).collect();
            let mut out = vec![bf16::ZERO; m * n];
            matmul_bt(&x, &w, (m, k, n), &mut out, true);
            let mut serial = vec![bf16::ZERO; m * n];
            matmul_bt(&x, &w, (m, k, n), &mut serial, false);
            assert_eq!(out, serial, "m={m} k={k} n={n}: on one thread");
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| f64::from(x[i * k + p]) * f64::from(w[j * k + p]))
                        .sum();
                    let got = f64::from(out[i * n + j]);
                    // bf16 rounding of the result (2⁻⁸ relative) plus f32
                    // summation error.
                    let tol = want.abs() / 256.0 + 1e-4 * k as f64;
                    assert!(
                        (got - want).abs() <= tol,
                        "m={m} k={k} n={n} ({i},{j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}
