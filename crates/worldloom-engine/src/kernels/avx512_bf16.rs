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
//! Blocking: the output is computed in tiles of [`MR`] input rows × [`NR`]
//! weight rows held in 16 zmm accumulators, reading both operands along
//! `k` straight from their row-major storage (no packing: both are
//! contiguous along `k`). Input rows go in blocks of [`ROW_BLOCK`] (kept in
//! L2), weight rows in tasks of [`COLS_PER_TASK`] over rayon, so each weight
//! row is read from memory once per row block. One input row (decode) uses
//! a 1 × 8 tile: the step reads each weight once and is bound by memory.
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
/// Weight rows per parallel task.
const COLS_PER_TASK: usize = 32;

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

/// A raw output pointer shared by tasks that write disjoint elements.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct OutPtr(*mut bf16);
// SAFETY: every task writes a disjoint set of output columns.
#[cfg(target_arch = "x86_64")]
unsafe impl Send for OutPtr {}
#[cfg(target_arch = "x86_64")]
unsafe impl Sync for OutPtr {}

#[cfg(target_arch = "x86_64")]
impl OutPtr {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    fn get(self) -> *mut bf16 {
        self.0
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
        use rayon::prelude::*;
        let ptr = OutPtr(out.as_mut_ptr());
        let tasks = n.div_ceil(COLS_PER_TASK);
        for i0 in (0..m).step_by(ROW_BLOCK) {
            let rows = ROW_BLOCK.min(m - i0);
            let task = |task: usize| {
                let j0 = task * COLS_PER_TASK;
                let cols = COLS_PER_TASK.min(n - j0);
                // SAFETY: the feature check above; the bounds were asserted
                // and the block [i0..i0+rows] × [j0..j0+cols] lies inside
                // them; tasks write disjoint columns of `out`.
                unsafe { imp::block(x, w, k, n, i0, rows, j0, cols, ptr.get()) };
            };
            if parallel {
                (0..tasks).into_par_iter().for_each(task);
            } else {
                (0..tasks).for_each(task);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::{MR, NR, NR_ONE};
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

    /// Output rows `i0..i0 + rows` × columns `j0..j0 + cols` of
    /// out [_, n] = x [_, k] · w [n, k]ᵀ.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and AVX512-BF16; the block lies inside
    /// `x`, `w` and `out` (stride `n`); nobody else writes it meanwhile.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn block(
        x: &[bf16],
        w: &[bf16],
        k: usize,
        n: usize,
        i0: usize,
        rows: usize,
        j0: usize,
        cols: usize,
        out: *mut bf16,
    ) {
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
    /// multiples of 32 (masked tails), with tile remainders on both sides;
    /// on one thread the same bits as over rayon.
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
            (130, 70, 41),
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
