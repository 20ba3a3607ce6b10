//! Random weights built in memory, as a [`TensorSource`]: dense, or with
//! the projections and experts block-quantized as a GGUF file holds them.

use std::borrow::Cow;

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

use super::error::LoadError;
use super::gguf::{is_float_type, quantized_rows_supported};
use super::linear::QuantizedWeight;
use super::source::{TensorRequest, TensorSource};

/// How many times one random block repeats along a large tensor's first
/// dimension.
const REPEAT: usize = 16;

/// Random weights for a config, built in memory: the benchmark's model at
/// real widths without a checkpoint on disk.
///
/// Names follow the flat `model.` layout with stacked experts. Matrices are
/// drawn from N(0, 1/fan_in), vectors (norms, `A_log`, `dt_bias`) from
/// N(0, 0.1²). Tensors above 32 Mi elements repeat one random block 16 times
/// along their first dimension to keep generation fast; the arithmetic per
/// token is unchanged.
///
/// With a block type ([`RandomWeights::quantized`]) the matrices a
/// quantized GGUF file stores in blocks — the projections (`*proj*`), the
/// stacked experts, `embed_tokens` and `lm_head` — are answered by
/// [`TensorSource::quantized`] / [`TensorSource::quantized_experts`] in
/// that type; norms, the router, the shared-expert gate, the conv and the
/// vectors stay dense, as llama.cpp's quantizer keeps them. A matrix whose
/// rows are not whole blocks of the type stays dense too. Quantizing is
/// slow on the CPU, so tensors above 4 Mi elements quantize one block of
/// 1/16 of their first dimension (rows, or experts) and copy its bytes 16
/// times; every copy is its own memory on the device (its own upload), so
/// the bytes a token reads are as many as in a real file's.
pub struct RandomWeights {
    seed: u64,
    quantize: Option<GgmlDType>,
}

