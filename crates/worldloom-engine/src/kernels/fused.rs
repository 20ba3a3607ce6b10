//! Fused decode ops as candle custom ops: one launch where the unfused
//! path issues many small candle ops.
//!
//! Each op has a CPU implementation (the reference its CUDA twin in
//! `cuda/fused.cu` follows, same maths and same roundings to the model
//! dtype) and, in `cuda` builds, a CUDA implementation
//! ([`super::cuda`]). The tests compare the CPU implementations with the
//! unfused candle path they replace; `tests/fused_ops.rs` compares the
//! CUDA twins with the CPU ones when a CUDA device is present.
//!
//! - [`rms_norm_scaled`]: the zero-centred RMSNorm, `x / sqrt(mean(x²) +
//!   eps) · scale` in f32, rounded to x's dtype.
//! - [`gated_rms_norm`]: the DeltaNet output norm, `w · rmsnorm(o) ·
//!   silu(z)` with the unfused path's roundings.
//! - [`gdn_decode_step`]: one Gated DeltaNet token: conv window, SiLU, q/k
//!   L2 norm, decay and beta gating, the recurrent update (written to a
//!   new state: a snapshot sharing the old one is never disturbed), the
//!   read-out and the gated norm.
//! - [`router_top_k`]: router softmax, top-k and renormalised weights.
//! - [`sample_candidates`]: the k best logits for sampling and the
//!   log-softmax normaliser, so only `3k + 2` values leave the device.
//!
//! Inputs must be contiguous (the wrappers make them so) and of dtype f32,
//! bf16 or f16 where a model dtype is taken.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor};
use half::{bf16, f16};
use std::sync::OnceLock;

pub(crate) use super::fused_params::{
    GDN_L2_EPS, GatedRmsNorm, GdnDecodeStep, GdnDims, RmsNormScaled, RouterTopK, SampleCandidates,
};

/// An element type the fused ops read and write: f32, bf16 or f16.
pub(crate) trait Elem: candle_core::WithDType + Copy {
    fn to_f(self) -> f32;
    fn from_f(x: f32) -> Self;
    /// SiLU of a value of this dtype, bit for bit as candle's `silu`
    /// computes it on the dtype ([`silu_steps`]).
    fn silu(self) -> Self {
        silu_steps(self)
    }
}

/// x / (1 + exp(−x)) with each step rounded to `T`, as candle's `silu`
/// on `T` does.
fn silu_steps<T: Elem>(x: T) -> T {
    let x = x.to_f();
    let e = rnd::<T>((-x).exp());
    let d = rnd::<T>(1.0 + e);
    T::from_f(x / d)
}

/// [`silu_steps`] of every bit pattern of a 16-bit dtype (128 KiB, built
/// on first use): a SiLU is then one load instead of an `expf` and a
/// division, with the same bits.
fn silu_table<T: Elem>(
    cell: &'static OnceLock<Vec<u16>>,
    bits: fn(T) -> u16,
    from: fn(u16) -> T,
) -> &'static [u16] {
    cell.get_or_init(|| (0..=u16::MAX).map(|b| bits(silu_steps(from(b)))).collect())
}

impl Elem for f32 {
    fn to_f(self) -> f32 {
        self
    }
    fn from_f(x: f32) -> Self {
        x
    }
}

impl Elem for bf16 {
    fn to_f(self) -> f32 {
        self.to_f32()
    }
    fn from_f(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn silu(self) -> Self {
        static TABLE: OnceLock<Vec<u16>> = OnceLock::new();
        bf16::from_bits(
            silu_table(&TABLE, bf16::to_bits, bf16::from_bits)[usize::from(self.to_bits())],
        )
    }
}

impl Elem for f16 {
    fn to_f(self) -> f32 {
        self.to_f32()
    }
    fn from_f(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn silu(self) -> Self {
        static TABLE: OnceLock<Vec<u16>> = OnceLock::new();
        f16::from_bits(
            silu_table(&TABLE, f16::to_bits, f16::from_bits)[usize::from(self.to_bits())],
        )
    }
}

/// `x` rounded to `T` (nearest even) and read back.
fn rnd<T: Elem>(x: f32) -> f32 {
    T::from_f(x).to_f()
}

/// The contiguous elements of a CPU storage under `layout`.
fn cpu_slice<'a, T: candle_core::WithDType>(
    s: &'a CpuStorage,
    layout: &Layout,
    what: &str,
) -> candle_core::Result<&'a [T]> {
    let all = s.as_slice::<T>()?;
    match layout.contiguous_offsets() {
        Some((a, b)) => Ok(&all[a..b]),
        None => candle_core::bail!("fused op: {what} must be contiguous"),
    }
}

