#!/usr/bin/env bash
# MCP tools/list against the REST listing, on the benches' large catalog (examples/catalog_json.rs:
# 10,000 tools over 50 sources, 1,000 groups, 1,000 policies) with the benches' reference agent
# (matching about 20 policies), all with the same token, in one run, in alternating rounds so
# that machine noise hits all three alike:
#   - GET /agents/tools                  the agent's manifest (a cache hit: its bytes)
#   - POST /mcp tools/list (2026-07-28)  the same manifest as MCP tools, stateless, one page
#   - POST /mcp tools/list (2025-11-25)  the same on a session made once before the run
# and, for the overhead of a call through the gateway, against a second toolgate process as the
# upstream (its GET /healthz, a fast answer):
#   - GET <upstream>/healthz             called directly
#   - POST /mcp tools/call               the same call as an `openapi` tool (self.healthz),
#                                        decided, checked and forwarded by the gateway
# The two calls are also made over one connection, one at a time (`_c1`): with 16 connections
# their p50 is mostly queueing behind the other 15 on a machine that the load generator, the
# gateway and the upstream share, so the added latency of the hop itself is the 1-connection
# difference.
# Prints requests/s and p50/p99 of each, and their ratios to GET /agents/tools and to the direct
# call (ratios, because absolute figures on a shared machine mean little).
#
#   scripts/bench/mcp.sh [seconds-per-round=5] [connections=16] [rounds=2]
#
# GATEWAY_BIN=<path> measures that gateway binary (an older build, say) instead of this tree's.
#
# Needs wrk (Debian package `wrk`; installed if missing) and python3. Builds the release binary
# (in CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-5}
CONNECTIONS=${2:-16}
ROUNDS=${3:-2}
THREADS=1

ensure_wrk
ulimit -n 65536 2>/dev/null || true

build_gateway
BIN=${GATEWAY_BIN:-${CARGO_TARGET_DIR:-target}/release/toolgate}
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

bench_tool catalog_json
CATALOG_JSON=$TOOL
"$CATALOG_JSON" large > "$WORK/catalog.json"
"$CATALOG_JSON" large --agent-claims 20 > "$WORK/claims.json"

export TOOLGATE_JWT_SECRET=mcp-benchmark-secret-of-32-bytes!!
export TOOLGATE_LOG_LEVEL=warn

# The upstream: another gateway, whose /healthz answers without a token.
mkdir -p "$WORK/upstream"
echo '{}' > "$WORK/upstream/catalog.json"
start_gateway "$BIN" "$WORK/upstream" 30
UPSTREAM=$BASE
UPSTREAM_PID=$PID
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; kill "$UPSTREAM_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
# The benchmark's catalog: the large one plus an openapi source on the upstream and its one
# tool, granted to every caller with a subject.
python3 - "$WORK/catalog.json" "$UPSTREAM" <<'PY'
import json, sys
path, upstream = sys.argv[1], sys.argv[2]
catalog = json.load(open(path))
catalog["sources"].append({"id": "self", "name": "upstream", "type": "openapi", "config": {"spec": {
    "openapi": "3.1.0", "info": {"title": "upstream", "version": "1"},
    "servers": [{"url": upstream}],
    "paths": {"/healthz": {"get": {"operationId": "healthz",
                                   "responses": {"200": {"description": "alive"}}}}}}}})
catalog["tools"].append({"source_id": "self", "operation_id": "healthz", "name": "healthz",
                         "method": "GET", "path": "/healthz"})
catalog["groups"].append({"id": "g-self", "name": "self", "explicit_tool_ids": ["self:healthz"]})
catalog["policies"].append({"id": "p-self", "name": "self", "allowed_group_ids": ["g-self"],
                            "claim_matchers": [{"json_path": "sub", "operator": "exists"}]})
json.dump(catalog, open(path, "w"))
PY
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_BURST=1000000000
# One subject sends thousands of requests per second here: the limiters stay on (their lookup is
# part of what is measured) with budgets this load never spends.
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
# The whole manifest in one page, as GET /agents/tools gives it.
export TOOLGATE_MCP_PAGE_SIZE=100000
start_gateway "$BIN" "$WORK" 120

# The reference agent's claims, with a fresh validity window (its own iat/nbf/exp are fixed).
CLAIMS=$(python3 -c 'import json, sys
claims = json.load(open(sys.argv[1]))
for key in ("exp", "iat", "nbf"):
    claims.pop(key, None)
print(json.dumps(claims))' "$WORK/claims.json")
TOKEN=$("$BIN" token --claims "$CLAIMS" --ttl-secs 3600)
AUTH="Authorization: Bearer $TOKEN"

curl -sf -H "$AUTH" "$BASE/agents/tools" > "$WORK/manifest.json"
SESSION=$(curl -sf -D - -o /dev/null -X POST -H "$AUTH" -H 'content-type: application/json' \
  --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
  "$BASE/mcp" | awk 'tolower($1)=="mcp-session-id:" {print $2}' | tr -d '\r')
[ -n "$SESSION" ] || { echo "no MCP session" >&2; exit 1; }
python3 - "$WORK" "$SESSION" <<'PY'
import json, sys
work, session = sys.argv[1], sys.argv[2]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
stateless = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
session_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "self.healthz", "arguments": {}, "_meta": meta}}
for name, body, headers in (
    ("stateless", stateless, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}),
    ("session", session_body, {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}),
    ("call", call, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                    "Mcp-Name": "self.healthz"}),
):
    json.dump(body, open(f"{work}/{name}.json", "w"))
    with open(f"{work}/{name}.lua", "w") as lua:
        lua.write('wrk.method = "POST"\n')
        lua.write('wrk.headers["Content-Type"] = "application/json"\n')
        lua.write('wrk.headers["Accept"] = "application/json, text/event-stream"\n')
        for key, value in headers.items():
            lua.write(f'wrk.headers["{key}"] = "{value}"\n')
        lua.write(f'wrk.body = {json.dumps(json.dumps(body))}\n')
