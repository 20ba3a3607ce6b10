//! Causal attention of a prompt piece (many query positions) over an f32
//! KV cache read in place, in key tiles with a running softmax — the
//! schedule of FlashAttention (Dao et al. 2022, arXiv 2205.14135,
//! Algorithm 1) on AVX-512 or AVX2 vectors (one body over
//! [`super::lanes::Lanes`]).
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
//! on [−½, ½] times 2^n (`vscalefps`, or the exponent field on AVX2;
//! relative error below 1e-7).
//!
//! Chosen at run time ([`super::lanes::form`], [`takes`]): AVX-512F where the CPU has it
//! and [`super::q8_0::TILE_ISA_ENV`] does not hold the kernels to 256-bit
//! registers, else AVX2 + FMA. Allowed `unsafe`: the
//! target-feature calls (entered only after [`super::lanes::form`]), the
//! raw-pointer loads and stores whose bounds [`attend`] asserts, and the
//! disjoint writes of each task's rows into the output.
#![allow(unsafe_code)]

use super::disjoint::{DisjointOut, PARALLEL_MIN_MACS, run_chunks, run_tasks};
use super::f32_rows::AttendShape;
use super::lanes::{Form, form};

/// Keys per tile: two 16-lane (or four 8-lane) vectors of scores a row.
const KEYS: usize = 32;
/// Query rows a task aims for (positions × the heads of one KV head).
const ROWS: usize = 32;
/// A task's query rows are padded to a multiple of this (each form's
/// micro-tile rows divide it).
const PAD_ROWS: usize = 8;

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
/// Where [`form`] is `None` or [`takes`] is false, or when the slices or
/// widths disagree.
pub(crate) fn attend(q: &[f32], k: &[f32], v: &[f32], shape: AttendShape) -> Vec<f32> {
    let form =
        form().expect("vector attention called without a form (no AVX2 + FMA, or capped off)");
    attend_on(form, q, k, v, shape)
}