/// A tensor's values on the host (CPU implementations read the tensors an
/// op carries this way).
fn host_vec<T: candle_core::WithDType>(t: &Tensor) -> candle_core::Result<Vec<T>> {
    t.flatten_all()?.to_vec1::<T>()
}

/// Evaluates `$body` with the type `$T` standing for the element type of
/// the CPU storage `$s` (f32, bf16 or f16); any other dtype is an error
/// naming `$op`. The one dtype dispatch of the ops' CPU implementations.
macro_rules! with_elem {
    ($s:expr, $op:literal, |$T:ident| $body:expr) => {
        match $s {
            CpuStorage::F32(_) => {
                type $T = f32;
                $body
            }
            CpuStorage::BF16(_) => {
                type $T = bf16;
                $body
            }
            CpuStorage::F16(_) => {
                type $T = f16;
                $body
            }
            other => candle_core::bail!(concat!($op, ": unsupported dtype {:?}"), other.dtype()),
        }
    };
}

/// `data` as a CPU storage of its own dtype.
fn owned<T: Elem>(data: Vec<T>) -> CpuStorage {
    <T as candle_core::WithDType>::to_cpu_storage_owned(data)
}

fn last_dim(layout: &Layout) -> candle_core::Result<usize> {
    match layout.dims().last() {
        Some(&d) if d > 0 => Ok(d),
        _ => candle_core::bail!("fused op: input needs a non-empty last dimension"),
    }
}

// ---------------------------------------------------------------------------
// RMSNorm

/// The zero-centred RMSNorm of the decoder (`scale` = 1 + w, f32 `[D]`):
/// `x / sqrt(Σx²/D + eps) · scale` in f32 over the last dimension, rounded
/// to x's dtype. x: `[.., D]` f32/bf16/f16.
///
/// # Errors
/// Shapes or dtypes that do not fit; CUDA launch errors.
pub(crate) fn rms_norm_scaled(x: &Tensor, scale: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
    let d = x.dim(candle_core::D::Minus1)?;
    if scale.dims() != [d] || scale.dtype() != DType::F32 {
        candle_core::bail!("rms_norm_scaled: scale must be f32 [{d}], got {scale:?}");
    }
    x.contiguous()?
        .apply_op2_no_bwd(&scale.contiguous()?, &RmsNormScaled { eps: eps as f32 })
}

fn rms_norm_rows<T: Elem>(x: &[T], scale: &[f32], dim: usize, eps: f32) -> Vec<T> {
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks_exact(dim) {
        let ss: f32 = row.iter().map(|v| v.to_f() * v.to_f()).sum();
        let den = (ss / dim as f32 + eps).sqrt();
        y.extend(
            row.iter()
                .zip(scale)
                .map(|(v, s)| T::from_f((v.to_f() / den) * s)),
        );
    }
    y
}

