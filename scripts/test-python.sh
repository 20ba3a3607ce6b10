#!/usr/bin/env bash
# Builds the Python package's wheel around the `worldloom` binary the tests built
# (scripts/make_wheel.py), installs it into a fresh virtual environment and runs
# python/tests (Recorder, open, load against the installed package).
# Usage: scripts/test-python.sh    (after the build step of scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
wheel=$(python3 scripts/make_wheel.py --binary "$CARGO_TARGET_DIR/debug/worldloom" --out "$scratch/dist")
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel"
# The installed package, not the checkout's python/ folder.
(cd "$scratch" && WORLDLOOM_BIN= "$scratch/venv/bin/python" "$OLDPWD/python/tests/test_worldloom.py")
