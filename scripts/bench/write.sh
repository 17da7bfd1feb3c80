#!/usr/bin/env bash
# Admin write latency on a large catalog: a release gateway seeded with the generated
# 10,000-tool catalog (examples/catalog_json.rs, the benches' large catalog), then N
# single-tool writes (POST /admin/tools/{id}/disable and /enable, alternating), each timed
# by curl from request to response: the whole write path (validate, diff, compile,
# commit with fsync, audit, publish). Prints min, median and max.
#
#   scripts/bench/write.sh [writes=20] [binary=target/release/toolgate]
#
# Pass another build's binary to compare two versions in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

WRITES=${1:-20}
BIN=${2:-target/release/toolgate}
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

[ "${2:-}" ] || build_gateway
bench_tool catalog_json
CATALOG_JSON=$TOOL
"$CATALOG_JSON" large > "$WORK/catalog.json"

export TOOLGATE_JWT_SECRET=write-benchmark-secret-of-32-bytes!
export TOOLGATE_LOG_LEVEL=warn
# One admin sends every write: lift the admin-write budget far above what this sends.
export TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC=1000000
export TOOLGATE_RATE_LIMIT_ADMIN_WRITES_BURST=1000000
start_gateway "$BIN" "$WORK" 60
ADMIN=$("$BIN" token --sub bench-admin --role admin --ttl-secs 3600)
TOOL=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tools"][0]["id"])' "$WORK/catalog.json")

for i in $(seq "$WRITES"); do
  action=$([ $((i % 2)) = 0 ] && echo enable || echo disable)
  curl -sf -o /dev/null -w "%{time_total}\n" -X POST -H "Authorization: Bearer $ADMIN" \
    -H 'content-type: application/json' -d '{"reason":"write benchmark"}' \
    "$BASE/admin/tools/$TOOL/$action"
done > "$WORK/times"
python3 - "$WORK/times" <<'PY'
import statistics, sys
ms = sorted(float(line) * 1e3 for line in open(sys.argv[1]) if line.strip())
print(f"{len(ms)} writes on a 10,000-tool catalog: min {ms[0]:.1f} ms, "
      f"median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms")
PY
