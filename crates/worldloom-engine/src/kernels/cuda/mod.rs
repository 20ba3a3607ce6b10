//! The CUDA side of the fused ops (`cuda` builds only): the PTX of
//! `fused.cu` (compiled by `build.rs` with `nvcc --ptx` for
//! `CUDA_COMPUTE_CAP`), loaded once per device through candle's
//! `CudaDevice::get_or_load_custom_func`, and one launcher per op of
//! [`super::fused`]; and [`new_device`], a CUDA device without cudarc's
//! event tracking.
//!
//! Kernel launches and uninitialised device allocations are `unsafe` in
//! cudarc, so this module allows `unsafe` (with
//! [`super::avx512_bf16`], the only ones). Each launch passes buffers whose
//! lengths the launcher checked against the kernel's indexing.
#![allow(unsafe_code)]

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, CudaView, DeviceRepr, LaunchConfig, PushKernelArg,
};
use candle_core::cuda_backend::{CudaDType, WrapErr};
use candle_core::{CudaDevice, CudaStorage, DType, Device, Layout, Shape, Storage};
use half::{bf16, f16};

use super::fused_params::{
    GDN_L2_EPS, GatedRmsNorm, GdnDecodeStep, RmsNormScaled, RouterTopK, SampleCandidates,
};

/// The fused kernels' PTX, built from `src/kernels/cuda/fused.cu`.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/fused.ptx"));

/// The name candle caches the loaded module under.
const MODULE: &str = "worldloom_fused";

/// CUDA device `ordinal` with cudarc's event tracking off.
///
/// cudarc records an event on every buffer a kernel reads or writes so that
/// other streams can wait for it; the engine runs each device on one stream
/// (candle's), where those events are pure cost (one `cuEventRecord` per
/// operand and launch). Turning tracking off before any buffer exists is
/// sound under that single-stream use: the stream orders every use.
///
/// # Errors
/// The driver's error when the device cannot be opened.
pub(crate) fn new_device(ordinal: usize) -> candle_core::Result<Device> {
    let device = Device::new_cuda(ordinal)?;
    if let Device::Cuda(cuda) = &device {
        // SAFETY: no buffer exists on this device yet, and the engine uses
        // the device's one stream only (see above).
        unsafe { cuda.disable_event_tracking() };
    }
    Ok(device)
}

/// Round-to-dtype code the CUDA kernel takes: 0 none, 1 bf16, 2 f16.
fn round_mode(dtype: DType) -> i32 {
    match dtype {
        DType::BF16 => 1,
        DType::F16 => 2,
        _ => 0,
    }
}

fn view<'a, T: CudaDType>(
    s: &'a CudaStorage,
    layout: &Layout,
    what: &str,
) -> candle_core::Result<CudaView<'a, T>> {
    match layout.contiguous_offsets() {
        Some((a, b)) => Ok(T::as_cuda_slice(s)?.slice(a..b)),
        None => candle_core::bail!("fused op: {what} must be contiguous"),
    }
}

fn cuda_of<'a>(s: &'a Storage, what: &str) -> candle_core::Result<&'a CudaStorage> {
    match s {
        Storage::Cuda(c) => Ok(c),
        _ => candle_core::bail!("fused op: {what} is not on the CUDA device"),
    }
}

fn suffix(dtype: DType) -> candle_core::Result<&'static str> {
    match dtype {
        DType::F32 => Ok("f32"),
        DType::BF16 => Ok("bf16"),
        DType::F16 => Ok("f16"),
        other => candle_core::bail!("fused op: unsupported dtype {other:?}"),
    }
}

/// Threads per block for rows of `n` values: a multiple of 32, at most 1024.
fn threads_for(n: usize) -> u32 {
    (n.div_ceil(32) * 32).clamp(32, 1024) as u32
}

fn i32_of(n: usize, what: &str) -> candle_core::Result<i32> {
    i32::try_from(n).map_err(|_| candle_core::Error::Msg(format!("fused op: {what} {n} too large")))
}

fn u32_of(n: usize, what: &str) -> candle_core::Result<u32> {
    u32::try_from(n).map_err(|_| candle_core::Error::Msg(format!("fused op: {what} {n} too large")))
}

