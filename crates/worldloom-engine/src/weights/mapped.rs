//! Quantized blocks left where they are: in the memory-mapped GGUF file.
//!
//! [`MappedBlocks`] is a candle `QuantizedType` (the CPU storage behind a
//! `QTensor`) whose bytes are a range of a read-only file mapping, so a
//! quantized weight on the CPU costs no anonymous memory: its pages are the
//! file's, read in by the kernel when first touched and given back under
//! memory pressure (clean file pages), as llama.cpp holds its weights.
//!
//! candle's own CPU storage is an owned `Vec` of blocks: loading through it
//! held every quantized tensor once in the process heap, and candle's x86
//! kernels then built a second, repacked copy (`QTensor`'s packed cache) on
//! first use — twice the file in all. With mapped blocks the repacked copy is
//! the only heap copy, and [`MappedBlocks::release`] drops the mapping's
//! resident pages once it exists (see `LinearWeight::settle`).
//!
//! Allowed `unsafe` (as `safetensors_dir`'s mapping is): mapping the file,
//! viewing the mapped bytes as candle's block structs, and advising the OS
//! to drop mapped pages.

#![allow(unsafe_code)]

use std::fs::File;
use std::sync::Arc;

use candle_core::quantized::k_quants::{
    self, BlockQ2K, BlockQ3K, BlockQ4_0, BlockQ4_1, BlockQ4K, BlockQ5_0, BlockQ5_1, BlockQ5K,
    BlockQ6K, BlockQ8_0, BlockQ8_1, BlockQ8K,
};
use candle_core::quantized::{GgmlDType, GgmlType, QTensor, QuantizedType};
use candle_core::{CpuStorage, DType, Device, Result, Tensor};
use half::{bf16, f16};
use memmap2::{Mmap, UncheckedAdvice};

use crate::kernels::PackedWeight;

/// Whether candle's CPU matmul of a `[n, k]` weight of `dtype` runs on its
/// x86 repacked copy for one input row, as our projections call it
/// (candle-core 0.11's `repack_x86::select`: Q4_K on AVX2+FMA or better,
/// `n` a multiple of 16 and `k` of 256). Q6_K keeps one row on its stored
/// blocks. candle would repack Q8_0 too (on AVX-VNNI or AVX-512 VNNI), but
/// that path quantizes the input per 256 values; Q8_0 goes through the
/// crate's own kernel instead (`kernels::q8_0`, tiles of the blocks' size,
/// built by `QuantizedWeight::prepare`), and so do Q4_K, Q5_K and Q6_K where
/// the crate's kernels apply (`kernels::PackedWeight`): candle repacks only
/// what they do not take.
fn repacked_for_one_row(dtype: GgmlDType, n: usize, k: usize) -> bool {
    if PackedWeight::applies(dtype, n, k) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if !n.is_multiple_of(16) || k == 0 || !k.is_multiple_of(256) {
            return false;
        }
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let vnni = (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
            || (is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("avx2"));
        dtype == GgmlDType::Q4K && (avx2 || vnni)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (dtype, n, k);
        false
    }
}

/// Bytes a quantized weight of `dtype` and `shape` (`[n, k]`, or `[E, n, k]`
/// for experts) that is multiplied on this CPU keeps resident, its blocks
/// taking `stored` bytes in the file: the crate's Q4_K tiles
/// (`kernels::k_quants`) take 148/144 of the blocks (the 6-bit scales and
/// minima unpacked to bytes) and its Q5_K tiles 180/176, candle's x86 Q4_K
/// tiles, used where ours do not apply, 4/3 (per 16 rows and 256 columns:
/// 3,072 bytes against 16 × 144, the scales and minima unpacked to f32);
/// the crate's Q8_0 and Q6_K tiles take the blocks' size; other types
/// compute on the blocks themselves.
pub fn quantized_resident_bytes(dtype: GgmlDType, shape: &[usize], stored: u64) -> u64 {
    let (n, k) = match shape {
        [.., n, k] => (*n, *k),
        _ => return stored,
    };
    if dtype == GgmlDType::Q4K && PackedWeight::applies(dtype, n, k) {
        stored / 144 * 148
    } else if dtype == GgmlDType::Q5K && PackedWeight::applies(dtype, n, k) {
        stored / 176 * 180
    } else if dtype == GgmlDType::Q4K && repacked_for_one_row(dtype, n, k) {
        stored / 3 * 4
    } else {
        stored
    }
}

