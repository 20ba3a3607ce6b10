//! CPU kernels for few rows: `x @ wᵀ` with few rows of `x` and bf16/f16
//! weights, and attention of few query positions over a KV cache (bf16,
//! f16 or f32) read in place.
//!
//! Each weight or cache row is widened to f32 in cache (bf16 by a shift,
//! f16 by a branch-free conversion, f32 as is) and multiplied with f32
//! accumulators in [`LANES`] independent lanes; rows are split over rayon
//! tasks (on the calling thread when the work is small,
//! [`super::disjoint::PARALLEL_MIN_MACS`]), each run under `pulp`'s runtime dispatch so the
//! loops compile for the best instruction set the CPU has while the crate
//! builds for the baseline.

use candle_core::{CpuStorage, DType, Storage, Tensor};

use super::disjoint::{PARALLEL_MIN_MACS, run_chunks};
use super::f32_rows::AttendShape;

/// Most rows of `x` the streaming kernel takes; beyond it a widened
/// weight and a gemm win.
pub const MAX_STREAM_ROWS: usize = 32;

/// Weight rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// Independent partial sums of the dot products: 32 f32 lanes are four
/// AVX2 accumulators, enough to hide the add latency.
const LANES: usize = 32;

/// Widens a slice of stored weights to f32.
trait Widen: Sync + Sized {
    fn widen(src: &[Self], dst: &mut [f32]);

    /// Dot product of one stored weight row with an f32 row, widening in
    /// registers while multiplying: the weight row is read once from memory
    /// and never written back as f32 (about 20 % more throughput than
    /// widen-then-dot for one input row).
    fn dot_row(src: &[Self], x: &[f32]) -> f32;

    /// `y += a · src` (widened).
    fn axpy(src: &[Self], a: f32, y: &mut [f32]);
}

impl Widen for half::bf16 {
    #[inline(always)]
    fn widen(src: &[Self], dst: &mut [f32]) {
        // bf16 is the top half of an f32: a shift, which vectorises.
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(s.to_bits()) << 16);
        }
    }

    #[inline(always)]
    fn dot_row(src: &[Self], x: &[f32]) -> f32 {
        dot_with(
            src,
            x,
            |w| f32::from_bits(u32::from(w.to_bits()) << 16),
            half::bf16::to_f32,
        )
    }

    #[inline(always)]
    fn axpy(src: &[Self], a: f32, y: &mut [f32]) {
        for (y, s) in y.iter_mut().zip(src) {
            *y += a * f32::from_bits(u32::from(s.to_bits()) << 16);
        }
    }
}

impl Widen for half::f16 {
    #[inline(always)]
    fn widen(src: &[Self], dst: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        src.convert_to_f32_slice(dst);
    }

    /// Converted with the branch-free [`f16_bits_to_f32`] (which
    /// vectorises; `half`'s per-value conversion does not).
    #[inline(always)]
    fn dot_row(src: &[Self], x: &[f32]) -> f32 {
        dot_with(src, x, |w| f16_bits_to_f32(w.to_bits()), half::f16::to_f32)
    }

    #[inline(always)]
    fn axpy(src: &[Self], a: f32, y: &mut [f32]) {
        for (y, s) in y.iter_mut().zip(src) {
            *y += a * f16_bits_to_f32(s.to_bits());
        }
    }
}

impl Widen for f32 {
    #[inline(always)]
    fn widen(src: &[Self], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }

    #[inline(always)]
    fn dot_row(src: &[Self], x: &[f32]) -> f32 {
        dot(src, x)
    }

    #[inline(always)]
    fn axpy(src: &[Self], a: f32, y: &mut [f32]) {
        for (y, s) in y.iter_mut().zip(src) {
            *y += a * s;
        }
    }
}

/// IEEE binary16 bits to f32, exactly, without branches: exponent and
/// mantissa moved into f32 position and scaled by 2¹¹² (the exponent
/// bias difference; this also normalises f16 subnormals, which land in
/// f32's subnormal range), infinities and NaNs (exponent 31) mapped to
/// exponent 255, then the sign.
#[inline(always)]
fn f16_bits_to_f32(bits: u16) -> f32 {
    const TWO_POW_112: f32 = f32::from_bits(0x7780_0000);
    let h = u32::from(bits);
    let exp_mant = (h & 0x7fff) << 13;
    let magnitude = if h & 0x7c00 == 0x7c00 {
        f32::from_bits(exp_mant | 0x7f80_0000)
    } else {
        f32::from_bits(exp_mant) * TWO_POW_112
    };
    f32::from_bits(magnitude.to_bits() | ((h & 0x8000) << 16))
}

