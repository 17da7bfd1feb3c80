#!/usr/bin/env bash
# Gateway CPU per tools/call against an MCP upstream whose answer is one server-sent event that
# never ends, written 256 bytes at a time (issue 24, item 5). The call ends when the event
# passes the call's answer limit (4 MiB): what it costs until then is the gateway's reading of
# the stream. Scanning the whole buffer for an event's end after every chunk made that
# quadratic; reading it once makes it linear.
#
# For each binary given (default: the release build), starts a fresh gateway seeded with one
# `mcp` source at a local upstream (python3, scripts/bench/hostile_mcp.py) and a policy that
# lets the agent call its tool, makes CALLS calls over /mcp (2026-07-28, stateless), and prints
# the gateway's CPU time (user + system, from /proc/PID/stat) per call and the wall time.
#
#   scripts/bench/hostile_sse.sh [calls=5] [binary…]
#
# Needs python3 and curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

CALLS=${1:-5}
shift || true
BINARIES=("$@")
if [ ${#BINARIES[@]} -eq 0 ]; then
  build_gateway
  BINARIES=("${CARGO_TARGET_DIR:-target}/release/toolgate")
fi
WORK=$(mktemp -d)
PID=""
UPSTREAM=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$UPSTREAM" ] && kill "$UPSTREAM" 2>/dev/null; rm -rf "$WORK"' EXIT

python3 scripts/bench/hostile_mcp.py > "$WORK/upstream" &
UPSTREAM=$!
for _ in $(seq 100); do grep -q listening "$WORK/upstream" 2>/dev/null && break; sleep 0.05; done
UPSTREAM_URL=$(sed -n 's/^listening on //p' "$WORK/upstream")
cat > "$WORK/catalog.json" <<EOF
{"sources": [{"id": "hostile", "name": "hostile", "type": "mcp", "config": {"url": "$UPSTREAM_URL"}}],
 "tools": [{"id": "hostile:endless", "source_id": "hostile", "operation_id": "endless",
            "name": "endless", "method": "MCP", "path": "mcp://hostile/endless"}],
 "groups": [{"id": "g", "name": "all", "selectors": [{}]}],
 "policies": [{"id": "p", "name": "agents", "allowed_group_ids": ["g"],
               "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]}
EOF

export TOOLGATE_JWT_SECRET=hostile-benchmark-secret-of-32-b!!
export TOOLGATE_LOG_LEVEL=error
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)
for BIN in "${BINARIES[@]}"; do
  rm -rf "$WORK/data"
  start_gateway "$BIN" "$WORK"
  TOKEN=$("$BIN" token --sub bench-agent --ttl-secs 3600)
  call() {
    curl -s -o "$WORK/answer.json" -X POST "$BASE/mcp" \
      -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \
      -H 'accept: application/json, text/event-stream' \
      -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: hostile.endless' \
      --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hostile.endless","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
  }
  call # the session's handshake, once
  grep -q '"isError":true' "$WORK/answer.json" || { echo "unexpected answer:" >&2; cat "$WORK/answer.json" >&2; exit 1; }
  BEFORE=$(ticks)
  STARTED=$(date +%s.%N)
  for _ in $(seq "$CALLS"); do call; done
  ENDED=$(date +%s.%N)
  AFTER=$(ticks)
  python3 -c "
import sys
calls, ticks, hz, wall = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
print(f'{sys.argv[5]}: {ticks / hz / calls:.3f} s of gateway CPU per call, {wall / calls:.3f} s wall per call ({calls} calls)')
" "$CALLS" "$((AFTER - BEFORE))" "$HZ" "$(echo "$ENDED - $STARTED" | bc)" "$BIN"
  head -c 300 "$WORK/answer.json"; echo
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
done