/// Prepares a mapped quantized weight for compute on the CPU. Where candle
/// computes on a repacked copy ([`repacked_for_one_row`]), one matmul of a
/// zero row builds that copy now, at load time rather than on the first
/// token, and the mapped pages it was built from are released: the copy is
/// then the weight's only resident form. Elsewhere the blocks are used in
/// place and nothing happens. Safe either way: released pages that are read
/// again come back from the file.
///
/// # Errors
/// candle's errors from the warm-up matmul.
pub fn settle_for_cpu(q: &QTensor, range: &MappedRange) -> Result<()> {
    let Ok((n, k)) = q.shape().dims2() else {
        return Ok(());
    };
    if !repacked_for_one_row(q.dtype(), n, k) {
        return Ok(());
    }
    let zero = Tensor::zeros((1, k), DType::F32, &Device::Cpu)?;
    zero.apply_op1_no_bwd(q)?;
    range.release();
    Ok(())
}

/// A read-only mapping of a whole file, shared by the tensors cut from it.
#[derive(Clone)]
pub struct FileMap(Arc<Mmap>);

impl FileMap {
    /// Maps `file` read-only.
    ///
    /// # Errors
    /// The OS's mapping error.
    pub fn new(file: &File) -> std::io::Result<Self> {
        // SAFETY: the mapping is read-only and private to this process; the
        // hazard memmap2 documents (another process truncating or rewriting
        // the file while it is mapped) is the same as for every mmap-based
        // weight loader (llama.cpp, candle's safetensors): a model file must
        // not be rewritten while a model is loaded from it.
        let map = unsafe { memmap2::MmapOptions::new().map(file)? };
        Ok(Self(Arc::new(map)))
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Lets the OS drop the resident pages of bytes `start..start + len`
    /// (`MADV_DONTNEED`): they leave the process's resident set, stay in the
    /// page cache while memory allows, and are read again from the file if
    /// touched. For bytes that were copied out (a dense tensor converted to
    /// the compute dtype) or whose compute form is a repacked copy.
    pub fn release(&self, start: usize, len: usize) {
        if start.checked_add(len).is_none_or(|end| end > self.0.len()) {
            return;
        }
        // SAFETY: the mapping is a private read-only file mapping never
        // written through, so dropping its pages loses nothing: a later read
        // faults the same bytes back in from the file, and slices borrowed
        // from it keep reading the same values.
        let result = unsafe {
            self.0
                .unchecked_advise_range(UncheckedAdvice::DontNeed, start, len)
        };
        // Advice is best effort: on failure the pages simply stay resident.
        let _ = result;
    }
}

/// The window Linux maps around a read fault in a file mapping (the
/// default `fault_around_bytes`), in bytes: a power of two.
pub const FAULT_AROUND_BYTES: usize = 64 << 10;

/// A byte range of a [`FileMap`], kept to release its pages later.
#[derive(Debug, Clone)]
pub struct MappedRange {
    map: FileMap,
    start: usize,
    len: usize,
}

impl MappedRange {
    /// Releases the range's resident pages ([`FileMap::release`]).
    pub fn release(&self) {
        self.map.release(self.start, self.len);
    }

