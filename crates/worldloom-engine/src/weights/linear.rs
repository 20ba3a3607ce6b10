//! [`LinearWeight`]: a projection's weight, dense or quantized, and
//! [`ExpertWeights`]: a stack of expert projections, dense or quantized.

use std::sync::{Arc, Once, OnceLock};

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Module, Tensor};

use super::mapped::{MappedRange, matmul_stored_blocks, settle_for_cpu};
use crate::kernels::{PackedWeight, host_slice, linear};

/// A quantized weight [out, in] (or one expert's) as loaded: candle's
/// tensor and, when its blocks stay in a GGUF file's mapping, their byte
/// range. On its first matmul on the CPU the weight is settled: a Q8_0,
/// Q4_K, Q5_K or Q6_K weight is packed for the crate's own kernels
/// ([`PackedWeight`]); elsewhere, where candle computes on a repacked copy
/// (Q4_K where the crate's kernels do not run: `WORLDLOOM_CPU_TILES=off`,
/// or a CPU with AVX2 and FMA but not F16C) that copy is built
/// (`mapped::settle_for_cpu`); either way the mapped pages are then
/// released, so one form of the weight stays resident. Clones share the
/// tensor and the settling.
#[derive(Debug, Clone)]
pub struct QuantizedWeight {
    tensor: Arc<QTensor>,
    mapped: Option<MappedRange>,
    settled: Arc<Once>,
    /// A CPU weight's tiles for the crate's kernels, built once by
    /// `prepare` (`None` inside where no kernel applies).
    packed: Arc<OnceLock<Option<PackedWeight>>>,
}

impl QuantizedWeight {
    /// A quantized tensor held in its own storage (no file mapping).
    pub fn new(tensor: QTensor) -> Self {
        Self {
            tensor: Arc::new(tensor),
            mapped: None,
            settled: Arc::new(Once::new()),
            packed: Arc::new(OnceLock::new()),
        }
    }

    /// Lets the OS drop the mapped pages of rows `ids` of a mapped
    /// weight after a lookup read them ([`MappedRange::release_parts`]):
    /// an embedding table is read a few rows at a time and never settled,
    /// and each row read mapped its page and the file pages around it
    /// (the kernel's fault-around, 64 KiB), so a prompt's distinct tokens
    /// grew the resident set by up to 64 KiB each, up to the whole table
    /// (286 MB at Q4_K and the real vocabulary). A no-op for a weight in
    /// its own storage.
    ///
    /// # Errors
    /// candle's errors reading `ids`.
    fn release_rows(&self, ids: &Tensor) -> candle_core::Result<()> {
        let Some(range) = &self.mapped else {
            return Ok(());
        };
        let Ok((_, hidden)) = self.tensor.shape().dims2() else {
            return Ok(());
        };
        let dtype = self.tensor.dtype();
        let row_bytes = hidden / dtype.block_size() * dtype.type_size();
        let mut ids = ids.flatten_all()?.to_dtype(DType::U32)?.to_vec1::<u32>()?;
        ids.sort_unstable();
        ids.dedup();
        range.release_parts(
            ids.into_iter()
                .map(|id| (id as usize * row_bytes, row_bytes)),
        );
        Ok(())
    }

    /// A CPU tensor whose blocks are `range` of a file mapping.
    pub(crate) fn mapped(tensor: QTensor, range: MappedRange) -> Self {
        Self {
            mapped: Some(range),
            ..Self::new(tensor)
        }
    }

    /// candle's tensor.
    pub fn tensor(&self) -> &Arc<QTensor> {
        &self.tensor
    }

