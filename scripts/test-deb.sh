#!/usr/bin/env bash
# Installs the desktop app's Debian package as a user would (apt-get install ./….deb) and runs
# the desktop end-to-end checks (ui/e2e/desktop.mjs) against the installed
# /usr/bin/worldloom-studio on the bundled samples; removes the package afterwards.
# Packages the debug build the tests made (scripts/package.sh --debug --no-build); needs root
# or password-less sudo for apt-get.
# Usage: scripts/test-deb.sh    (after the build step of scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"

scripts/package.sh --debug --no-build --bundles deb
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
deb="$CARGO_TARGET_DIR/packages/worldloom-$version-linux-$(dpkg --print-architecture).deb"
[ -f "$deb" ] || { echo "test-deb: $deb was not made" >&2; exit 1; }

cleanup() { $SUDO apt-get remove -y -qq worldloom-studio >/dev/null 2>&1 || true; }
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb" >/dev/null
dpkg -s worldloom-studio | grep -E '^(Version|Depends):'
test -x /usr/bin/worldloom-studio
# The desktop entry opens workspaces and trajectory rows; the MIME types are registered.
grep -q '^Exec=worldloom-studio %F$' /usr/share/applications/*orldloom*.desktop
grep -q '^MimeType=application/x-worldloom-workspace;' /usr/share/applications/*orldloom*.desktop
grep -q 'glob pattern="\*.worldloom"' /usr/share/mime/packages/worldloom-studio.xml
WORLDLOOM_STUDIO_BIN=/usr/bin/worldloom-studio WL_DESKTOP_LABEL=installed node ui/e2e/desktop.mjs
