#!/usr/bin/env bash
# The engine's GPU check in two halves: build the CUDA binaries on a machine
# without a GPU, then run them on a GPU machine that has no Rust toolchain
# and no network.
#
#   scripts/gpu-check.sh build   # here: release binaries with --features cuda → gpu-bundle/
#   scripts/gpu-check.sh run     # on the GPU machine, from the repository root:
#                                #   parity tests on cuda:0, then the bench at 4 and 40
#                                #   layers, fused ops on/off; figures into $OUT
#
# build needs python3 with venv, network access to PyPI the first time, a C
# compiler (the libcuda link stub) and cargo. It installs the pinned CUDA 13.0
# compiler wheels (as scripts/check-cuda.sh) plus the cuBLAS, cuRAND and NVRTC
# wheels into the same virtual environment, assembles a CUDA_PATH from them
# with a stub libcuda.so (the driver API's symbols, from cudarc's bindings;
# soname libcuda.so.1, replaced by the real driver at run time), and builds
# the engine's lib tests, the parity tests and the bench binary with
# CUDA_COMPUTE_CAP=90. The stripped binaries go to gpu-bundle/bins.tar.xz
# (gpu-bundle/ is ignored by git; carry it to the GPU machine, where the
# working tree and carried paths together may not pass 64 MiB).
#
# run needs the NVIDIA driver and the CUDA 13 runtime libraries (libcublas,
# libcudart, libcublasLt, libcurand, libnvrtc; found under /usr/local/cuda*, or in the
# python packages `nvidia.*` of the machine's python3) and python3 for the
# figures. It writes to $OUT (default gpu-check-out/): env.txt, tests.log,
# bench.log, bench.jsonl, figures.md (bench results are appended, so the
# parts can run in separate calls with the same $OUT). Parts:
# GPU_CHECK_PARTS="tests bench4 bench40" (the default, all three);
# GPU_CHECK_SKIP_40=1 drops bench40. Time limits: tests 6 min, bench4
# 3 × 150 s, bench40 2 × 240 s (the 40-layer runs build a 65 GiB random
# model each); estimated 5–8 minutes in all on an H200, not measured. A
# device call may run 10 minutes: `tests bench4` then `bench40` is the
# safe split.
#
# The part benchq (not in the default) benches the GGUF block types without
# a GGUF file: 40 layers with random weights quantized in memory
# (`--quantize q8_0`, then `--quantize q4_k`: projections, experts,
# embedding and output in blocks, the rest dense bf16; the experts on the
# indexed MoE kernel), prefill of 512 tokens and 32 decode steps each,
# 2 × 240 s. Run it as its own device call, with the same $OUT to add its
# rows to the figures:
#   GPU_CHECK_PARTS=benchq scripts/gpu-check.sh run
# (a 40-layer Q8_0 model is about 34 GiB on the device, Q4_K about 18 GiB;
# its build quantizes 1/16 of each large tensor on the host's threads and
# copies the blocks, not measured on an H200).
#
# Environment (build): WORLDLOOM_CUDA_VENV, WORLDLOOM_CUDA_TARGET_DIR (as in
# check-cuda.sh), CUDA_COMPUTE_CAP (default 90), GPU_CHECK_PROFILE (cargo
# profile, default release; `dev` for a quick link check).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bundle="$root/gpu-bundle"