impl CustomOp2 for RmsNormScaled {
    fn name(&self) -> &'static str {
        "worldloom-rms-norm-scaled"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let dim = last_dim(l1)?;
        let scale = cpu_slice::<f32>(s2, l2, "scale")?;
        let out = with_elem!(s1, "rms_norm_scaled", |T| owned(rms_norm_rows(
            cpu_slice::<T>(s1, l1, "x")?,
            scale,
            dim,
            self.eps,
        )));
        Ok((out, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        super::cuda::rms_norm_scaled(self, s1, l1, s2, l2)
    }
}

// ---------------------------------------------------------------------------
// Gated RMSNorm

/// The DeltaNet output norm per row of `D` values: `o` f32 `[.., D]`, `z`
/// `[.., D]` and `w` `[D]` in the model dtype → `[.., D]` in the model
/// dtype: round(round(round(rmsnorm(round(o))) · w) · silu(z)), the
/// roundings of the unfused path (norm in f32, weight product in the
/// dtype, gate in f32).
///
/// # Errors
/// Shapes or dtypes that do not fit; CUDA launch errors.
pub(crate) fn gated_rms_norm(
    o: &Tensor,
    z: &Tensor,
    w: &Tensor,
    eps: f64,
) -> candle_core::Result<Tensor> {
    let d = o.dim(candle_core::D::Minus1)?;
    if o.dtype() != DType::F32 || o.dims() != z.dims() || w.dims() != [d] || z.dtype() != w.dtype()
    {
        candle_core::bail!(
            "gated_rms_norm: o f32 [.., {d}], z [.., {d}] and w [{d}] of one dtype expected, got \
             {o:?}, {z:?}, {w:?}"
        );
    }
    o.contiguous()?.apply_op3_no_bwd(
        &z.contiguous()?,
        &w.contiguous()?,
        &GatedRmsNorm { eps: eps as f32 },
    )
}

/// One row of the gated norm, in place: `o` f32 in, T-rounded values out.
fn gated_norm_row<T: Elem>(o: &mut [f32], z: &[T], w: &[T], eps: f32) {
    let dim = o.len();
    let mut ss = 0f32;
    for v in o.iter_mut() {
        *v = rnd::<T>(*v);
        ss += *v * *v;
    }
    let den = (ss / dim as f32 + eps).sqrt();
    for ((v, z), w) in o.iter_mut().zip(z).zip(w) {
        let n = rnd::<T>(*v / den);
        let n = rnd::<T>(n * w.to_f());
        let zf = z.to_f();
        let sz = zf / (1.0 + (-zf).exp());
        *v = rnd::<T>(n * sz);
    }
}

fn gated_norm_rows<T: Elem>(o: &[f32], z: &[T], w: &[T], eps: f32) -> Vec<T> {
    let dim = w.len();
    let mut row = vec![0f32; dim];
    let mut y = Vec::with_capacity(o.len());
    for (orow, zrow) in o.chunks_exact(dim).zip(z.chunks_exact(dim)) {
        row.copy_from_slice(orow);
        gated_norm_row(&mut row, zrow, w, eps);
        y.extend(row.iter().map(|&v| T::from_f(v)));
    }
    y
}

impl CustomOp3 for GatedRmsNorm {
    fn name(&self) -> &'static str {
        "worldloom-gated-rms-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let o = cpu_slice::<f32>(s1, l1, "o")?;
        let out = with_elem!(s2, "gated_rms_norm", |T| owned(gated_norm_rows(
            o,
            cpu_slice::<T>(s2, l2, "z")?,
            cpu_slice::<T>(s3, l3, "w")?,
            self.eps,
        )));
        Ok((out, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        super::cuda::gated_rms_norm(self, s1, l1, s2, l2, s3, l3)
    }
}

// ---------------------------------------------------------------------------
// Gated DeltaNet decode step

impl GdnDims {
    /// Conv channels: q, k and v.
    pub(crate) fn conv_dim(&self) -> usize {
        2 * self.n_k * self.d_k + self.n_v * self.d_v
    }