    /// Releases, for each part `(offset, len)` of the range (in rising
    /// order), the pages of the [`FAULT_AROUND_BYTES`]-aligned window of
    /// virtual addresses around it ([`fault_windows`]): a read fault in a
    /// file mapping maps the cached pages of that whole window (Linux's
    /// fault-around), so releasing only the part's own pages would leave
    /// the rest resident.
    pub fn release_parts(&self, parts: impl IntoIterator<Item = (usize, usize)>) {
        let bytes = self.map.bytes();
        let mapping = (bytes.as_ptr() as usize, bytes.len());
        for (from, to) in fault_windows(mapping, (self.start, self.len), parts) {
            self.map.release(from, to - from);
        }
    }
}

/// The byte ranges (offsets into a mapping at address `base` of `mapped`
/// bytes) to release for `parts` (`(offset, len)` in rising order, within
/// the range `start..start + len` of the mapping): each part widened to
/// the [`FAULT_AROUND_BYTES`]-aligned addresses around it and clamped to
/// the mapping, overlapping or touching windows merged. A neighbour's
/// pages released with a window are read again when touched.
fn fault_windows(
    (base, mapped): (usize, usize),
    (start, len): (usize, usize),
    parts: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<(usize, usize)> {
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for (offset, part) in parts {
        let from = base + start + offset.min(len);
        let to = from + part.min(len.saturating_sub(offset));
        if to == from {
            continue;
        }
        let lo = (from & !(FAULT_AROUND_BYTES - 1)).max(base) - base;
        let hi = (to.next_multiple_of(FAULT_AROUND_BYTES) - base).min(mapped);
        match windows.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    windows
}

impl std::fmt::Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileMap({} bytes)", self.0.len())
    }
}

/// The blocks of one quantized tensor (or one expert of a 3-D tensor): a
/// byte range of a [`FileMap`] read as `dtype`'s blocks.
pub struct MappedBlocks {
    map: FileMap,
    start: usize,
    len: usize,
    dtype: GgmlDType,
}

/// The block struct's alignment for `dtype`.
fn block_align(dtype: GgmlDType) -> usize {
    match dtype {
        GgmlDType::F32 => align_of::<f32>(),
        GgmlDType::F16 => align_of::<f16>(),
        GgmlDType::BF16 => align_of::<bf16>(),
        GgmlDType::Q4_0 => align_of::<BlockQ4_0>(),
        GgmlDType::Q4_1 => align_of::<BlockQ4_1>(),
        GgmlDType::Q5_0 => align_of::<BlockQ5_0>(),
        GgmlDType::Q5_1 => align_of::<BlockQ5_1>(),
        GgmlDType::Q8_0 => align_of::<BlockQ8_0>(),
        GgmlDType::Q8_1 => align_of::<BlockQ8_1>(),
        GgmlDType::Q2K => align_of::<BlockQ2K>(),
        GgmlDType::Q3K => align_of::<BlockQ3K>(),
        GgmlDType::Q4K => align_of::<BlockQ4K>(),
        GgmlDType::Q5K => align_of::<BlockQ5K>(),
        GgmlDType::Q6K => align_of::<BlockQ6K>(),
        GgmlDType::Q8K => align_of::<BlockQ8K>(),
    }
}

/// Runs `$body` with `$blocks` bound to the storage's blocks as a slice of
/// the block struct of its dtype, `$t` naming that struct.
macro_rules! with_blocks {
    ($self:expr, |$blocks:ident: $t:ident| $body:expr) => {
        match $self.dtype {
            GgmlDType::F32 => with_blocks!(@one $self, f32, $blocks, $t, $body),
            GgmlDType::F16 => with_blocks!(@one $self, f16, $blocks, $t, $body),
            GgmlDType::BF16 => with_blocks!(@one $self, bf16, $blocks, $t, $body),
            GgmlDType::Q4_0 => with_blocks!(@one $self, BlockQ4_0, $blocks, $t, $body),
            GgmlDType::Q4_1 => with_blocks!(@one $self, BlockQ4_1, $blocks, $t, $body),
            GgmlDType::Q5_0 => with_blocks!(@one $self, BlockQ5_0, $blocks, $t, $body),
            GgmlDType::Q5_1 => with_blocks!(@one $self, BlockQ5_1, $blocks, $t, $body),
            GgmlDType::Q8_0 => with_blocks!(@one $self, BlockQ8_0, $blocks, $t, $body),
            GgmlDType::Q8_1 => with_blocks!(@one $self, BlockQ8_1, $blocks, $t, $body),
            GgmlDType::Q2K => with_blocks!(@one $self, BlockQ2K, $blocks, $t, $body),
            GgmlDType::Q3K => with_blocks!(@one $self, BlockQ3K, $blocks, $t, $body),
            GgmlDType::Q4K => with_blocks!(@one $self, BlockQ4K, $blocks, $t, $body),
            GgmlDType::Q5K => with_blocks!(@one $self, BlockQ5K, $blocks, $t, $body),
            GgmlDType::Q6K => with_blocks!(@one $self, BlockQ6K, $blocks, $t, $body),
            GgmlDType::Q8K => with_blocks!(@one $self, BlockQ8K, $blocks, $t, $body),
        }
    };
    (@one $self:expr, $ty:ty, $blocks:ident, $t:ident, $body:expr) => {{
        #[allow(dead_code)]
        type $t = $ty;
        let $blocks: &[$ty] = $self.blocks::<$ty>();
        $body
    }};
}

impl MappedBlocks {
    /// Bytes `start..start + len` of `map` as blocks of `dtype`, or `None`
    /// when the range is out of the mapping, not a whole number of blocks,
    /// or not aligned for the block struct (the caller then copies).
    pub fn new(map: &FileMap, start: usize, len: usize, dtype: GgmlDType) -> Option<Self> {
        let end = start.checked_add(len)?;
        let bytes = map.bytes().get(start..end)?;
        let aligned = (bytes.as_ptr() as usize).is_multiple_of(block_align(dtype));
        if !aligned || !len.is_multiple_of(dtype.type_size()) {
            return None;
        }
        Some(Self {
            map: map.clone(),
            start,
            len,
            dtype,
        })
    }