build() {
  local venv="${WORLDLOOM_CUDA_VENV:-$HOME/.cache/worldloom-cuda13-venv}"
  export CARGO_TARGET_DIR="${WORLDLOOM_CUDA_TARGET_DIR:-$HOME/.cache/worldloom-target-cuda}"
  export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
  local profile="${GPU_CHECK_PROFILE:-release}"
  # Pinned as in check-cuda.sh (cicc and the crt headers must match ptxas),
  # plus the libraries candle links (any 13.x: only their sonames matter).
  local wheels=(
    "nvidia-cuda-nvcc==13.0.88"
    "nvidia-nvvm==13.0.88"
    "nvidia-cuda-crt==13.0.88"
    "nvidia-cuda-runtime==13.0.96"
    "nvidia-cuda-cccl==13.0.85"
    "nvidia-cuda-nvrtc==13.0.*"
    "nvidia-cublas==13.0.*"
    "nvidia-curand"
  )
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -m pip show -q nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt \
      nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-nvrtc nvidia-cublas nvidia-curand \
      >/dev/null 2>&1; then
    echo "==> installing the CUDA 13.0 wheels into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${wheels[@]}"
  fi
  local site
  site="$("$venv/bin/python" -c 'import nvidia, os; print(list(nvidia.__path__)[0])')"
  local wheel_root="$site/cu13"

  # A CUDA_PATH: the compiler from the wheels, lib64 with unversioned links
  # to the wheels' libraries and the driver stub.
  local sdk="${WORLDLOOM_CUDA_SDK:-$HOME/.cache/worldloom-cuda13-sdk}"
  mkdir -p "$sdk/lib64"
  for d in bin include nvvm; do
    ln -sfn "$wheel_root/$d" "$sdk/$d"
  done
  for lib in cudart cublas cublasLt curand nvrtc; do
    local found
    found=$(find "$site" -name "lib$lib.so.*" -not -name '*.alt.*' | sort | head -1)
    if [ -z "$found" ]; then
      echo "error: lib$lib.so.* not found under $site" >&2
      exit 1
    fi
    ln -sfn "$found" "$sdk/lib64/lib$lib.so"
  done
  if [ ! -e "$sdk/lib64/libcuda.so" ]; then
    echo "==> building the libcuda link stub"
    (cd crates/worldloom-engine && cargo fetch -q)
    local sys
    sys=$(ls -d "$HOME"/.cargo/registry/src/*/cudarc-0.19.*/src/driver/sys/mod.rs | tail -1)
    grep -oE 'pub unsafe fn cu[A-Za-z0-9_]+' "$sys" | awk '{print "void " $4 "(void) {}"}' \
      | sort -u >"$sdk/lib64/cuda_stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$sdk/lib64/libcuda.so" "$sdk/lib64/cuda_stub.c"
  fi
  export CUDA_PATH="$sdk" CUDA_HOME="$sdk" NVCC="$sdk/bin/nvcc" PATH="$sdk/bin:$PATH"
  echo "==> nvcc: $("$NVCC" --version | tail -1); profile $profile; target dir $CARGO_TARGET_DIR"

  local start
  start=$(date +%s)
  local log="$CARGO_TARGET_DIR/gpu-check-build.jsonl"
  nice cargo test --profile "$profile" -p worldloom-engine --features cuda --no-run \
    --lib --test qwen3_5_moe_parity --bench qwen3_5_moe --message-format=json-render-diagnostics \
    >"$log"
  rm -rf "$bundle"
  mkdir -p "$bundle"
  python3 - "$log" "$bundle" <<'EOF'
import json, shutil, sys
log, bundle = sys.argv[1], sys.argv[2]
names = {("lib", "worldloom_engine"): "engine-lib-tests",
         ("test", "qwen3_5_moe_parity"): "parity-tests",
         ("bench", "qwen3_5_moe"): "bench"}
seen = set()
for line in open(log):
    msg = json.loads(line)
    exe = msg.get("executable")
    if msg.get("reason") != "compiler-artifact" or not exe:
        continue
    target = msg["target"]
    key = (target["kind"][0], target["name"])
    if key in names:
        shutil.copy(exe, f"{bundle}/{names[key]}")
        seen.add(key)
missing = set(names) - seen
if missing:
    sys.exit(f"missing binaries: {sorted(missing)}")
EOF
  for f in "$bundle"/*; do
    strip --strip-debug "$f"
  done
  # The embedded PTX of candle's kernels is text: xz takes the bundle well
  # under the 64 MiB a GPU machine's working tree may carry.
  (cd "$bundle" && python3 -c '
import tarfile
with tarfile.open("bins.tar.xz", "w:xz", preset=6) as t:
    for name in ("engine-lib-tests", "parity-tests", "bench"):
        t.add(name)
' && rm engine-lib-tests parity-tests bench)
  git rev-parse HEAD >"$bundle/commit.txt"
  echo "==> built in $(( $(date +%s) - start )) s:"
  du -sh "$bundle"/*
  echo "carry gpu-bundle to the GPU machine and run: scripts/gpu-check.sh run"
}

run() {
  local out="${OUT:-$root/gpu-check-out}"
  mkdir -p "$out"
  if [ ! -f "$bundle/bins.tar.xz" ]; then
    echo "error: $bundle/bins.tar.xz missing: run scripts/gpu-check.sh build first and carry gpu-bundle" >&2
    exit 1
  fi
  local bins="${TMPDIR:-/tmp}/worldloom-gpu-bins"
  rm -rf "$bins"
  mkdir -p "$bins"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$bundle/bins.tar.xz" "$bins"
  chmod +x "$bins"/*
  # The CUDA runtime libraries the binaries link: the toolkit's, else the
  # machine python's nvidia packages.
  local dirs=()
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13; do
    local found
    found=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu \
      "$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null || echo /nonexistent)" \
      -name "$lib*" 2>/dev/null | head -1 || true)
    if [ -n "$found" ]; then
      dirs+=("$(dirname "$found")")
    else
      echo "warning: $lib not found; relying on the loader's path" >&2
    fi
  done
  local joined
  joined=$(printf '%s:' "${dirs[@]}" | sed 's/:$//')
  export LD_LIBRARY_PATH="${joined}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  {
    echo "commit: $(cat "$bundle/commit.txt" 2>/dev/null || echo unknown)"
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    nproc
  } >"$out/env.txt" 2>&1

  export WORLDLOOM_TEST_DEVICE=cuda:0
  export WORLDLOOM_FIXTURES_DIR="$root/crates/worldloom-engine/tests/fixtures/qwen3_5_moe"
  local parts="${GPU_CHECK_PARTS:-tests bench4 bench40}"
  if [ -n "${GPU_CHECK_SKIP_40:-}" ]; then
    parts="${parts//bench40/}"
  fi
  local status=0
  if [[ " $parts " == *" tests "* ]]; then
  {
    echo "== fused ops: CUDA kernels vs their CPU implementations"
    timeout 120 "$bins/engine-lib-tests" --test-threads 1 kernels::fused::tests || status=1
    echo "== parity with the reference on cuda:0 (fused ops on, as loading picks)"
    timeout 240 "$bins/parity-tests" --test-threads 1 || status=1
  } >"$out/tests.log" 2>&1
  grep -E '^== |^test result|FAILED|panicked|relative RMS' "$out/tests.log" || true
  fi

  touch "$out/bench.jsonl" "$out/bench.log"
  bench() {
    local limit=$1
    shift
    echo "== bench $*" | tee -a "$out/bench.log"
    timeout "$limit" "$bins/bench" --device cuda:0 --dtype bf16 "$@" 2>>"$out/bench.log" \
      | tee -a "$out/bench.log" | grep '^{' >>"$out/bench.jsonl" || echo "bench $* failed" | tee -a "$out/bench.log"
  }
  if [[ " $parts " == *" bench4 "* ]]; then
    bench 150 --layers 4 --repeats 2 --decode-tokens 64
    bench 150 --layers 4 --repeats 2 --decode-tokens 64 --fused-ops off
    bench 150 --layers 4 --repeats 2 --decode-tokens 64 --fused-ops off --moe per-expert
  fi
  if [[ " $parts " == *" bench40 "* ]]; then
    bench 240 --layers 40 --repeats 1 --decode-tokens 32
    bench 240 --layers 40 --repeats 1 --decode-tokens 32 --fused-ops off
  fi
  if [[ " $parts " == *" benchq "* ]]; then
    bench 240 --layers 40 --repeats 1 --decode-tokens 32 --quantize q8_0
    bench 240 --layers 40 --repeats 1 --decode-tokens 32 --quantize q4_k
  fi

  python3 - "$out/bench.jsonl" "$out/env.txt" >"$out/figures.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("# GPU check figures\n")
print("```\n" + open(sys.argv[2]).read().strip() + "\n```\n")
print("| layers | weights | fused ops | MoE | prefill tok/s (512) | decode tok/s | decode ms/token | host share | "
      "turn from scratch (ms) | turn from snapshot (ms) | snapshot (MiB) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['layers']} | {r.get('quantize') or r['dtype']} | {'on' if r.get('fused_ops') else 'off'} | {r['moe_dispatch']} | "
          f"{r['prefill_tokens_per_sec']:.1f} | {r['decode_tokens_per_sec']:.1f} | "
          f"{r['decode_ms_per_token']:.2f} | {100 * r['decode_host_share']:.0f} % | "
          f"{r['turn_from_scratch_ms']:.0f} | {r['turn_from_snapshot_ms']:.0f} | "
          f"{r['snapshot_bytes'] / 2**20:.2f} |")
EOF
  cat "$out/figures.md"
  if [ "$status" != 0 ]; then
    echo "some tests failed: see $out/tests.log" >&2
  fi
  return "$status"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *)
    echo "usage: scripts/gpu-check.sh build|run" >&2
    exit 2
    ;;
esac
