//! Compute kernels the models share.
//!
//! [`linear`] is `x @ wᵀ`, routed to the CPU streaming kernel of [`cpu`]
//! where it applies and to candle's matmul elsewhere. [`fused`] holds the
//! fused decode ops (candle custom ops with a CPU reference and, in `cuda`
//! builds, their CUDA twins in `cuda`). [`q8_0`] and [`k_quants`] multiply
//! Q8_0, Q4_K, Q5_K and Q6_K weights on AVX-512 VNNI, AVX-VNNI or AVX2 in
//! llama.cpp's arithmetic, on tiles built once per weight
//! ([`PackedWeight`]); the 256-bit forms share [`simd256`]'s product.
//! [`bf16_matmul_bt`] multiplies bf16 by bf16 on AMX tiles ([`amx_bf16`])
//! or AVX512-BF16 ([`avx512_bf16`]). Attention over an f32 KV cache read
//! in place runs on [`f32_rows`]' tiles for up to 64 positions and on
//! [`flash_f32`]'s key tiles with a running softmax for a prompt piece.

pub(crate) mod amx_bf16;
pub(crate) mod avx512_bf16;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod delta_rule;
mod disjoint;
pub(crate) use disjoint::on_pool;
pub(crate) mod f32_rows;
pub(crate) mod flash_f32;
pub(crate) mod fused;
pub(crate) mod fused_params;
pub(crate) mod k_quants;
pub(crate) mod lanes;
pub(crate) mod q8_0;
pub(crate) mod silu;
#[cfg(target_arch = "x86_64")]
pub(crate) mod simd256;

/// The CPU kernels this machine runs, as the engine decides them (once
/// per process, `WORLDLOOM_CPU_TILES` and `WORLDLOOM_CPU_AMX` included):
/// what `worldloom model info` reports, so a speed can be read against
/// the path that produced it (docs/engine.md, "CPU speed").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuKernels {
    /// The Q8_0/Q4_K/Q5_K/Q6_K tile kernels' and input quantizers'
    /// instruction set (`avx512vnni`, `avxvnni`, `avx2`); `None`: candle's
    /// one-row quantized kernels.
    pub quantized: Option<&'static str>,
    /// Prefill attention over an f32 KV cache (`avx512`, `avx2`); `None`:
    /// the batched form on candle's matmul.
    pub prefill_attention: Option<&'static str>,
    /// bf16 × bf16 products: `amx` (batches of 16+ rows; fewer on
    /// AVX512-BF16), `avx512bf16`; `None`: widened to f32 for candle's
    /// matmul.
    pub bf16: Option<&'static str>,
}

/// [`CpuKernels`] of this machine and process.
pub fn cpu_kernels() -> CpuKernels {
    CpuKernels {
        quantized: q8_0::tile_isa().map(q8_0::TileIsa::name),
        prefill_attention: lanes::form().map(lanes::Form::name),
        bf16: if amx_bf16::available() {
            Some("amx")
        } else if avx512_bf16::available() {
            Some("avx512bf16")
        } else {
            None
        },
    }
}

use candle_core::quantized::GgmlDType;
use candle_core::{DType, Layout, Storage, Tensor};

/// The elements of a tensor's storage under a contiguous `layout`, where
/// the storage is on the CPU and holds `T`; `None` for another device or
/// dtype or a strided layout (the callers then copy or fall back). Read
/// under the guard of `Tensor::storage_and_layout`.
pub(crate) fn host_slice<'a, T: candle_core::WithDType>(
    storage: &'a Storage,
    layout: &Layout,
) -> Option<&'a [T]> {
    let Storage::Cpu(s) = storage else {
        return None;
    };
    let (start, end) = layout.contiguous_offsets()?;
    s.as_slice::<T>().ok().map(|all| &all[start..end])
}

use k_quants::{PackedQ4K, PackedQ5K, PackedQ6K, Q8K};
use q8_0::{Activations, PackedQ8_0};

