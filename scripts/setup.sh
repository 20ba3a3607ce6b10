#!/usr/bin/env bash
# Installs what Worldloom needs to build, test and run on Debian/Ubuntu:
# system packages (apt), Rust components, the front end's npm packages, and
# the Python package used by the OpenAI-client compatibility test.
# Safe to re-run; quick when everything is already there.
# Usage: scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Build tools; Chromium and fonts for the end-to-end tests and screenshots.
APT_PACKAGES=(build-essential pkg-config python3 python3-pip ca-certificates curl git
  nodejs npm chromium fonts-dejavu-core)

if command -v apt-get >/dev/null 2>&1; then
  echo "==> apt packages"
  $SUDO apt-get update -qq
  # Keep an already-installed newer Node.js (e.g. from NodeSource) rather than Debian's.
  pkgs=()
  for p in "${APT_PACKAGES[@]}"; do
    case "$p" in
      nodejs|npm) command -v "$p" >/dev/null 2>&1 || pkgs+=("$p") ;;
      *) pkgs+=("$p") ;;
    esac
  done
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust with rustup (https://rustup.rs), then re-run scripts/setup.sh" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "error: Node.js >= 20 is needed for the front end (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
echo "==> npm packages (ui/)"
npm ci --prefix ui --no-audit --no-fund --loglevel=error

# The `openai` Python package proves `worldloom serve-model` works with the
# clients researchers use.
echo "==> python packages"
python3 -m pip install --quiet --disable-pip-version-check "openai>=1.40,<3" 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "openai>=1.40,<3" \
  || echo "warning: could not install the openai Python package; its compatibility test will be skipped"
