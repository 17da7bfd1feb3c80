#!/usr/bin/env bash
# The resident memory of an idle gateway: started on the embedded default with a catalog of
# TOOLS tools (50 per source), asked for one agent's manifest 200 times, then left alone for 2 s;
# prints VmRSS and VmHWM. For each gateway binary given (default: this tree's release build),
# one after another in the same run.
#
#   scripts/bench/idle.sh [tools=500] [binary…]
#
# Needs python3 and curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

TOOLS=${1:-500}
shift $(( $# < 1 ? $# : 1 ))
build_gateway
TARGET=${CARGO_TARGET_DIR:-target}
bench_setup "$@"

# TOOLS tools over TOOLS/50 sources; the agent's policy grants the first source.
python3 - "$WORK/catalog.json" "$TOOLS" <<'PY'
import json, sys
path, count = sys.argv[1], int(sys.argv[2])
sources = [{"id": f"svc{s}", "name": f"svc-{s}-api", "type": "manual"}
           for s in range((count + 49) // 50)]
tools = [{"source_id": f"svc{t // 50}", "operation_id": f"op_{t % 50:02d}",
          "name": f"op_{t % 50:02d}",
          "description": f"Operation {t % 50} of service {t // 50}: does one useful thing",
          "method": "GET", "path": f"/things/{t % 50}/{{id}}", "tags": ["bench"],
          "input_schema": {"type": "object", "properties": {"id": {"type": "string"}},
                           "required": ["id"]}} for t in range(count)]
groups = [{"id": "g-svc0", "name": "svc0", "selectors": [{"source_pattern": "svc-0-*"}]}]
policies = [{"id": "p-agents", "name": "agents", "claim_matchers": [
    {"json_path": "roles", "operator": "contains", "value": "agent"}],
    "allowed_group_ids": ["g-svc0"]}]
json.dump({"sources": sources, "tools": tools, "groups": groups, "policies": policies},
          open(path, "w"))
PY

export TOOLGATE_JWT_SECRET=idle-benchmark-secret-of-32-bytes!!!
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000
echo "catalog of $TOOLS tools; RSS after 200 manifest requests and 2 s idle"
for bin in "${BINARIES[@]}"; do
  rm -rf "$WORK/data"
  start_gateway "$bin" "$WORK" 30
  TOKEN=$("$bin" token --sub idle-agent --role agent --ttl-secs 600)
  for _ in $(seq 200); do curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "$BASE/agents/tools"; done
  sleep 2
  echo "$bin: $(awk '/VmRSS|VmHWM/ {printf "%s %.1f MiB  ", $1, $2 / 1024}' "/proc/$PID/status")"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
