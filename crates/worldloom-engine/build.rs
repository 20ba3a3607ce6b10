//! Builds the fused CUDA kernels (`src/kernels/cuda/fused.cu`) to PTX with
//! `nvcc` when the `cuda` feature is on; does nothing otherwise.
//!
//! nvcc: `$NVCC`, else `$CUDA_PATH/bin/nvcc` (or `$CUDA_HOME`), else `nvcc`
//! on the `PATH`. Target: `compute_$CUDA_COMPUTE_CAP` (default 80; PTX is
//! compiled for the actual GPU by the driver when loaded, so a GPU of a
//! later generation runs it too).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/kernels/cuda/fused.cu");
    for var in ["NVCC", "CUDA_PATH", "CUDA_HOME", "CUDA_COMPUTE_CAP"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let nvcc = std::env::var("NVCC").ok().unwrap_or_else(|| {
        ["CUDA_PATH", "CUDA_HOME"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|root| PathBuf::from(root).join("bin").join("nvcc"))
            .find(|p| p.exists())
            .map_or_else(|| "nvcc".to_string(), |p| p.display().to_string())
    });
    let cap = std::env::var("CUDA_COMPUTE_CAP")
        .ok()
        .map(|c| c.trim().replace('.', ""))
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_digit()))
        .unwrap_or_else(|| "80".to_string());
    let ptx = out_dir.join("fused.ptx");
    let status = Command::new(&nvcc)
        .args(["--ptx", "-O3", "-std=c++17"])
        .arg(format!("-arch=compute_{cap}"))
        .arg("src/kernels/cuda/fused.cu")
        .arg("-o")
        .arg(&ptx)
        .status()
        .unwrap_or_else(|e| panic!("cannot run `{nvcc}` (set NVCC or CUDA_PATH): {e}"));
    if !status.success() {
        panic!("`{nvcc}` failed to compile src/kernels/cuda/fused.cu ({status})");
    }
}
