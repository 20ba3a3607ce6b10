//! The memory check: does a model fit on its device?
//!
//! A loader estimates what a model needs ([`MemoryEstimate`], from its
//! config, before any tensor is allocated) and [`ensure_fits`] compares it
//! with the free memory of the device ([`available_memory_bytes`]), failing
//! with [`LoadError::InsufficientMemory`] rather than letting the allocator
//! abort the process.

use candle_core::{DType, Device};

use super::error::LoadError;

/// Bytes in one GiB (2^30), the unit of memory messages.
pub const BYTES_PER_GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A device's display name (`cpu`, `cuda:0`, `metal:0`).
pub fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".to_string(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

/// The memory a model needs on its device, estimated from its config before
/// any tensor is allocated.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MemoryEstimate {
    /// Weights in the compute dtype (norm weights count in f32).
    pub weight_bytes: u64,
    /// Decode state of one sequence at `context_tokens` tokens (KV cache of
    /// the attention layers in the compute dtype, f32 recurrent state and
    /// conv state of the DeltaNet layers).
    pub state_bytes: u64,
    /// Activations and scratch buffers of a prefill chunk (an allowance).
    pub scratch_bytes: u64,
    /// The context length `state_bytes` is computed for.
    pub context_tokens: usize,
}

impl MemoryEstimate {
    /// Weights, state and scratch together.
    pub fn total_bytes(&self) -> u64 {
        self.weight_bytes + self.state_bytes + self.scratch_bytes
    }

    /// [`Self::total_bytes`] in GiB.
    pub fn total_gib(&self) -> f64 {
        self.total_bytes() as f64 / BYTES_PER_GIB
    }
}

/// Free memory on `device` in bytes, if it can be read: `MemAvailable` of
/// `/proc/meminfo` for the CPU (and Metal's unified memory), the driver's
/// free-memory query for CUDA.
pub fn available_memory_bytes(device: &Device) -> Option<u64> {
    match device {
        Device::Cuda(_) => cuda_free_bytes(device),
        _ => {
            let text = std::fs::read_to_string("/proc/meminfo").ok()?;
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_free_bytes(device: &Device) -> Option<u64> {
    let cuda = device.as_cuda_device().ok()?;
    cuda.cuda_stream().context().bind_to_thread().ok()?;
    let (free, _total) = candle_core::cuda_backend::cudarc::driver::result::mem_get_info().ok()?;
    Some(free as u64)
}

#[cfg(not(feature = "cuda"))]
fn cuda_free_bytes(_device: &Device) -> Option<u64> {
    None
}

/// Checks `estimate` (for a model in `dtype`) against the free memory of
/// `device`; passes when the free memory cannot be read.
///
/// # Errors
/// [`LoadError::InsufficientMemory`] when the estimate exceeds what is free.
pub fn ensure_fits(
    estimate: &MemoryEstimate,
    dtype: DType,
    device: &Device,
) -> Result<(), LoadError> {
    if let Some(available) = available_memory_bytes(device)
        && estimate.total_bytes() > available
    {
        return Err(LoadError::InsufficientMemory {
            device: device_name(device),
            dtype,
            needed_gib: estimate.total_gib(),
            available_gib: available as f64 / BYTES_PER_GIB,
        });
    }
    Ok(())
}
