#!/usr/bin/env bash
# The hot path of two gateway binaries side by side (say, the code before and after a
# refactoring of the request path): both serve the benches' large catalog
# (examples/catalog_json.rs: 10,000 tools, 1,000 groups, 1,000 policies) to the benches'
# reference agent at once, and each round measures, in turn:
#   - GET /agents/tools                  the agent's manifest (a cache hit)
#   - POST /mcp tools/list (2026-07-28)  the same manifest as MCP tools, stateless, one page
# on the first binary, then on the second, alternating so that machine noise hits both alike.
# Prints requests/s and p50/p99 of each, and the second's req/s ÷ the first's per route.
#
#   scripts/bench/front_door.sh BEFORE_BIN AFTER_BIN [seconds-per-round=5] [connections=16] [rounds=3]
#
# Both binaries are release builds (`cargo build --release --locked`, e.g. of two worktrees).
# Needs wrk (Debian package `wrk`; installed if missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

BEFORE=${1:?the first gateway binary}
AFTER=${2:?the second gateway binary}
SECONDS_PER_ROUND=${3:-5}
CONNECTIONS=${4:-16}
ROUNDS=${5:-3}
THREADS=1

ensure_wrk
ulimit -n 65536 2>/dev/null || true
WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

bench_tool catalog_json
"$TOOL" large > "$WORK/catalog.json"
"$TOOL" large --agent-claims 20 > "$WORK/claims.json"

export TOOLGATE_JWT_SECRET=front-door-benchmark-secret-32-bytes
export TOOLGATE_LOG_LEVEL=warn
# One subject sends thousands of requests per second here: the limiters stay on (their lookup is
# part of what is measured) with budgets this load never spends.
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
# The whole manifest in one page, as GET /agents/tools gives it.
export TOOLGATE_MCP_PAGE_SIZE=100000

declare -A BASES
for side in before after; do
  mkdir -p "$WORK/$side"
  cp "$WORK/catalog.json" "$WORK/$side/catalog.json"
  bin=$BEFORE
  [ "$side" = after ] && bin=$AFTER
  start_gateway "$bin" "$WORK/$side" 120
  PIDS+=("$PID")
  BASES[$side]=$BASE
done

CLAIMS=$(python3 -c 'import json, sys
claims = json.load(open(sys.argv[1]))
for key in ("exp", "iat", "nbf"):
    claims.pop(key, None)
print(json.dumps(claims))' "$WORK/claims.json")
TOKEN=$("$AFTER" token --claims "$CLAIMS" --ttl-secs 3600)
AUTH="Authorization: Bearer $TOKEN"

python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
with open(f"{work}/list.lua", "w") as lua:
    lua.write('wrk.method = "POST"\n')
    lua.write('wrk.headers["Content-Type"] = "application/json"\n')
    lua.write('wrk.headers["Accept"] = "application/json, text/event-stream"\n')
    lua.write('wrk.headers["MCP-Protocol-Version"] = "2026-07-28"\n')
    lua.write('wrk.headers["Mcp-Method"] = "tools/list"\n')
    lua.write(f'wrk.body = {json.dumps(json.dumps(body))}\n')
PY
# Both answer the same bytes before anything is measured.
for side in before after; do
  curl -sf -H "$AUTH" "${BASES[$side]}/agents/tools" > "$WORK/$side.manifest.json"
done
cmp -s "$WORK/before.manifest.json" "$WORK/after.manifest.json" \
  || { echo "the two gateways serve different manifests" >&2; exit 1; }
TOOLS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$WORK/after.manifest.json")

echo "large catalog: a manifest of $TOOLS tools; $CONNECTIONS connections, $THREADS wrk thread,"
echo "${SECONDS_PER_ROUND}s rounds, $ROUNDS rounds; before: $BEFORE; after: $AFTER"
for side in before after; do
  BASE=${BASES[$side]}
  wrk_warm /agents/tools
  wrk_warm /mcp "$WORK/list.lua"
done
: > "$WORK/results.txt"
for round in $(seq "$ROUNDS"); do
  for side in before after; do
    BASE=${BASES[$side]}
    wrk_round "rest_${side}_$round" /agents/tools >> "$WORK/results.txt"
  done
  for side in after before; do
    BASE=${BASES[$side]}
    wrk_round "mcp_${side}_$round" /mcp "$WORK/list.lua" >> "$WORK/results.txt"
  done
done
wrk_ratios "$WORK/results.txt" rest_before="GET /agents/tools, before" \
  rest_after="GET /agents/tools, after"
wrk_ratios "$WORK/results.txt" mcp_before="MCP tools/list, before" \
  mcp_after="MCP tools/list, after" | tail -1
