//! Writing GGUF files (version 3), model-neutral: [`GgufWriter`] streams the
//! header (metadata and tensor table) and then each tensor's blocks as they
//! are produced, so one tensor is in memory at a time; [`fallback_type`] is
//! llama-quantize's rule for rows a block type does not divide;
//! [`parse_file_type`] reads a `--type` name. What a model's tensors are
//! called and hold is the model's business (`qwen3_5_moe::gguf`); the reader
//! is [`super::gguf`].

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};

use super::LoadError;
use super::gguf::quantized_rows_supported;

/// The block type `target` falls back to for a tensor whose rows
/// (`row_len` values) are not a whole number of its blocks, as
/// llama-quantize does: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0 — except that
/// Q5_0/Q5_1 become Q8_0 where candle's kernels cannot take the rows (an
/// odd number of blocks, [`quantized_rows_supported`]) — and F16 when even
/// a 32-value block does not divide the row.
pub fn fallback_type(target: GgmlDType, row_len: usize) -> GgmlDType {
    if row_len.is_multiple_of(target.block_size()) {
        return target;
    }
    let next = match target {
        GgmlDType::Q4K => GgmlDType::Q5_0,
        GgmlDType::Q5K => GgmlDType::Q5_1,
        GgmlDType::Q6K => GgmlDType::Q8_0,
        _ => GgmlDType::F16,
    };
    let next = if quantized_rows_supported(next, row_len) {
        next
    } else {
        GgmlDType::Q8_0
    };
    if row_len.is_multiple_of(next.block_size()) {
        next
    } else {
        GgmlDType::F16
    }
}

/// Alignment of the tensor data (GGUF's default, `general.alignment`).
const ALIGNMENT: u64 = 32;

/// ggml's id of a block type.
fn ggml_type_id(dtype: GgmlDType) -> u32 {
    match dtype {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q5_0 => 6,
        GgmlDType::Q5_1 => 7,
        GgmlDType::Q8_0 => 8,
        GgmlDType::Q8_1 => 9,
        GgmlDType::Q2K => 10,
        GgmlDType::Q3K => 11,
        GgmlDType::Q4K => 12,
        GgmlDType::Q5K => 13,
        GgmlDType::Q6K => 14,
        GgmlDType::Q8K => 15,
        GgmlDType::BF16 => 30,
    }
}

/// A GGUF (version 3) file written as a stream: the header and tensor
/// table first, from names, shapes and types known up front, then each
/// tensor's data as it is produced, so only one tensor is in memory.
pub struct GgufWriter {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    /// Expected byte size of each tensor still to come, in order.
    sizes: std::collections::VecDeque<u64>,
}