    fn bytes(&self) -> &[u8] {
        &self.map.bytes()[self.start..self.start + self.len]
    }

    /// The bytes as `T`s. Only called by `with_blocks!` with the struct of
    /// `self.dtype`.
    fn blocks<T: GgmlType>(&self) -> &[T] {
        let bytes = self.bytes();
        // SAFETY: `new` checked that the range lies in the mapping, is
        // aligned for the block struct of `dtype` and holds a whole number of
        // blocks (`type_size` = `size_of::<T>()` for candle's block structs);
        // the structs are plain `repr(C)` integers and halves, valid for any
        // bit pattern; the mapping is read-only and lives as long as `self`.
        unsafe {
            std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size_of::<T>())
        }
    }

    /// The byte range, to release its pages once the tensor is settled.
    pub fn range(&self) -> MappedRange {
        MappedRange {
            map: self.map.clone(),
            start: self.start,
            len: self.len,
        }
    }
}

impl QuantizedType for MappedBlocks {
    fn dtype(&self) -> GgmlDType {
        self.dtype
    }

    fn matmul_t(&self, mkn: (usize, usize, usize), lhs: &[f32], dst: &mut [f32]) -> Result<()> {
        with_blocks!(self, |blocks: T| k_quants::matmul::<T>(
            mkn, lhs, blocks, dst
        ))
    }

    fn matmul_t_f16(&self, mkn: (usize, usize, usize), lhs: &[f16], dst: &mut [f16]) -> Result<()> {
        with_blocks!(self, |blocks: T| k_quants::matmul_f16::<T>(
            mkn, lhs, blocks, dst
        ))
    }

    fn embedding(&self, ids: &[u32], rows: usize, hidden: usize) -> Result<CpuStorage> {
        with_blocks!(self, |blocks: T| {
            if !hidden.is_multiple_of(T::BLCK_SIZE) || blocks.len() != rows * hidden / T::BLCK_SIZE
            {
                candle_core::bail!(
                    "quantized embedding of {} blocks cannot hold {rows} rows of {hidden}",
                    blocks.len()
                );
            }
            let row_blocks = hidden / T::BLCK_SIZE;
            let mut out = vec![0f32; ids.len() * hidden];
            for (dst, &id) in out.chunks_exact_mut(hidden).zip(ids) {
                let row = id as usize;
                if row >= rows {
                    candle_core::bail!("embedding id {row} is out of range for {rows} rows");
                }
                T::to_float(&blocks[row * row_blocks..(row + 1) * row_blocks], dst);
            }
            Ok(CpuStorage::F32(out))
        })
    }

    fn dequantize(&self, elem_count: usize) -> Result<CpuStorage> {
        with_blocks!(self, |blocks: T| {
            if blocks.len() * T::BLCK_SIZE != elem_count {
                candle_core::bail!(
                    "{} blocks of {} values do not hold {elem_count} values",
                    blocks.len(),
                    T::BLCK_SIZE
                );
            }
            let mut out = vec![0f32; elem_count];
            T::to_float(blocks, &mut out);
            Ok(CpuStorage::F32(out))
        })
    }

    fn storage_size_in_bytes(&self) -> usize {
        self.len
    }

    fn as_ptr(&self) -> *const u8 {
        self.bytes().as_ptr()
    }

    fn block_size(&self) -> usize {
        self.dtype.block_size()
    }

    /// Never called: candle quantizes into storage it allocates itself
    /// (`QTensor::quantize`), never into a tensor it was handed.
    fn from_float(&mut self, _xs: &[f32]) {
        unreachable!("mapped GGUF blocks are read-only")
    }

