#!/usr/bin/env bash
# What acting in a run costs (docs/runs.md), against the same binary without a run, in one run
# of the gateway, in alternating rounds so that machine noise hits both alike:
#   - GET /agents/tools (the benches' large catalog, the reference agent) with the agent's own
#     token and `state=undefined`, and with a run token started from it in that state (the
#     same manifest, which the run's state and pinned set narrow at every request); 16
#     connections, req/s;
#   - MCP tools/call (2026-07-28) of one upstream operation (a second toolgate process's
#     GET /healthz), with the plain token and in the run (alive, state and a budget counter
#     checked and spent, the call line and state recorded); 1 connection, p50.
# The embedded run store (no Redis): what a single gateway does. Prints req/s, p50 and p99 of
# each, then run ÷ plain for both, and the added p50 of a call in a run.
#
#   scripts/bench/runs.sh [seconds-per-round=5] [rounds=2]
#
# Needs wrk (Debian package `wrk`; installed if missing), curl and python3. Builds the release
# binary (in CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-5}
ROUNDS=${2:-2}

ensure_wrk
ulimit -n 65536 2>/dev/null || true

build_gateway
BIN=${GATEWAY_BIN:-${CARGO_TARGET_DIR:-target}/release/toolgate}
WORK=$(mktemp -d)
PID=""
PIDS=()
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

front_door_setup "$WORK" "$BIN"
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_BURST=1000000000

# The upstream: another gateway, whose /healthz answers without a token.
mkdir -p "$WORK/upstream"
echo '{}' > "$WORK/upstream/catalog.json"
start_gateway "$BIN" "$WORK/upstream" 30
UPSTREAM=$BASE
PIDS+=("$PID")
PID=""

# The large catalog, plus one callable operation granted to every subject.
python3 - "$WORK/catalog.json" "$UPSTREAM" <<'PY'
import json, sys
path, upstream = sys.argv[1:]
catalog = json.load(open(path))
spec = {"openapi": "3.1.0", "info": {"title": "upstream", "version": "1"},
        "servers": [{"url": upstream}],
        "paths": {"/healthz": {"get": {"operationId": "healthz",
                                       "responses": {"200": {"description": "alive"}}}}}}
catalog.setdefault("sources", []).append(
    {"id": "bench", "name": "bench", "type": "openapi", "config": {"spec": spec}})
catalog.setdefault("tools", []).append(
    {"source_id": "bench", "operation_id": "healthz", "name": "healthz", "method": "GET",
     "path": "/healthz"})
catalog.setdefault("groups", []).append(
    {"id": "g-bench", "name": "bench", "explicit_tool_ids": ["bench:healthz"]})
catalog.setdefault("policies", []).append(
    {"id": "p-bench", "name": "bench", "priority": 0, "allowed_group_ids": ["g-bench"],
     "claim_matchers": [{"json_path": "sub", "operator": "exists"}]})
json.dump(catalog, open(path, "w"))
PY
start_gateway "$BIN" "$WORK" 60

PLAIN="Authorization: Bearer $TOKEN"
STARTED=$(curl -sf -X POST -H "$PLAIN" -H 'content-type: application/json' \
  --data '{"budget": {"calls": 1000000000}}' "$BASE/runs")
