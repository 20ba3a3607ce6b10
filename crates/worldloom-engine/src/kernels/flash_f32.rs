//! Causal attention of a prompt piece (many query positions) over an f32
//! KV cache read in place, in key tiles with a running softmax — the
//! schedule of FlashAttention (Dao et al. 2022, arXiv 2205.14135,
//! Algorithm 1) on AVX-512 vectors.
//!
//! The batched form (`qwen3_5_moe::attention::attend`) materialises the
//! scores of a query block ([heads, block, keys] f32, tens of MB at a few
//! thousand keys), adds a mask, exponentiates with the scalar `expf` and
//! reads them back for the product with V: several passes over memory per
//! block, on candle's f32 gemm. Here one task holds the query rows that
//! share one KV head for a few positions (about [`ROWS`] rows: positions ×
//! the heads reading that KV head) and walks the keys they see in tiles of
//! [`KEYS`]:
//! 1. the tile's scores, from K transposed once per call into tile panels
//!    [hd, KEYS] (so a tile is broadcast-and-FMA, no horizontal sums);
//! 2. per row, the causal limit, a running max and sum, and the tile's
//!    probabilities by a vector `exp2` (queries are pre-scaled by
//!    scale · log2 e, so exp(scale · q·k − m) is one `exp2`); a row's
//!    output is rescaled when its max grows;
//! 3. the probabilities times the tile's V rows (read in place) added into
//!    the rows' outputs.
//!
//! Scores never leave the core's caches, and the work past a row's causal
//! limit is at most one tile. Sums in f32; `exp2` is a degree-7 polynomial
//! on [−½, ½] scaled by `vscalefps` (relative error below 1e-7).
//!
//! Chosen at run time ([`available`], [`takes`]). Allowed `unsafe`: the
//! target-feature calls (entered only after [`available`]), the
//! raw-pointer loads and stores whose bounds [`attend`] asserts, and the
//! disjoint writes of each task's rows into the output.
#![allow(unsafe_code)]

use super::disjoint::{DisjointOut, PARALLEL_MIN_MACS, run_chunks, run_tasks};
use super::f32_rows::AttendShape;

/// Keys per tile: two 16-lane vectors of scores a row.
const KEYS: usize = 32;
/// Query rows a task aims for (positions × the heads of one KV head).
const ROWS: usize = 32;
/// Rows of the score micro-tile (8 rows × 2 vectors of accumulators).
const MR_QK: usize = 8;
/// Rows of the probabilities × V micro-tile (4 rows × 4 vectors).
const MR_PV: usize = 4;

/// Whether this CPU runs [`attend`] (AVX-512F).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`attend`] takes heads of width `hd`: whole 16-lane vectors.
pub(crate) fn takes(hd: usize) -> bool {
    hd > 0 && hd.is_multiple_of(16)
}

