#!/usr/bin/env bash
# Builds Worldloom's desktop packages with Tauri's bundler and names them
# worldloom-VERSION-PLATFORM.EXT in $CARGO_TARGET_DIR/packages/.
#
# Usage: scripts/package.sh [--debug] [--no-build] [--bundles deb,appimage]
#   --debug      package the debug build (what the tests build) instead of a release build
#   --no-build   package the binaries already built (skip cargo and the front-end build)
#   --bundles    Linux: deb, appimage (default: deb,appimage). AppImage needs the bundler's
#                linuxdeploy tools, which it downloads from GitHub on first use.
# macOS (.dmg) and Windows (.msi) are configured in src-tauri/tauri.conf.json and are built
# the same way on those systems (--bundles dmg / msi); this script is run on Linux.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"

profile=release
build=1
bundles=deb,appimage
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --no-build) build=0 ;;
    --bundles) bundles="$2"; shift ;;
    *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[ -x ui/node_modules/.bin/tauri ] || npm ci --prefix ui --no-audit --no-fund --loglevel=error

if [ "$build" = 1 ]; then
  npm run --prefix ui build
  # Both binaries, one feature set (as the tests build them).
  if [ "$profile" = release ]; then
    cargo build --release --workspace --bins --locked
  else
    cargo build --workspace --bins --tests --locked
  fi
fi

flag=()
[ "$profile" = debug ] && flag=(--debug)
ui/node_modules/.bin/tauri bundle "${flag[@]}" --bundles "$bundles" --config src-tauri/tauri.conf.json

out="$CARGO_TARGET_DIR/packages"
mkdir -p "$out"
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
shopt -s nullglob
for f in "$CARGO_TARGET_DIR/$profile/bundle/deb/"*.deb; do
  cp "$f" "$out/worldloom-$version-linux-$arch.deb"
done
for f in "$CARGO_TARGET_DIR/$profile/bundle/appimage/"*.AppImage; do
  cp "$f" "$out/worldloom-$version-linux-$(uname -m).AppImage"
done
ls -l "$out"