RUN_TOKEN=$(echo "$STARTED" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
RUN="Authorization: Bearer $RUN_TOKEN"

python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bench.healthz", "arguments": {}, "_meta": meta}}
json.dump(body, open(f"{work}/call.json", "w"))
with open(f"{work}/call.lua", "w") as lua:
    lua.write('wrk.method = "POST"\n')
    lua.write('wrk.headers["Content-Type"] = "application/json"\n')
    lua.write('wrk.headers["Accept"] = "application/json, text/event-stream"\n')
    lua.write('wrk.headers["MCP-Protocol-Version"] = "2026-07-28"\n')
    lua.write('wrk.headers["Mcp-Method"] = "tools/call"\n')
    lua.write('wrk.headers["Mcp-Name"] = "bench.healthz"\n')
    lua.write(f'wrk.body = {json.dumps(json.dumps(body))}\n')
PY
for auth in "$PLAIN" "$RUN"; do
  CALLED=$(curl -sf -X POST -H "$auth" -H 'content-type: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: bench.healthz' \
    --data-binary @"$WORK/call.json" "$BASE/mcp")
  echo "$CALLED" | grep -q '"isError":false' || { echo "the call failed: $CALLED" >&2; exit 1; }
  LISTED=$(curl -sf -o /dev/null -w '%{http_code}' -H "$auth" "$BASE/agents/tools")
  [ "$LISTED" = 200 ] || { echo "GET /agents/tools answered $LISTED" >&2; exit 1; }
done
echo "$CALLED" | grep -q 'io.toolgate/run' || { echo "the run's call carries no run: $CALLED" >&2; exit 1; }

round() { # $1 = label, $2 = auth, $3 = connections, $4 = path, [$5 = script]
  AUTH=$2 CONNECTIONS=$3 THREADS=1 wrk_round "$1" "$4" "${5:-}"
}
for auth in "$PLAIN" "$RUN"; do
  AUTH=$auth CONNECTIONS=16 THREADS=1 wrk_warm /agents/tools
  AUTH=$auth CONNECTIONS=1 THREADS=1 wrk_warm /mcp "$WORK/call.lua"
done
# The plain token asks for the run's state: both are served the same manifest.
PLAIN_LIST=/agents/tools?state=undefined
[ "$(curl -sf -H "$PLAIN" "$BASE$PLAIN_LIST" | wc -c)" = "$(curl -sf -H "$RUN" "$BASE/agents/tools" | wc -c)" ] \
  || { echo "the two manifests differ" >&2; exit 1; }
RESULTS=()
for r in $(seq "$ROUNDS"); do
  # Which goes first alternates: a round after another is not favoured.
  if [ $((r % 2)) = 1 ]; then order="plain run"; else order="run plain"; fi
  for who in $order; do
    if [ "$who" = plain ]; then
      RESULTS+=("$(round "list_plain_$r" "$PLAIN" 16 "$PLAIN_LIST")")
      RESULTS+=("$(round "call_plain_$r" "$PLAIN" 1 /mcp "$WORK/call.lua")")
    else
      RESULTS+=("$(round "list_run_$r" "$RUN" 16 /agents/tools)")
      RESULTS+=("$(round "call_run_$r" "$RUN" 1 /mcp "$WORK/call.lua")")
    fi
  done
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
SPENT=$(curl -sf -H "$RUN" "$BASE/runs/$(echo "$STARTED" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')" \
  | python3 -c 'import json,sys; print(1000000000 - json.load(sys.stdin)["budget"]["calls"])')
python3 - "$WORK/results.txt" "$SPENT" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
def ms(text):
    for unit, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
print(f"{'route':<16}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
for name, rps, p50, p99 in rows:
    print(f"{name:<16}{float(rps):>12.0f}{ms(p50):>10.3f}{ms(p99):>10.3f}")
def of(prefix):
    picked = [r for r in rows if r[0].rsplit("_", 1)[0] == prefix]
    rps = sum(float(r[1]) for r in picked) / len(picked)
    p50 = sorted(ms(r[2]) for r in picked)[len(picked) // 2]
    return rps, p50
plain_rps, _ = of("list_plain")
run_rps, _ = of("list_run")
print(f"GET /agents/tools, 16 connections: run ÷ plain req/s {run_rps / plain_rps:.3f}")
_, plain_p50 = of("call_plain")
_, run_p50 = of("call_run")
print(f"tools/call, 1 connection: run ÷ plain p50 {run_p50 / plain_p50:.3f} "
      f"(added p50 {run_p50 - plain_p50:+.3f} ms)")
print(f"calls the run forwarded and counted: {sys.argv[2]}")
PY