/// Causal attention of the last `queries` positions over the first `s`
/// positions of an f32 KV cache read in place: `q` [queries, heads, hd],
/// `k`, `v` [kv_heads, capacity, hd]; query i (absolute position
/// s − queries + i) sees keys `0..s − queries + i + 1`; query head h reads
/// KV head h / (heads / kv_heads). Returns [queries, heads, hd].
///
/// Memory: the transposed K panels (kv_heads · ⌈s / 32⌉ · 32 · hd f32, the
/// size of the K cache's valid part) and per task ~2 · 32 · hd f32.
///
/// # Panics
/// Where [`available`] or [`takes`] is false, or when the slices or
/// widths disagree.
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
    assert!(available(), "AVX-512F kernel called on a CPU without it");
    assert!(takes(hd), "head width {hd} is not whole 16-lane vectors");
    assert!(kv_heads > 0 && heads % kv_heads == 0 && queries <= s && s <= capacity);
    assert!(q.len() == queries * heads * hd && k.len() >= kv_heads * capacity * hd);
    assert!(v.len() == k.len());
    let mut out = vec![0f32; queries * heads * hd];
    if queries == 0 {
        return out;
    }
    let groups = heads / kv_heads;
    let per_task = (ROWS / groups).max(1);
    let blocks = queries.div_ceil(per_task);
    let tiles = s.div_ceil(KEYS);
    let parallel = queries * heads * s * hd >= PARALLEL_MIN_MACS;

    // K of each KV head as tile panels [tiles, hd, KEYS], zeros past `s`.
    let panel = hd * KEYS;
    let mut kt = vec![0f32; kv_heads * tiles * panel];
    run_chunks(&mut kt, panel, parallel, |(i, p)| {
        let (g, k0) = (i / tiles, (i % tiles) * KEYS);
        for c in 0..KEYS.min(s - k0) {
            let row = &k[(g * capacity + k0 + c) * hd..][..hd];
            for (d, &x) in row.iter().enumerate() {
                p[d * KEYS + c] = x;
            }
        }
    });

    let pre = scale * std::f32::consts::LOG2_E;
    let dst = DisjointOut::new(&mut out);
    // Later positions see more keys: they go first, so the pool's last
    // tasks are the short ones.
    run_tasks(kv_heads * blocks, parallel, |task| {
        let (g, b) = (task % kv_heads, blocks - 1 - task / kv_heads);
        let first = b * per_task;
        let positions = per_task.min(queries - first);
        let rows = positions * groups;
        let padded = rows.next_multiple_of(MR_QK);
        // Row r = i · groups + j: position first + i, head g · groups + j.
        let mut qg = vec![0f32; padded * hd];
        let mut limits = Vec::with_capacity(rows);
        for (r, row) in qg.chunks_exact_mut(hd).take(rows).enumerate() {
            let (i, h) = (r / groups, g * groups + r % groups);
            let src = &q[((first + i) * heads + h) * hd..][..hd];
            for (x, &y) in row.iter_mut().zip(src) {
                *x = y * pre;
            }
            limits.push(s - queries + first + i + 1);
        }
        let vg = &v[g * capacity * hd..(g * capacity + s) * hd];
        let panels = &kt[g * tiles * panel..(g + 1) * tiles * panel];
        // SAFETY: `available` was asserted; `qg` holds `padded` rows of
        // `hd`, `panels` the tiles of every key up to the last limit (≤ s),
        // `vg` s rows of `hd`.
        let og = unsafe { imp::block(&qg, &limits, panels, vg, hd) };
        for (r, row) in og.chunks_exact(hd).take(rows).enumerate() {
            let (i, h) = (r / groups, g * groups + r % groups);
            // SAFETY: (position first + i, head h) belongs to this task
            // alone (blocks of positions × the heads of KV head g), and
            // lies inside `out` (queries · heads rows of hd).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    row.as_ptr(),
                    dst.get().add(((first + i) * heads + h) * hd),
                    hd,
                );
            }
        }
    });
    out
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::x86_64::*;

    use super::{KEYS, MR_PV, MR_QK};

    /// 2^x for x ≤ 0 (inputs below −150 give 0): 2^round(x) by
    /// `vscalefps` times a degree-7 Taylor polynomial of 2^f on [−½, ½]
    /// (relative error ≤ 6e-9 before rounding).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp2(x: __m512) -> __m512 {
        const C: [f32; 8] = [
            1.0,
            std::f32::consts::LN_2,
            0.240_226_5,
            0.055_504_11,
            0.009_618_129,
            0.001_333_355_8,
            0.000_154_035_3,
            0.000_015_252_734,
        ];
        let x = _mm512_max_ps(x, _mm512_set1_ps(-150.0));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
        let f = _mm512_sub_ps(x, n);
        let mut p = _mm512_set1_ps(C[7]);
        for &c in C[..7].iter().rev() {
            p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, n)
    }

    /// Scores of [`MR_QK`] query rows (`q`, stride `hd`) against one tile
    /// panel ([hd, KEYS]) into `p` (stride KEYS).
    ///
    /// # Safety
    /// AVX-512F present; `q` points at MR_QK · hd values, `panel` at
    /// hd · KEYS, `p` at MR_QK · KEYS writable values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn scores(q: *const f32, panel: *const f32, hd: usize, p: *mut f32) {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR_QK];
        for d in 0..hd {
            // SAFETY (the loads and stores): the caller's bounds.
            unsafe {
                let k0 = _mm512_loadu_ps(panel.add(d * KEYS));
                let k1 = _mm512_loadu_ps(panel.add(d * KEYS + 16));
                for (r, a) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*q.add(r * hd + d));
                    a[0] = _mm512_fmadd_ps(x, k0, a[0]);
                    a[1] = _mm512_fmadd_ps(x, k1, a[1]);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            // SAFETY: the caller's bounds.
            unsafe {
                _mm512_storeu_ps(p.add(r * KEYS), a[0]);
                _mm512_storeu_ps(p.add(r * KEYS + 16), a[1]);
            }
        }
    }

    /// Adds `p` (MR_PV rows, stride KEYS) times `n` V rows (stride `hd`)
    /// into columns of `o` (MR_PV rows, stride `hd`), `C` vectors wide.
    ///
    /// # Safety
    /// AVX-512F present; `p` points at MR_PV · KEYS values (n ≤ KEYS), `v`
    /// at n rows of ≥ 16 · C values at stride hd, `o` at MR_PV such
    /// writable rows.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn weighted<const C: usize>(
        p: *const f32,
        v: *const f32,
        n: usize,
        hd: usize,
        o: *mut f32,
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; MR_PV];
        for (r, a) in acc.iter_mut().enumerate() {
            for (c, x) in a.iter_mut().enumerate() {
                // SAFETY: the caller's bounds.
                *x = unsafe { _mm512_loadu_ps(o.add(r * hd + 16 * c)) };
            }
        }
        for key in 0..n {
            // SAFETY (the loads): the caller's bounds.
            unsafe {
                let row = v.add(key * hd);
                let vv: [__m512; C] = std::array::from_fn(|c| _mm512_loadu_ps(row.add(16 * c)));
                for (r, a) in acc.iter_mut().enumerate() {
                    let w = _mm512_set1_ps(*p.add(r * KEYS + key));
                    for (x, &y) in a.iter_mut().zip(&vv) {
                        *x = _mm512_fmadd_ps(w, y, *x);
                    }
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            for (c, &x) in a.iter().enumerate() {
                // SAFETY: the caller's bounds.
                unsafe { _mm512_storeu_ps(o.add(r * hd + 16 * c), x) };
            }
        }
    }

    /// Multiplies the 16-lane vectors of `row` by `by`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn scale_row(row: &mut [f32], by: f32) {
        let by = _mm512_set1_ps(by);
        for c in row.chunks_exact_mut(16) {
            // SAFETY: `c` is 16 values.
            unsafe {
                _mm512_storeu_ps(
                    c.as_mut_ptr(),
                    _mm512_mul_ps(_mm512_loadu_ps(c.as_ptr()), by),
                )
            };
        }
    }

    /// Attention of one task's query rows: `qg` [padded, hd] (rows past
    /// `limits.len()` zero, padded a multiple of MR_QK, pre-scaled by
    /// scale · log2 e), row r seeing keys `0..limits[r]`; `panels` the
    /// KV head's K tiles [tiles, hd, KEYS]; `vg` its V rows [s, hd].
    /// Returns the normalised outputs [padded, hd] (padding rows zero).
    ///
    /// # Safety
    /// AVX-512F present; every limit ≥ 1 and ≤ s, with `panels` holding
    /// ⌈max limit / KEYS⌉ tiles; hd a multiple of 16.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block(
        qg: &[f32],
        limits: &[usize],
        panels: &[f32],
        vg: &[f32],
        hd: usize,
    ) -> Vec<f32> {
        let padded = qg.len() / hd;
        let rows = limits.len();
        let keys = limits.iter().copied().max().unwrap_or(0);
        assert!(padded.is_multiple_of(MR_QK) && rows <= padded && hd.is_multiple_of(16));
        assert!(panels.len() >= keys.div_ceil(KEYS) * hd * KEYS && vg.len() >= keys * hd);
        let mut o = vec![0f32; padded * hd];
        let mut p = vec![0f32; padded * KEYS];
        let mut max = vec![f32::NEG_INFINITY; rows];
        let mut sum = vec![0f32; rows];
        for (tile, panel) in panels
            .chunks_exact(hd * KEYS)
            .take(keys.div_ceil(KEYS))
            .enumerate()
        {
            let k0 = tile * KEYS;
            let n = KEYS.min(keys - k0);
            for r0 in (0..padded).step_by(MR_QK) {
                // SAFETY: rows r0..r0 + MR_QK ≤ padded of `qg` and `p`;
                // the panel is hd · KEYS values.
                unsafe {
                    scores(
                        qg[r0 * hd..].as_ptr(),
                        panel.as_ptr(),
                        hd,
                        p[r0 * KEYS..].as_mut_ptr(),
                    )
                };
            }
            for (r, row) in p.chunks_exact_mut(KEYS).enumerate() {
                let seen = if r < rows {
                    limits[r].saturating_sub(k0).min(n)
                } else {
                    0
                };
                if seen == 0 {
                    row.fill(0.0);
                    continue;
                }
                let mask = if seen >= 32 {
                    u32::MAX
                } else {
                    (1u32 << seen) - 1
                };
                let (m0, m1) = (mask as u16, (mask >> 16) as u16);
                // SAFETY: `row` is KEYS = 32 values.
                let (s0, s1) = unsafe {
                    (
                        _mm512_loadu_ps(row.as_ptr()),
                        _mm512_loadu_ps(row.as_ptr().add(16)),
                    )
                };
                let top = _mm512_mask_reduce_max_ps(m0, s0).max(_mm512_mask_reduce_max_ps(m1, s1));
                let new = max[r].max(top);
                let corr = if max[r] == f32::NEG_INFINITY {
                    0.0
                } else {
                    (max[r] - new).exp2()
                };
                max[r] = new;
                let at = _mm512_set1_ps(new);
                let e0 = _mm512_maskz_mov_ps(m0, exp2(_mm512_sub_ps(s0, at)));
                let e1 = _mm512_maskz_mov_ps(m1, exp2(_mm512_sub_ps(s1, at)));
                // SAFETY: as the loads.
                unsafe {
                    _mm512_storeu_ps(row.as_mut_ptr(), e0);
                    _mm512_storeu_ps(row.as_mut_ptr().add(16), e1);
                }
                sum[r] = sum[r] * corr + _mm512_reduce_add_ps(_mm512_add_ps(e0, e1));
                if corr != 1.0 {
                    scale_row(&mut o[r * hd..(r + 1) * hd], corr);
                }
            }
            let v = vg[k0 * hd..].as_ptr();
            for r0 in (0..rows.next_multiple_of(MR_PV)).step_by(MR_PV) {
                let (pr, or) = (p[r0 * KEYS..].as_ptr(), o[r0 * hd..].as_mut_ptr());
                let mut c0 = 0;
                // SAFETY (both calls): rows r0..r0 + MR_PV ≤ padded of `p`
                // and `o` (padded is a multiple of MR_QK = 2 · MR_PV),
                // columns c0.. within hd, keys k0..k0 + n ≤ s of `vg`.
                while c0 + 64 <= hd {
                    unsafe { weighted::<4>(pr, v.add(c0), n, hd, or.add(c0)) };
                    c0 += 64;
                }
                while c0 < hd {
                    unsafe { weighted::<1>(pr, v.add(c0), n, hd, or.add(c0)) };
                    c0 += 16;
                }
            }
        }
        for (row, &total) in o.chunks_exact_mut(hd).zip(&sum) {
            scale_row(row, 1.0 / total);
        }
        o
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    /// Never called: [`super::available`] is false off x86-64.
    pub(super) unsafe fn block(_: &[f32], _: &[usize], _: &[f32], _: &[f32], _: usize) -> Vec<f32> {
        unreachable!("the AVX-512 kernel runs on x86-64 only")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 reference with the same layout and causal rule.
    fn reference(q: &[f32], k: &[f32], v: &[f32], shape: AttendShape) -> Vec<f64> {
        let (queries, heads, hd, s) = (shape.queries, shape.heads, shape.hd, shape.s);
        let (kv_heads, capacity, scale) = (shape.kv_heads, shape.capacity, shape.scale);
        let groups = heads / kv_heads;
        let mut out = vec![0f64; queries * heads * hd];
        for i in 0..queries {
            let seen = s - queries + i + 1;
            for h in 0..heads {
                let g = h / groups;
                let qr = &q[(i * heads + h) * hd..][..hd];
                let scores: Vec<f64> = (0..seen)
                    .map(|j| {
                        let kr = &k[(g * capacity + j) * hd..][..hd];
                        qr.iter()
                            .zip(kr)
                            .map(|(&a, &b)| a as f64 * b as f64)
                            .sum::<f64>()
                            * scale as f64
                    })
                    .collect();
                let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|x| (x - top).exp()).collect();
                let total: f64 = e.iter().sum();
                let o = &mut out[(i * heads + h) * hd..][..hd];
                for (j, w) in e.iter().enumerate() {
                    let vr = &v[(g * capacity + j) * hd..][..hd];
                    for (x, &y) in o.iter_mut().zip(vr) {
                        *x += w / total * y as f64;
                    }
                }
            }
        }
        out
    }

    fn values(n: usize, seed: u64, spread: f32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * spread
            })
            .collect()
    }

    #[test]
    fn matches_f64_reference_for_each_shape_and_tail() {
        if !available() {
            eprintln!("skipped: no AVX-512F on this CPU");
            return;
        }
        // (queries, heads, kv_heads, s, capacity, hd): one position, a
        // partial task, tiles cut by the causal limit, a cache with an
        // offset and spare capacity, a 16-wide head (1-vector columns) and
        // the real 256-wide, 8-heads-per-KV-head shape.
        let shapes = [
            (1, 2, 1, 1, 4, 16),
            (5, 4, 2, 5, 8, 32),
            (33, 2, 2, 40, 48, 16),
            (70, 8, 1, 101, 128, 80),
            (100, 16, 2, 130, 130, 256),
        ];
        for (n, &(queries, heads, kv_heads, s, capacity, hd)) in shapes.iter().enumerate() {
            let shape = AttendShape {
                queries,
                heads,
                kv_heads,
                capacity,
                s,
                hd,
                scale: 1.0 / (hd as f32).sqrt(),
            };
            // Wide spreads so the softmax is far from uniform and the
            // running max moves between tiles.
            let q = values(queries * heads * hd, 3 * n as u64 + 1, 4.0);
            let k = values(kv_heads * capacity * hd, 3 * n as u64 + 2, 4.0);
            let v = values(kv_heads * capacity * hd, 3 * n as u64 + 3, 2.0);
            let got = attend(&q, &k, &v, shape);
            let want = reference(&q, &k, &v, shape);
            let worst = got
                .iter()
                .zip(&want)
                .map(|(&a, &b)| (a as f64 - b).abs())
                .fold(0f64, f64::max);
            assert!(worst < 2e-5, "shape {n}: max |error| {worst:e}");
        }
    }
}
