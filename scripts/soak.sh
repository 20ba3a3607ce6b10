#!/usr/bin/env bash
# Soak of what must survive a crash, on loopback only, bounded in time and count:
#
# 1. serve-env: SOAK_CLIENTS HTTP clients (default 4) reset and step web tasks of the AgentWorldBench sample
#    with the `copy` engine while the server is killed with SIGKILL SOAK_KILLS times (default 10), restarted
#    each time on the same recording workspace. Each client logs every step the server acknowledged (HTTP 200).
#    Checked: every acknowledged step is in the workspace (0 lost); no step is there twice (no state has two
#    recorded turns; at most one step more than acknowledged per episode: the one in flight at the kill); every
#    episode carries its `live-episode` tag; SQLite's integrity check is clean.
# 2. eval resume: `worldloom eval --engine copy` over SOAK_EVAL_ROWS rows (default 5000, the sample's rows with
#    new ids; default 20000), killed with SIGKILL SOAK_EVAL_KILLS times (default 5) 0.3-1.2 s after it starts and
#    run again each time on the same output; then run to the end. Checked: every row is in the output exactly
#    once (the rows written before each kill are printed, to show the kills landed mid-run).
#
# Usage: scripts/soak.sh     (builds `worldloom` with cargo unless WORLDLOOM_BIN names a binary)
# Bounds: SOAK_SECONDS (default 600) stops either part early, with what was measured; every server is killed on
# exit. Prints the figures and exits non-zero when a check fails. Needs curl and python3 (standard library).
set -euo pipefail
cd "$(dirname "$0")/.."

kills="${SOAK_KILLS:-10}"
clients="${SOAK_CLIENTS:-4}"
eval_rows="${SOAK_EVAL_ROWS:-20000}"
eval_kills="${SOAK_EVAL_KILLS:-5}"
budget="${SOAK_SECONDS:-600}"
deadline=$(( $(date +%s) + budget ))

if [ -n "${WORLDLOOM_BIN:-}" ]; then
  bin="$WORLDLOOM_BIN"
else
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/worldloom-target}"
  cargo build -q -p worldloom-cli
  bin="$CARGO_TARGET_DIR/debug/worldloom"
