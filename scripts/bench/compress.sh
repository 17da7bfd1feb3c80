#!/usr/bin/env bash
# A hot GET /agents/tools for a manifest of more than 10 MB (4,000 tools with large output
# schemas, as imported API descriptions have), with `Accept-Encoding: gzip`, with
# `Accept-Encoding: zstd` and with neither, in alternating rounds of one run, for each gateway
# binary given (default: this tree's release build): requests/s, p50/p99 and the bytes sent per
# response. Give an older build's binary beside the new one to compare them in the same run (a
# build without zstd answers those requests plain, as its byte count shows).
#
#   scripts/bench/compress.sh [seconds-per-round=5] [connections=4] [rounds=2] [binary…]
#
# Needs wrk (Debian package; installed if missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-5}
CONNECTIONS=${2:-4}
ROUNDS=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
ensure_wrk
build_gateway
BINARIES=("$@")
[ ${#BINARIES[@]} -eq 0 ] && BINARIES=("${CARGO_TARGET_DIR:-target}/release/toolgate")
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

python3 - "$WORK/catalog.json" <<'PY'
import json, sys
def schema(t):
    fields = {f"field_{t}_{f}": {"type": "string", "description": f"Field {f} of the record: what it holds and how it is formatted, in a sentence or two."} for f in range(24)}
    return {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": fields}}}}
tools = [{"source_id": "api", "operation_id": f"op_{t:04d}", "name": f"op_{t:04d}",
          "description": f"Operation {t}: lists records of kind {t} with paging and filters",
          "method": "GET", "path": f"/records/{t}", "tags": ["bench"],
          "input_schema": {"type": "object", "properties": {"page": {"type": "integer"}}},
          "output_schema": schema(t)} for t in range(4000)]
json.dump({"sources": [{"id": "api", "name": "api", "type": "manual"}], "tools": tools,
           "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
           "policies": [{"id": "p-all", "name": "all", "allowed_group_ids": ["g-all"],
                         "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]},
          open(sys.argv[1], "w"))
PY

export TOOLGATE_JWT_SECRET=compression-benchmark-secret-32-bytes
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_BODY_LIMIT_BYTES=67108864
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000

RESULTS=()
for b in "${!BINARIES[@]}"; do
  bin=${BINARIES[$b]}
  rm -rf "$WORK/data"
  start_gateway "$bin" "$WORK" 120
  TOKEN=$("$bin" token --sub bench --ttl-secs 7200)
  AUTH="Authorization: Bearer $TOKEN"
  PLAIN=$(curl -sf -H "$AUTH" "$BASE/agents/tools" | wc -c)
  declare -A SIZE=([plain]=$PLAIN)
  for coding in gzip zstd; do
    SIZE[$coding]=$(curl -sf -H "$AUTH" -H "Accept-Encoding: $coding" "$BASE/agents/tools" | wc -c)
  done
  echo "binary $b ($bin): manifest $PLAIN bytes, gzip ${SIZE[gzip]} bytes, zstd ${SIZE[zstd]} bytes" >&2
  for round in $(seq "$ROUNDS"); do
    for variant in plain gzip zstd; do
      args=(-t1 -c"$CONNECTIONS" -d"${SECONDS_PER_ROUND}s" --latency -H "$AUTH")
      [ "$variant" != plain ] && args+=(-H "Accept-Encoding: $variant")
      wrk "${args[@]}" "$BASE/agents/tools" > "$WORK/out.txt"
      RESULTS+=("$(wrk_row "b${b}_${variant}_$round" "$WORK/out.txt") ${SIZE[$variant]}")
    done
  done
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
python3 - "$WORK/results.txt" "${BINARIES[@]}" <<'PY'
import re, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
binaries = sys.argv[2:]
def ms(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
print(f"{'binary':7} {'variant':8} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'bytes':>11}")
for b in range(len(binaries)):
    rates = {}
    for variant in ("plain", "gzip", "zstd"):
        picked = [r for r in rows if re.fullmatch(rf"b{b}_{variant}_\d+", r[0])]
        rates[variant] = statistics.mean(float(r[1]) for r in picked)
        p50 = statistics.median(ms(r[2]) for r in picked)
        p99 = max(ms(r[3]) for r in picked)
        print(f"{b:<7} {variant:8} {rates[variant]:>9.1f} {p50:>9.2f} {p99:>9.2f} {int(picked[0][4]):>11}")
    print(f"{b:<7} gzip ÷ plain req/s: {rates['gzip'] / rates['plain']:.2f}, "
          f"zstd ÷ plain: {rates['zstd'] / rates['plain']:.2f}   ({binaries[b]})")
PY
