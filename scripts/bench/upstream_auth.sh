#!/usr/bin/env bash
# The cost of calling on the caller's behalf: `tools/call` of the same upstream operation (a
# second toolgate process's GET /healthz) through two `openapi` sources, in one run, in
# alternating rounds so that machine noise hits both alike:
#   - static     the source's configured Authorization header (config.auth static)
#   - exchanged  a token exchanged for the caller's (config.auth token_exchange, RFC 8693) at a
#                token endpoint this script starts (Python, checks the client and grant, counts
#                the tokens it issues), used from the gateway's cache after the first call
# Over one connection (the added latency of the hop itself) and over 16. Prints req/s and
# p50/p99 of each, the ratios exchanged ÷ static, and how many exchanges the whole run made.
#
#   scripts/bench/upstream_auth.sh [seconds-per-round=5] [rounds=2]
#
# Needs wrk (Debian package `wrk`; installed if missing) and python3. Builds the release binary
# (in CARGO_TARGET_DIR when set).
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

export TOOLGATE_JWT_SECRET=upstream-auth-benchmark-secret-32b!
export TOOLGATE_LOG_LEVEL=warn

# The token endpoint: client credentials checked, token-exchange grants only, one token per
# subject token, counted.
cat > "$WORK/token_endpoint.py" <<'PY'
import base64, json, sys, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
issued = 0
class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = json.dumps({"issued": issued}).encode()
        self.send_response(200); self.send_header("content-length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        global issued
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
        basic = base64.b64decode(self.headers.get("authorization", "Basic ")[6:]).decode()
        ok = (basic == "bench:bench-secret"
              and form.get("grant_type") == ["urn:ietf:params:oauth:grant-type:token-exchange"]
              and form.get("subject_token"))
        if ok:
            issued += 1
            body = {"access_token": f"exchanged-{issued}", "token_type": "Bearer",
                    "expires_in": 3600}
        else:
            body = {"error": "invalid_grant"}
        data = json.dumps(body).encode()
        self.send_response(200 if ok else 400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers(); self.wfile.write(data)
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$WORK/token_endpoint.py" > "$WORK/endpoint.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/endpoint.port" ] && break; sleep 0.05; done
ENDPOINT="http://127.0.0.1:$(cat "$WORK/endpoint.port")"

# The upstream: another gateway, whose /healthz answers without a token.
mkdir -p "$WORK/upstream"
echo '{}' > "$WORK/upstream/catalog.json"
start_gateway "$BIN" "$WORK/upstream" 30
UPSTREAM=$BASE
PIDS+=("$PID")
PID=""

python3 - "$WORK/catalog.json" "$UPSTREAM" "$ENDPOINT" <<'PY'
import json, sys
path, upstream, endpoint = sys.argv[1:]
spec = {"openapi": "3.1.0", "info": {"title": "upstream", "version": "1"},
        "servers": [{"url": upstream}],
        "paths": {"/healthz": {"get": {"operationId": "healthz",
                                       "responses": {"200": {"description": "alive"}}}}}}
auth = {"type": "token_exchange", "token_endpoint": endpoint + "/token",
        "client_id": "bench", "client_secret": "bench-secret"}
catalog = {"sources": [
               {"id": "static", "name": "static", "type": "openapi",
                "config": {"spec": spec, "headers": {"Authorization": "Bearer static-token"}}},
               {"id": "exchanged", "name": "exchanged", "type": "openapi",
                "config": {"spec": spec, "auth": auth}}],
           "tools": [{"source_id": s, "operation_id": "healthz", "name": "healthz",
                      "method": "GET", "path": "/healthz"} for s in ("static", "exchanged")],
           "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
           "policies": [{"id": "p-all", "name": "all", "allowed_group_ids": ["g-all"],
                         "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]}
json.dump(catalog, open(path, "w"))
PY
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_BURST=1000000000
start_gateway "$BIN" "$WORK" 30

TOKEN=$("$BIN" token --sub bench-agent --ttl-secs 3600)
AUTH="Authorization: Bearer $TOKEN"
for source in static exchanged; do
  python3 - "$WORK/$source.lua" "$source" <<'PY'
import json, sys
path, source = sys.argv[1:]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": f"{source}.healthz", "arguments": {}, "_meta": meta}}
json.dump(body, open(path.replace(".lua", ".json"), "w"))
with open(path, "w") as lua:
    lua.write('wrk.method = "POST"\n')
    lua.write('wrk.headers["Content-Type"] = "application/json"\n')
    lua.write('wrk.headers["Accept"] = "application/json, text/event-stream"\n')
    lua.write('wrk.headers["MCP-Protocol-Version"] = "2026-07-28"\n')
    lua.write('wrk.headers["Mcp-Method"] = "tools/call"\n')
    lua.write(f'wrk.headers["Mcp-Name"] = "{source}.healthz"\n')
    lua.write(f'wrk.body = {json.dumps(json.dumps(body))}\n')
PY
  CALLED=$(curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $source.healthz" \
    --data-binary @"$WORK/$source.json" "$BASE/mcp")
  echo "$CALLED" | grep -q '"isError":false' || { echo "the $source call failed: $CALLED" >&2; exit 1; }
done

run() { # $1 = label, $2 = source, $3 = connections
  wrk -t1 -c"$3" -d"${SECONDS_PER_ROUND}s" --latency -H "$AUTH" -s "$WORK/$2.lua" "$BASE/mcp" > "$WORK/$1.txt"
  wrk_row "$1" "$WORK/$1.txt"
}
for source in static exchanged; do
  wrk -t1 -c16 -d2s -H "$AUTH" -s "$WORK/$source.lua" "$BASE/mcp" > /dev/null   # warm-up
done
RESULTS=()
for round in $(seq "$ROUNDS"); do
  for connections in 1 16; do
    RESULTS+=("$(run "static_c${connections}_$round" static "$connections")")
    RESULTS+=("$(run "exchanged_c${connections}_$round" exchanged "$connections")")
  done
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
EXCHANGES=$(curl -sf "$ENDPOINT/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["issued"])')
python3 - "$WORK/results.txt" "$EXCHANGES" <<'PY'
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
    rps = sum(float(r[1]) for r in picked) / len(picked)
    p50 = sorted(ms(r[2]) for r in picked)[len(picked) // 2]
    return rps, p50
for connections in (1, 16):
    s_rps, s_p50 = of(f"static_c{connections}")
    e_rps, e_p50 = of(f"exchanged_c{connections}")
    print(f"{connections} connection(s): exchanged ÷ static: req/s {e_rps / s_rps:.3f}, "
          f"p50 {e_p50 / s_p50:.3f} (added p50 {e_p50 - s_p50:+.3f} ms)")
print(f"token exchanges for the whole run (one caller): {sys.argv[2]}")
PY
