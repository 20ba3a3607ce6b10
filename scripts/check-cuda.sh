#!/usr/bin/env bash
# Compile-checks the CUDA build of the world-model engine (`--features cuda`)
# on a machine without a GPU or a CUDA toolkit.
#
# Needs: python3 with venv, network access to PyPI the first time. It installs
# the pinned CUDA 13.0 compiler wheels (nvcc, nvvm/cicc, crt headers, runtime
# headers, CCCL/thrust) into a virtual environment if they are missing, points
# CUDA_PATH at them and runs `cargo check` (and, with --clippy, clippy) on
# worldloom-engine with the cuda feature. No GPU and no CUDA libraries are
# needed: a check compiles candle's CUDA kernels with nvcc but links nothing.
#
# Usage: scripts/check-cuda.sh [--clippy] [extra cargo args]
#
# Environment:
#   WORLDLOOM_CUDA_VENV        venv for the wheels (default ~/.cache/worldloom-cuda13-venv)
#   WORLDLOOM_CUDA_TARGET_DIR  cargo target dir for CUDA builds, kept apart from
#                              the CPU build cache (default ~/.cache/worldloom-target-cuda)
#   CUDA_COMPUTE_CAP           GPU architecture the kernels are built for (default 90, Hopper)
#
# The first run compiles candle-kernels' CUDA sources (several minutes on two
# cores); later runs reuse them. See docs/engine.md ("GPU").
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${WORLDLOOM_CUDA_VENV:-$HOME/.cache/worldloom-cuda13-venv}"
export CARGO_TARGET_DIR="${WORLDLOOM_CUDA_TARGET_DIR:-$HOME/.cache/worldloom-target-cuda}"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"

clippy=0
if [ "${1:-}" = "--clippy" ]; then
  clippy=1
  shift
fi

# Pinned together: nvcc's cicc (nvidia-nvvm) and the crt headers must come
# from the same release as nvcc/ptxas, or ptxas rejects the PTX version.
wheels=(
  "nvidia-cuda-nvcc==13.0.88"
  "nvidia-nvvm==13.0.88"
  "nvidia-cuda-crt==13.0.88"
  "nvidia-cuda-runtime==13.0.96"
  "nvidia-cuda-cccl==13.0.85"
)

if [ ! -x "$venv/bin/python" ]; then
  echo "==> creating $venv"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip show -q nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt \
    nvidia-cuda-runtime nvidia-cuda-cccl >/dev/null 2>&1; then
  echo "==> installing the CUDA 13.0 compiler wheels into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${wheels[@]}"
fi

cuda_root="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
for need in bin/nvcc nvvm/bin/cicc include/cuda_runtime.h include/crt/host_config.h include/cccl/thrust/scan.h; do
  if [ ! -e "$cuda_root/$need" ]; then
    echo "error: $cuda_root/$need is missing; remove $venv and run again" >&2
    exit 1
  fi
done
export CUDA_PATH="$cuda_root" CUDA_HOME="$cuda_root" NVCC="$cuda_root/bin/nvcc"
export PATH="$cuda_root/bin:$PATH"
echo "==> nvcc: $("$NVCC" --version | tail -1)"
echo "==> target dir: $CARGO_TARGET_DIR, CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP"

start=$(date +%s)
if [ "$clippy" = 1 ]; then
  nice cargo clippy -p worldloom-engine --features cuda --all-targets "$@" -- -D warnings
else
  nice cargo check -p worldloom-engine --features cuda --all-targets "$@"
fi
echo "==> CUDA check passed in $(( $(date +%s) - start )) s"