    /// Never called, as [`MappedBlocks::from_float`].
    fn from_float_imatrix(&mut self, _xs: &[f32], _imatrix: &[f32], _n_per_row: usize) {
        unreachable!("mapped GGUF blocks are read-only")
    }

    fn size(&self) -> usize {
        self.len
    }
}

/// `x @ wᵀ` on the CPU for `x` [m, k] f32 (contiguous) and a quantized `w`
/// [n, k], on `w`'s stored blocks through candle's generic block kernels
/// (`k_quants::matmul`: the input quantized to the blocks' dot type, then
/// row-tiled dot products): no repacked copy of `w` is built. `None` when
/// `w` is not on the CPU or its bytes are misaligned for its block type.
///
/// # Errors
/// candle's shape errors.
pub fn matmul_stored_blocks(w: &QTensor, x: &Tensor) -> Result<Option<Tensor>> {
    let (n, k) = w.shape().dims2()?;
    let (m, xk) = x.dims2()?;
    if xk != k || x.dtype() != DType::F32 || !x.device().is_cpu() {
        return Ok(None);
    }
    if !matches!(w.device(), Device::Cpu) {
        return Ok(None);
    }
    let data = w.data()?;
    let bytes: &[u8] = &data;
    let x = x.contiguous()?;
    let lhs = x.flatten_all()?.to_vec1::<f32>()?;
    let mut dst = vec![0f32; m * n];
    macro_rules! run {
        ($t:ty) => {{
            if !(bytes.as_ptr() as usize).is_multiple_of(align_of::<$t>())
                || !bytes.len().is_multiple_of(size_of::<$t>())
            {
                return Ok(None);
            }
            // SAFETY: aligned and a whole number of blocks (checked above);
            // candle's block structs are plain `repr(C)` data valid for any
            // bit pattern; `data` outlives the slice.
            let blocks: &[$t] = unsafe {
                std::slice::from_raw_parts(
                    bytes.as_ptr().cast::<$t>(),
                    bytes.len() / size_of::<$t>(),
                )
            };
            k_quants::matmul::<$t>((m, k, n), &lhs, blocks, &mut dst)?
        }};
    }
    match w.dtype() {
        GgmlDType::Q4K => run!(BlockQ4K),
        GgmlDType::Q5K => run!(BlockQ5K),
        GgmlDType::Q6K => run!(BlockQ6K),
        GgmlDType::Q8_0 => run!(BlockQ8_0),
        _ => return Ok(None),
    }
    Tensor::from_vec(dst, (m, n), &Device::Cpu).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: usize = FAULT_AROUND_BYTES;

    /// Windows are the aligned addresses around each part, clamped to the
    /// mapping (whose base need not be aligned), merged when they overlap
    /// or touch, and parts are clamped to their range.
    #[test]
    fn fault_windows_cover_each_part_and_merge() {
        // A mapping at 4 KiB past an aligned address, 10 windows long; the
        // range starts 100 bytes in.
        let base = 7 * W + 4096;
        let mapping = (base, 10 * W);
        let range = (100, 9 * W);
        // One 1,152-byte row at the range's start: from the mapping's start
        // (the aligned address lies before it) to the next aligned address.
        assert_eq!(
            fault_windows(mapping, range, [(0, 1152)]),
            vec![(0, W - 4096)]
        );
        // Two rows in one window merge; a row two windows on stands alone.
        let row = |i: usize| (i * 1152, 1152);
        let far = 2 * W / 1152 + 1;
        assert_eq!(
            fault_windows(mapping, range, [row(1), row(2), row(far)]),
            vec![(0, W - 4096), (2 * W - 4096, 3 * W - 4096)]
        );
        // Touching windows merge into one.
        let next = (W - 4096 - 100) / 1152 + 1;
        assert_eq!(
            fault_windows(mapping, range, [row(0), row(next)]),
            vec![(0, 2 * W - 4096)]
        );
        // A part running over the range's end is cut to it, one past it
        // is dropped.
        assert_eq!(
            fault_windows(mapping, range, [(9 * W - 10, 50), (9 * W + 5, 8)]),
            vec![(9 * W - 4096, 10 * W - 4096)]
        );
        // A window stops at the mapping's end.
        let whole = (0, 10 * W);
        assert_eq!(
            fault_windows(mapping, whole, [(10 * W - 10, 10)]),
            vec![(10 * W - 4096, 10 * W)]
        );
        assert!(fault_windows(mapping, range, []).is_empty());
    }
}