/// A quantized weight [n, k] repacked into 16-row tiles for the crate's
/// kernels (AVX-512 VNNI, AVX-VNNI or AVX2: [`q8_0::tile_isa`]), which
/// quantize the input as llama.cpp does for the weight's type (Q8_0 blocks
/// for Q8_0, Q8_K for the K-quants).
#[derive(Debug)]
pub enum PackedWeight {
    /// [`q8_0`]'s tiles (the blocks' size).
    Q8_0(PackedQ8_0),
    /// [`k_quants`]' Q4_K tiles (1.03 × the blocks).
    Q4K(PackedQ4K),
    /// [`k_quants`]' Q5_K tiles (1.02 × the blocks).
    Q5K(PackedQ5K),
    /// [`k_quants`]' Q6_K tiles (the blocks' size).
    Q6K(PackedQ6K),
}

impl PackedWeight {
    /// Packs the stored blocks of a weight [n, k] of `dtype` (row-major, as
    /// GGUF stores them). `None` for other types, on CPUs without the
    /// kernels, or where the shape is not whole tiles
    /// ([`q8_0::applies`], [`k_quants::applies`]).
    pub fn pack(dtype: GgmlDType, blocks: &[u8], n: usize, k: usize) -> Option<Self> {
        match dtype {
            GgmlDType::Q8_0 => PackedQ8_0::pack(blocks, n, k).map(Self::Q8_0),
            GgmlDType::Q4K => PackedQ4K::pack_q4k(blocks, n, k).map(Self::Q4K),
            GgmlDType::Q5K => PackedQ5K::pack_q5k(blocks, n, k).map(Self::Q5K),
            GgmlDType::Q6K => PackedQ6K::pack_q6k(blocks, n, k).map(Self::Q6K),
            _ => None,
        }
    }

    /// Whether [`PackedWeight::pack`] would pack a weight [n, k] of `dtype`
    /// on this CPU.
    pub fn applies(dtype: GgmlDType, n: usize, k: usize) -> bool {
        match dtype {
            GgmlDType::Q8_0 => q8_0::applies(n, k),
            GgmlDType::Q4K | GgmlDType::Q5K | GgmlDType::Q6K => k_quants::applies(n, k),
            _ => false,
        }
    }

    /// Rows of the weight (`n`).
    pub fn rows(&self) -> usize {
        match self {
            Self::Q8_0(p) => p.rows(),
            Self::Q4K(p) => p.rows(),
            Self::Q5K(p) => p.rows(),
            Self::Q6K(p) => p.rows(),
        }
    }

    /// Columns of the weight (`k`, the input's width).
    pub fn cols(&self) -> usize {
        match self {
            Self::Q8_0(p) => p.cols(),
            Self::Q4K(p) => p.cols(),
            Self::Q5K(p) => p.cols(),
            Self::Q6K(p) => p.cols(),
        }
    }

    /// `x @ wᵀ` for `x` [m, k] f32 (row-major): [m, n] f32.
    ///
    /// # Panics
    /// If `x.len() != m · k`.
    pub fn matmul(&self, x: &[f32], m: usize) -> Vec<f32> {
        match self {
            Self::Q8_0(p) => p.matmul(x, m),
            Self::Q4K(p) => p.matmul(x, m),
            Self::Q5K(p) => p.matmul(x, m),
            Self::Q6K(p) => p.matmul(x, m),
        }
    }

    /// `x` [m, k] f32 quantized as this weight's kernel takes it (Q8_0
    /// blocks or Q8_K), to be multiplied by [`PackedWeight::matmul_quantized`]
    /// (by this weight or another that takes the same input).
    ///
    /// # Panics
    /// If `x.len() != m · k`.
    pub(crate) fn quantize_input(&self, x: &[f32], m: usize) -> QuantizedInput {
        let k = self.cols();
        assert_eq!(x.len(), m * k, "input is not [{m}, {k}]");
        match self {
            Self::Q8_0(_) => QuantizedInput::Q8_0(Activations::quantize(x, m, k)),
            Self::Q4K(_) | Self::Q5K(_) | Self::Q6K(_) => {
                QuantizedInput::Q8K(Q8K::quantize(x, m, k))
            }
        }
    }