/// f32 dot product with [`LANES`] independent partial sums (vectorises).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_with(a, b, |v| v, |v| v)
}

/// Dot product of a stored row `w` with an f32 row `x` in [`LANES`]
/// independent partial sums: each full chunk of `w` is converted by
/// `widen_lane` in registers, the tail after the last full chunk by
/// `widen_tail`.
#[inline(always)]
fn dot_with<T: Copy>(
    w: &[T],
    x: &[f32],
    widen_lane: impl Fn(T) -> f32,
    widen_tail: impl Fn(T) -> f32,
) -> f32 {
    let mut acc = [0f32; LANES];
    let mut w_chunks = w.chunks_exact(LANES);
    let mut x_chunks = x.chunks_exact(LANES);
    for (cw, cx) in (&mut w_chunks).zip(&mut x_chunks) {
        for l in 0..LANES {
            acc[l] += widen_lane(cw[l]) * cx[l];
        }
    }
    let mut tail = 0f32;
    for (&w, x) in w_chunks.remainder().iter().zip(x_chunks.remainder()) {
        tail += widen_tail(w) * x;
    }
    // Halve the lanes until one is left (vector adds while they are
    // wide; a chain of 31 scalar adds cost more than a 32-wide dot).
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    acc[0] + tail
}

/// One task: `out` [rows, m] for weight rows `first..first + rows`.
struct RowTask<'a, T> {
    w: &'a [T],
    xs: &'a [f32],
    m: usize,
    k: usize,
    first: usize,
    out: &'a mut [f32],
    row: &'a mut [f32],
}

impl<T: Widen> pulp::WithSimd for RowTask<'_, T> {
    type Output = ();

    // Inlined into pulp's `#[target_feature]` entry point, so the
    // widening and dot products below compile for that instruction set.
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (m, k) = (self.m, self.k);
        if m == 1 {
            for (r, o) in self.out.iter_mut().enumerate() {
                let j = self.first + r;
                *o = T::dot_row(&self.w[j * k..(j + 1) * k], self.xs);
            }
            return;
        }
        for (r, out_row) in self.out.chunks_exact_mut(m).enumerate() {
            let j = self.first + r;
            T::widen(&self.w[j * k..(j + 1) * k], self.row);
            for (i, o) in out_row.iter_mut().enumerate() {
                *o = dot(self.row, &self.xs[i * k..(i + 1) * k]);
            }
        }
    }
}

/// out_t [n, m] = w [n, k] · xs [m, k]ᵀ.
///
/// Each task runs under `pulp`'s runtime dispatch, so the widening and
/// the dot products are compiled for the best instruction set the CPU
/// has (AVX2 + FMA on x86-64) while the crate builds for the baseline.
fn run<T: Widen>(w: &[T], xs: &[f32], m: usize, k: usize, out_t: &mut [f32]) {
    let arch = pulp::Arch::new();
    let task = |(task, out): (usize, &mut [f32])| {
        let mut row = vec![0f32; k];
        arch.dispatch(RowTask {
            w,
            xs,
            m,
            k,
            first: task * ROWS_PER_TASK,
            out,
            row: &mut row,
        });
    };
    let parallel = out_t.len() * k >= PARALLEL_MIN_MACS;
    run_chunks(out_t, ROWS_PER_TASK * m, parallel, task);
}