    fn key_head(&self, h: usize) -> usize {
        if self.tiled {
            h % self.n_k
        } else {
            h / (self.n_v / self.n_k)
        }
    }
}

/// What one Gated DeltaNet decode step reads besides its conv window (the
/// layer's weights and this token's projections).
pub(crate) struct GdnStepInputs<'a> {
    /// Conv taps `[kernel, conv_dim]`, model dtype.
    pub(crate) taps: &'a Tensor,
    /// `in_proj_z` output `[n_v·d_v]`, model dtype.
    pub(crate) z: &'a Tensor,
    /// `in_proj_b` output `[n_v]`, model dtype.
    pub(crate) b: &'a Tensor,
    /// `in_proj_a` output `[n_v]`, model dtype.
    pub(crate) a: &'a Tensor,
    /// −exp(A_log) `[n_v]`, f32.
    pub(crate) neg_a: &'a Tensor,
    /// `dt_bias` `[n_v]`, f32.
    pub(crate) dt_bias: &'a Tensor,
    /// Gated-norm weight `[d_v]`, model dtype.
    pub(crate) norm_weight: &'a Tensor,
    /// Recurrent state `[n_v, d_k, d_v]`, f32 (read only).
    pub(crate) state: &'a Tensor,
}

/// One Gated DeltaNet decode token. `padded` `[kernel, conv_dim]` (model
/// dtype) is the conv window: the cached `kernel − 1` pre-conv inputs, then
/// this token's `in_proj_qkv` output. Returns the gated-norm output
/// `[n_v·d_v]` in the model dtype (the input of `out_proj`) and the new
/// recurrent state `[n_v, d_k, d_v]` f32 (a new tensor; the old one is
/// untouched).
///
/// Per value head h (key head by [`GdnDims`]): conv over the window in the
/// model dtype, SiLU; q, k in f32 L2-normalised (eps 1e-6), q scaled by
/// 1/√d_k; β = sigmoid(b), g = −exp(A_log)·softplus(a + dt_bias);
/// S ← S·exp(g); S ← S + k ⊗ β(v − Sᵀk); o = Sᵀq; then the gated norm.
///
/// # Errors
/// Shapes or dtypes that do not fit; CUDA launch errors.
pub(crate) fn gdn_decode_step(
    padded: &Tensor,
    inputs: &GdnStepInputs<'_>,
    dims: GdnDims,
    eps: f64,
) -> candle_core::Result<(Tensor, Tensor)> {
    let GdnDims {
        n_k,
        n_v,
        d_k,
        d_v,
        kernel,
        ..
    } = dims;
    let c = dims.conv_dim();
    let dtype = padded.dtype();
    let check = |t: &Tensor, dims: &[usize], dt: DType, what: &str| -> candle_core::Result<()> {
        if t.dims() != dims || t.dtype() != dt {
            candle_core::bail!("gdn_decode_step: {what} must be {dt:?} {dims:?}, got {t:?}");
        }
        Ok(())
    };
    if n_k == 0 || n_v % n_k != 0 || d_k == 0 || d_v == 0 || kernel == 0 {
        candle_core::bail!("gdn_decode_step: bad widths {dims:?}");
    }
    check(padded, &[kernel, c], dtype, "padded")?;
    check(inputs.taps, &[kernel, c], dtype, "taps")?;
    check(inputs.z, &[n_v * d_v], dtype, "z")?;
    check(inputs.b, &[n_v], dtype, "b")?;
    check(inputs.a, &[n_v], dtype, "a")?;
    check(inputs.neg_a, &[n_v], DType::F32, "neg_a")?;
    check(inputs.dt_bias, &[n_v], DType::F32, "dt_bias")?;
    check(inputs.norm_weight, &[d_v], dtype, "norm_weight")?;
    check(inputs.state, &[n_v, d_k, d_v], DType::F32, "state")?;
    let op = GdnDecodeStep {
        taps: inputs.taps.contiguous()?,
        z: inputs.z.contiguous()?,
        b: inputs.b.contiguous()?,
        a: inputs.a.contiguous()?,
        neg_a: inputs.neg_a.contiguous()?,
        dt_bias: inputs.dt_bias.contiguous()?,
        norm_weight: inputs.norm_weight.contiguous()?,
        state: inputs.state.contiguous()?,
        dims,
        eps: eps as f32,
    };
    let packed = padded.contiguous()?.apply_op1_no_bwd(&op)?; // f32 [n_v·d_v + n_v·d_k·d_v]
    let out = packed.narrow(0, 0, n_v * d_v)?.to_dtype(dtype)?;
    let state = packed
        .narrow(0, n_v * d_v, n_v * d_k * d_v)?
        .reshape((n_v, d_k, d_v))?;
    Ok((out, state))
}

/// One output row of the Gated DeltaNet conv, then SiLU: `window` [K, C]
/// (the K inputs the row sees) against `taps` [K, C], into `acc` [C] as
/// f32 values of the dtype, every product, sum and SiLU step rounded to
/// `T` where candle's op-by-op form (`broadcast_mul`, `+`, `silu`) rounds.
/// Tap by tap over the whole row: slice loops the compiler vectorises.
fn conv_silu_row<T: Elem>(window: &[T], taps: &[T], acc: &mut [f32]) {
    let c = acc.len();
    for (j, (x, tap)) in window.chunks_exact(c).zip(taps.chunks_exact(c)).enumerate() {
        for ((a, &x), &tap) in acc.iter_mut().zip(x).zip(tap) {
            let prod = rnd::<T>(x.to_f() * tap.to_f());
            *a = if j == 0 { prod } else { rnd::<T>(*a + prod) };
        }
    }
    for a in acc.iter_mut() {
        *a = T::from_f(*a).silu().to_f();
    }
}

/// The causal depthwise conv of a Gated DeltaNet prefill, then SiLU, on
/// the CPU: `padded` [K − 1 + T, C] (the cached K − 1 inputs, then the T
/// new ones) and `taps` [K, C], both in the model dtype; returns [T, C] in
/// that dtype, row t = silu(Σ_j padded[t + j] · taps[j]) with every
/// product, sum and SiLU step rounded to the dtype where candle's op-by-op
/// form (`broadcast_mul`, `+`, `silu`) rounds ([`conv_silu_row`], which a
/// decode step uses too). Rows over rayon; no per-op temporaries and none of
/// candle's bf16 element-wise calls. `None` off the CPU or for dtypes
/// other than f32, bf16 and f16.
///
/// # Errors
/// `padded` and `taps` of different widths or dtypes, or fewer than K − 1
/// rows in `padded`.
pub(crate) fn conv_silu_rows(
    padded: &Tensor,
    taps: &Tensor,
) -> candle_core::Result<Option<Tensor>> {
    if !padded.device().is_cpu() || !taps.device().is_cpu() {
        return Ok(None);
    }
    match padded.dtype() {
        DType::F32 => conv_silu_rows_as::<f32>(padded, taps).map(Some),
        DType::BF16 => conv_silu_rows_as::<bf16>(padded, taps).map(Some),
        DType::F16 => conv_silu_rows_as::<f16>(padded, taps).map(Some),
        _ => Ok(None),
    }
}

fn conv_silu_rows_as<T: Elem + Send + Sync>(
    padded: &Tensor,
    taps: &Tensor,
) -> candle_core::Result<Tensor> {
    use rayon::prelude::*;
    let (rows, c) = padded.dims2()?;
    let (kernel, c_taps) = taps.dims2()?;
    if c != c_taps || taps.dtype() != padded.dtype() || kernel == 0 || rows + 1 < kernel {
        candle_core::bail!("conv_silu_rows: padded {padded:?} and taps {taps:?} do not fit");
    }
    let t = rows + 1 - kernel;
    let p: Vec<T> = host_vec(padded)?;
    let w: Vec<T> = host_vec(taps)?;
    let mut out = vec![T::from_f(0.0); t * c];
    out.par_chunks_mut(c).enumerate().for_each_init(
        || vec![0f32; c],
        |acc, (r, row)| {
            conv_silu_row(&p[r * c..(r + kernel) * c], &w, acc);
            for (o, &a) in row.iter_mut().zip(acc.iter()) {
                *o = T::from_f(a);
            }
        },
    );
    Tensor::from_vec(out, (t, c), padded.device())
}

impl GdnDecodeStep {
    fn cpu_step<T: Elem>(&self, padded: &[T]) -> candle_core::Result<Vec<f32>> {
        let GdnDims {
            n_k,
            n_v,
            d_k,
            d_v,
            kernel,
            ..
        } = self.dims;
        let c = self.dims.conv_dim();
        let taps: Vec<T> = host_vec(&self.taps)?;
        let mut conv = vec![0f32; c];
        conv_silu_row(&padded[..kernel * c], &taps, &mut conv);
        let z: Vec<T> = host_vec(&self.z)?;
        let b: Vec<T> = host_vec(&self.b)?;
        let a: Vec<T> = host_vec(&self.a)?;
        let neg_a: Vec<f32> = host_vec(&self.neg_a)?;
        let dt_bias: Vec<f32> = host_vec(&self.dt_bias)?;
        let w: Vec<T> = host_vec(&self.norm_weight)?;
        let state: Vec<f32> = host_vec(&self.state)?;
        let key_dim = n_k * d_k;
        let q_scale = 1.0 / (d_k as f32).sqrt();
        let mut out = vec![0f32; n_v * d_v + n_v * d_k * d_v];
        let (head_out, new_state) = out.split_at_mut(n_v * d_v);
        let mut q = vec![0f32; d_k];
        let mut k = vec![0f32; d_k];
        let mut v = vec![0f32; d_v];
        for h in 0..n_v {
            let kh = self.dims.key_head(h);
            for i in 0..d_k {
                q[i] = conv[kh * d_k + i];
                k[i] = conv[key_dim + kh * d_k + i];
            }
            for (j, vj) in v.iter_mut().enumerate() {
                *vj = conv[2 * key_dim + h * d_v + j];
            }
            let qden = (q.iter().map(|x| x * x).sum::<f32>() + GDN_L2_EPS).sqrt();
            let kden = (k.iter().map(|x| x * x).sum::<f32>() + GDN_L2_EPS).sqrt();
            for x in q.iter_mut() {
                *x = (*x / qden) * q_scale;
            }
            for x in k.iter_mut() {
                *x /= kden;
            }
            let bf = b[h].to_f();
            let beta = 1.0 / (1.0 + (-bf).exp());
            let x = a[h].to_f() + dt_bias[h];
            let sp = if x > 20.0 { x } else { (x.exp() + 1.0).ln() };
            let decay = (sp * neg_a[h]).exp();
            let s = &state[h * d_k * d_v..(h + 1) * d_k * d_v];
            let sn = &mut new_state[h * d_k * d_v..(h + 1) * d_k * d_v];
            let o = &mut head_out[h * d_v..(h + 1) * d_v];
            for j in 0..d_v {
                let mut mem = 0f32;
                for i in 0..d_k {
                    mem += (s[i * d_v + j] * decay) * k[i];
                }
                let delta = (v[j] - mem) * beta;
                let mut acc = 0f32;
                for i in 0..d_k {
                    let x = s[i * d_v + j] * decay + k[i] * delta;
                    sn[i * d_v + j] = x;
                    acc += x * q[i];
                }
                o[j] = acc;
            }
            gated_norm_row(o, &z[h * d_v..(h + 1) * d_v], &w, self.eps);
        }
        Ok(out)
    }
}

impl CustomOp1 for GdnDecodeStep {
    fn name(&self) -> &'static str {
        "worldloom-gdn-decode-step"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let out = with_elem!(s1, "gdn_decode_step", |T| self
            .cpu_step(cpu_slice::<T>(s1, l1, "padded")?)?);
        let n = out.len();
        Ok((CpuStorage::F32(out), Shape::from_dims(&[n])))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        super::cuda::gdn_decode_step(self, s1, l1)
    }
}

