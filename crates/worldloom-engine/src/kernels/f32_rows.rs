//! `x @ wᵀ` for f32 `x` with few rows and an f32 `w` read in place, with
//! AVX2 + FMA: decode steps, the 2–33 positions of a verifying forward of
//! speculative decoding, and the small per-expert batches of a prefill.
//!
//! candle's f32 CPU matmul (the `gemm` crate) packs the whole weight
//! matrix on every call with more than one input row; for a few rows the
//! packing costs more than the product (a 2,048 × 128 head: 149 µs for 2
//! rows against 28 µs for one, on the 2-core test VM), and it wakes the
//! thread pool for products of a few microseconds. Here each output is a
//! dot product of two row-major rows, computed in tiles of [`MR`] input
//! rows × [`NR`] weight rows (`MR · NR` ymm accumulators, every load
//! sequential), the eight lanes summed at the end of the row, the `k`
//! tail after the last full 8 added in order. Each output's sum runs in
//! the same order whatever `m` is or which tile it lands in, so a
//! position's logits do not depend on how many positions a forward
//! carries. Weight rows go in tasks of [`COLS_PER_TASK`] over rayon when
//! the product is large enough to pay for waking the pool.
//!
//! Chosen at run time ([`available`]); the crate still builds for, and
//! runs on, baseline x86-64 and other architectures (candle's matmul
//! then). Allowed `unsafe`: the target-feature calls (entered only after
//! [`available`]) and the raw-pointer loads and stores whose bounds
//! [`matmul_bt`] asserts once.
#![allow(unsafe_code)]

use super::disjoint::PARALLEL_MIN_MACS;

/// Most rows of `x` this kernel takes; beyond them the packed gemm wins.
pub(crate) const MAX_ROWS: usize = 32;

/// Input rows of a tile.
const MR: usize = 4;

/// Weight rows of a tile.
const NR: usize = 2;

/// Weight rows of a task with one input row (a matrix-vector product):
/// tiles of 1 × `NR_ONE`.
const NR_ONE: usize = 4;

/// Weight rows per parallel task.
const COLS_PER_TASK: usize = 64;

/// Whether this CPU runs the kernel (AVX2 and FMA; read once by `std`).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// out [m, n] = x [m, k] · w [n, k]ᵀ, all row-major f32.
///
/// # Panics
/// When called where [`available`] is false, or when a slice is shorter
/// than its shape says.
pub(crate) fn matmul_bt(x: &[f32], w: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32]) {
    matmul_bt_on(x, w, (m, k, n), out, m * n * k >= PARALLEL_MIN_MACS);
}

/// [`matmul_bt`] on the calling thread (for callers already inside a pool
/// task).
///
/// # Panics
/// As [`matmul_bt`].
pub(crate) fn matmul_bt_serial(
    x: &[f32],
    w: &[f32],
    (m, k, n): (usize, usize, usize),
    out: &mut [f32],
) {
    matmul_bt_on(x, w, (m, k, n), out, false);
}

/// [`matmul_bt`] on the pool (`parallel`) or on the calling thread.
fn matmul_bt_on(
    x: &[f32],
    w: &[f32],
    (m, k, n): (usize, usize, usize),
    out: &mut [f32],
    parallel: bool,
) {
    assert!(available(), "AVX2/FMA kernel called on a CPU without it");
    assert!(x.len() >= m * k && w.len() >= n * k && out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("`available` is false off x86-64");
    #[cfg(target_arch = "x86_64")]
    {
        let ptr = super::disjoint::DisjointOut::new(out);
        let task = |task: usize| {
            let j0 = task * COLS_PER_TASK;
            let cols = COLS_PER_TASK.min(n - j0);
            // SAFETY: the feature check above; the bounds were asserted and
            // the block [0..m] × [j0..j0+cols] lies inside them; tasks write
            // disjoint columns of `out`.
            unsafe { imp::block(x, w, (m, k, n), (j0, cols), ptr.get()) };
        };
        super::disjoint::run_tasks(n.div_ceil(COLS_PER_TASK), parallel, task);
    }
}

/// The widths of an attention over a KV cache read in place ([`attend`],
/// and `cpu`'s one-query kernel).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttendShape {
    /// New query positions (the last `queries` of the `s` valid ones).
    pub queries: usize,
    /// Query heads.
    pub heads: usize,
    /// KV heads (dividing `heads`).
    pub kv_heads: usize,
    /// Positions the cache holds per KV head.
    pub capacity: usize,
    /// Valid positions (≥ `queries`, ≤ `capacity`).
    pub s: usize,
    /// Head width.
    pub hd: usize,
    /// Score scale (1/√hd in the models).
    pub scale: f32,
}