impl GgufWriter {
    /// Creates `path` and writes the header: `metadata` and the table of
    /// `tensors` (name, shape outermost first, block type), whose data must
    /// follow in that order through [`GgufWriter::tensor`].
    ///
    /// # Errors
    /// [`LoadError::Io`] naming the file.
    pub fn create(
        path: &Path,
        metadata: &[(String, Value)],
        tensors: &[(String, Vec<usize>, GgmlDType)],
    ) -> Result<Self, LoadError> {
        let io = |source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut head: Vec<u8> = Vec::new();
        head.extend(0x4655_4747u32.to_le_bytes());
        head.extend(3u32.to_le_bytes());
        head.extend((tensors.len() as u64).to_le_bytes());
        head.extend((metadata.len() as u64).to_le_bytes());
        for (key, value) in metadata {
            put_string(&mut head, key);
            head.extend(value_type_id(value).to_le_bytes());
            put_value(&mut head, value);
        }
        let mut offset = 0u64;
        let mut sizes = std::collections::VecDeque::with_capacity(tensors.len());
        for (name, shape, dtype) in tensors {
            put_string(&mut head, name);
            head.extend((shape.len() as u32).to_le_bytes());
            for &d in shape.iter().rev() {
                head.extend((d as u64).to_le_bytes());
            }
            head.extend(ggml_type_id(*dtype).to_le_bytes());
            head.extend(offset.to_le_bytes());
            let size = crate::weights::gguf::dtype_bytes(*dtype, shape.iter().product());
            sizes.push_back(size);
            offset += size.div_ceil(ALIGNMENT) * ALIGNMENT;
        }
        let padded = (head.len() as u64).div_ceil(ALIGNMENT) * ALIGNMENT;
        head.resize(padded as usize, 0);
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        std::io::Write::write_all(&mut file, &head).map_err(io)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            sizes,
        })
    }

    /// Writes the next tensor's data (padded to the alignment).
    ///
    /// # Errors
    /// [`LoadError::BadGguf`] when its size is not the announced one;
    /// [`LoadError::Io`].
    pub fn tensor(&mut self, q: &QTensor) -> Result<(), LoadError> {
        let data = q.data().map_err(LoadError::tensor("gguf data"))?;
        let expected = self.sizes.pop_front();
        if expected != Some(data.len() as u64) {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!(
                    "tensor data of {} bytes where the header announced {expected:?}",
                    data.len()
                ),
            });
        }
        let pad = (data.len() as u64).div_ceil(ALIGNMENT) * ALIGNMENT - data.len() as u64;
        let io = |source| LoadError::Io {
            path: self.path.clone(),
            source,
        };
        std::io::Write::write_all(&mut self.file, &data).map_err(io)?;
        std::io::Write::write_all(&mut self.file, &vec![0u8; pad as usize]).map_err(io)?;
        Ok(())
    }

    /// Flushes the file; every announced tensor must have been written.
    ///
    /// # Errors
    /// [`LoadError::BadGguf`] when tensors are missing; [`LoadError::Io`].
    pub fn finish(mut self) -> Result<(), LoadError> {
        if !self.sizes.is_empty() {
            return Err(LoadError::BadGguf {
                path: self.path.clone(),
                message: format!("{} announced tensors were not written", self.sizes.len()),
            });
        }
        std::io::Write::flush(&mut self.file).map_err(|source| LoadError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// A GGUF string: its length (u64) then its bytes.
fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// GGUF's id of a metadata value type.
fn value_type_id(value: &Value) -> u32 {
    match value {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

/// A metadata value's bytes (arrays: element type, length, elements).
fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.extend(v.to_le_bytes()),
        Value::U16(v) => out.extend(v.to_le_bytes()),
        Value::I16(v) => out.extend(v.to_le_bytes()),
        Value::U32(v) => out.extend(v.to_le_bytes()),
        Value::I32(v) => out.extend(v.to_le_bytes()),
        Value::U64(v) => out.extend(v.to_le_bytes()),
        Value::I64(v) => out.extend(v.to_le_bytes()),
        Value::F32(v) => out.extend(v.to_le_bytes()),
        Value::F64(v) => out.extend(v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(v) => put_string(out, v),
        Value::Array(values) => {
            // An empty array is written as one of U8.
            let element = values.first().map_or(0, value_type_id);
            out.extend(element.to_le_bytes());
            out.extend((values.len() as u64).to_le_bytes());
            for v in values {
                put_value(out, v);
            }
        }
    }
}

/// Parses a `--type` name: `f32`, `f16`, `bf16`, `q8_0`, `q4_k`, `q5_k`,
/// `q6_k` (case-insensitive; `q4_k_m`-style suffixes are not accepted:
/// every matrix gets the one type).
///
/// # Errors
/// The accepted names, when `spec` is none of them.
pub fn parse_file_type(spec: &str) -> Result<GgmlDType, String> {
    match spec.to_ascii_lowercase().as_str() {
        "f32" => Ok(GgmlDType::F32),
        "f16" => Ok(GgmlDType::F16),
        "bf16" => Ok(GgmlDType::BF16),
        "q8_0" => Ok(GgmlDType::Q8_0),
        "q4_k" => Ok(GgmlDType::Q4K),
        "q5_k" => Ok(GgmlDType::Q5K),
        "q6_k" => Ok(GgmlDType::Q6K),
        _ => Err(format!(
            "type `{spec}`: expected f32, f16, bf16, q8_0, q4_k, q5_k or q6_k"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows that a k-quant block does not divide fall back as llama-quantize
    /// does.
    #[test]
    fn narrow_rows_fall_back() {
        assert_eq!(fallback_type(GgmlDType::Q4K, 512), GgmlDType::Q4K);
        assert_eq!(fallback_type(GgmlDType::Q4K, 64), GgmlDType::Q5_0);
        assert_eq!(fallback_type(GgmlDType::Q4K, 96), GgmlDType::Q8_0);
        assert_eq!(fallback_type(GgmlDType::Q6K, 64), GgmlDType::Q8_0);
        assert_eq!(fallback_type(GgmlDType::Q8_0, 48), GgmlDType::F16);
        assert_eq!(fallback_type(GgmlDType::BF16, 7), GgmlDType::BF16);
        assert_eq!(parse_file_type("Q8_0"), Ok(GgmlDType::Q8_0));
        assert!(parse_file_type("q4_k_m").is_err());
    }
}
