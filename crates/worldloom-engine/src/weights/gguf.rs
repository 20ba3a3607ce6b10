//! GGUF files (llama.cpp's weight format): one file or split parts
//! (`NAME-00001-of-0000N.gguf`, all found from the first), their metadata
//! and tensors, read one tensor at a time.
//!
//! This module knows no model: it reads names, types, shapes, metadata and
//! bytes. What a model's names and values mean is the model's business
//! (e.g. `qwen3_5_moe::gguf`).
//!
//! Shapes are given outermost first, as candle and PyTorch write them
//! (GGUF stores ggml's `ne`, innermost first; candle's reader reverses it):
//! `token_embd.weight` is `[vocab, hidden]`, `blk.N.ffn_gate_exps.weight`
//! `[experts, expert_ffn, hidden]`.
//!
//! Every part is memory-mapped read-only. Quantized tensors for the CPU
//! stay in the mapping (see [`super::mapped`]: no copy in the process heap);
//! dense tensors, and quantized ones for a GPU, are copied out of it one
//! tensor at a time, so the peak memory while loading is the model plus one
//! tensor. Every tensor's byte range is checked against its part's length
//! when the file is opened, so a truncated download is reported before any
//! tensor is loaded.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{DType, Device, Tensor};

use super::error::LoadError;
use super::linear::QuantizedWeight;
use super::mapped::{FileMap, MappedBlocks};

/// The metadata key of the model architecture (`qwen35moe`, `llama`, …).
pub const ARCHITECTURE_KEY: &str = "general.architecture";

/// One tensor of a GGUF file.
#[derive(Debug, Clone)]
pub struct GgufTensorInfo {
    /// Index of the part (0 for a single file) that holds the data.
    pub part: usize,
    /// Stored block type.
    pub dtype: GgmlDType,
    /// Dims, outermost first.
    pub shape: Vec<usize>,
    /// Absolute byte offset of the data in its part.
    pub offset: u64,
    /// Bytes of data.
    pub size_bytes: u64,
}

impl GgufTensorInfo {
    /// Number of elements.
    pub fn elem_count(&self) -> usize {
        self.shape.iter().product()
    }
}

struct Part {
    path: PathBuf,
    map: FileMap,
}

/// An open GGUF model: the first part's metadata and every part's tensors.
pub struct GgufFile {
    path: PathBuf,
    parts: Vec<Part>,
    metadata: HashMap<String, Value>,
    tensors: BTreeMap<String, GgufTensorInfo>,
}

/// Whether `path` names a GGUF file (by its `.gguf` extension).
pub fn is_gguf_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// `(stem, index, count)` for a split part name `STEM-0000I-of-0000N.gguf`.
fn split_name(path: &Path) -> Option<(String, usize, usize)> {
    let name = path.file_name()?.to_str()?;
    let base = name.strip_suffix(".gguf")?;
    let (rest, count) = base.rsplit_once("-of-")?;
    let (stem, index) = rest.rsplit_once('-')?;
    if index.len() != 5 || count.len() != 5 {
        return None;
    }
    Some((stem.to_string(), index.parse().ok()?, count.parse().ok()?))
}

/// The file name of part `index` (1-based) of `count` for `stem`.
pub fn split_part_name(stem: &str, index: usize, count: usize) -> String {
    format!("{stem}-{index:05}-of-{count:05}.gguf")
}

/// The size in bytes of `elems` values of `dtype`.
pub fn dtype_bytes(dtype: GgmlDType, elems: usize) -> u64 {
    (elems / dtype.block_size() * dtype.type_size()) as u64
}

/// The name llama.cpp gives a block type (`Q4_K`, `BF16`, …).
pub fn dtype_name(dtype: GgmlDType) -> &'static str {
    match dtype {
        GgmlDType::F32 => "F32",
        GgmlDType::F16 => "F16",
        GgmlDType::BF16 => "BF16",
        GgmlDType::Q4_0 => "Q4_0",
        GgmlDType::Q4_1 => "Q4_1",
        GgmlDType::Q5_0 => "Q5_0",
        GgmlDType::Q5_1 => "Q5_1",
        GgmlDType::Q8_0 => "Q8_0",
        GgmlDType::Q8_1 => "Q8_1",
        GgmlDType::Q2K => "Q2_K",
        GgmlDType::Q3K => "Q3_K",
        GgmlDType::Q4K => "Q4_K",
        GgmlDType::Q5K => "Q5_K",
        GgmlDType::Q6K => "Q6_K",
        GgmlDType::Q8K => "Q8_K",
    }
}

