#!/usr/bin/env bash
# Sets everything up and opens the Worldloom studio on the bundled samples.
#   scripts/studio.sh              # set up, build, open the desktop app on a workspace holding samples/
#   WORLDLOOM_SKIP_SETUP=1 scripts/studio.sh   # skip the package installation step
#   WORLDLOOM_BROWSER=1 scripts/studio.sh      # serve the studio to a browser instead (worldloom serve)
# Without a display ($DISPLAY and $WAYLAND_DISPLAY empty) it serves the studio
# on 127.0.0.1 for a browser instead, and says so.
# The workspace (one SQLite file) lives in $XDG_DATA_HOME/worldloom/samples.worldloom.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"

if [ "${WORLDLOOM_SKIP_SETUP:-0}" != "1" ]; then
  scripts/setup.sh
fi

desktop=1
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  desktop=0
  echo "==> no display (\$DISPLAY and \$WAYLAND_DISPLAY are empty): the desktop app cannot open here;"
  echo "    serving the studio to a browser instead (worldloom serve)"
elif [ "${WORLDLOOM_BROWSER:-0}" = "1" ]; then
  desktop=0
fi

echo "==> building the front end"
# npm packages are per checkout: a fresh clone has none even when setup is skipped.
if [ ! -d ui/node_modules ]; then
  npm ci --prefix ui --no-audit --no-fund --loglevel=error
fi
npm run --prefix ui build >/dev/null

data="${XDG_DATA_HOME:-$HOME/.local/share}/worldloom"
mkdir -p "$data"
workspace="$data/samples.worldloom"

samples=(samples/web/*.json samples/os/*_trajectory samples/android/*_trajectory samples/agentworldbench/*.jsonl)
trajectories=()
for s in "${samples[@]}"; do
  case "$s" in *.predictions.jsonl) ;; *) trajectories+=("$s") ;; esac
done

if [ "$desktop" = "1" ]; then
  echo "==> building the desktop app (release; the first build takes several minutes)"
  cargo build --release --locked -p worldloom-studio
  echo "==> opening the Worldloom studio on $workspace"
  exec "${CARGO_TARGET_DIR}/release/worldloom-studio" --workspace "$workspace" "${trajectories[@]}"
fi

echo "==> building the worldloom binary (release)"
cargo build --release --locked -p worldloom-cli
echo "==> serving the studio on 127.0.0.1: open the URL printed below (Ctrl-C to stop)"
exec "${CARGO_TARGET_DIR}/release/worldloom" serve --workspace "$workspace" --port "${WORLDLOOM_PORT:-7878}" "${trajectories[@]}"