// ---------------------------------------------------------------------------
// Router softmax + top-k

/// The router of a sparse MoE block on logits `[T, E]` (any float dtype):
/// softmax in f32 over the experts, the `k` most probable (larger first,
/// ties to the lower expert), their probabilities divided by their sum (in
/// rank order) and rounded to `weight_dtype` (the reference rounds them to
/// the model dtype). Returns expert ids `[T, k]` u32 and weights `[T, k]`
/// f32, on the logits' device.
///
/// # Errors
/// `k` of 0 or above E; dtypes that do not fit; CUDA launch errors.
pub(crate) fn router_top_k(
    logits: &Tensor,
    k: usize,
    weight_dtype: DType,
) -> candle_core::Result<(Tensor, Tensor)> {
    let (t, e) = logits.dims2()?;
    if k == 0 || k > e {
        candle_core::bail!("router_top_k: k = {k} for {e} experts");
    }
    let packed = router_top_k_packed(logits, k, weight_dtype)?; // f32 [T, 2k]
    let ids = packed.narrow(1, 0, k)?.to_dtype(DType::U32)?;
    let weights = packed.narrow(1, k, k)?.contiguous()?;
    debug_assert_eq!(ids.dims(), &[t, k]);
    Ok((ids, weights))
}

/// [`router_top_k`] with ids and weights in one f32 tensor `[T, 2k]` (the
/// k expert ids as f32, then the k weights): one copy when the routing is
/// read on the host.
///
/// # Errors
/// As [`router_top_k`].
pub(crate) fn router_top_k_packed(
    logits: &Tensor,
    k: usize,
    weight_dtype: DType,
) -> candle_core::Result<Tensor> {
    let (_, e) = logits.dims2()?;
    if k == 0 || k > e {
        candle_core::bail!("router_top_k: k = {k} for {e} experts");
    }
    logits
        .contiguous()?
        .apply_op1_no_bwd(&RouterTopK { k, weight_dtype })
}

