#!/usr/bin/env bash
# SSE fan-out benchmark: one gateway, N concurrent `GET /agents/tools/stream` subscribers over
# K distinct claim sets, one admin change that alters every subscriber's manifest. Reports the
# server's RSS per idle subscriber and the latency from the admin write to each subscriber's
# `tools_changed` event (p50/p90/p99/max, and when the 1,000th subscriber had it).
#
#   scripts/bench/sse.sh [subscribers=10000] [claim-sets=100] [sse|sse-h2|mcp]
#
# GATEWAY_BIN=<path> measures that gateway binary (an older build, say) instead of this tree's.
#
# With `mcp` the subscribers are MCP sessions (2025-11-25) with their `GET /mcp` notification
# streams, and the change they wait for is `notifications/tools/list_changed`. With `sse-h2` the
# SSE subscriptions are HTTP/2 streams, 190 per connection: the way to 100,000 subscribers where
# the open-file limit is lower than that (an HTTP/1.1 subscriber holds a socket on each side).
#
# Builds release binaries (respects CARGO_TARGET_DIR); needs python3. Client and server share
# the machine, so the client's own CPU time is part of the measured latency.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SUBSCRIBERS=${1:-10000}
CLAIM_SETS=${2:-100}
MODE=${3:-sse}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
SOCKETS=$SUBSCRIBERS
[ "$MODE" = sse-h2 ] && SOCKETS=$((SUBSCRIBERS / 190 + 1))
if [ "$(ulimit -n)" -lt $((SOCKETS + 1000)) ]; then
  echo "the file-descriptor limit $(ulimit -n) is too low for $SUBSCRIBERS subscribers;" \
       "try sse-h2 (HTTP/2 streams share connections)" >&2; exit 1
fi

build_gateway
bench_tool sse_load
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${GATEWAY_BIN:-$TARGET/release/toolgate}
LOAD=$TOOL
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

# 20 tools in one group that every agent is granted: the change to one tool alters every
# subscriber's manifest; the claim sets differ by `sub` and `team`, so there are K manifests to
# compute per change.
python3 - "$WORK/catalog.json" <<'PY'
import json, sys
tools = [{"source_id": "svc", "operation_id": f"op_{t:02d}", "name": f"op_{t:02d}",
          "description": f"Operation {t}: does one useful thing for the agent",
          "method": "GET", "path": f"/things/{t}/{{id}}", "tags": ["bench"],
          "input_schema": {"type": "object", "properties": {"id": {"type": "string"}},
                           "required": ["id"]}} for t in range(20)]
json.dump({"sources": [{"id": "svc", "name": "svc-api", "type": "manual"}], "tools": tools,
           "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
           "policies": [{"id": "p-agents", "name": "agents", "claim_matchers": [
               {"json_path": "roles", "operator": "contains", "value": "agent"}],
               "allowed_group_ids": ["g-all"]}]}, open(sys.argv[1], "w"))
PY

export TOOLGATE_JWT_SECRET=sse-benchmark-secret-of-32-bytes!!
export TOOLGATE_LOG_LEVEL=warn
# One connection per subscriber, plus the admin write and the metrics reads.
export TOOLGATE_MAX_CONNECTIONS=$((SOCKETS + 1000))
# Every claim set holds SUBSCRIBERS / CLAIM_SETS streams of one subject.
export TOOLGATE_MAX_STREAMS_PER_SUBJECT=$(( (SUBSCRIBERS + CLAIM_SETS - 1) / CLAIM_SETS ))
# Every subject opens all its streams at once: let the stream-open rate limit allow that burst.
export TOOLGATE_RATE_LIMIT_STREAMS_BURST=$TOOLGATE_MAX_STREAMS_PER_SUBJECT
# The same for MCP sessions (and their streams).
export TOOLGATE_MCP_SESSIONS_PER_SUBJECT=$TOOLGATE_MAX_STREAMS_PER_SUBJECT
start_gateway "$BIN" "$WORK"

"$LOAD" "$BASE" "$TOOLGATE_JWT_SECRET" "$PID" "$SUBSCRIBERS" "$CLAIM_SETS" "svc:op_00" "$MODE"