    /// Whether `other` takes the input this weight's
    /// [`PackedWeight::quantize_input`] gives (the same kind and width).
    pub(crate) fn takes_input_of(&self, other: &Self) -> bool {
        let kind = |w: &Self| matches!(w, Self::Q8_0(_));
        kind(self) == kind(other) && self.cols() == other.cols()
    }

    /// `x @ wᵀ` for an input from [`PackedWeight::quantize_input`]: [m, n]
    /// f32, the tile columns over rayon's threads when `parallel` (else in
    /// the calling thread). `None` when the input is of the other kind or
    /// width.
    pub(crate) fn matmul_quantized(
        &self,
        input: &QuantizedInput,
        parallel: bool,
    ) -> Option<Vec<f32>> {
        if input.cols() != self.cols() {
            return None;
        }
        match (self, input) {
            (Self::Q8_0(p), QuantizedInput::Q8_0(a)) => Some(p.matmul_quantized(a, parallel)),
            (Self::Q4K(p), QuantizedInput::Q8K(a)) => Some(p.matmul_quantized(a, parallel)),
            (Self::Q5K(p), QuantizedInput::Q8K(a)) => Some(p.matmul_quantized(a, parallel)),
            (Self::Q6K(p), QuantizedInput::Q8K(a)) => Some(p.matmul_quantized(a, parallel)),
            _ => None,
        }
    }
}

/// An input [m, k] quantized for [`PackedWeight`]'s kernels: Q8_0 blocks
/// (for Q8_0 weights) or Q8_K (for the K-quants), row by row, so a subset
/// of rows ([`QuantizedInput::gather`]) is what quantizing those rows
/// alone would give.
pub(crate) enum QuantizedInput {
    /// Q8_0 blocks of 32.
    Q8_0(Activations),
    /// Q8_K blocks of 256.
    Q8K(Q8K),
}

impl QuantizedInput {
    /// Input width (`k`).
    pub(crate) fn cols(&self) -> usize {
        match self {
            Self::Q8_0(a) => a.cols(),
            Self::Q8K(a) => a.cols(),
        }
    }

    /// Rows `rows` of the input, in that order.
    ///
    /// # Panics
    /// If a row is out of range.
    pub(crate) fn gather(&self, rows: &[u32]) -> Self {
        match self {
            Self::Q8_0(a) => Self::Q8_0(a.gather(rows)),
            Self::Q8K(a) => Self::Q8K(a.gather(rows)),
        }
    }
}

/// `x @ wᵀ` for `x` [T, in] and `w` [out, in] (a plain or narrowed weight).
///
/// On the CPU, f32 `x` and `w` with at most [`f32_rows::MAX_ROWS`] rows
/// of `x` go through [`f32_rows`]' tiles, which read the weight in place
/// (decode, verifying forwards, the small per-expert batches of a prefill;
/// candle's gemm packs the whole weight on every call of 2+ rows); larger
/// f32 inputs through candle's gemm. bf16 and f16 weights with at most
/// [`cpu::MAX_STREAM_ROWS`] rows of `x` go through a row-streaming
/// kernel that widens each weight row to f32 in cache and reads the weight
/// once (decode and the small per-expert batches of a prefill); larger bf16
/// inputs widen only the viewed weight to f32 and use candle's gemm (candle's
/// own bf16 CPU matmul widens the whole storage behind a view, i.e. all
/// experts of a layer). Where the CPU has AVX512-BF16, bf16 `x` and `w`
/// of any row count go through [`avx512_bf16`]'s blocked kernel instead.
pub(crate) fn linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    if x.device().is_cpu() && matches!(w.dtype(), DType::BF16 | DType::F16) {
        if let Some(y) = try_linear_bf16(x, w)? {
            return Ok(y);
        }
        if let Some(y) = cpu::try_linear(x, w)? {
            return Ok(y);
        }
        if w.dtype() == DType::BF16 {
            return x
                .to_dtype(DType::F32)?
                .matmul(&w.to_dtype(DType::F32)?.t()?)?
                .to_dtype(DType::BF16);
        }
    }
    if let Some(y) = try_linear_f32(x, w)? {
        return Ok(y);
    }
    x.matmul(&w.t()?)
}