/// `x @ wᵀ` for CPU `x` [m ≤ MAX_STREAM_ROWS, k] and a contiguous bf16
/// or f16 `w` [n, k]; `None` when the kernel does not apply. The result
/// has x's dtype; sums run in f32, each output's in the same order
/// whatever m is (a row's logits do not depend on how many rows a
/// forward carries).
pub fn try_linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
    let (m, k) = x.dims2()?;
    let (n, k_w) = w.dims2()?;
    if k != k_w || m > MAX_STREAM_ROWS || m == 0 {
        return Ok(None);
    }
    let xs: Vec<f32> = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let mut out_t = vec![0f32; n * m];
    {
        let (storage, layout) = w.storage_and_layout();
        let Some((start, end)) = layout.contiguous_offsets() else {
            return Ok(None);
        };
        match &*storage {
            Storage::Cpu(CpuStorage::BF16(v)) => run(&v[start..end], &xs, m, k, &mut out_t),
            Storage::Cpu(CpuStorage::F16(v)) => run(&v[start..end], &xs, m, k, &mut out_t),
            _ => return Ok(None),
        }
    }
    let out = if m == 1 {
        out_t
    } else {
        let mut out = vec![0f32; n * m];
        for j in 0..n {
            for i in 0..m {
                out[i * n + j] = out_t[j * m + i];
            }
        }
        out
    };
    Ok(Some(
        Tensor::from_vec(out, (m, n), x.device())?.to_dtype(x.dtype())?,
    ))
}

/// One query head's attention over `s` cached positions: `out` [hd] =
/// softmax(scale · K q) V for K, V rows [s, hd] (stored dtype, widened in
/// registers) and q [hd] in f32; scores and sums in f32.
struct HeadTask<'a, T> {
    q: &'a [f32],
    k: &'a [T],
    v: &'a [T],
    hd: usize,
    scale: f32,
    out: &'a mut [f32],
}

impl<T: Widen> pulp::WithSimd for HeadTask<'_, T> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let hd = self.hd;
        // Plain loops, not iterator adaptors: `collect`'s fold is not
        // inlined into this target-feature context and ran as SSE code.
        let mut scores = vec![0f32; self.k.len() / hd];
        for (score, row) in scores.iter_mut().zip(self.k.chunks_exact(hd)) {
            *score = T::dot_row(row, self.q) * self.scale;
        }
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0f32;
        for x in &mut scores {
            *x = (*x - max).exp();
            sum += *x;
        }
        self.out.fill(0.0);
        for (row, &e) in self.v.chunks_exact(hd).zip(&scores) {
            T::axpy(row, e / sum, self.out);
        }
    }
}

/// Decode attention on the CPU: one query position (`shape.queries` is 1),
/// `q` [heads, hd] (f32) against the first `s` positions of a KV cache
/// stored as `k`, `v` [kv_heads, capacity, hd]; query head h reads KV head
/// h / (heads / kv_heads). Returns [heads, hd] in f32. Reads each cached K and V row
/// once per query head and copies nothing.
fn attend_one<T: Widen>(q: &[f32], k: &[T], v: &[T], shape: AttendShape) -> Vec<f32> {
    let AttendShape { s, hd, scale, .. } = shape;
    let groups = shape.heads / shape.kv_heads;
    let arch = pulp::Arch::new();
    let mut out = vec![0f32; shape.heads * hd];
    let task = |(h, out): (usize, &mut [f32])| {
        let base = (h / groups) * shape.capacity * hd;
        arch.dispatch(HeadTask {
            q: &q[h * hd..(h + 1) * hd],
            k: &k[base..base + s * hd],
            v: &v[base..base + s * hd],
            hd,
            scale,
            out,
        });
    };
    run_chunks(
        &mut out,
        hd,
        shape.heads * s * hd * 2 >= PARALLEL_MIN_MACS,
        task,
    );
    out
}

/// Most query positions [`super::f32_rows::attend`] takes; beyond them
/// the tiled kernel of [`super::flash_f32`] (or, where that does not run —
/// no AVX2, the tile cap `off`, heads not whole 16-lane vectors — a
/// batched matmul of the queries) wins. Below it a position's sums do not
/// depend on how many positions a forward carries, which keeps a verifying
/// forward's logits equal to decode's.
const MAX_QUERY_ROWS: usize = 64;