impl RandomWeights {
    /// Random dense weights; `seed` seeds GPU generators (candle's CPU
    /// generator cannot be seeded).
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            quantize: None,
        }
    }

    /// Random weights with the projections, experts, embedding and output
    /// block-quantized to `dtype` (Q8_0, Q4_K, Q6_K, …) in memory.
    ///
    /// # Errors
    /// A message when `dtype` is a float type (F32, F16, BF16) rather than a
    /// block type.
    pub fn quantized(seed: u64, dtype: GgmlDType) -> Result<Self, String> {
        if is_float_type(dtype) {
            return Err(format!(
                "random weights quantize to a block type (Q8_0, Q4_K, Q6_K, …), not {dtype:?}"
            ));
        }
        Ok(Self {
            seed,
            quantize: Some(dtype),
        })
    }

    /// The block type tensor `name` of `shape` gets, `None` when it stays
    /// dense.
    fn block_type(&self, name: &str, shape: &[usize]) -> Option<GgmlDType> {
        let dtype = self.quantize?;
        let row = *shape.last()?;
        let stem = name.strip_suffix(".weight").unwrap_or(name);
        let last = stem.rsplit('.').next().unwrap_or(stem);
        let matrix = last.contains("proj") || last == "embed_tokens" || name == "lm_head.weight";
        (shape.len() >= 2
            && matrix
            && row.is_multiple_of(dtype.block_size())
            && quantized_rows_supported(dtype, row))
        .then_some(dtype)
    }

    /// A random f32 tensor of `shape` for `name` on `device`: N(0, 1/fan_in)
    /// for a matrix, N(0, 0.1²) for a vector.
    fn randn(&self, name: &str, shape: &[usize], device: &Device) -> candle_core::Result<Tensor> {
        if !device.is_cpu() {
            // One seed per tensor name (FNV-1a), so tensors differ. The CPU
            // generator cannot be seeded in candle; it is random per run.
            let seed = name
                .bytes()
                .fold(self.seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            device.set_seed(seed)?;
        }
        let std = if shape.len() == 1 {
            0.1
        } else {
            1.0 / (shape[shape.len() - 1] as f64).sqrt()
        };
        Tensor::randn(0f32, std as f32, shape, device)
    }

    /// The quantized bytes of tensor `name` of `shape` in `dtype`, as
    /// (block bytes, copies): the tensor is the block repeated `copies`
    /// times along its first dimension.
    fn quantized_block(
        &self,
        name: &str,
        shape: &[usize],
        dtype: GgmlDType,
        device: &Device,
    ) -> candle_core::Result<(Vec<u8>, usize)> {
        let elems: usize = shape.iter().product();
        let copies = if elems > 4 << 20 && shape[0].is_multiple_of(REPEAT) {
            REPEAT
        } else {
            1
        };
        let mut block_shape = shape.to_vec();
        block_shape[0] /= copies;
        // Drawn on the device (seeded there), quantized on the CPU in
        // slabs of whole rows on every thread (blocks are independent, so
        // the slabs' bytes in order are the block's).
        let values = self
            .randn(name, &block_shape, device)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let first = block_shape[0];
        let row_len = values.len() / first.max(1);
        let slabs = first.min(rayon::current_num_threads() * 4).max(1);
        let per_slab = first.div_ceil(slabs);
        let parts = values
            .par_chunks(per_slab * row_len)
            .map(|chunk| {
                let slab = Tensor::from_slice(chunk, chunk.len(), &Device::Cpu)?;
                Ok(QTensor::quantize(&slab, dtype)?.data()?.into_owned())
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok((parts.concat(), copies))
    }
}

/// A quantized tensor of `shape` on `device` from its blocks `bytes`.
fn upload(
    bytes: &[u8],
    shape: &[usize],
    dtype: GgmlDType,
    device: &Device,
) -> candle_core::Result<QuantizedWeight> {
    let storage = QStorage::from_data(Cow::Borrowed(bytes), device, dtype)?;
    Ok(QuantizedWeight::new(QTensor::new(storage, shape)?))
}

impl TensorSource for RandomWeights {
    fn contains(&self, name: &str) -> bool {
        // Flat names, stacked experts, untied lm_head.
        !name.starts_with("model.language_model.") && !name.contains(".experts.0.")
    }

    fn tensor(&self, request: &TensorRequest<'_>) -> Result<Tensor, LoadError> {
        let (name, shape, dtype, device) =
            (request.name, request.shape, request.dtype, request.device);
        let wrap = LoadError::tensor(name);
        let elems: usize = shape.iter().product();
        let tensor = if elems > 32 << 20 && shape[0].is_multiple_of(REPEAT) {
            let mut block_shape = shape.to_vec();
            block_shape[0] /= REPEAT;
            let block = self
                .randn(name, &block_shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(&wrap)?;
            Tensor::cat(&[&block; REPEAT], 0).map_err(&wrap)?
        } else {
            self.randn(name, shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(&wrap)?
        };
        Ok(tensor)
    }

    fn stored_dtype(&self) -> Option<DType> {
        None
    }

    fn quantized(&self, request: &TensorRequest<'_>) -> Result<Option<QuantizedWeight>, LoadError> {
        let (name, shape, device) = (request.name, request.shape, request.device);
        let Some(dtype) = self.block_type(name, shape) else {
            return Ok(None);
        };
        let wrap = LoadError::tensor(name);
        let (block, copies) = self
            .quantized_block(name, shape, dtype, device)
            .map_err(&wrap)?;
        let bytes = block.repeat(copies);
        upload(&bytes, shape, dtype, device).map(Some).map_err(wrap)
    }

    fn quantized_experts(
        &self,
        request: &TensorRequest<'_>,
    ) -> Result<Option<Vec<QuantizedWeight>>, LoadError> {
        let (name, shape, device) = (request.name, request.shape, request.device);
        let Some(dtype) = self.block_type(name, shape) else {
            return Ok(None);
        };
        let [experts, out, inner] = *shape else {
            return Ok(None);
        };
        let wrap = LoadError::tensor(name);
        let (block, copies) = self
            .quantized_block(name, shape, dtype, device)
            .map_err(&wrap)?;
        let per_expert = block.len() / (experts / copies);
        (0..experts)
            .map(|e| {
                let start = (e % (experts / copies)) * per_expert;
                upload(
                    &block[start..start + per_expert],
                    &[out, inner],
                    dtype,
                    device,
                )
            })
            .collect::<candle_core::Result<Vec<_>>>()
            .map(Some)
            .map_err(wrap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CausalLm;
    use crate::qwen3_5_moe::{Config, Qwen3_5Moe};

    fn request<'a>(name: &'a str, shape: &'a [usize]) -> TensorRequest<'a> {
        TensorRequest {
            name,
            shape,
            dtype: DType::F32,
            device: &Device::Cpu,
        }
    }

    /// Projections come back quantized in the asked type and shape; norms,
    /// the router, the conv and rows that are not whole blocks stay dense.
    #[test]
    fn quantized_source_answers_projections_only() {
        let q8 = RandomWeights::quantized(1, GgmlDType::Q8_0).expect("q8_0");
        let q = q8
            .quantized(&request(
                "model.layers.0.self_attn.q_proj.weight",
                &[96, 64],
            ))
            .expect("read")
            .expect("quantized");
        assert_eq!(q.tensor().shape().dims(), &[96, 64]);
        assert_eq!(q.tensor().dtype(), GgmlDType::Q8_0);
        let embed = q8
            .quantized(&request("model.embed_tokens.weight", &[320, 64]))
            .expect("read")
            .expect("quantized");
        assert_eq!(embed.tensor().shape().dims(), &[320, 64]);
        for (name, shape) in [
            ("model.layers.0.input_layernorm.weight", &[64][..]),
            ("model.layers.0.mlp.gate.weight", &[8, 64]),
            ("model.layers.0.mlp.shared_expert_gate.weight", &[1, 64]),
            ("model.layers.0.linear_attn.conv1d.weight", &[128, 1, 4]),
            ("model.layers.0.linear_attn.A_log", &[4]),
            // 48 values: not whole 32-value blocks.
            (
                "model.layers.0.mlp.shared_expert.down_proj.weight",
                &[64, 48],
            ),
        ] {
            assert!(
                q8.quantized(&request(name, shape)).expect("read").is_none(),
                "{name}"
            );
        }
        assert!(
            RandomWeights::new(1)
                .quantized(&request(
                    "model.layers.0.self_attn.q_proj.weight",
                    &[96, 64]
                ))
                .expect("read")
                .is_none()
        );
        let q4 = RandomWeights::quantized(1, GgmlDType::Q4K).expect("q4_k");
        let name = "model.layers.0.linear_attn.in_proj_z.weight";
        assert!(
            q4.quantized(&request(name, &[64, 64]))
                .expect("read")
                .is_none()
        );
        let q = q4
            .quantized(&request(name, &[64, 256]))
            .expect("read")
            .expect("quantized");
        assert_eq!(q.tensor().dtype(), GgmlDType::Q4K);
        assert_eq!(q.tensor().shape().dims(), &[64, 256]);
        assert!(RandomWeights::quantized(1, GgmlDType::BF16).is_err());
    }

    /// A large expert stack quantizes 1/16 of its experts and copies their
    /// blocks: expert e holds the bytes of expert e mod E/16, each expert
    /// in its own memory. A large 2-D weight likewise repeats its row block.
    #[test]
    fn quantized_experts_repeat_blocks_in_own_memory() {
        let source = RandomWeights::quantized(1, GgmlDType::Q8_0).expect("q8_0");
        let shape = [32, 512, 512];
        let experts = source
            .quantized_experts(&request("model.layers.0.mlp.experts.down_proj", &shape))
            .expect("read")
            .expect("quantized");
        assert_eq!(experts.len(), 32);
        let data: Vec<_> = experts
            .iter()
            .map(|q| {
                assert_eq!(q.tensor().shape().dims(), &[512, 512]);
                assert_eq!(q.tensor().dtype(), GgmlDType::Q8_0);
                q.tensor().data().expect("bytes")
            })
            .collect();
        assert_eq!(data[0].len(), 512 * 512 / 32 * 34);
        assert_eq!(data[0], data[2]);
        assert_eq!(data[1], data[31]);
        assert_ne!(data[0], data[1]);
        assert_ne!(data[0].as_ptr(), data[2].as_ptr());

        let rows = source
            .quantized(&request("lm_head.weight", &[4096, 1088]))
            .expect("read")
            .expect("quantized");
        let bytes = rows.tensor().data().expect("bytes");
        let block = bytes.len() / REPEAT;
        assert_eq!(bytes.len(), 4096 * 1088 / 32 * 34);
        assert_eq!(bytes[..block], bytes[block..2 * block]);
        assert_ne!(bytes[..block / 2], bytes[block / 2..block]);
    }

    /// The engine's tiny test model builds from Q8_0 random weights and
    /// runs a prefill and a decode step on the CPU with finite logits.
    #[test]
    fn quantized_random_model_runs_on_cpu() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/qwen3_5_moe/flat_per_expert/config.json"
        );
        let config = Config::from_json(&std::fs::read_to_string(path).expect("config"))
            .expect("parse config");
        let vocab = config.vocab_size;
        let source = RandomWeights::quantized(3, GgmlDType::Q8_0).expect("q8_0");
        let model =
            Qwen3_5Moe::load(config, &source, DType::F32, &Device::Cpu).expect("random model");
        let mut state = model.new_state().expect("state");
        let prompt: Vec<u32> = (0..12u32).map(|i| (i * 37 + 5) % vocab as u32).collect();
        let logits = model.forward(&prompt, &mut state).expect("prefill");
        let next = logits
            .argmax(0)
            .and_then(|t| t.to_scalar::<u32>())
            .expect("argmax");
        let logits = model.forward(&[next], &mut state).expect("decode");
        let values = logits.to_vec1::<f32>().expect("logits");
        assert_eq!(values.len(), vocab);
        assert!(values.iter().all(|v| v.is_finite()));
        assert!(values.iter().any(|&v| v != 0.0));
    }
}