fn round_weight(x: f32, dtype: DType) -> f32 {
    match dtype {
        DType::BF16 => rnd::<bf16>(x),
        DType::F16 => rnd::<f16>(x),
        _ => x,
    }
}

/// Index of the best of `xs` by (larger value, lower index) among those
/// ranked after `prev` (all when `None`), skipping what `keep` refuses.
fn next_best(
    xs: &[f32],
    prev: Option<(f32, usize)>,
    keep: impl Fn(f32) -> bool,
) -> Option<(f32, usize)> {
    let mut best: Option<(f32, usize)> = None;
    for (i, &x) in xs.iter().enumerate() {
        if !keep(x) {
            continue;
        }
        if let Some((pv, pi)) = prev
            && !(x < pv || (x == pv && i > pi))
        {
            continue;
        }
        if best.is_none_or(|(bv, _)| x > bv) {
            best = Some((x, i));
        }
    }
    best
}

impl RouterTopK {
    fn cpu_rows<T: Elem>(&self, logits: &[T], e: usize) -> Vec<f32> {
        let k = self.k;
        let mut out = Vec::with_capacity(logits.len() / e * 2 * k);
        let mut p = vec![0f32; e];
        for row in logits.chunks_exact(e) {
            let m = row
                .iter()
                .map(|x| x.to_f())
                .fold(f32::NEG_INFINITY, f32::max);
            let mut s = 0f32;
            for (pi, x) in p.iter_mut().zip(row) {
                *pi = (x.to_f() - m).exp();
                s += *pi;
            }
            for pi in p.iter_mut() {
                *pi /= s;
            }
            let mut chosen = Vec::with_capacity(k);
            let mut prev = None;
            for _ in 0..k {
                let Some(best) = next_best(&p, prev, |_| true) else {
                    break;
                };
                chosen.push(best);
                prev = Some(best);
            }
            let sum: f32 = chosen.iter().map(|&(v, _)| v).sum();
            out.extend(chosen.iter().map(|&(_, i)| i as f32));
            out.extend(
                chosen
                    .iter()
                    .map(|&(v, _)| round_weight(v / sum, self.weight_dtype)),
            );
        }
        out
    }
}