/// Attention of the last `queries` of `s` valid positions over a KV cache
/// read in place: `q` [queries, heads, hd] (any float dtype), `k_buf`,
/// `v_buf` contiguous [kv_heads, capacity, hd] on the CPU; the result
/// [queries, heads · hd] in q's dtype, scores and sums in f32. One query
/// (decode) over a bf16, f16 or f32 cache runs [`attend_one`]; up to
/// [`MAX_QUERY_ROWS`] (a verifying forward of speculative decoding, a
/// short turn) over an f32 cache run [`super::f32_rows::attend`] where the
/// CPU has AVX2 + FMA; more (a prompt piece) over an f32 cache run
/// [`super::flash_f32::attend`] (AVX-512F or AVX2 + FMA). `None` when none
/// applies (dtype, device, layout, query count).
pub fn try_cached_attention(
    q: &Tensor,
    k_buf: &Tensor,
    v_buf: &Tensor,
    s: usize,
    scale: f32,
) -> candle_core::Result<Option<Tensor>> {
    if !q.device().is_cpu() || k_buf.dtype() != v_buf.dtype() {
        return Ok(None);
    }
    let (queries, heads, hd) = q.dims3()?;
    let (kv_heads, capacity, hd_k) = k_buf.dims3()?;
    let f32_rows = k_buf.dtype() == DType::F32 && super::f32_rows::available();
    let flash = f32_rows && super::lanes::form().is_some() && super::flash_f32::takes(hd);
    let most = if flash {
        usize::MAX
    } else if f32_rows {
        MAX_QUERY_ROWS
    } else {
        1
    };
    if hd != hd_k
        || v_buf.dims() != k_buf.dims()
        || heads % kv_heads != 0
        || s > capacity
        || queries == 0
        || queries > s.min(most)
    {
        return Ok(None);
    }
    let qs: Vec<f32> = q
        .to_dtype(DType::F32)?
        .contiguous()?
        .flatten_all()?
        .to_vec1()?;
    let out = {
        let (ks, kl) = k_buf.storage_and_layout();
        let (vs, vl) = v_buf.storage_and_layout();
        let (Some((k0, k1)), Some((v0, v1))) = (kl.contiguous_offsets(), vl.contiguous_offsets())
        else {
            return Ok(None);
        };
        let shape = AttendShape {
            queries,
            heads,
            kv_heads,
            capacity,
            s,
            hd,
            scale,
        };
        match (&*ks, &*vs) {
            (Storage::Cpu(CpuStorage::F32(k)), Storage::Cpu(CpuStorage::F32(v)))
                if flash && queries > MAX_QUERY_ROWS =>
            {
                super::flash_f32::attend(&qs, &k[k0..k1], &v[v0..v1], shape)
            }
            (Storage::Cpu(CpuStorage::F32(k)), Storage::Cpu(CpuStorage::F32(v))) if f32_rows => {
                super::f32_rows::attend(&qs, &k[k0..k1], &v[v0..v1], shape)
            }
            (Storage::Cpu(CpuStorage::F32(k)), Storage::Cpu(CpuStorage::F32(v))) => {
                attend_one(&qs, &k[k0..k1], &v[v0..v1], shape)
            }
            (Storage::Cpu(CpuStorage::BF16(k)), Storage::Cpu(CpuStorage::BF16(v))) => {
                attend_one(&qs, &k[k0..k1], &v[v0..v1], shape)
            }
            (Storage::Cpu(CpuStorage::F16(k)), Storage::Cpu(CpuStorage::F16(v))) => {
                attend_one(&qs, &k[k0..k1], &v[v0..v1], shape)
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(
        Tensor::from_vec(out, (queries, heads * hd), q.device())?.to_dtype(q.dtype())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// The branch-free f16 conversion equals `half`'s for every one of
    /// the 65536 bit patterns (NaNs stay NaNs).
    #[test]
    fn f16_conversion_is_exact_for_every_value() {
        for bits in 0..=u16::MAX {
            let want = half::f16::from_bits(bits).to_f32();
            let got = f16_bits_to_f32(bits);
            if want.is_nan() {
                assert!(got.is_nan(), "{bits:#06x}: {got}");
            } else {
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{bits:#06x}: {got} vs {want}"
                );
            }
        }
    }

    /// The kernel agrees with candle's f32 matmul on widened weights,
    /// for plain and narrowed (expert-slice) weights, several row counts
    /// and both sides of the parallel threshold; and a row's output does
    /// not depend on how many rows come with it.
    #[test]
    fn streaming_kernel_matches_matmul() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        for dtype in [DType::BF16, DType::F16] {
            for (n, k) in [(40, 37), (600, 300)] {
                let stacked = Tensor::randn(0f32, 1.0, (3, n, k), &dev)?.to_dtype(dtype)?;
                let w = stacked.get(1)?; // a narrowed view, as experts are
                let x = Tensor::randn(0f32, 1.0, (MAX_STREAM_ROWS, k), &dev)?;
                let alone = try_linear(&x.narrow(0, 2, 1)?, &w)?.expect("kernel applies");
                for m in [1, 5, MAX_STREAM_ROWS] {
                    let x = x.narrow(0, 0, m)?;
                    let got = try_linear(&x, &w)?.expect("kernel applies");
                    let want = x.matmul(&w.to_dtype(DType::F32)?.t()?)?;
                    let diff = max_abs_diff(&got, &want)?;
                    assert!(diff < 1e-3, "{dtype:?} {n}x{k} m={m}: {diff}");
                    if m > 2 {
                        let row = got.narrow(0, 2, 1)?;
                        assert_eq!(max_abs_diff(&row, &alone)?, 0.0, "{dtype:?} m={m}");
                    }
                }
                let too_many = Tensor::randn(0f32, 1.0, (MAX_STREAM_ROWS + 1, k), &dev)?;
                assert!(try_linear(&too_many, &w)?.is_none());
            }
        }
        Ok(())
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> candle_core::Result<f32> {
        (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
    }

    /// Attention of the last `t` positions over a cache with spare
    /// capacity equals, query by query, softmax(scale · q Kᵀ) V computed by
    /// candle in f32 on the widened keys that query sees (causal), with
    /// grouped KV heads: one query (decode) over bf16, f16 and f32 caches,
    /// several over an f32 cache (where the CPU has AVX2 + FMA; declined
    /// otherwise).
    #[test]
    fn cached_attention_matches_reference() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let (heads, kv_heads, capacity, s, hd) = (4, 2, 12, 9, 37);
        let scale = 0.3f32;
        let groups = heads / kv_heads;
        for dtype in [DType::BF16, DType::F16, DType::F32] {
            let k_buf =
                Tensor::randn(0f32, 1.0, (kv_heads, capacity, hd), &dev)?.to_dtype(dtype)?;
            let v_buf =
                Tensor::randn(0f32, 1.0, (kv_heads, capacity, hd), &dev)?.to_dtype(dtype)?;
            let several = dtype == DType::F32 && crate::kernels::f32_rows::available();
            if !several {
                let q = Tensor::randn(0f32, 1.0, (2, heads, hd), &dev)?;
                assert!(try_cached_attention(&q, &k_buf, &v_buf, s, scale)?.is_none());
            }
            for t in [1, 4, s].into_iter().filter(|&t| t == 1 || several) {
                let q = Tensor::randn(0f32, 1.0, (t, heads, hd), &dev)?;
                let got = try_cached_attention(&q, &k_buf, &v_buf, s, scale)?
                    .expect("kernel applies")
                    .reshape((t, heads, hd))?;
                let mut want = Vec::new();
                for i in 0..t {
                    let seen = s - t + i + 1;
                    for h in 0..heads {
                        let k = k_buf.get(h / groups)?.narrow(0, 0, seen)?;
                        let v = v_buf.get(h / groups)?.narrow(0, 0, seen)?;
                        let qh = q.get(i)?.narrow(0, h, 1)?;
                        let scores =
                            (qh.matmul(&k.to_dtype(DType::F32)?.t()?)? * f64::from(scale))?;
                        let p = candle_nn::ops::softmax_last_dim(&scores)?;
                        want.push(p.matmul(&v.to_dtype(DType::F32)?)?);
                    }
                }
                let want = Tensor::cat(&want, 0)?.reshape((t, heads, hd))?;
                let diff = max_abs_diff(&got, &want)?;
                assert!(diff < 1e-5, "{dtype:?} t={t}: {diff}");
            }
            let q = Tensor::randn(0f32, 1.0, (s + 1, heads, hd), &dev)?;
            assert!(try_cached_attention(&q, &k_buf, &v_buf, s, scale)?.is_none());
        }
        Ok(())
    }
}
