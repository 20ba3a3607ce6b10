#!/usr/bin/env bash
# Runs every Worldloom test: sample checks, formatting, lints, Rust tests
# (unit, integration, CLI, HTTP), front-end type check, lint, format check, unit tests and build,
# the end-to-end browser test against `worldloom serve`, the desktop app
# (`worldloom-studio`) under Xvfb driven by tauri-driver + WebKitWebDriver, and the same
# desktop checks on the app installed from its .deb package (scripts/test-deb.sh).
# Usage: scripts/test.sh    (runs scripts/setup.sh first unless WORLDLOOM_SKIP_SETUP=1)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
log="${CARGO_TARGET_DIR}/test-output.txt"
mkdir -p "$CARGO_TARGET_DIR"

step() { printf '\n==> %s\n' "$*"; }

if [ "${WORLDLOOM_SKIP_SETUP:-0}" != "1" ]; then
  step "setup"
  scripts/setup.sh
fi

step "samples are consistent"
python3 samples/tools/check_samples.py >/dev/null

step "cargo fmt --check"
cargo fmt --all -- --check

# The front end is built before any cargo command: the desktop app
# (src-tauri) embeds ui/dist when it compiles, clippy and tests included.
step "front end: type check, lint (import circles included), format check, duplicate-code budget, build (ui/dist is served by the server and embedded by the desktop app)"
# npm packages are per checkout (WORLDLOOM_SKIP_SETUP=1 in a fresh clone has none).
[ -d ui/node_modules ] || npm ci --prefix ui --no-audit --no-fund --loglevel=error
npm run --prefix ui typecheck
npm run --prefix ui lint
npm run --prefix ui format:check
npm run --prefix ui dup
npm run --prefix ui build

step "cargo clippy (all targets, warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings

# One build of the dependency tree: every binary and test target in one
# invocation, so the binaries the end-to-end runs use are the ones the tests
# built (a separate `cargo build -p …` resolves other features and rebuilds
# most dependencies).
step "cargo build (every binary and test target, one feature set)"
cargo build --workspace --bins --tests --locked

step "cargo test (workspace)"
cargo test --workspace --locked 2>&1 | tee "$log"

# The engine's parity tests again with the CPU kernels held to their 256-bit forms (the
# path a CPU without AVX-512 takes: tiles, input quantizers, prefill attention), so both
# forms stay checked end to end on a machine that has AVX-512.
step "engine parity with the CPU kernels held to AVX2 (WORLDLOOM_CPU_TILES=avx2)"
WORLDLOOM_CPU_TILES=avx2 cargo test --workspace --locked --test gguf_llama_parity \
  --test quantized_widths --test qwen3_5_moe_parity 2>&1 | tee -a "$log"

# The front end's unit tests run against the real server (the binary just built).
step "front end: unit tests against worldloom serve"
WORLDLOOM_BIN="${CARGO_TARGET_DIR}/debug/worldloom" npm test --prefix ui 2>&1 | tee "${CARGO_TARGET_DIR}/vitest-output.txt"

step "end to end: Chromium against worldloom serve"
WORLDLOOM_BIN="${CARGO_TARGET_DIR}/debug/worldloom" npm run --prefix ui e2e
WORLDLOOM_BIN="${CARGO_TARGET_DIR}/debug/worldloom" npm run --prefix ui e2e:runs
WORLDLOOM_BIN="${CARGO_TARGET_DIR}/debug/worldloom" npm run --prefix ui e2e:lesson

step "end to end: the desktop app under Xvfb (tauri-driver + WebKitWebDriver)"
WORLDLOOM_STUDIO_BIN="${CARGO_TARGET_DIR}/debug/worldloom-studio" node ui/e2e/desktop.mjs 2>&1 | tee "${CARGO_TARGET_DIR}/desktop-e2e-output.txt"

# The Python package: the wheel around the binary just built, installed into a fresh venv.
step "python package: the wheel installed into a venv (Recorder, open, load)"
scripts/test-python.sh 2>&1 | tee "${CARGO_TARGET_DIR}/python-output.txt"

# The desktop package: the .deb of that build installed with apt-get, and the same checks run
# against the installed /usr/bin/worldloom-studio (needs root or password-less sudo).
step "desktop package: install the .deb and run the desktop checks on the installed app"
if [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; then
  scripts/test-deb.sh 2>&1 | tee "${CARGO_TARGET_DIR}/desktop-deb-output.txt"
else
  echo "skipped: installing a package needs root or password-less sudo" | tee "${CARGO_TARGET_DIR}/desktop-deb-output.txt"
fi

# One closing line for the whole run: Rust tests summed over every test binary, plus vitest and the desktop checks.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1); if ($i ~ /^ignored;?$/) s += $(i-1) } }
     END { printf "%d %d %d\n", p, f, s }' "$log" > "${CARGO_TARGET_DIR}/rust-counts.txt"
read -r rp rf rs < "${CARGO_TARGET_DIR}/rust-counts.txt"
vp=$(sed 's/\x1b\[[0-9;]*m//g' "${CARGO_TARGET_DIR}/vitest-output.txt" | awk '/Tests +[0-9]+ passed/ { for (i = 1; i <= NF; i++) if ($i == "passed") print $(i-1) }' | tail -n 1)
dp=$(cat "${CARGO_TARGET_DIR}/desktop-e2e-output.txt" "${CARGO_TARGET_DIR}/desktop-deb-output.txt" | grep -c '^ok  ' || true)
df=$(cat "${CARGO_TARGET_DIR}/desktop-e2e-output.txt" "${CARGO_TARGET_DIR}/desktop-deb-output.txt" | grep -c '^FAIL' || true)
pp=$(awk '/^Ran [0-9]+ tests? in/ { print $2 }' "${CARGO_TARGET_DIR}/python-output.txt" | tail -n 1)
printf '\n%d passed, %d failed, %d skipped\n' "$(( rp + ${vp:-0} + ${dp:-0} + ${pp:-0} ))" "$(( rf + ${df:-0} ))" "$rs"