    /// Makes a weight ready for its CPU matmuls, once (later calls return
    /// at once): a Q8_0, Q4_K or Q6_K weight on the CPU is packed for the
    /// crate's kernels where they apply ([`PackedWeight`]); otherwise a
    /// weight whose blocks are in a file mapping and that candle computes on
    /// a repacked copy gets that copy (`mapped::settle_for_cpu`); then the
    /// mapped pages are released.
    /// Called by the loader for projections and experts, and before the
    /// first matmul otherwise.
    ///
    /// # Errors
    /// candle's errors from the preparing matmul.
    pub fn prepare(&self) -> candle_core::Result<()> {
        if self.tensor.device().is_cpu()
            && (self.packed().is_some() || self.tensor.dtype() == GgmlDType::Q8_0)
        {
            // Q8_0 never takes candle's repacked path (see `quantized_forward`).
            return Ok(());
        }
        let Some(range) = &self.mapped else {
            return Ok(());
        };
        let mut result = Ok(());
        self.settled
            .call_once(|| result = settle_for_cpu(&self.tensor, range));
        result
    }

    /// The [`PackedWeight`] tiles of a CPU weight, built on first call
    /// (then the mapped pages, if any, are released: the tiles replace
    /// them); also for callers that drive the packed kernels themselves (the
    /// MoE block's grouped CPU dispatch). `None` off the CPU, for other
    /// types and where no kernel applies ([`PackedWeight::applies`]).
    pub(crate) fn packed(&self) -> Option<&PackedWeight> {
        self.packed
            .get_or_init(|| {
                let q = &self.tensor;
                if !q.device().is_cpu() {
                    return None;
                }
                let (n, k) = q.shape().dims2().ok()?;
                if !PackedWeight::applies(q.dtype(), n, k) {
                    return None;
                }
                let packed = PackedWeight::pack(q.dtype(), &q.data().ok()?, n, k)?;
                if let Some(range) = &self.mapped {
                    range.release();
                }
                Some(packed)
            })
            .as_ref()
    }
}

/// The weight `w` [out, in] of a projection `x @ wᵀ`: a dense tensor in
/// the compute dtype (through the crate's dense kernel) or a quantized
/// GGUF block tensor (through candle's quantized matmul).
#[derive(Debug, Clone)]
pub enum LinearWeight {
    /// A dense tensor [out, in] in the model's compute dtype.
    Dense(Tensor),
    /// A quantized tensor [out, in] (Q8_0, Q4_K, …): the input is widened
    /// to f32, multiplied by candle's quantized kernels, and the f32 output
    /// cast back to the input's dtype.
    Quantized(QuantizedWeight),
}

impl LinearWeight {
    /// `x @ wᵀ` for `x` [T, in]: [T, out] in `x`'s dtype.
    ///
    /// # Errors
    /// candle's shape and device errors.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(w) => linear(x, w),
            Self::Quantized(q) => {
                let dtype = x.dtype();
                let x32 = x.to_dtype(DType::F32)?.contiguous()?;
                quantized_forward(q, &x32)?.to_dtype(dtype)
            }
        }
    }

    /// Rows `ids` of `w` as a dense [len(ids), in] tensor in `dtype`
    /// (an embedding lookup); a quantized weight dequantizes only those
    /// rows.
    ///
    /// # Errors
    /// candle's errors (an id out of range among them).
    pub fn rows(&self, ids: &Tensor, dtype: DType) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(w) => w.index_select(ids, 0)?.to_dtype(dtype),
            Self::Quantized(q) => {
                let rows = q.tensor.embedding(ids)?.to_dtype(dtype)?;
                q.release_rows(ids)?;
                Ok(rows)
            }
        }
    }

    /// The weight's dims, [out, in].
    pub fn dims(&self) -> &[usize] {
        match self {
            Self::Dense(w) => w.dims(),
            Self::Quantized(q) => q.tensor.shape().dims(),
        }
    }

    /// The stored block type for a quantized weight, `None` for a dense one.
    pub fn quantized_type(&self) -> Option<GgmlDType> {
        match self {
            Self::Dense(_) => None,
            Self::Quantized(q) => Some(q.tensor.dtype()),
        }
    }
}

/// Most input rows candle's x86 Q4_K matmul takes on its VNNI tiles; from
/// 32 rows on it builds a second repacked copy of the weight for AMX
/// (2.2 × the stored blocks, next to the VNNI copy's 1.33 ×).
const Q4K_MAX_TILE_ROWS: usize = 31;