fi
[ -x "$bin" ] || { echo "soak: no worldloom binary at $bin" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/worldloom-soak.XXXXXX")"
server_pid=""
eval_pid=""
cleanup() {
  touch "$work/stop"
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  [ -n "$eval_pid" ] && kill -9 "$eval_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
sample="samples/agentworldbench/agentworldbench_sample.jsonl"
echo "soak: working in $work (kept)"

# A random delay in [lo, hi) seconds, as a decimal.
pause() { python3 -c "import random,sys; print(round(random.uniform(float(sys.argv[1]), float(sys.argv[2])), 2))" "$1" "$2"; }
left() { [ "$(date +%s)" -lt "$deadline" ]; }

# --- 1. serve-env under SIGKILL ------------------------------------------------------------------------------
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
record="$work/episodes.worldloom"

cat > "$work/client.py" <<'PY'
"""One soak client: reset a web task, step until the episode ends, again; log every acknowledged step."""
import json, os, sys, time, urllib.request, urllib.error

base, me, acks, stop = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
out = open(acks, "a", buffering=1)

def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())

n = 0
while not os.path.exists(stop):
    n += 1
    episode = f"{me}-{n}-{time.time_ns() & 0xffffffff:x}"
    try:
        post("/reset", {"domain": "web", "seed": n, "episode_id": episode})
    except (urllib.error.URLError, ConnectionError, OSError):
        time.sleep(0.05)  # the server is down or starting
        continue
    while not os.path.exists(stop):
        try:
            answer = post("/step", {"episode_id": episode, "action": {"action": "click('21')"}})
        except urllib.error.HTTPError as e:
            print(f"{episode}: {e.code} {e.read()[:200]!r}", file=sys.stderr)
            break  # refused (the session went with a killed server): not acknowledged
        except (urllib.error.URLError, ConnectionError, OSError):
            break  # killed mid-step: this step is in flight, not acknowledged
        out.write(json.dumps({"episode": episode, "turn": answer["observation"]["turn"]}) + "\n")
        if answer.get("done"):
            break
PY

cat > "$work/check_env.py" <<'PY'
"""Compare the acknowledged steps with the recording workspace."""
import collections, json, sqlite3, sys

acked = collections.defaultdict(set)
for line in open(sys.argv[1]):
    if line.strip():
        a = json.loads(line)
        acked[a["episode"]].add(a["turn"])
db = sqlite3.connect(sys.argv[2])
integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
live = "JOIN changes c ON c.id = x.change_id AND c.state = 'applied'"
episodes = dict(db.execute(f"""SELECT x.ext_id, x.id FROM trajectories x {live}
                               WHERE x.source_format = 'openenv-episode'"""))
turns = collections.Counter(dict(db.execute(f"""SELECT x.trajectory_id, count(*) FROM edges x {live}
                                                 GROUP BY x.trajectory_id""")))
forks = db.execute(f"""SELECT count(*) FROM (SELECT x.trajectory_id, x.from_node FROM edges x {live}
                        GROUP BY x.trajectory_id, x.from_node HAVING count(*) > 1)""").fetchone()[0]
tagged = {r[0] for r in db.execute(f"""SELECT x.trajectory_id FROM tags x {live}
                                        WHERE x.tag = 'live-episode' AND x.present = 1""")}
lost = duplicated = 0
for episode, seen in acked.items():
    key = episodes.get(episode)
    recorded = turns.get(key, 0) if key is not None else 0
    lost += len([t for t in seen if t > recorded])
    duplicated += max(0, recorded - max(seen) - 1)  # one step may be in flight at a kill
untagged = len([k for k in episodes.values() if k not in tagged])
steps = sum(len(s) for s in acked.values())
print(f"serve-env: {steps} acknowledged steps in {len(acked)} episodes, {len(episodes)} episodes recorded; "
      f"lost {lost}, duplicated {duplicated + forks}, untagged {untagged}, integrity {integrity}")
sys.exit(0 if (lost, duplicated + forks, untagged, integrity) == (0, 0, 0, "ok") and steps > 0 else 1)
PY

: > "$work/acks.jsonl"
for c in $(seq 1 "$clients"); do
  python3 "$work/client.py" "http://127.0.0.1:$port" "c$c" "$work/acks.c$c.jsonl" "$work/stop" \
    2> "$work/client.c$c.log" &
done
done_kills=0
while [ "$done_kills" -lt "$kills" ] && left; do
  "$bin" serve-env --tasks "$sample" --engine copy --host 127.0.0.1 --port "$port" --record "$record" \
    >> "$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    sleep 0.1
  done
  sleep "$(pause 1 3)"
  kill -9 "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  done_kills=$(( done_kills + 1 ))
done
touch "$work/stop"
wait 2>/dev/null || true
cat "$work"/acks.c*.jsonl > "$work/acks.jsonl"
echo "serve-env: $done_kills kill -9 under $clients clients"
env_ok=0
python3 "$work/check_env.py" "$work/acks.jsonl" "$record" || env_ok=1

# --- 2. eval resume under SIGKILL ----------------------------------------------------------------------------
python3 - "$sample" "$eval_rows" "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n, out = int(sys.argv[2]), open(sys.argv[3], "w")
for i in range(n):
    row = dict(rows[i % len(rows)])
    row["id"] = 900_000_000_000 + (i // len(rows)) * 1000 + int(row["id"]) % 1000
    out.write(json.dumps(row) + "\n")
PY
out="$work/predictions.jsonl"
done_eval_kills=0
while [ "$done_eval_kills" -lt "$eval_kills" ] && left; do
  "$bin" eval --data "$work/rows.jsonl" --engine copy --concurrency 4 -o "$out" >> "$work/eval.log" 2>&1 &
  eval_pid=$!
  sleep "$(pause 0.3 1.2)"
  kill -9 "$eval_pid" 2>/dev/null || true
  wait "$eval_pid" 2>/dev/null || true
  eval_pid=""
  done_eval_kills=$(( done_eval_kills + 1 ))
  echo "eval resume: kill $done_eval_kills with $(wc -l < "$out" 2>/dev/null || echo 0) of $eval_rows lines written"
done
eval_ok=0
if left; then
  timeout "$(( deadline - $(date +%s) + 1 ))" \
    "$bin" eval --data "$work/rows.jsonl" --engine copy --concurrency 4 -o "$out" >> "$work/eval.log" 2>&1 \
    || eval_ok=1
fi
python3 - "$work/rows.jsonl" "$out" "$done_eval_kills" <<'PY' || eval_ok=1
import collections, json, sys
want = sum(1 for l in open(sys.argv[1]) if l.strip())
keys = collections.Counter()
torn = 0
for line in open(sys.argv[2]):
    try:
        keys[json.loads(line)["wl_key"]] += 1
    except (ValueError, KeyError):
        torn += 1
twice = sum(1 for k, n in keys.items() if n > 1)
print(f"eval resume: {sys.argv[3]} kill -9 on a {want}-row run; {len(keys)} rows written, "
      f"{twice} written twice, {want - len(keys)} missing, {torn} torn lines")
sys.exit(0 if (len(keys), twice, torn) == (want, 0, 0) else 1)
PY

if [ "$env_ok" -ne 0 ] || [ "$eval_ok" -ne 0 ]; then
  echo "soak: FAILED (logs in $work)" >&2
  exit 1
fi
echo "soak: passed"