/// [`f32_rows::matmul_bt`] for CPU f32 `x` [m ≤ f32_rows::MAX_ROWS, k] and
/// a contiguous f32 `w` [n, k] (plain or an expert's view); `None` when it
/// does not apply (device, dtypes, row count, a CPU without AVX2 + FMA, a
/// strided weight).
fn try_linear_f32(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
    if !x.device().is_cpu()
        || x.dtype() != DType::F32
        || w.dtype() != DType::F32
        || !f32_rows::available()
        || !x
            .dims2()
            .is_ok_and(|(m, _)| (1..=f32_rows::MAX_ROWS).contains(&m))
    {
        return Ok(None);
    }
    matmul_bt_on_slices::<f32>(x, w, |x, w, mkn, out| {
        f32_rows::matmul_bt(x, w, mkn, out);
    })
}

/// out [m, n] = x [m, k] · w [n, k]ᵀ in bf16 (f32 sums, rounded once) on
/// the fastest path this CPU has: AMX tiles for batches of at least
/// [`amx_bf16::MIN_ROWS`] rows where the kernel grants them
/// ([`amx_bf16::applies`]), else the AVX512-BF16 kernels. The caller
/// checks [`avx512_bf16::available`].
pub(crate) fn bf16_matmul_bt(
    x: &[half::bf16],
    w: &[half::bf16],
    (m, k, n): (usize, usize, usize),
    out: &mut [half::bf16],
    parallel: bool,
) {
    if amx_bf16::applies(m, k, n) {
        amx_bf16::matmul_bt(x, w, (m, k, n), out, parallel);
    } else {
        avx512_bf16::matmul_bt(x, w, (m, k, n), out, parallel);
    }
}

/// [`bf16_matmul_bt`] for CPU bf16 `x` [m, k] and a contiguous
/// bf16 `w` [n, k] (plain or an expert's view); `None` when it does not
/// apply (other dtypes, a CPU without AVX512-BF16, a strided weight).
fn try_linear_bf16(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
    if x.dtype() != DType::BF16 || w.dtype() != DType::BF16 || !avx512_bf16::available() {
        return Ok(None);
    }
    matmul_bt_on_slices::<half::bf16>(x, w, |x, w, mkn, out| {
        bf16_matmul_bt(x, w, mkn, out, true);
    })
}

/// `kernel(x, w, (m, k, n), out)` on the CPU storage of `x` [m, k] (made
/// contiguous) and `w` [n, k] (a contiguous plain or narrowed view) as
/// slices of `T`, returning `out` [m, n] (zeroed first) as a tensor;
/// `None` when the widths disagree or either storage is not a contiguous
/// CPU buffer of `T`.
fn matmul_bt_on_slices<T: candle_core::WithDType>(
    x: &Tensor,
    w: &Tensor,
    kernel: impl FnOnce(&[T], &[T], (usize, usize, usize), &mut [T]),
) -> candle_core::Result<Option<Tensor>> {
    let (m, k) = x.dims2()?;
    let (n, k_w) = w.dims2()?;
    if k != k_w {
        return Ok(None);
    }
    let x = x.contiguous()?;
    let mut out = vec![T::from_f64(0.0); m * n];
    {
        let (w_storage, w_layout) = w.storage_and_layout();
        let (x_storage, x_layout) = x.storage_and_layout();
        let (Some((ws, we)), Some((xs, xe))) =
            (w_layout.contiguous_offsets(), x_layout.contiguous_offsets())
        else {
            return Ok(None);
        };
        let (Storage::Cpu(xv), Storage::Cpu(wv)) = (&*x_storage, &*w_storage) else {
            return Ok(None);
        };
        let (Ok(xv), Ok(wv)) = (xv.as_slice::<T>(), wv.as_slice::<T>()) else {
            return Ok(None);
        };
        kernel(&xv[xs..xe], &wv[ws..we], (m, k, n), &mut out);
    }
    Ok(Some(Tensor::from_vec(out, (m, n), x.device())?))
}