/// Causal attention of the last `queries` positions over the first `s`
/// positions of an f32 KV cache read in place: `q` [queries, heads, hd],
/// `k`, `v` [kv_heads, capacity, hd]; query i (absolute position
/// s − queries + i) sees keys `0..s − queries + i + 1`; query head h reads
/// KV head h / (heads / kv_heads). Returns [queries, heads, hd].
///
/// Per KV head, the query rows of its heads are one small matrix: the
/// scores are [`matmul_bt`]'s tiles (each cached K row loaded once for all
/// of them), an f32 softmax per row over the keys it sees, and each cached
/// V row is loaded once and added into every row's output. Sums in f32.
///
/// # Panics
/// Where [`available`] is false, or when the slices or widths disagree.
pub(crate) fn attend(q: &[f32], k: &[f32], v: &[f32], shape: AttendShape) -> Vec<f32> {
    let AttendShape {
        queries,
        heads,
        kv_heads,
        capacity,
        s,
        hd,
        scale,
    } = shape;
    assert!(available(), "AVX2/FMA kernel called on a CPU without it");
    assert!(heads % kv_heads == 0 && queries <= s && s <= capacity);
    assert!(q.len() == queries * heads * hd && k.len() >= kv_heads * capacity * hd);
    assert!(v.len() == k.len());
    let groups = heads / kv_heads;
    let rows = queries * groups;
    let mut out = vec![0f32; queries * heads * hd];
    let head = |g: usize| -> Vec<f32> {
        // Row r = i · groups + j: query i, head g · groups + j.
        let mut qg = vec![0f32; rows * hd];
        for (r, row) in qg.chunks_exact_mut(hd).enumerate() {
            let (i, j) = (r / groups, r % groups);
            let h = g * groups + j;
            row.copy_from_slice(&q[(i * heads + h) * hd..(i * heads + h + 1) * hd]);
        }
        let kg = &k[g * capacity * hd..(g * capacity + s) * hd];
        let vg = &v[g * capacity * hd..(g * capacity + s) * hd];
        let mut scores = vec![0f32; rows * s];
        for r0 in (0..rows).step_by(MAX_ROWS) {
            let m = MAX_ROWS.min(rows - r0);
            matmul_bt_on(
                &qg[r0 * hd..(r0 + m) * hd],
                kg,
                (m, hd, s),
                &mut scores[r0 * s..(r0 + m) * s],
                false,
            );
        }
        let mut seen = Vec::with_capacity(rows);
        for (r, row) in scores.chunks_exact_mut(s).enumerate() {
            let n = s - queries + r / groups + 1;
            let row = &mut row[..n];
            let max = row.iter().fold(f32::NEG_INFINITY, |a, &x| a.max(x * scale));
            let mut sum = 0f32;
            for x in row.iter_mut() {
                *x = (*x * scale - max).exp();
                sum += *x;
            }
            for x in row.iter_mut() {
                *x /= sum;
            }
            seen.push(n);
        }
        let mut og = vec![0f32; rows * hd];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the feature check above (the slices are bounds-checked).
        unsafe {
            imp::weighted_rows(&scores, vg, &seen, (s, hd), &mut og);
        }
        og
    };
    let outs: Vec<Vec<f32>> = if queries * heads * s * hd * 2 >= PARALLEL_MIN_MACS {
        use rayon::prelude::*;
        (0..kv_heads).into_par_iter().map(head).collect()
    } else {
        (0..kv_heads).map(head).collect()
    };
    for (g, og) in outs.iter().enumerate() {
        for (r, row) in og.chunks_exact(hd).enumerate() {
            let (i, j) = (r / groups, r % groups);
            let h = g * groups + j;
            out[(i * heads + h) * hd..(i * heads + h + 1) * hd].copy_from_slice(row);
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::x86_64::*;

    use super::{MR, NR, NR_ONE};

    /// Columns `j0..j0 + cols` of out [m, n] for all `m` rows, in tiles
    /// of [`MR`] rows, the last 1–3 rows in one tile of their height.
    ///
    /// # Safety
    /// AVX2 and FMA present; `x` holds m·k, `w` n·k values and `out`
    /// points at m·n writable values of which this call alone writes
    /// columns `j0..j0 + cols` (j0 + cols ≤ n).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn block(
        x: &[f32],
        w: &[f32],
        (m, k, n): (usize, usize, usize),
        (j0, cols): (usize, usize),
        out: *mut f32,
    ) {
        let x = x.as_ptr();
        let w = w.as_ptr();
        let end = j0 + cols;
        // SAFETY (every `tile` call below): the caller's bounds, and each
        // tile's rows i..i + R ≤ m and columns j..j + C ≤ end.
        if m == 1 {
            let mut j = j0;
            while j + NR_ONE <= end {
                unsafe { tile::<1, NR_ONE>(x, w, k, n, (0, j), out) };
                j += NR_ONE;
            }
            while j < end {
                unsafe { tile::<1, 1>(x, w, k, n, (0, j), out) };
                j += 1;
            }
            return;
        }
        let mut j = j0;
        while j < end {
            let nr = NR.min(end - j);
            let mut i = 0;
            while i + MR <= m {
                if nr == NR {
                    unsafe { tile::<MR, NR>(x, w, k, n, (i, j), out) };
                } else {
                    unsafe { tile::<MR, 1>(x, w, k, n, (i, j), out) };
                }
                i += MR;
            }
            // The last 1–3 rows in one tile of their own height.
            match (m - i, nr == NR) {
                (3, true) => unsafe { tile::<3, NR>(x, w, k, n, (i, j), out) },
                (3, false) => unsafe { tile::<3, 1>(x, w, k, n, (i, j), out) },
                (2, true) => unsafe { tile::<2, NR>(x, w, k, n, (i, j), out) },
                (2, false) => unsafe { tile::<2, 1>(x, w, k, n, (i, j), out) },
                (1, true) => unsafe { tile::<1, NR>(x, w, k, n, (i, j), out) },
                (1, false) => unsafe { tile::<1, 1>(x, w, k, n, (i, j), out) },
                _ => {}
            }
            j += nr;
        }
    }

    /// out[i + a][j + b] = x row i + a · w row j + b for a < R, b < C:
    /// R·C accumulators of 8 lanes over the full eights of `k`, the lanes
    /// summed by [`hsum`], then the tail in order.
    ///
    /// # Safety
    /// As [`block`], with the R × C tile inside the shapes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile<const R: usize, const C: usize>(
        x: *const f32,
        w: *const f32,
        k: usize,
        n: usize,
        (i, j): (usize, usize),
        out: *mut f32,
    ) {
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let full = k / 8 * 8;
        let mut p = 0;
        while p < full {
            let mut wv = [_mm256_setzero_ps(); C];
            for (b, v) in wv.iter_mut().enumerate() {
                // SAFETY: weight row j + b < n, columns p..p + 8 ≤ k.
                *v = unsafe { _mm256_loadu_ps(w.add((j + b) * k + p)) };
            }
            for (a, row) in acc.iter_mut().enumerate() {
                // SAFETY: input row i + a < m, columns p..p + 8 ≤ k.
                let xv = unsafe { _mm256_loadu_ps(x.add((i + a) * k + p)) };
                for (b, s) in row.iter_mut().enumerate() {
                    *s = _mm256_fmadd_ps(xv, wv[b], *s);
                }
            }
            p += 8;
        }
        for (a, row) in acc.iter().enumerate() {
            for (b, s) in row.iter().enumerate() {
                let mut sum = hsum(*s);
                for q in full..k {
                    // SAFETY: column q < k of rows inside the shapes.
                    sum += unsafe { *x.add((i + a) * k + q) * *w.add((j + b) * k + q) };
                }
                // SAFETY: (i + a, j + b) lies in this call's columns.
                unsafe { *out.add((i + a) * n + j + b) = sum };
            }
        }
    }

    /// The eight lanes of `v` summed in a fixed order: (0+4, 1+5, 2+6,
    /// 3+7), then halves again.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        let one = _mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 0b01));
        _mm_cvtss_f32(one)
    }

    /// out row r = Σ_{j < seen[r]} p[r][j] · v row j, for p [rows, s], v
    /// [s, hd]: each V row loaded once for all rows (the loops vectorise
    /// over `hd` under the enabled features).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn weighted_rows(
        p: &[f32],
        v: &[f32],
        seen: &[usize],
        (s, hd): (usize, usize),
        out: &mut [f32],
    ) {
        for (j, vrow) in v.chunks_exact(hd).enumerate().take(s) {
            for (r, orow) in out.chunks_exact_mut(hd).enumerate() {
                if j < seen[r] {
                    let a = p[r * s + j];
                    for (o, x) in orow.iter_mut().zip(vrow) {
                        *o = a.mul_add(*x, *o);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against f64 sums for every tile shape and tail: row counts 1–9 and
    /// 32, weight rows not a multiple of a tile or a task, `k` with and
    /// without a tail, on and off the pool; a row's output equal bit for
    /// bit whatever rows come with it.
    #[test]
    fn matches_f64_sums_for_every_tile_and_tail() {
        if !available() {
            return;
        }
        let mut seed = 11u64;
        let mut draw = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        };
        for (n, k) in [(7, 13), (131, 64), (1030, 300)] {
            let w: Vec<f32> = (0..n * k).map(|_| draw()).collect();
            let x: Vec<f32> = (0..MAX_ROWS * k).map(|_| draw()).collect();
            let mut alone = vec![0f32; n];
            matmul_bt(&x[2 * k..3 * k], &w, (1, k, n), &mut alone);
            for m in [1, 2, 3, 4, 5, 9, MAX_ROWS] {
                let mut out = vec![f32::NAN; m * n];
                matmul_bt(&x, &w, (m, k, n), &mut out);
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k)
                            .map(|q| f64::from(x[i * k + q]) * f64::from(w[j * k + q]))
                            .sum();
                        let got = out[i * n + j];
                        assert!(
                            (f64::from(got) - want).abs() < 1e-4,
                            "{n}x{k} m={m} ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
                if m > 2 {
                    assert_eq!(&out[2 * n..3 * n], &alone[..], "{n}x{k} m={m}");
                }
            }
        }
    }
}