/// Whether candle's CPU quantized matmul takes rows of `row_len` values of
/// `dtype`: its Q4_1, Q5_0 and Q5_1 dot products need an even number of
/// 32-value blocks per row (a debug assertion, a panic in a test build).
/// Tensors it does not take are read dense instead.
pub fn quantized_rows_supported(dtype: GgmlDType, row_len: usize) -> bool {
    match dtype {
        GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 => {
            (row_len / dtype.block_size()).is_multiple_of(2)
        }
        _ => true,
    }
}

/// Whether `dtype` is a plain float type (read as a dense tensor).
pub fn is_float_type(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16)
}

fn float_dtype(dtype: GgmlDType) -> Option<DType> {
    match dtype {
        GgmlDType::F32 => Some(DType::F32),
        GgmlDType::F16 => Some(DType::F16),
        GgmlDType::BF16 => Some(DType::BF16),
        _ => None,
    }
}

impl GgufFile {
    /// Opens a GGUF file; for a split model, `path` is the first part
    /// (`…-00001-of-0000N.gguf`) and the others are found beside it.
    ///
    /// # Errors
    /// [`LoadError::Io`] for an unreadable or missing part,
    /// [`LoadError::BadGguf`] for a file that is not GGUF, a truncated one
    /// (naming the first tensor whose data lies past the end), a tensor
    /// present in two parts, or a later part given instead of the first.
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let bad = |path: &Path, message: String| LoadError::BadGguf {
            path: path.to_path_buf(),
            message,
        };
        let paths: Vec<PathBuf> = match split_name(path) {
            Some((stem, index, count)) if count > 1 => {
                if index != 1 {
                    return Err(bad(
                        path,
                        format!(
                            "part {index} of {count} of a split model: open the first part, {}",
                            split_part_name(&stem, 1, count)
                        ),
                    ));
                }
                let dir = path.parent().unwrap_or(Path::new(""));
                (1..=count)
                    .map(|i| dir.join(split_part_name(&stem, i, count)))
                    .collect()
            }
            _ => vec![path.to_path_buf()],
        };
        let mut parts = Vec::with_capacity(paths.len());
        let mut metadata = HashMap::new();
        let mut tensors = BTreeMap::new();
        for (index, part_path) in paths.iter().enumerate() {
            let mut file = File::open(part_path).map_err(|source| LoadError::Io {
                path: part_path.clone(),
                source,
            })?;
            let len = file
                .metadata()
                .map_err(|source| LoadError::Io {
                    path: part_path.clone(),
                    source,
                })?
                .len();
            let content = Content::read(&mut file)
                .map_err(|e| bad(part_path, format!("not a readable GGUF file: {e}")))?;
            let mut infos: Vec<(&String, _)> = content.tensor_infos.iter().collect();
            infos.sort_by_key(|(_, i)| i.offset);
            for (name, info) in infos {
                let shape = info.shape.dims().to_vec();
                let elems: usize = shape.iter().product();
                if !elems.is_multiple_of(info.ggml_dtype.block_size()) {
                    return Err(bad(
                        part_path,
                        format!(
                            "tensor `{name}` of {elems} values is not a whole number of {} blocks",
                            dtype_name(info.ggml_dtype)
                        ),
                    ));
                }
                let size_bytes = dtype_bytes(info.ggml_dtype, elems);
                let offset = content.tensor_data_offset.saturating_add(info.offset);
                if offset.saturating_add(size_bytes) > len {
                    return Err(bad(
                        part_path,
                        format!(
                            "tensor `{name}` needs bytes {offset}..{} but the file has {len} bytes \
                             (truncated?)",
                            offset.saturating_add(size_bytes)
                        ),
                    ));
                }
                let previous = tensors.insert(
                    name.clone(),
                    GgufTensorInfo {
                        part: index,
                        dtype: info.ggml_dtype,
                        shape,
                        offset,
                        size_bytes,
                    },
                );
                if previous.is_some() {
                    return Err(bad(
                        part_path,
                        format!("tensor `{name}` appears in more than one part"),
                    ));
                }
            }
            if index == 0 {
                metadata = content.metadata;
            }
            let map = FileMap::new(&file).map_err(|source| LoadError::Io {
                path: part_path.clone(),
                source,
            })?;
            parts.push(Part {
                path: part_path.clone(),
                map,
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            parts,
            metadata,
            tensors,
        })
    }

