//! Random weights built in memory, as a [`TensorSource`].

use candle_core::{DType, Tensor};

use super::error::LoadError;
use super::source::{TensorRequest, TensorSource};

/// Random weights for a config, built in memory: the benchmark's model at
/// real widths without a checkpoint on disk.
///
/// Names follow the flat `model.` layout with stacked experts. Matrices are
/// drawn from N(0, 1/fan_in), vectors (norms, `A_log`, `dt_bias`) from
/// N(0, 0.1²). Tensors above 32 Mi elements repeat one random block 16 times
/// along their first dimension to keep generation fast; the arithmetic per
/// token is unchanged.
pub struct RandomWeights {
    seed: u64,
}

impl RandomWeights {
    /// Random weights; `seed` seeds GPU generators (candle's CPU generator
    /// cannot be seeded).
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }
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
        if !device.is_cpu() {
            // One seed per tensor name (FNV-1a), so tensors differ. The CPU
            // generator cannot be seeded in candle; it is random per run.
            let seed = name
                .bytes()
                .fold(self.seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            device.set_seed(seed).map_err(&wrap)?;
        }
        let std = if shape.len() == 1 {
            0.1
        } else {
            1.0 / (shape[shape.len() - 1] as f64).sqrt()
        };
        let elems: usize = shape.iter().product();
        const REPEAT: usize = 16;
        let tensor = if elems > 32 << 20 && shape[0].is_multiple_of(REPEAT) {
            let mut block_shape = shape.to_vec();
            block_shape[0] /= REPEAT;
            let block = Tensor::randn(0f32, std as f32, block_shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(&wrap)?;
            Tensor::cat(&[&block; REPEAT], 0).map_err(&wrap)?
        } else {
            Tensor::randn(0f32, std as f32, shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(&wrap)?
        };
        Ok(tensor)
    }

    fn stored_dtype(&self) -> Option<DType> {
        None
    }
}
