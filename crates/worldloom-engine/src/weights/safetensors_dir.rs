//! The safetensors of a Hugging Face model directory as a [`TensorSource`]:
//! either one `model.safetensors` or shards listed by
//! `model.safetensors.index.json` (the Hugging Face sharding format: a
//! `weight_map` from tensor name to shard file), memory-mapped.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use super::error::{LoadError, read_text};
use super::source::{TensorRequest, TensorSource};

/// `model.safetensors.index.json` (only the part we read).
#[derive(Deserialize)]
struct ShardIndex {
    weight_map: HashMap<String, String>,
}

/// The memory-mapped safetensors of one model directory.
pub struct SafetensorsWeights {
    dir: PathBuf,
    mmaped: MmapedSafetensors,
    names: BTreeSet<String>,
    stored_dtype: Option<DType>,
}

impl SafetensorsWeights {
    /// Opens `model.safetensors` or the shards listed by
    /// `model.safetensors.index.json` in `dir` and memory-maps them.
    ///
    /// # Errors
    /// [`LoadError::NoWeights`], [`LoadError::Io`], [`LoadError::BadJson`]
    /// (index), [`LoadError::BadSafetensors`].
    pub fn open(dir: &Path) -> Result<Self, LoadError> {
        let index_path = dir.join("model.safetensors.index.json");
        let single = dir.join("model.safetensors");
        let files: Vec<PathBuf> = if index_path.is_file() {
            let text = read_text(&index_path)?;
            let index: ShardIndex =
                serde_json::from_str(&text).map_err(|e| LoadError::BadJson {
                    path: index_path.clone(),
                    message: e.to_string(),
                })?;
            let shard_names: BTreeSet<&String> = index.weight_map.values().collect();
            let mut files = Vec::new();
            for shard in shard_names {
                let path = dir.join(shard);
                if !path.is_file() {
                    return Err(LoadError::Io {
                        path,
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "shard listed in model.safetensors.index.json is missing",
                        ),
                    });
                }
                files.push(path);
            }
            files
        } else if single.is_file() {
            vec![single]
        } else {
            return Err(LoadError::NoWeights {
                dir: dir.to_path_buf(),
            });
        };
        // Open each shard alone first so a broken one is named in the error.
        for file in &files {
            map_safetensors(std::slice::from_ref(file)).map_err(|e| LoadError::BadSafetensors {
                path: file.clone(),
                message: e.to_string(),
            })?;
        }
        let mmaped = map_safetensors(&files).map_err(|e| LoadError::BadSafetensors {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let names: BTreeSet<String> = mmaped.tensors().into_iter().map(|(n, _)| n).collect();
        let stored_dtype = names
            .iter()
            .find(|n| n.ends_with("embed_tokens.weight"))
            .and_then(|n| mmaped.get(n).ok())
            .and_then(|view| safetensors_dtype(view.dtype()));
        Ok(Self {
            dir: dir.to_path_buf(),
            mmaped,
            names,
            stored_dtype,
        })
    }

    /// All tensor names in the directory, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

/// Memory-maps safetensors files.
#[allow(unsafe_code)]
fn map_safetensors(files: &[PathBuf]) -> candle_core::Result<MmapedSafetensors> {
    // SAFETY: the mapping is read-only; the only hazard memmap2 documents is
    // another process truncating or rewriting the file while it is mapped,
    // which a model directory in use is not expected to suffer. Each tensor
    // is copied out of the mapping when loaded.
    unsafe { MmapedSafetensors::multi(files) }
}

fn safetensors_dtype(dtype: safetensors::Dtype) -> Option<DType> {
    match dtype {
        safetensors::Dtype::BF16 => Some(DType::BF16),
        safetensors::Dtype::F16 => Some(DType::F16),
        safetensors::Dtype::F32 => Some(DType::F32),
        _ => None,
    }
}

impl TensorSource for SafetensorsWeights {
    fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError> {
        let name = request.name;
        if !self.names.contains(name) {
            return Err(LoadError::MissingTensor {
                dir: self.dir.clone(),
                name: name.to_string(),
            });
        }
        let view = self.mmaped.get(name).map_err(LoadError::tensor(name))?;
        if view.shape() != request.shape {
            return Err(LoadError::ShapeMismatch {
                dir: self.dir.clone(),
                name: name.to_string(),
                expected: request.shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        if safetensors_dtype(view.dtype()).is_none() {
            return Err(LoadError::UnsupportedDtype {
                dir: self.dir.clone(),
                name: name.to_string(),
                dtype: format!("{:?}", view.dtype()),
            });
        }
        let wrap = LoadError::tensor(name);
        // Convert on the CPU, then move: one host copy, one device copy.
        let tensor = candle_core::safetensors::Load::load(&view, &Device::Cpu).map_err(&wrap)?;
        let tensor = tensor.to_dtype(request.dtype).map_err(&wrap)?;
        tensor.to_device(request.device).map_err(wrap)
    }

    fn stored_dtype(&self) -> Option<DType> {
        self.stored_dtype
    }
}