/// Whether the CPU reports AMX tiles with int8 products (Linux
/// `/proc/cpuinfo` flags `amx_tile` and `amx_int8`), the condition under
/// which candle may take its AMX Q4_K path (it also asks Linux for the tile
/// state; candle uses AMX on Linux only).
fn cpu_reports_amx() -> bool {
    static AMX: OnceLock<bool> = OnceLock::new();
    *AMX.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .is_some_and(|flags| {
                    let has = |w: &str| flags.split_whitespace().any(|f| f == w);
                    has("amx_tile") && has("amx_int8")
                })
        })
    })
}

/// `x @ wᵀ` for `x` [T, in] f32 and a quantized `w`, on the CPU in the form
/// that keeps one resident copy of `w`:
/// - Q8_0, Q4_K, Q5_K and Q6_K in llama.cpp's arithmetic on the crate's
///   tiles ([`PackedWeight`]) where those kernels apply (AVX-512 VNNI,
///   AVX-VNNI or AVX2; whole tiles); otherwise:
/// - Q8_0 through candle's generic Q8_0 kernel on the stored blocks
///   ([`matmul_stored_blocks`]) — never candle's x86 repacked Q8_0 path,
///   which quantizes the input per 256 values (Q8_K) and so loses
///   precision against llama.cpp (see `kernels::q8_0`);
/// - Q6_K with more than one row runs on the stored blocks
///   ([`matmul_stored_blocks`]): candle would otherwise build a repacked
///   copy (1.5 × the blocks) for prefill while decode keeps reading the
///   blocks, so both would stay resident;
/// - Q4_K on a CPU with AMX runs in chunks of at most
///   [`Q4K_MAX_TILE_ROWS`] rows, on the one repacked copy decode uses (see
///   `mapped::settle_for_cpu`), at some prefill speed (one weight read per
///   chunk);
/// - everything else (and every other device) through candle's `QMatMul`.
fn quantized_forward(w: &QuantizedWeight, x: &Tensor) -> candle_core::Result<Tensor> {
    let q = &w.tensor;
    let rows = x.dims().first().copied().unwrap_or(0);
    if x.device().is_cpu() {
        w.prepare()?;
    }
    if x.device().is_cpu() && x.rank() == 2 {
        if let Some(packed) = w.packed() {
            let x = x.contiguous()?;
            // The input read in place where it is f32 on the CPU (the guard
            // released before any fallback reads the storage again).
            let in_place = {
                let (storage, layout) = x.storage_and_layout();
                host_slice::<f32>(&storage, layout).map(|data| packed.matmul(data, rows))
            };
            let y = match in_place {
                Some(y) => y,
                None => packed.matmul(&x.flatten_all()?.to_vec1::<f32>()?, rows),
            };
            return Tensor::from_vec(y, (rows, packed.rows()), x.device());
        }
        match q.dtype() {
            GgmlDType::Q8_0 => {
                if let Some(y) = matmul_stored_blocks(q, x)? {
                    return Ok(y);
                }
            }
            GgmlDType::Q6K if rows > 1 => {
                if let Some(y) = matmul_stored_blocks(q, x)? {
                    return Ok(y);
                }
            }
            GgmlDType::Q4K if rows > Q4K_MAX_TILE_ROWS && cpu_reports_amx() => {
                let qm = QMatMul::QTensor(q.clone());
                let mut parts = Vec::with_capacity(rows.div_ceil(Q4K_MAX_TILE_ROWS));
                let mut start = 0;
                while start < rows {
                    let len = Q4K_MAX_TILE_ROWS.min(rows - start);
                    parts.push(qm.forward(&x.narrow(0, start, len)?.contiguous()?)?);
                    start += len;
                }
                return Tensor::cat(&parts, 0);
            }
            _ => {}
        }
    }
    QMatMul::QTensor(q.clone()).forward(x)
}