impl CustomOp1 for RouterTopK {
    fn name(&self) -> &'static str {
        "worldloom-router-top-k"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (t, e) = l1.shape().dims2()?;
        let out = with_elem!(s1, "router_top_k", |T| self
            .cpu_rows(cpu_slice::<T>(s1, l1, "logits")?, e));
        Ok((CpuStorage::F32(out), Shape::from_dims(&[t, 2 * self.k])))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        super::cuda::router_top_k(self, s1, l1)
    }
}

// ---------------------------------------------------------------------------
// Sampling candidates

/// The `k` best candidates of a logit row for sampling, and the row's
/// log-softmax normaliser: what [`crate::sampling`] needs to pick a token
/// without the whole vocabulary on the host.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidates {
    /// (id, logit / temperature), most likely first, ties to the lower id;
    /// finite logits only (fewer than k when fewer are finite).
    pub(crate) scaled: Vec<(u32, f32)>,
    /// The raw logit of each candidate, in the same order.
    pub(crate) raw: Vec<f32>,
    /// The largest finite logit.
    pub(crate) max: f32,
    /// ln Σ exp(x − max) over the finite logits.
    pub(crate) log_sum: f64,
}

/// The `k` best finite logits of `logits` (`[V]` f32) ranked by
/// x / `temperature` (larger first, ties to the lower id) and the
/// log-softmax normaliser over the finite logits; only `3k + 2` values are
/// copied to the host. On the CPU the normaliser is summed in f64, on CUDA
/// in f32 (per block, then merged).
///
/// # Errors
/// A non-f32 or non-vector input, `k` of 0, `temperature` ≤ 0, a vocabulary
/// of 2²⁴ or more (ids travel as f32); no finite logit; CUDA errors.
pub(crate) fn sample_candidates(
    logits: &Tensor,
    k: usize,
    temperature: f32,
) -> candle_core::Result<Candidates> {
    let v = logits.dims1()?;
    if logits.dtype() != DType::F32
        || k == 0
        || temperature.is_nan()
        || temperature <= 0.0
        || v >= 1 << 24
    {
        candle_core::bail!(
            "sample_candidates: f32 [V < 2^24] logits, k > 0 and temperature > 0 expected \
             (got {logits:?}, k {k}, temperature {temperature})"
        );
    }
    let k = k.min(v);
    let packed: Vec<f32> = logits
        .contiguous()?
        .apply_op1_no_bwd(&SampleCandidates { k, temperature })?
        .to_vec1()?;
    let mut scaled = Vec::with_capacity(k);
    let mut raw = Vec::with_capacity(k);
    for r in 0..k {
        let id = packed[r];
        if id < 0.0 {
            break;
        }
        scaled.push((id as u32, packed[k + r]));
        raw.push(packed[2 * k + r]);
    }
    let max = packed[3 * k];
    if scaled.is_empty() || !max.is_finite() {
        candle_core::bail!("sample_candidates: no finite logit among {v}");
    }
    Ok(Candidates {
        scaled,
        raw,
        max,
        log_sum: f64::from(packed[3 * k + 1]),
    })
}

impl CustomOp1 for SampleCandidates {
    fn name(&self) -> &'static str {
        "worldloom-sample-candidates"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let xs = cpu_slice::<f32>(s1, l1, "logits")?;
        let k = self.k;
        let mut out = vec![-1f32; k];
        out.extend(std::iter::repeat_n(f32::NEG_INFINITY, 2 * k));
        let scaled: Vec<f32> = xs
            .iter()
            .map(|&x| {
                if x.is_finite() {
                    x / self.temperature
                } else {
                    f32::NAN
                }
            })
            .collect();
        let mut prev = None;
        for r in 0..k {
            let Some((y, i)) = next_best(&scaled, prev, |y| !y.is_nan()) else {
                break;
            };
            out[r] = i as f32;
            out[k + r] = y;
            out[2 * k + r] = xs[i];
            prev = Some((y, i));
        }
        let max = xs
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = xs
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x - max).exp())
            .sum();
        out.push(max);
        out.push(sum.ln() as f32);
        Ok((CpuStorage::F32(out), Shape::from_dims(&[3 * k + 2])))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        super::cuda::sample_candidates(self, s1, l1)
    }
}

#[cfg(test)]
mod tests;
