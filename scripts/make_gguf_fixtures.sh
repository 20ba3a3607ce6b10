#!/usr/bin/env bash
# Rebuilds the GGUF fixtures of worldloom-engine (crates/worldloom-engine/tests/fixtures/gguf/) with
# llama.cpp as the measuring instrument: its own convert_hf_to_gguf.py (to BF16, F32), llama-quantize (Q8_0,
# Q4_K_M), its C API (greedy ids and logits, through scripts/gguf_reference_logits.cpp, compiled here) and
# llama-server (a greedy cross-check and the chat rendering) as references.
# Hand-run only: CI and the tests never need llama.cpp, torch or this script; the outputs are committed.
#
# Usage:
#   scripts/make_gguf_fixtures.sh [LLAMA_BIN_DIR LLAMA_SRC_DIR]
#     LLAMA_BIN_DIR holds llama-quantize and llama-server; LLAMA_SRC_DIR holds convert_hf_to_gguf.py and
#     gguf-py/. Without them the two folders are taken from the two lines that ../shared/tools/peer-llamacpp.sh
#     prints (it builds llama.cpp once, ~13 min on 2 cores; set PEER_LLAMACPP to use another builder).
#   PYTHON=/path/to/python   a Python with torch, transformers (>= 5.2, for qwen3_5_moe), tokenizers,
#     safetensors and numpy (default: python3). `scripts/make_gguf_fixtures.sh --venv DIR` makes one:
#     PyPI's Linux torch wheel cannot be imported without the NVIDIA libraries it links (libcudart,
#     libcublasLt, libcudnn…) even on a CPU-only machine, and a plain `pip install torch` also pulls
#     triton; so it installs torch with --no-deps, then exactly the CUDA library wheels torch's metadata
#     pins (no triton, no cuda-bindings: import does not need them), then transformers and the rest.
#     About 4.6 GB; delete DIR afterwards.
#   WORK=DIR   scratch folder (default: a new temporary folder, deleted at the end).
#
# What it writes and how the references are taken: see the docstring of scripts/make_gguf_fixtures.py and
# docs/engine.md ("GGUF fixtures").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = "--venv" ]; then
  venv=${2:?usage: $0 --venv DIR}
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps torch
  # The Linux requirements of torch, less triton and cuda-bindings.
  mapfile -t deps < <("$venv/bin/python" - <<'EOF'
import importlib.metadata as m
for req in m.distribution("torch").requires or []:
    name, _, marker = req.partition(";")
    if "extra ==" in marker or name.startswith(("triton", "cuda-bindings")):
        continue
    print(name.strip().replace(" ", ""))
EOF
  )
  "$venv/bin/pip" install --quiet "${deps[@]}" "transformers>=5.2" tokenizers safetensors numpy pyyaml
  "$venv/bin/python" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  echo "now: PYTHON=$venv/bin/python $0"
  exit 0
fi

if [ $# -ge 2 ]; then
  bin=$1
  src=$2
else
  tool=${PEER_LLAMACPP:-$root/../shared/tools/peer-llamacpp.sh}
  out=$("$tool")
  bin=$(sed -n 1p <<<"$out")
  src=$(sed -n 2p <<<"$out")
fi
for f in "$bin/llama-quantize" "$bin/llama-server" "$src/convert_hf_to_gguf.py"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }
done

python=${PYTHON:-python3}
"$python" -c "import torch, transformers, tokenizers, safetensors, numpy" 2>/dev/null || {
  echo "$python lacks torch/transformers/tokenizers/safetensors/numpy: see --venv in $0" >&2
  exit 1
}

work=${WORK:-}
cleanup=false
if [ -z "$work" ]; then
  work=$(mktemp -d)
  cleanup=true
fi
"$python" "$root/scripts/make_gguf_fixtures.py" --llama-bin "$bin" --llama-src "$src" --work "$work"
if $cleanup; then rm -rf "$work"; fi
du -ch "$root/crates/worldloom-engine/tests/fixtures/gguf"/* | tail -1
