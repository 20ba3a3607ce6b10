//! A `qwen35moe` GGUF file as the model's [`TensorSource`]: tensors asked
//! for by Hugging Face name, read under their GGUF names with the values
//! transformed back.

use super::*;

/// A `qwen35moe` GGUF file served under the Hugging Face names the model
/// asks for (flat `model.…` names, stacked experts), with the values
/// transformed back ([`Values`]) and the value heads left tiled.
pub struct Qwen35MoeGguf {
    file: GgufFile,
    config: Config,
}

impl Qwen35MoeGguf {
    /// Opens a GGUF file (the first part of a split one) and reads its
    /// config from the metadata.
    ///
    /// # Errors
    /// As [`GgufFile::open`] and [`config_from_gguf`].
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let file = GgufFile::open(path)?;
        let config = config_from_gguf(&file)?;
        Ok(Self { file, config })
    }

    /// The config from the metadata.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The file.
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Bytes the weights keep resident once loaded on the CPU for compute
    /// dtype `dtype`: float tensors converted (vectors stay f32, as the
    /// model keeps its norms); quantized ones in the form the CPU kernels
    /// use ([`quantized_resident_bytes`]: the stored blocks, or candle's x86
    /// Q4_K tiles at 4/3 of them), except the token embedding when the
    /// model has its own output matrix: only its looked-up rows are read,
    /// from the file's mapping, so it counts at its stored size.
    pub fn weight_bytes(&self, dtype: DType) -> u64 {
        self.weight_bytes_on(dtype, &Device::Cpu)
    }

    /// [`Qwen35MoeGguf::weight_bytes`] on `device`: on a GPU quantized
    /// tensors take their stored size.
    pub fn weight_bytes_on(&self, dtype: DType, device: &Device) -> u64 {
        let tied = self.file.info("output.weight").is_none();
        let cpu = device.is_cpu();
        self.file
            .tensors()
            .iter()
            .filter(|(name, _)| hf_name(name).is_some())
            .map(|(name, info)| {
                if cpu && !is_float_type(info.dtype) && (tied || name != "token_embd.weight") {
                    quantized_resident_bytes(info.dtype, &info.shape, info.size_bytes)
                } else if is_float_type(info.dtype) {
                    let elem = if info.shape.len() <= 1 {
                        4
                    } else {
                        dtype.size_in_bytes()
                    };
                    (info.elem_count() * elem) as u64
                } else {
                    info.size_bytes
                }
            })
            .sum()
    }

    /// The GGUF tensor behind `request`, checked against its shape.
    fn lookup(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<
        (
            String,
            &'static TensorMapping,
            &crate::weights::gguf::GgufTensorInfo,
        ),
        LoadError,
    > {
        let (gguf, m) = gguf_name(request.name).ok_or_else(|| LoadError::MissingTensor {
            dir: self.file.path().to_path_buf(),
            name: format!("{} (no GGUF name for it)", request.name),
        })?;
        let info = self
            .file
            .info(&gguf)
            .ok_or_else(|| LoadError::MissingTensor {
                dir: self.file.path().to_path_buf(),
                name: format!("{gguf} (for {})", request.name),
            })?;
        if squeezed(&info.shape) != squeezed(request.shape) {
            return Err(LoadError::ShapeMismatch {
                dir: self.file.path().to_path_buf(),
                name: format!("{gguf} (for {})", request.name),
                expected: request.shape.to_vec(),
                found: info.shape.clone(),
            });
        }
        Ok((gguf, m, info))
    }
}

impl TensorSource for Qwen35MoeGguf {
    fn contains(&self, name: &str) -> bool {
        if name.starts_with("model.language_model.") {
            return false;
        }
        gguf_name(name).is_some_and(|(gguf, _)| self.file.info(&gguf).is_some())
    }

    fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError> {
        let (gguf, m, _) = self.lookup(request)?;
        let wrap = LoadError::tensor(request.name);
        if m.values == Values::Same {
            let x = self.file.read_dense(&gguf, request.dtype, &Device::Cpu)?;
            return x
                .reshape(request.shape)
                .and_then(|x| x.to_device(request.device))
                .map_err(wrap);
        }
        let x = self.file.read_dense(&gguf, DType::F32, &Device::Cpu)?;
        from_file_values(&x, m, &self.config, request.shape, false)
            .and_then(|x| x.to_dtype(request.dtype))
            .and_then(|x| x.to_device(request.device))
            .map_err(wrap)
    }

    fn stored_dtype(&self) -> Option<DType> {
        let embd = self.file.info("token_embd.weight")?;
        Some(match embd.dtype {
            GgmlDType::BF16 => DType::BF16,
            GgmlDType::F16 => DType::F16,
            _ => DType::F32,
        })
    }

    fn quantized(&self, request: &TensorRequest<'_>) -> Result<Option<QuantizedWeight>, LoadError> {
        let (gguf, m, info) = self.lookup(request)?;
        let row = info.shape.last().copied().unwrap_or(0);
        if is_float_type(info.dtype)
            || !quantized_rows_supported(info.dtype, row)
            || m.values != Values::Same
            || info.shape != request.shape
        {
            return Ok(None);
        }
        self.file.read_qtensor(&gguf, request.device).map(Some)
    }

    fn quantized_experts(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<Option<Vec<QuantizedWeight>>, LoadError> {
        let (gguf, _, info) = self.lookup(request)?;
        let row = info.shape.last().copied().unwrap_or(0);
        if is_float_type(info.dtype)
            || !quantized_rows_supported(info.dtype, row)
            || info.shape != request.shape
        {
            return Ok(None);
        }
        self.file
            .read_qtensor_slices(&gguf, request.device)
            .map(Some)
    }
}

/// Bytes of the file's tensors per stored type (count, bytes), by llama.cpp
/// type name.
pub fn type_table(file: &GgufFile) -> Vec<(&'static str, usize, u64)> {
    file.type_summary()
        .into_iter()
        .map(|(name, (count, bytes))| (name, count, bytes))
        .collect()
}
