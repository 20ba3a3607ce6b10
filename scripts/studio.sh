#!/usr/bin/env bash
# Sets everything up and opens the Worldloom studio on the bundled samples.
#   scripts/studio.sh              # set up, build, import samples/, serve on 127.0.0.1 and open a browser
#   WORLDLOOM_SKIP_SETUP=1 scripts/studio.sh   # skip the package installation step
# The workspace (one SQLite file) lives in $XDG_DATA_HOME/worldloom/samples.worldloom.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"

if [ "${WORLDLOOM_SKIP_SETUP:-0}" != "1" ]; then
  scripts/setup.sh
fi

echo "==> building the front end and the worldloom binary"
npm run --prefix ui build >/dev/null
cargo build --release --locked -p worldloom-cli

data="${XDG_DATA_HOME:-$HOME/.local/share}/worldloom"
mkdir -p "$data"
bin="${CARGO_TARGET_DIR}/release/worldloom"

samples=(samples/web/*.json samples/os/*_trajectory samples/android/*_trajectory samples/agentworldbench/*.jsonl)
trajectories=()
for s in "${samples[@]}"; do
  case "$s" in *.predictions.jsonl) ;; *) trajectories+=("$s") ;; esac
done

echo "==> serving the studio on 127.0.0.1: open the URL printed below (Ctrl-C to stop)"
exec "$bin" serve --workspace "$data/samples.worldloom" --port "${WORLDLOOM_PORT:-7878}" "${trajectories[@]}"