PY
# What each answers, checked once: the same tools in the same order.
curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' \
  -H 'Mcp-Method: tools/list' --data-binary @"$WORK/stateless.json" "$BASE/mcp" > "$WORK/mcp.json"
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
rest = [entry["tool_id"] for entry in json.load(open(f"{work}/manifest.json"))["data"]]
result = json.load(open(f"{work}/mcp.json"))["result"]
listed = [tool["_meta"]["toolgate/tool_id"] for tool in result["tools"]]
assert listed == rest, "the MCP list is not the manifest"
assert "nextCursor" not in result, "more than one page"
PY
CALLED=$(curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' \
  -H 'Mcp-Method: tools/call' -H 'Mcp-Name: self.healthz' --data-binary @"$WORK/call.json" "$BASE/mcp")
echo "$CALLED" | grep -q '"isError":false' || { echo "the call failed: $CALLED" >&2; exit 1; }
TOOLS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$WORK/manifest.json")
REST_BYTES=$(wc -c < "$WORK/manifest.json")
MCP_BYTES=$(wc -c < "$WORK/mcp.json")

run() { # $1 = label, $2 = URL, $3 = wrk script or empty, $4 = connections (default CONNECTIONS)
  local args=(-t"$THREADS" -c"${4:-$CONNECTIONS}" -d"${SECONDS_PER_ROUND}s" --latency -H "$AUTH")
  [ -n "$3" ] && args+=(-s "$3")
  wrk "${args[@]}" "$2" > "$WORK/$1.txt"
  wrk_row "$1" "$WORK/$1.txt"
}

echo "large catalog: manifest of $TOOLS tools, $REST_BYTES bytes (REST), $MCP_BYTES bytes (MCP);"
echo "$CONNECTIONS connections, $THREADS wrk thread, ${SECONDS_PER_ROUND}s rounds, $ROUNDS rounds"
for route in "agents_tools $BASE/agents/tools" "stateless $BASE/mcp $WORK/stateless.lua" \
             "session $BASE/mcp $WORK/session.lua" "direct $UPSTREAM/healthz" \
             "call $BASE/mcp $WORK/call.lua"; do
  read -r _ url script <<< "$route"
  args=(-t"$THREADS" -c"$CONNECTIONS" -d2s -H "$AUTH")
  [ -n "${script:-}" ] && args+=(-s "$script")
  wrk "${args[@]}" "$url" > /dev/null   # warm-up
done
RESULTS=()
for round in $(seq "$ROUNDS"); do
  RESULTS+=("$(run "agents_tools_$round" "$BASE/agents/tools" "")")
  RESULTS+=("$(run "mcp_2026_$round" "$BASE/mcp" "$WORK/stateless.lua")")
  RESULTS+=("$(run "mcp_session_$round" "$BASE/mcp" "$WORK/session.lua")")
  RESULTS+=("$(run "direct_call_$round" "$UPSTREAM/healthz" "")")
  RESULTS+=("$(run "mcp_call_$round" "$BASE/mcp" "$WORK/call.lua")")
  RESULTS+=("$(run "direct_c1_$round" "$UPSTREAM/healthz" "" 1)")
  RESULTS+=("$(run "call_c1_$round" "$BASE/mcp" "$WORK/call.lua" 1)")
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
python3 - "$WORK/results.txt" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
def ms(text):
    for unit, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
print(f"{'route':<20}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
for name, rps, p50, p99 in rows:
    print(f"{name:<20}{float(rps):>12.0f}{ms(p50):>10.3f}{ms(p99):>10.3f}")
def of(prefix):
    picked = [r for r in rows if r[0].rsplit("_", 1)[0] == prefix]
    return sum(float(r[1]) for r in picked) / len(picked), max(ms(r[3]) for r in picked)
listing, listing_p99 = of("agents_tools")
for prefix, label in (("mcp_2026", "tools/list, 2026-07-28"), ("mcp_session", "tools/list, session")):
    rps, p99 = of(prefix)
    print(f"{label} ÷ GET /agents/tools: req/s {rps / listing:.2f}, p99 {p99 / listing_p99:.2f}")
def p50(prefix):
    picked = [r for r in rows if r[0].rsplit("_", 1)[0] == prefix]
    return sorted(ms(r[2]) for r in picked)[len(picked) // 2]
direct, direct_p99 = of("direct_call")
call, call_p99 = of("mcp_call")
print(f"tools/call ÷ direct call: req/s {call / direct:.2f}, p99 {call_p99 / direct_p99:.2f}; "
      f"added p50 {p50('mcp_call') - p50('direct_call'):.3f} ms")
print(f"tools/call over one connection: added p50 {p50('call_c1') - p50('direct_c1'):.3f} ms "
      f"({p50('call_c1'):.3f} vs {p50('direct_c1'):.3f} ms direct)")
PY