/// Experts of one MoE layer for one projection, `[E, out, in]`.
#[derive(Debug, Clone)]
pub enum ExpertWeights {
    /// A dense stacked tensor [E, out, in] in the compute dtype.
    Dense(Tensor),
    /// One quantized [out, in] tensor per expert (each a block-aligned byte
    /// range of the file's 3-D tensor, read on its own).
    Quantized(Vec<QuantizedWeight>),
    /// One quantized [E, out, in] tensor for all experts, on a CUDA device:
    /// multiplied for every (token, expert) pair at once by candle's
    /// indexed MoE kernel ([`ExpertWeights::indexed_forward`]).
    QuantizedStack(QuantizedWeight),
}

impl ExpertWeights {
    /// Number of experts.
    pub fn len(&self) -> usize {
        match self {
            Self::Dense(t) => t.dims().first().copied().unwrap_or(0),
            Self::Quantized(v) => v.len(),
            Self::QuantizedStack(q) => q.tensor.shape().dims().first().copied().unwrap_or(0),
        }
    }

    /// Whether there are no experts.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every expert's [`PackedWeight`] tiles, when the experts are
    /// quantized CPU weights that the packed kernels all take; else `None`.
    pub(crate) fn packed_experts(&self) -> Option<Vec<&PackedWeight>> {
        match self {
            Self::Quantized(v) => v.iter().map(QuantizedWeight::packed).collect(),
            _ => None,
        }
    }

    /// Expert `e`'s weight [out, in].
    ///
    /// # Errors
    /// `e` out of range.
    pub fn expert(&self, e: usize) -> candle_core::Result<LinearWeight> {
        match self {
            Self::Dense(t) => Ok(LinearWeight::Dense(t.get(e)?)),
            Self::Quantized(v) => v
                .get(e)
                .cloned()
                .map(LinearWeight::Quantized)
                .ok_or_else(|| candle_core::Error::Msg(format!("no expert {e}"))),
            Self::QuantizedStack(_) => candle_core::bail!(
                "expert {e} is part of a quantized stack: use the indexed MoE dispatch"
            ),
        }
    }

    /// For a [`ExpertWeights::QuantizedStack`]: every (token, slot) pair's
    /// expert applied to its input, `x` [T, 1 or k, in] f32 (one row per
    /// token, or one per pair), `ids` [T, k] u32 expert ids; gives
    /// [T, k, out] f32. candle's `QTensor::indexed_moe_forward` (CUDA;
    /// Q8_0, Q2_K…Q6_K). `None` for the other variants.
    ///
    /// # Errors
    /// candle's errors (an unsupported block type among them).
    pub fn indexed_forward(&self, x: &Tensor, ids: &Tensor) -> candle_core::Result<Option<Tensor>> {
        match self {
            Self::QuantizedStack(q) if q.tensor.device().is_cuda() => {
                q.tensor.indexed_moe_forward(x, ids).map(Some)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moe::max_abs_diff;
    use candle_core::Device;

    /// A quantized projection and row lookup agree with the dense ones on
    /// the dequantized weight.
    #[test]
    fn quantized_matches_dequantized_dense() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (48, 256), &dev)?;
        let x = Tensor::randn(0f32, 1.0, (5, 256), &dev)?;
        for dtype in [
            GgmlDType::Q8_0,
            GgmlDType::Q4_0,
            GgmlDType::Q4K,
            GgmlDType::Q5K,
            GgmlDType::Q6K,
        ] {
            let q = QTensor::quantize(&w, dtype)?;
            let dense = LinearWeight::Dense(q.dequantize(&dev)?);
            let quant = LinearWeight::Quantized(QuantizedWeight::new(q));
            let (a, b) = (dense.forward(&x)?, quant.forward(&x)?);
            let scale = a.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            let diff = max_abs_diff(&a, &b);
            // candle quantizes the input to 8 bits as llama.cpp does.
            assert!(diff <= 0.03 * scale, "{dtype:?}: {diff} of {scale}");
            let ids = Tensor::new(&[3u32, 0, 47, 3], &dev)?;
            let diff = max_abs_diff(
                &dense.rows(&ids, DType::F32)?,
                &quant.rows(&ids, DType::F32)?,
            );
            assert_eq!(diff, 0.0, "{dtype:?} rows");
        }
        Ok(())
    }
}