    /// The path the file was opened by (the first part of a split model).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The paths of all parts, in order.
    pub fn part_paths(&self) -> impl Iterator<Item = &Path> {
        self.parts.iter().map(|p| p.path.as_path())
    }

    /// The metadata of the first part.
    pub fn metadata(&self) -> &HashMap<String, Value> {
        &self.metadata
    }

    /// `general.architecture`, if present and a string.
    pub fn architecture(&self) -> Option<&str> {
        match self.metadata.get(ARCHITECTURE_KEY) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// All tensors by name, sorted.
    pub fn tensors(&self) -> &BTreeMap<String, GgufTensorInfo> {
        &self.tensors
    }

    /// Tensor `name`'s info.
    pub fn info(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.tensors.get(name)
    }

    fn info_or_missing(&self, name: &str) -> Result<&GgufTensorInfo, LoadError> {
        self.tensors
            .get(name)
            .ok_or_else(|| LoadError::MissingTensor {
                dir: self.path.clone(),
                name: name.to_string(),
            })
    }

    /// The mapped bytes `start..start + len` (relative to tensor `name`'s
    /// data), with the part's mapping and the absolute offset.
    fn mapped(
        &self,
        name: &str,
        start: u64,
        len: usize,
    ) -> Result<(&FileMap, usize, &[u8]), LoadError> {
        let info = self.info_or_missing(name)?;
        let part = &self.parts[info.part];
        let bytes = usize::try_from(info.offset + start)
            .ok()
            .and_then(|from| Some((from, part.map.bytes().get(from..from.checked_add(len)?)?)));
        let Some((from, bytes)) = bytes else {
            return Err(LoadError::BadGguf {
                path: part.path.clone(),
                message: format!("tensor `{name}` lies past the end of the file"),
            });
        };
        Ok((&part.map, from, bytes))
    }

    /// Tensor `name` as stored (its block type), on `device`. On the CPU the
    /// blocks stay in the file's mapping ([`MappedBlocks`]; a tensor whose
    /// bytes are misaligned for its block type is copied instead), settled on
    /// first use ([`QuantizedWeight`]); elsewhere they are copied to the
    /// device.
    ///
    /// # Errors
    /// [`LoadError::MissingTensor`] naming the file, [`LoadError::BadGguf`],
    /// [`LoadError::Tensor`].
    pub fn read_qtensor(&self, name: &str, device: &Device) -> Result<QuantizedWeight, LoadError> {
        let info = self.info_or_missing(name)?;
        self.qtensor_at(
            name,
            0,
            info.size_bytes as usize,
            info.shape.clone(),
            device,
        )
    }

    /// The `len` bytes at `start` of tensor `name`'s data as a quantized
    /// tensor of `shape`, as [`GgufFile::read_qtensor`] does.
    fn qtensor_at(
        &self,
        name: &str,
        start: u64,
        len: usize,
        shape: Vec<usize>,
        device: &Device,
    ) -> Result<QuantizedWeight, LoadError> {
        let info = self.info_or_missing(name)?;
        let (map, from, bytes) = self.mapped(name, start, len)?;
        let wrap = LoadError::tensor(name);
        if device.is_cpu()
            && let Some(blocks) = MappedBlocks::new(map, from, len, info.dtype)
        {
            let range = blocks.range();
            let q = QTensor::new(QStorage::Cpu(Box::new(blocks)), shape).map_err(&wrap)?;
            return Ok(QuantizedWeight::mapped(q, range));
        }
        let q =
            candle_core::quantized::ggml_file::qtensor_from_ggml(info.dtype, bytes, shape, device)
                .map_err(wrap)?;
        map.release(from, len);
        Ok(QuantizedWeight::new(q))
    }

    /// The stacked tensor `name` [E, …] as one quantized tensor per entry of
    /// its first dimension, each read from its own byte range.
    ///
    /// # Errors
    /// As [`GgufFile::read_qtensor`]; [`LoadError::BadGguf`] when an entry
    /// is not a whole number of blocks.
    pub fn read_qtensor_slices(
        &self,
        name: &str,
        device: &Device,
    ) -> Result<Vec<QuantizedWeight>, LoadError> {
        let info = self.info_or_missing(name)?.clone();
        let Some((&count, inner)) = info.shape.split_first() else {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!("tensor `{name}` is a scalar, expected a stack"),
            });
        };
        let inner_elems: usize = inner.iter().product();
        if count == 0 || !inner_elems.is_multiple_of(info.dtype.block_size()) {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!(
                    "tensor `{name}` of shape {:?} cannot be cut into {} blocks per entry",
                    info.shape,
                    dtype_name(info.dtype)
                ),
            });
        }
        let slice_bytes = dtype_bytes(info.dtype, inner_elems);
        (0..count)
            .map(|i| {
                self.qtensor_at(
                    name,
                    i as u64 * slice_bytes,
                    slice_bytes as usize,
                    inner.to_vec(),
                    device,
                )
            })
            .collect()
    }

    /// Tensor `name` as a dense tensor of its stored shape, in `dtype` on
    /// `device`: float types are converted directly, quantized ones
    /// dequantized (on the CPU, then moved).
    ///
    /// # Errors
    /// As [`GgufFile::read_qtensor`].
    pub fn read_dense(
        &self,
        name: &str,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor, LoadError> {
        let info = self.info_or_missing(name)?;
        let wrap = LoadError::tensor(name);
        let len = info.size_bytes as usize;
        let (map, from, bytes) = self.mapped(name, 0, len)?;
        let tensor = match float_dtype(info.dtype) {
            Some(stored) => {
                Tensor::from_raw_buffer(bytes, stored, &info.shape, &Device::Cpu).map_err(&wrap)?
            }
            None => candle_core::quantized::ggml_file::qtensor_from_ggml(
                info.dtype,
                bytes,
                info.shape.clone(),
                &Device::Cpu,
            )
            .and_then(|q| q.dequantize(&Device::Cpu))
            .map_err(&wrap)?,
        };
        // Copied out: the file's pages need not stay in the resident set.
        map.release(from, len);
        tensor
            .to_dtype(dtype)
            .and_then(|t| t.to_device(device))
            .map_err(wrap)
    }

    /// Tensor count and bytes per stored type, by type name.
    pub fn type_summary(&self) -> BTreeMap<&'static str, (usize, u64)> {
        let mut out: BTreeMap<&'static str, (usize, u64)> = BTreeMap::new();
        for info in self.tensors.values() {
            let entry = out.entry(dtype_name(info.dtype)).or_default();
            entry.0 += 1;
            entry.1 += info.size_bytes;
        }
        out
    }

    /// A metadata value by key, or [`LoadError::InvalidConfig`] naming the
    /// file and key when absent.
    ///
    /// # Errors
    /// [`LoadError::InvalidConfig`].
    pub fn require(&self, key: &str) -> Result<&Value, LoadError> {
        self.metadata
            .get(key)
            .ok_or_else(|| LoadError::InvalidConfig {
                path: self.path.clone(),
                field: key.to_string(),
                message: "missing from the GGUF metadata".into(),
            })
    }
}

