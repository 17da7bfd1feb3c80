#!/usr/bin/env bash
# Load benchmark of the hot path: GET /agents/tools (token → claims → fingerprint → cached
# bytes) against GET /bench/precomputed (the same bytes and headers, no token, no lookup), in
# the same run, alternating A/B/A/B so that machine noise hits both. Reports requests/s, the
# throughput ratio, latency percentiles and the server's RSS idle and under load.
#
#   scripts/bench/load.sh [seconds-per-round] [connections]
#   WITH_REDIS=1 scripts/bench/load.sh …   # also: Redis up vs killed, same run
#   GATEWAY_BIN=<path> scripts/bench/load.sh …  # another build (with bench-routes), e.g. an older one
#
# With WITH_REDIS=1 the gateway runs with TOOLGATE_REDIS_URL (a redis-server on a free port)
# and each round adds GET /agents/tools with that Redis killed (started again after), to show
# what an outage costs agents: the ratio of the two is printed.
#
# Needs wrk (Debian package `wrk`; installed if missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-10}
CONNECTIONS=${2:-64}
THREADS=2

ensure_wrk
ulimit -n 65536 2>/dev/null || true

# GATEWAY_BIN=<path>: another build (with the bench-routes feature) instead of this tree's.
if [ -z "${GATEWAY_BIN:-}" ]; then
  cargo build --release --locked --features bench-routes --quiet
fi
BIN=${GATEWAY_BIN:-target/release/toolgate}
WORK=$(mktemp -d)
REDIS_PID=""
trap 'kill "$PID" $REDIS_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_redis() {
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no > /dev/null &
  REDIS_PID=$!
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping > /dev/null 2>&1 && return; sleep 0.05; done
  echo "redis-server did not start" >&2; exit 1
}
stop_redis() { kill -9 "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""; }
if [ "${WITH_REDIS:-0}" = 1 ]; then
  REDIS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start_redis
  export TOOLGATE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
fi

# 200 tools over 4 sources; the agent's policy grants one source: a 50-tool manifest.
python3 - "$WORK/catalog.json" <<'PY'
import json, sys
sources = [{"id": f"svc{s}", "name": f"svc-{s}-api", "type": "manual"} for s in range(4)]
tools = []
for s in range(4):
    for t in range(50):
        tools.append({
            "source_id": f"svc{s}", "operation_id": f"op_{t:02d}", "name": f"op_{t:02d}",
            "description": f"Operation {t} of service {s}: does one useful thing for the agent",
            "method": ["GET", "POST", "PUT", "DELETE"][t % 4], "path": f"/things/{t}/{{id}}",
            "tags": ["bench", "read-only" if t % 4 == 0 else "write"],
            "input_schema": {"type": "object", "properties": {
                "id": {"type": "string", "description": "The thing's id"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                "required": ["id"]}})
groups = [{"id": "g-svc0", "name": "svc0", "selectors": [{"source_pattern": "svc-0-*"}]}]
policies = [{"id": "p-agents", "name": "agents", "claim_matchers": [
    {"json_path": "roles", "operator": "contains", "value": "agent"}], "allowed_group_ids": ["g-svc0"]}]
json.dump({"sources": sources, "tools": tools, "groups": groups, "policies": policies}, open(sys.argv[1], "w"))
PY

export TOOLGATE_JWT_SECRET=load-benchmark-secret-of-32-bytes!!
export TOOLGATE_LOG_LEVEL=warn
# One subject sends tens of thousands of reads per second here, far past the default agent-read
# limit (100/s). The limiter stays on, so that its lookup is part of what is measured, with a
# budget this load never spends.
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
start_gateway "$BIN" "$WORK"
TOKEN=$("$BIN" token --sub bench-agent --role agent --ttl-secs 3600)
AUTH="Authorization: Bearer $TOKEN"

curl -sf -X POST -H "$AUTH" "$BASE/bench/precomputed" > /dev/null
TOOLS=$(curl -sf -H "$AUTH" "$BASE/agents/tools" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
BYTES=$(curl -sf -H "$AUTH" "$BASE/agents/tools" | wc -c)
cmp <(curl -sf -H "$AUTH" "$BASE/agents/tools") <(curl -sf "$BASE/bench/precomputed") \
  || { echo "the two routes do not serve the same bytes" >&2; exit 1; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
RSS_IDLE=$(rss)

run() { # $1 = label, $2 = path, $3 = auth header or empty
  local args=(-t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_ROUND}s" --latency)
  [ -n "$3" ] && args+=(-H "$3")
  wrk "${args[@]}" "$BASE$2" > "$WORK/$1.txt"
  wrk_row "$1" "$WORK/$1.txt"
}

echo "manifest: $TOOLS tools, $BYTES bytes; $CONNECTIONS connections, $THREADS wrk threads, ${SECONDS_PER_ROUND}s rounds"
wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "$AUTH" "$BASE/agents/tools" > /dev/null   # warm-up
RESULTS=()
RSS_LOAD=0
for round in 1 2; do
  RESULTS+=("$(run "agents_tools_$round" /agents/tools "$AUTH")")
  now=$(rss); [ "$now" -gt "$RSS_LOAD" ] && RSS_LOAD=$now
  RESULTS+=("$(run "precomputed_$round" /bench/precomputed "")")
  if [ -n "$REDIS_PID" ]; then
    stop_redis
    RESULTS+=("$(run "redis_down_$round" /agents/tools "$AUTH")")
    start_redis
  fi
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
python3 - "$RSS_IDLE" "$RSS_LOAD" "$WORK/results.txt" <<'PY'
import sys
idle, load = int(sys.argv[1]), int(sys.argv[2])
rows = [line.split() for line in open(sys.argv[3]) if line.strip()]
def ms(text):
    units = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    for unit in ("us", "ms", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float(text)
print(f"{'route':<16}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
for name, rps, p50, p99 in rows:
    print(f"{name:<16}{float(rps):>12.0f}{ms(p50):>10.3f}{ms(p99):>10.3f}")
hot = [float(r[1]) for r in rows if r[0].startswith("agents_tools")]
base = [float(r[1]) for r in rows if r[0].startswith("precomputed")]
print(f"throughput ratio (agents/tools ÷ precomputed): {sum(hot) / sum(base):.3f}")
down = [float(r[1]) for r in rows if r[0].startswith("redis_down")]
if down:
    print(f"throughput ratio with Redis killed ÷ up (GET /agents/tools): {sum(down) / sum(hot):.3f}")
print(f"worst p99 of GET /agents/tools: {max(ms(r[3]) for r in rows if r[0].startswith('agents_tools')):.3f} ms")
print(f"server RSS: idle {idle / 1024:.1f} MiB, under load {load / 1024:.1f} MiB")
PY