fn wrap<T: CudaDType>(slice: CudaSlice<T>, dev: &CudaDevice) -> CudaStorage {
    CudaStorage::wrap_cuda_slice(slice, dev.clone())
}

// ---------------------------------------------------------------------------

pub(crate) fn rms_norm_scaled(
    op: &RmsNormScaled,
    x: &CudaStorage,
    lx: &Layout,
    scale: &CudaStorage,
    ls: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    fn run<T: CudaDType + DeviceRepr>(
        op: &RmsNormScaled,
        x: &CudaStorage,
        lx: &Layout,
        scale: &CudaStorage,
        ls: &Layout,
        name: &str,
    ) -> candle_core::Result<CudaStorage> {
        let dev = x.device();
        let n = lx.shape().elem_count();
        let dim = *lx.dims().last().unwrap_or(&1);
        let rows = n / dim.max(1);
        let xv = view::<T>(x, lx, "x")?;
        let sv = view::<f32>(scale, ls, "scale")?;
        // SAFETY: every element is written by the kernel (rows × dim).
        let y = unsafe { dev.alloc::<T>(n)? };
        let func = dev.get_or_load_custom_func(name, MODULE, PTX)?;
        let mut b = func.builder();
        b.arg(&xv);
        b.arg(&sv);
        b.arg(&y);
        candle_core::builder_arg!(b, i32_of(dim, "dim")?, op.eps);
        let cfg = LaunchConfig {
            grid_dim: (u32_of(rows, "rows")?, 1, 1),
            block_dim: (threads_for(dim), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: x and y hold rows × dim values, scale dim.
        unsafe { b.launch(cfg) }.w()?;
        Ok(wrap(y, dev))
    }
    let name = format!("rms_norm_scaled_{}", suffix(x.dtype())?);
    let out = match x.dtype() {
        DType::F32 => run::<f32>(op, x, lx, scale, ls, &name)?,
        DType::BF16 => run::<bf16>(op, x, lx, scale, ls, &name)?,
        DType::F16 => run::<f16>(op, x, lx, scale, ls, &name)?,
        other => candle_core::bail!("rms_norm_scaled: unsupported dtype {other:?}"),
    };
    Ok((out, lx.shape().clone()))
}

pub(crate) fn gated_rms_norm(
    op: &GatedRmsNorm,
    o: &CudaStorage,
    lo: &Layout,
    z: &CudaStorage,
    lz: &Layout,
    w: &CudaStorage,
    lw: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    #[allow(clippy::too_many_arguments)]
    fn run<T: CudaDType + DeviceRepr>(
        op: &GatedRmsNorm,
        o: &CudaStorage,
        lo: &Layout,
        z: &CudaStorage,
        lz: &Layout,
        w: &CudaStorage,
        lw: &Layout,
        name: &str,
    ) -> candle_core::Result<CudaStorage> {
        let dev = o.device();
        let n = lo.shape().elem_count();
        let dim = *lo.dims().last().unwrap_or(&1);
        let rows = n / dim.max(1);
        let ov = view::<f32>(o, lo, "o")?;
        let zv = view::<T>(z, lz, "z")?;
        let wv = view::<T>(w, lw, "w")?;
        // SAFETY: every element is written by the kernel.
        let y = unsafe { dev.alloc::<T>(n)? };
        let func = dev.get_or_load_custom_func(name, MODULE, PTX)?;
        let mut b = func.builder();
        b.arg(&ov);
        b.arg(&zv);
        b.arg(&wv);
        b.arg(&y);
        candle_core::builder_arg!(b, i32_of(dim, "dim")?, op.eps);
        let cfg = LaunchConfig {
            grid_dim: (u32_of(rows, "rows")?, 1, 1),
            block_dim: (threads_for(dim), 1, 1),
            shared_mem_bytes: u32_of((32 + dim) * 4, "shared memory")?,
        };
        // SAFETY: o, z and y hold rows × dim values, w dim.
        unsafe { b.launch(cfg) }.w()?;
        Ok(wrap(y, dev))
    }
    let name = format!("gated_rms_norm_{}", suffix(z.dtype())?);
    let out = match z.dtype() {
        DType::F32 => run::<f32>(op, o, lo, z, lz, w, lw, &name)?,
        DType::BF16 => run::<bf16>(op, o, lo, z, lz, w, lw, &name)?,
        DType::F16 => run::<f16>(op, o, lo, z, lz, w, lw, &name)?,
        other => candle_core::bail!("gated_rms_norm: unsupported dtype {other:?}"),
    };
    Ok((out, lo.shape().clone()))
}

pub(crate) fn gdn_decode_step(
    op: &GdnDecodeStep,
    padded: &CudaStorage,
    lp: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    fn run<T: CudaDType + DeviceRepr>(
        op: &GdnDecodeStep,
        padded: &CudaStorage,
        lp: &Layout,
        name: &str,
    ) -> candle_core::Result<CudaStorage> {
        let d = op.dims;
        let dev = padded.device();
        let (taps_g, taps_l) = op.taps.storage_and_layout();
        let (z_g, z_l) = op.z.storage_and_layout();
        let (b_g, b_l) = op.b.storage_and_layout();
        let (a_g, a_l) = op.a.storage_and_layout();
        let (na_g, na_l) = op.neg_a.storage_and_layout();
        let (dt_g, dt_l) = op.dt_bias.storage_and_layout();
        let (w_g, w_l) = op.norm_weight.storage_and_layout();
        let (s_g, s_l) = op.state.storage_and_layout();
        let pv = view::<T>(padded, lp, "padded")?;
        let taps = view::<T>(cuda_of(&taps_g, "taps")?, taps_l, "taps")?;
        let z = view::<T>(cuda_of(&z_g, "z")?, z_l, "z")?;
        let b = view::<T>(cuda_of(&b_g, "b")?, b_l, "b")?;
        let a = view::<T>(cuda_of(&a_g, "a")?, a_l, "a")?;
        let neg_a = view::<f32>(cuda_of(&na_g, "neg_a")?, na_l, "neg_a")?;
        let dt_bias = view::<f32>(cuda_of(&dt_g, "dt_bias")?, dt_l, "dt_bias")?;
        let w = view::<T>(cuda_of(&w_g, "norm_weight")?, w_l, "norm_weight")?;
        let state = view::<f32>(cuda_of(&s_g, "state")?, s_l, "state")?;
        let n = d.n_v * d.d_v + d.n_v * d.d_k * d.d_v;
        // SAFETY: the kernel writes all n_v·d_v outputs and n_v·d_k·d_v
        // state values.
        let out = unsafe { dev.alloc::<f32>(n)? };
        let func = dev.get_or_load_custom_func(name, MODULE, PTX)?;
        let mut builder = func.builder();
        builder.arg(&pv);
        builder.arg(&taps);
        builder.arg(&z);
        builder.arg(&b);
        builder.arg(&a);
        builder.arg(&neg_a);
        builder.arg(&dt_bias);
        builder.arg(&w);
        builder.arg(&state);
        builder.arg(&out);
        candle_core::builder_arg!(
            builder,
            i32_of(d.conv_dim(), "conv_dim")?,
            i32_of(d.kernel, "kernel")?,
            i32_of(d.n_k, "n_k")?,
            i32_of(d.n_v, "n_v")?,
            i32_of(d.d_k, "d_k")?,
            i32_of(d.d_v, "d_v")?,
            i32::from(d.tiled),
            op.eps,
            GDN_L2_EPS,
            1.0f32 / (d.d_k as f32).sqrt()
        );
        let cfg = LaunchConfig {
            grid_dim: (u32_of(d.n_v, "n_v")?, 1, 1),
            block_dim: (threads_for(d.d_k.max(d.d_v)), 1, 1),
            shared_mem_bytes: u32_of((32 + 2 * d.d_k + 2 * d.d_v) * 4, "shared memory")?,
        };
        // SAFETY: shapes checked by `fused::gdn_decode_step`; the kernel
        // indexes within [kernel, conv_dim], [n_v·d_v], [n_v], [d_v] and
        // [n_v, d_k, d_v].
        unsafe { builder.launch(cfg) }.w()?;
        Ok(wrap(out, dev))
    }
    let name = format!("gdn_decode_step_{}", suffix(padded.dtype())?);
    let out = match padded.dtype() {
        DType::F32 => run::<f32>(op, padded, lp, &name)?,
        DType::BF16 => run::<bf16>(op, padded, lp, &name)?,
        DType::F16 => run::<f16>(op, padded, lp, &name)?,
        other => candle_core::bail!("gdn_decode_step: unsupported dtype {other:?}"),
    };
    let d = op.dims;
    Ok((
        out,
        Shape::from_dims(&[d.n_v * d.d_v + d.n_v * d.d_k * d.d_v]),
    ))
}

pub(crate) fn router_top_k(
    op: &RouterTopK,
    logits: &CudaStorage,
    l: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    fn run<T: CudaDType + DeviceRepr>(
        op: &RouterTopK,
        logits: &CudaStorage,
        l: &Layout,
        name: &str,
    ) -> candle_core::Result<CudaStorage> {
        let dev = logits.device();
        let (t, e) = l.shape().dims2()?;
        let lv = view::<T>(logits, l, "logits")?;
        // SAFETY: the kernel writes 2k values per row.
        let out = unsafe { dev.alloc::<f32>(t * 2 * op.k)? };
        let func = dev.get_or_load_custom_func(name, MODULE, PTX)?;
        let mut b = func.builder();
        b.arg(&lv);
        b.arg(&out);
        candle_core::builder_arg!(
            b,
            i32_of(e, "experts")?,
            i32_of(op.k, "k")?,
            round_mode(op.weight_dtype)
        );
        let cfg = LaunchConfig {
            grid_dim: (u32_of(t, "rows")?, 1, 1),
            block_dim: (threads_for(e), 1, 1),
            shared_mem_bytes: u32_of((64 + e + 2 * op.k) * 4, "shared memory")?,
        };
        // SAFETY: logits hold t × e values, out t × 2k.
        unsafe { b.launch(cfg) }.w()?;
        Ok(wrap(out, dev))
    }
    let name = format!("router_top_k_{}", suffix(logits.dtype())?);
    let out = match logits.dtype() {
        DType::F32 => run::<f32>(op, logits, l, &name)?,
        DType::BF16 => run::<bf16>(op, logits, l, &name)?,
        DType::F16 => run::<f16>(op, logits, l, &name)?,
        other => candle_core::bail!("router_top_k: unsupported dtype {other:?}"),
    };
    let (t, _) = l.shape().dims2()?;
    Ok((out, Shape::from_dims(&[t, 2 * op.k])))
}

/// Logits per block of the first sampling pass.
const SAMPLE_CHUNK: usize = 2048;

pub(crate) fn sample_candidates(
    op: &SampleCandidates,
    logits: &CudaStorage,
    l: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    let dev = logits.device();
    let v = l.shape().elem_count();
    let k = op.k;
    let blocks = v.div_ceil(SAMPLE_CHUNK).max(1);
    let lv = view::<f32>(logits, l, "logits")?;
    // SAFETY: pass 1 writes 2k + 2 values per block, pass 2 all 3k + 2.
    let part = unsafe { dev.alloc::<f32>(blocks * (2 * k + 2))? };
    let out = unsafe { dev.alloc::<f32>(3 * k + 2)? };
    let pass1 = dev.get_or_load_custom_func("sample_candidates_pass1", MODULE, PTX)?;
    let mut b = pass1.builder();
    b.arg(&lv);
    b.arg(&part);
    candle_core::builder_arg!(
        b,
        i32_of(v, "vocabulary")?,
        i32_of(SAMPLE_CHUNK, "chunk")?,
        i32_of(k, "k")?,
        op.temperature
    );
    let cfg = LaunchConfig {
        grid_dim: (u32_of(blocks, "blocks")?, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: logits hold v values, part blocks × (2k + 2).
    unsafe { b.launch(cfg) }.w()?;
    let pass2 = dev.get_or_load_custom_func("sample_candidates_pass2", MODULE, PTX)?;
    let mut b = pass2.builder();
    b.arg(&lv);
    b.arg(&part);
    b.arg(&out);
    candle_core::builder_arg!(b, i32_of(blocks, "blocks")?, i32_of(k, "k")?);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1024, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: as above; out holds 3k + 2 values.
    unsafe { b.launch(cfg) }.w()?;
    Ok((wrap(out, dev), Shape::from_dims(&[3 * k + 2])))
}
