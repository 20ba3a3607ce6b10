#!/usr/bin/env bash
# CPU speed of the Worldloom engine next to llama.cpp on the same model shape (real widths of
# Qwen-AgentWorld-35B-A3B, 4 layers, random weights), run alternately in one script so that both
# see the same machine load. Hand-run; llama.cpp is a measuring instrument here, nothing in the
# product or its tests needs it.
#
# Usage:
#   scripts/bench-cpu-side-by-side.sh LLAMA_BIN_DIR PREC=FILE.gguf [PREC=FILE.gguf ...]
# e.g.
#   scripts/bench-cpu-side-by-side.sh ~/.cache/llama.cpp/build/bin \
#       BF16=/tmp/bench-bf16.gguf Q8_0=/tmp/bench-q8_0.gguf Q4_K_M=/tmp/bench-q4_k_m.gguf
#
# The GGUFs: a bench-shape BF16 file (llama.cpp's converter layout for arch `qwen35moe`, 4 layers,
# the widths below), then `llama-quantize FILE-bf16.gguf FILE-q8_0.gguf Q8_0` (or Q4_K_M).
# Environment: ROUNDS (default 3), THREADS (default 2), PROMPT (prompt tokens, default 512), WL_DTYPES (our precisions, default
# "bf16"; an entry PREC=FILE.gguf runs our bench on that GGUF, e.g. "bf16 Q8_0=/tmp/x-q8_0.gguf"),
# WL_BENCH (our bench executable; default: built with `cargo bench --no-run`),
# OUT (raw outputs; default a temporary folder), LLAMA_EXTRA (more llama-bench arguments, e.g.
# "--repack 0" where llama.cpp's AMX path faults: a VM whose CPU reports AMX without granting
# the tile state; then state it next to the figures).
#
# Per round, for each GGUF: `llama-bench -m FILE -p PROMPT -n 64 -t THREADS`; then for each of our
# precisions our bench (`--dtype D --repeats 1`, a PROMPT-token prefill, 32 greedy decode steps,
# RAYON_NUM_THREADS=THREADS). Peak RSS: llama-bench's whole process by /usr/bin/time (its prompt
# and generation runs); ours over the same phases (loading, warm-up, the prefill and its decode:
# the bench's `rss_peak_prompt_gib`), and our whole process, whose turns then hold three more states,
# in the last column. The 1-minute load average at the start and end of each run. Prints one
# Markdown table (a row per run) on stdout.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,22p "$0"; exit 2; }
llama_bin=$1
shift
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
PROMPT=${PROMPT:-512}
WL_DTYPES=${WL_DTYPES:-bf16}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
[ -x "$llama_bin/llama-bench" ] || { echo "no llama-bench in $llama_bin" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 1; }
for m in "$@"; do
  [ -f "${m#*=}" ] || { echo "no such GGUF: ${m#*=}" >&2; exit 1; }
done
if [ -z "${WL_BENCH:-}" ]; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  WL_BENCH=$(cd "$root" && cargo bench -p worldloom-engine --bench qwen3_5_moe --no-run 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)
  [ -x "$WL_BENCH" ] || { echo "could not build the Worldloom bench" >&2; exit 1; }
fi

load() { cut -d' ' -f1 /proc/loadavg; }

# json_field FILE KEY: a number from the Worldloom bench's JSON line.
json_field() {
  grep '^{' "$1" | tr ',' '\n' | sed -n "s/^.*\"$2\":\([0-9.eE+-]*\).*$/\1/p" | head -1
}

# llama_ts FILE KIND: avg_ts ± stddev_ts of llama-bench's pp (KIND=p) or tg (KIND=g) row (csv).
llama_ts() {
  awk -F, -v kind="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i }; next }
    { gsub(/"/, "") }
    (kind == "p" && $col["n_prompt"] > 0 && $col["n_gen"] == 0) ||
    (kind == "g" && $col["n_gen"] > 0 && $col["n_prompt"] == 0) {
      printf "%.1f ± %.1f", $col["avg_ts"], $col["stddev_ts"]; exit }' "$1"
}

rss_gib() { tail -1 "$1" | awk '{ printf "%.2f", $1 / 1048576 }'; }

{
  echo "date: $(date -Is)"; uname -a; lscpu | grep -E 'Model name|^CPU\(s\)'
  free -g | head -2; echo "llama.cpp: $llama_bin"; echo "worldloom bench: $WL_BENCH"
  echo "threads $THREADS, rounds $ROUNDS, llama-bench extra: ${LLAMA_EXTRA:-none}"
} >"$OUT/env.txt"

echo "| round | engine | precision | prefill tok/s ($PROMPT) | decode tok/s | peak RSS (GiB) | load avg start → end | peak RSS with the turns (GiB) |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for m in "$@"; do
    prec=${m%%=*}
    file=${m#*=}
    base="$OUT/$round-llama-$prec"
    l0=$(load)
    /usr/bin/time -f %M -o "$base.rss" "$llama_bin/llama-bench" -m "$file" -p "$PROMPT" -n 64 \
      -t "$THREADS" ${LLAMA_EXTRA:-} -o csv >"$base.csv" 2>"$base.err"
    echo "| $round | llama.cpp | $prec | $(llama_ts "$base.csv" p) | $(llama_ts "$base.csv" g) |" \
      "$(rss_gib "$base.rss") | $l0 → $(load) | |"
  done
  for dtype in $WL_DTYPES; do
    if [ "${dtype#*=}" != "$dtype" ]; then
      weights=(--gguf "${dtype#*=}")
      dtype=${dtype%%=*}
    else
      weights=(--dtype "$dtype")
    fi
    base="$OUT/$round-worldloom-$dtype"
    l0=$(load)
    RAYON_NUM_THREADS=$THREADS /usr/bin/time -f %M -o "$base.rss" "$WL_BENCH" "${weights[@]}" \
      --repeats 1 --prompt-tokens "$PROMPT" --decode-tokens 32 --turn-tokens 1 >"$base.out" 2>"$base.err"
    printf '| %s | worldloom | %s | %.1f | %.2f | %.2f | %s → %s | %s |\n' "$round" "$dtype" \
      "$(json_field "$base.out" prefill_tokens_per_sec)" \
      "$(json_field "$base.out" decode_tokens_per_sec)" \
      "$(json_field "$base.out" rss_peak_prompt_gib)" "$l0" "$(load)" "$(rss_gib "$base.rss")"
  done
done
echo "raw outputs: $OUT" >&2