/// [`attend`] on `form`'s registers.
///
/// # Panics
/// Where this CPU lacks `form`, or as [`attend`].
fn attend_on(form: Form, q: &[f32], k: &[f32], v: &[f32], shape: AttendShape) -> Vec<f32> {
    let AttendShape {
        queries,
        heads,
        kv_heads,
        capacity,
        s,
        hd,
        scale,
    } = shape;
    assert!(
        form.is_supported(),
        "{form:?} attention on a CPU without it"
    );
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
        let padded = rows.next_multiple_of(PAD_ROWS);
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
        // SAFETY: the form's features were asserted; `qg` holds `padded` rows of
        // `hd`, `panels` the tiles of every key up to the last limit (≤ s),
        // `vg` s rows of `hd`.
        let og = unsafe {
            match form {
                Form::Avx512 => imp::block_avx512(&qg, &limits, panels, vg, hd),
                Form::Avx2 => imp::block_avx2(&qg, &limits, panels, vg, hd),
            }
        };
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
    use super::{KEYS, PAD_ROWS};
    use crate::kernels::lanes::{Lanes, Ymm, Zmm};

    /// [`block`] on AVX-512F: 2 vectors a key tile, 8 score rows (16
    /// accumulators), 4 rows × 4 vectors of P·V.
    ///
    /// # Safety
    /// As [`block`]; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block_avx512(
        qg: &[f32],
        limits: &[usize],
        panels: &[f32],
        vg: &[f32],
        hd: usize,
    ) -> Vec<f32> {
        // SAFETY: the caller's.
        unsafe { block::<Zmm, 2, 8, 4>(qg, limits, panels, vg, hd) }
    }

    /// [`block`] on AVX2 + FMA (16 YMM registers): 4 vectors a key tile,
    /// 2 score rows (8 accumulators), 2 rows × 4 vectors of P·V.
    ///
    /// # Safety
    /// As [`block`]; the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn block_avx2(
        qg: &[f32],
        limits: &[usize],
        panels: &[f32],
        vg: &[f32],
        hd: usize,
    ) -> Vec<f32> {
        // SAFETY: the caller's.
        unsafe { block::<Ymm, 4, 2, 2>(qg, limits, panels, vg, hd) }
    }

    /// The register micro-tile both products run on: for `M` rows and `C`
    /// vectors of columns, `out[r][c] = init + Σ_d a[r · a_stride + d] ·
    /// b[d · b_stride + c · W..]` over `depth` terms, `init` zero or (with
    /// `ACCUMULATE`) `out`'s own values — one broadcast and `C` FMAs per
    /// row and term. Scores: `a` the queries, `b` a K panel; P·V: `a` the
    /// probabilities, `b` V rows.
    ///
    /// # Safety
    /// L's features present; `a` points at M rows of `depth` values (stride
    /// `a_stride`), `b` at `depth` rows of C · W (stride `b_stride`), `out`
    /// at M writable rows of C · W (stride `out_stride`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // a GEMM micro-kernel's strides
    unsafe fn fma_tile<L: Lanes, const C: usize, const M: usize, const ACCUMULATE: bool>(
        a: *const f32,
        a_stride: usize,
        b: *const f32,
        b_stride: usize,
        depth: usize,
        out: *mut f32,
        out_stride: usize,
    ) {
        // SAFETY (every call): the features and bounds are the caller's.
        unsafe {
            let mut acc = [[L::zero(); C]; M];
            if ACCUMULATE {
                for (r, acc) in acc.iter_mut().enumerate() {
                    for (c, x) in acc.iter_mut().enumerate() {
                        *x = L::load(out.add(r * out_stride + c * L::W));
                    }
                }
            }
            for d in 0..depth {
                let row = b.add(d * b_stride);
                let mut bv = [L::zero(); C];
                for (c, y) in bv.iter_mut().enumerate() {
                    *y = L::load(row.add(c * L::W));
                }
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = L::set1(*a.add(r * a_stride + d));
                    for (acc, &y) in acc.iter_mut().zip(&bv) {
                        *acc = L::fmadd(x, y, *acc);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                for (c, &x) in acc.iter().enumerate() {
                    L::store(out.add(r * out_stride + c * L::W), x);
                }
            }
        }
    }

    /// Multiplies the vectors of `row` (a multiple of W long) by `by`.
    ///
    /// # Safety
    /// L's features present.
    #[inline(always)]
    unsafe fn scale_row<L: Lanes>(row: &mut [f32], by: f32) {
        // SAFETY: the caller's features; each chunk is W values.
        unsafe {
            let by = L::set1(by);
            for c in row.chunks_exact_mut(L::W) {
                L::store(c.as_mut_ptr(), L::mul(L::load(c.as_ptr()), by));
            }
        }
    }

    /// Attention of one task's query rows: `qg` [padded, hd] (rows past
    /// `limits.len()` zero, padded a multiple of [`PAD_ROWS`], pre-scaled
    /// by scale · log2 e), row r seeing keys `0..limits[r]`; `panels` the
    /// KV head's K tiles [tiles, hd, KEYS]; `vg` its V rows [s, hd].
    /// Returns the normalised outputs [padded, hd] (padding rows zero).
    /// `NV` · W = KEYS; `MQ` score rows and `MP` P·V rows a micro-tile.
    ///
    /// # Safety
    /// L's features present; every limit ≥ 1 and ≤ s, with `panels`
    /// holding ⌈max limit / KEYS⌉ tiles; hd a multiple of W.
    #[inline(always)]
    unsafe fn block<L: Lanes, const NV: usize, const MQ: usize, const MP: usize>(
        qg: &[f32],
        limits: &[usize],
        panels: &[f32],
        vg: &[f32],
        hd: usize,
    ) -> Vec<f32> {
        let padded = qg.len() / hd;
        let rows = limits.len();
        let keys = limits.iter().copied().max().unwrap_or(0);
        assert!(NV * L::W == KEYS && PAD_ROWS.is_multiple_of(MQ) && MQ.is_multiple_of(MP));
        assert!(padded.is_multiple_of(PAD_ROWS) && rows <= padded && hd.is_multiple_of(L::W));
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
            for r0 in (0..padded).step_by(MQ) {
                // SAFETY: rows r0..r0 + MQ ≤ padded of `qg` and `p`; the
                // panel is hd · KEYS values.
                unsafe {
                    fma_tile::<L, NV, MQ, false>(
                        qg[r0 * hd..].as_ptr(),
                        hd,
                        panel.as_ptr(),
                        KEYS,
                        hd,
                        p[r0 * KEYS..].as_mut_ptr(),
                        KEYS,
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
                // SAFETY (the vector calls): the caller's features; `row`
                // is KEYS = NV · W values.
                unsafe {
                    let mut masks = [L::first(0); NV];
                    let mut s = [L::zero(); NV];
                    let mut top = f32::NEG_INFINITY;
                    for c in 0..NV {
                        masks[c] = L::first(seen.saturating_sub(c * L::W));
                        s[c] = L::load(row.as_ptr().add(c * L::W));
                        top = top.max(L::max_in(masks[c], s[c]));
                    }
                    let new = max[r].max(top);
                    let corr = if max[r] == f32::NEG_INFINITY {
                        0.0
                    } else {
                        (max[r] - new).exp2()
                    };
                    max[r] = new;
                    let at = L::set1(new);
                    let mut total = L::zero();
                    for (c, (&m, &s)) in masks.iter().zip(&s).enumerate() {
                        let e = L::keep(m, L::exp2(L::sub(s, at)));
                        L::store(row.as_mut_ptr().add(c * L::W), e);
                        total = L::add(total, e);
                    }
                    sum[r] = sum[r] * corr + L::sum(total);
                    if corr != 1.0 {
                        scale_row::<L>(&mut o[r * hd..(r + 1) * hd], corr);
                    }
                }
            }
            let v = vg[k0 * hd..].as_ptr();
            for r0 in (0..rows.next_multiple_of(MP)).step_by(MP) {
                let (pr, or) = (p[r0 * KEYS..].as_ptr(), o[r0 * hd..].as_mut_ptr());
                let mut c0 = 0;
                // SAFETY (both calls): rows r0..r0 + MP ≤ padded of `p` and
                // `o` (padded is a multiple of MP), columns c0.. within hd,
                // keys k0..k0 + n ≤ s of `vg`.
                while c0 + 4 * L::W <= hd {
                    unsafe {
                        fma_tile::<L, 4, MP, true>(pr, KEYS, v.add(c0), hd, n, or.add(c0), hd)
                    };
                    c0 += 4 * L::W;
                }
                while c0 < hd {
                    unsafe {
                        fma_tile::<L, 1, MP, true>(pr, KEYS, v.add(c0), hd, n, or.add(c0), hd)
                    };
                    c0 += L::W;
                }
            }
        }
        for (row, &total) in o.chunks_exact_mut(hd).zip(&sum) {
            // SAFETY: the caller's features.
            unsafe { scale_row::<L>(row, 1.0 / total) };
        }
        o
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    /// Never called: [`super::form`] is `None` off x86-64.
    pub(super) unsafe fn block_avx512(
        _: &[f32],
        _: &[usize],
        _: &[f32],
        _: &[f32],
        _: usize,
    ) -> Vec<f32> {
        unreachable!("the vector kernels run on x86-64 only")
    }
    /// Never called, as [`block_avx512`].
    pub(super) unsafe fn block_avx2(
        _: &[f32],
        _: &[usize],
        _: &[f32],
        _: &[f32],
        _: usize,
    ) -> Vec<f32> {
        unreachable!("the vector kernels run on x86-64 only")
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
        let forms: Vec<Form> = Form::ALL.into_iter().filter(|f| f.is_supported()).collect();
        if forms.is_empty() {
            eprintln!("skipped: no AVX2 + FMA on this CPU");
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
            let want = reference(&q, &k, &v, shape);
            for &form in &forms {
                let got = attend_on(form, &q, &k, &v, shape);
                let worst = got
                    .iter()
                    .zip(&want)
                    .map(|(&a, &b)| (a as f64 - b).abs())
                    .fold(0f64, f64::max);
                assert!(worst < 2e-5, "{form:?}, shape {n}: max |error| {worst:e}");
            }
        }
    }
}