/// A metadata value as an unsigned integer (any integer type; the first
/// entry of an array, for per-layer values), if it is one.
pub fn value_as_u64(value: &Value) -> Option<u64> {
    match value {
        Value::U8(v) => Some(u64::from(*v)),
        Value::I8(v) => u64::try_from(*v).ok(),
        Value::U16(v) => Some(u64::from(*v)),
        Value::I16(v) => u64::try_from(*v).ok(),
        Value::U32(v) => Some(u64::from(*v)),
        Value::I32(v) => u64::try_from(*v).ok(),
        Value::U64(v) => Some(*v),
        Value::I64(v) => u64::try_from(*v).ok(),
        Value::Array(values) => values.first().and_then(value_as_u64),
        _ => None,
    }
}

/// A metadata value as a float (f32, f64 or an integer), if it is one. An
/// f32 is widened through its shortest decimal form, so a stored 1e-6
/// reads as 1e-6 rather than 9.99999997e-7.
pub fn value_as_f64(value: &Value) -> Option<f64> {
    match value {
        Value::F32(v) => v.to_string().parse().ok(),
        Value::F64(v) => Some(*v),
        other => value_as_u64(other).map(|v| v as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::gguf_file;

    /// Quantized weights read from the file's mapping (prepared: repacked
    /// by candle where it does, pages released) multiply as candle's own
    /// in-memory tensors do, for one row (decode), a few rows and more than
    /// 31 rows (Q6_K on its stored blocks, Q4_K in chunks), and look up
    /// embedding rows exactly.
    #[test]
    fn mapped_weights_multiply_as_owned_ones() -> Result<(), LoadError> {
        use crate::weights::linear::{LinearWeight, QuantizedWeight};
        let dev = Device::Cpu;
        let wrap = LoadError::tensor("test");
        let types = [
            GgmlDType::Q8_0,
            GgmlDType::Q4K,
            GgmlDType::Q6K,
            GgmlDType::Q5_0,
        ];
        let owned: Vec<QTensor> = types
            .iter()
            .map(|&t| {
                let w = Tensor::randn(0f32, 1.0, (48, 512), &dev)?;
                QTensor::quantize(&w, t)
            })
            .collect::<candle_core::Result<_>>()
            .map_err(&wrap)?;
        let tmp = tempfile::tempdir().map_err(|source| LoadError::Io {
            path: "tmp".into(),
            source,
        })?;
        let path = tmp.path().join("weights.gguf");
        let mut out = File::create(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        let names: Vec<String> = types.iter().map(|t| dtype_name(*t).to_string()).collect();
        let tensors: Vec<(&str, &QTensor)> = names.iter().map(|n| n.as_str()).zip(&owned).collect();
        let arch = Value::String("test".into());
        gguf_file::write(&mut out, &[(ARCHITECTURE_KEY, &arch)], &tensors).map_err(&wrap)?;
        drop(out);
        let file = GgufFile::open(&path)?;
        for (name, q) in &tensors {
            let mapped = LinearWeight::Quantized(file.read_qtensor(name, &dev)?);
            if let LinearWeight::Quantized(w) = &mapped {
                w.prepare().map_err(&wrap)?;
            }
            let dense = LinearWeight::Dense(q.dequantize(&dev).map_err(&wrap)?);
            let reference = LinearWeight::Quantized(QuantizedWeight::new(
                candle_core::quantized::ggml_file::qtensor_from_ggml(
                    q.dtype(),
                    &q.data().map_err(&wrap)?,
                    vec![48, 512],
                    &dev,
                )
                .map_err(&wrap)?,
            ));
            for rows in [1, 5, 40] {
                let x = Tensor::randn(0f32, 1.0, (rows, 512), &dev).map_err(&wrap)?;
                let got = mapped.forward(&x).map_err(&wrap)?;
                let want = dense.forward(&x).map_err(&wrap)?;
                let scale = want
                    .abs()
                    .and_then(|a| a.flatten_all())
                    .and_then(|a| a.max(0))
                    .and_then(|a| a.to_scalar::<f32>())
                    .map_err(&wrap)?;
                let diff = (got.clone() - want)
                    .and_then(|d| d.abs())
                    .and_then(|d| d.flatten_all())
                    .and_then(|d| d.max(0))
                    .and_then(|d| d.to_scalar::<f32>())
                    .map_err(&wrap)?;
                // The input is quantized to 8 bits, as llama.cpp does.
                assert!(
                    diff <= 0.03 * scale,
                    "{name}, {rows} rows: {diff} of {scale}"
                );
                if rows == 1 {
                    // One row takes the same kernel as candle's own tensor.
                    let same = (got - reference.forward(&x).map_err(&wrap)?)
                        .and_then(|d| d.abs())
                        .and_then(|d| d.flatten_all())
                        .and_then(|d| d.max(0))
                        .and_then(|d| d.to_scalar::<f32>())
                        .map_err(&wrap)?;
                    assert_eq!(same, 0.0, "{name}: one row");
                }
            }
            let ids = Tensor::new(&[0u32, 47, 3], &dev).map_err(&wrap)?;
            let rows = (mapped.rows(&ids, DType::F32).map_err(&wrap)?
                - dense.rows(&ids, DType::F32).map_err(&wrap)?)
            .and_then(|d| d.abs())
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .map_err(&wrap)?;
            assert_eq!(rows, 0.0, "{name}: embedding rows");
        }
        Ok(())
    }

    /// Each expert slice of a 3-D K-quant tensor is that expert's rows,
    /// byte for byte; dense reads and the type table follow the stored
    /// types; split names parse.
    #[test]
    fn expert_slices_are_the_experts() -> Result<(), LoadError> {
        let dev = Device::Cpu;
        let wrap = LoadError::tensor("test");
        let stack = Tensor::randn(0f32, 1.0, (3, 4, 256), &dev).map_err(&wrap)?;
        let q = QTensor::quantize(&stack, GgmlDType::Q4K).map_err(&wrap)?;
        let vector = QTensor::quantize(
            &Tensor::new(&[1f32, 2., 3.], &dev).map_err(&wrap)?,
            GgmlDType::F32,
        )
        .map_err(&wrap)?;
        let tmp = tempfile::tempdir().map_err(|source| LoadError::Io {
            path: "tmp".into(),
            source,
        })?;
        let path = tmp.path().join("experts.gguf");
        let mut out = File::create(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        let arch = Value::String("test".into());
        gguf_file::write(
            &mut out,
            &[(ARCHITECTURE_KEY, &arch)],
            &[("stack", &q), ("vector", &vector)],
        )
        .map_err(&wrap)?;
        drop(out);
        let file = GgufFile::open(&path)?;
        assert_eq!(file.architecture(), Some("test"));
        let full = q.dequantize(&dev).map_err(&wrap)?;
        let slices = file.read_qtensor_slices("stack", &dev)?;
        assert_eq!(slices.len(), 3);
        for (e, slice) in slices.iter().enumerate() {
            assert_eq!(slice.tensor().shape().dims(), &[4, 256]);
            let got = slice.tensor().dequantize(&dev).map_err(&wrap)?;
            let want = full.get(e).map_err(&wrap)?;
            let diff = (got - want)
                .and_then(|d| d.abs())
                .and_then(|d| d.flatten_all())
                .and_then(|d| d.max(0))
                .and_then(|d| d.to_scalar::<f32>())
                .map_err(&wrap)?;
            assert_eq!(diff, 0.0, "expert {e}");
        }
        let v: Vec<f32> = file
            .read_dense("vector", DType::F32, &dev)?
            .to_vec1()
            .map_err(&wrap)?;
        assert_eq!(v, vec![1., 2., 3.]);
        let types = file.type_summary();
        assert_eq!(types.get("Q4_K"), Some(&(1, 3 * 4 * 144)));
        assert_eq!(types.get("F32"), Some(&(1, 12)));
        assert!(matches!(
            file.read_qtensor("absent", &dev),
            Err(LoadError::MissingTensor { .. })
        ));
        assert_eq!(
            split_name(Path::new("/m/x-00002-of-00003.gguf")),
            Some(("x".into(), 2, 3))
        );
        assert_eq!(split_name(Path::new("/m/x.gguf")), None);
        Ok(())
    }
}
