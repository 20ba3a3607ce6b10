#!/usr/bin/env bash
# Installs what Worldloom needs to build, test and run on Debian/Ubuntu:
# system packages (apt: build tools, WebKitGTK for the desktop app, Chromium,
# Xvfb and WebKitWebDriver for the end-to-end tests), Rust components,
# tauri-driver, the front end's npm packages, and the Python packages used by
# the OpenAI-client and OpenEnv-client compatibility tests.
# Safe to re-run; quick when everything is already there.
# Usage: scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Build tools; Chromium and fonts for the end-to-end tests and screenshots.
APT_PACKAGES=(build-essential pkg-config python3 python3-pip python3-venv ca-certificates curl git
  nodejs npm chromium fonts-dejavu-core)
# The desktop app (Tauri 2 on WebKitGTK): headers and libraries to build it.
APT_PACKAGES+=(libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev librsvg2-dev
  libayatana-appindicator3-dev libxdo-dev libssl-dev file)
# Its end-to-end test: a virtual display, WebKitWebDriver, screenshots.
APT_PACKAGES+=(xvfb xauth webkit2gtk-driver xdotool imagemagick)

if command -v apt-get >/dev/null 2>&1; then
  # Keep an already-installed newer Node.js (e.g. from NodeSource) rather than Debian's.
  pkgs=()
  for p in "${APT_PACKAGES[@]}"; do
    case "$p" in
      nodejs|npm) command -v "$p" >/dev/null 2>&1 || pkgs+=("$p") ;;
      *) dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || pkgs+=("$p") ;;
    esac
  done
  if [ "${#pkgs[@]}" -gt 0 ]; then
    echo "==> apt packages: ${pkgs[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  else
    echo "==> apt packages: all present"
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust with rustup (https://rustup.rs), then re-run scripts/setup.sh" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# tauri-driver drives the desktop app in its end-to-end test (WebDriver).
# The version is pinned: `tauri-driver@2` is not accepted as a version.
TAURI_DRIVER_VERSION=2.1.0
if ! command -v tauri-driver >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  echo "==> cargo install tauri-driver $TAURI_DRIVER_VERSION (about 2 minutes)"
  cargo install tauri-driver --version "$TAURI_DRIVER_VERSION" --locked --quiet
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "error: Node.js >= 20 is needed for the front end (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
# npm packages are per checkout: install when ui/node_modules is missing or
# older than the lock file.
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  echo "==> npm packages (ui/)"
  npm ci --prefix ui --no-audit --no-fund --loglevel=error
else
  echo "==> npm packages (ui/): up to date"
fi

# The `openai` Python package proves `worldloom serve-model` works with the
# clients researchers use.
echo "==> python packages"
python3 -m pip install --quiet --disable-pip-version-check "openai>=1.40,<3" 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "openai>=1.40,<3" \
  || echo "warning: could not install the openai Python package; its compatibility test will be skipped"
# The `openenv-core` client (GenericEnvClient) proves `worldloom serve-env`
# speaks OpenEnv. Its full dependency set pulls in gradio and a web UI
# (about 470 MB); the client needs only what its modules import (about
# 140 MB), so the package is installed without dependencies and those are
# installed beside it.
OPENENV_PACKAGES=(fastapi "pydantic>=2" "websockets>=15.0.1" requests fastmcp)
pip_quiet() {
  python3 -m pip install --quiet --disable-pip-version-check "$@" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$@" 2>/dev/null
}
{ pip_quiet --no-deps "openenv-core==0.3.0" && pip_quiet "${OPENENV_PACKAGES[@]}"; } \
  || echo "warning: could not install openenv-core; the serve-env client test will be skipped"
