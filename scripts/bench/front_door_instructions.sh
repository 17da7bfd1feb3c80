#!/usr/bin/env bash
# Instructions per request on the hot path, two gateway binaries side by side: each serves
# the benches' large catalog (examples/catalog_json.rs) to the benches' reference agent under
# valgrind's callgrind, which counts instructions rather than seconds (the same count for the
# same binary and input, however busy the machine is). Instrumentation is switched on only
# once the gateway listens and has served the route once; then one connection makes requests
# for a few seconds, and the count is divided by the requests wrk reports. Routes:
#   - GET /agents/tools                  the agent's manifest (a cache hit)
#   - POST /mcp tools/list (2026-07-28)  the same manifest as MCP tools, stateless, one page
# Prints instructions per request of each binary and route, and the second's ÷ the first's.
#
#   scripts/bench/front_door_instructions.sh BEFORE_BIN AFTER_BIN [seconds=5]
#
# Needs valgrind and wrk (Debian packages; installed if missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

BEFORE=${1:?the first gateway binary}
AFTER=${2:?the second gateway binary}
SECONDS_PER_RUN=${3:-5}

ensure_wrk
if ! command -v valgrind >/dev/null 2>&1; then
  sudo=sudo; [ "$(id -u)" = 0 ] && sudo=""
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq valgrind >/dev/null
fi
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

front_door_setup "$WORK" "$AFTER"

# count SIDE BIN ROUTE PATH [SCRIPT]: prints "SIDE ROUTE instructions-per-request requests".
count() {
  local side=$1 bin=$2 route=$3 path=$4 script=${5:-}
  local dir="$WORK/$side-$route"
  mkdir -p "$dir"
  cp "$WORK/catalog.json" "$dir/catalog.json"
  (cd "$dir" && exec valgrind --tool=callgrind --instr-atstart=no \
     --callgrind-out-file="$dir/callgrind.out.%p" \
     "$bin" serve --listen 127.0.0.1:0 --data-dir "$dir/data" --seed "$dir/catalog.json" \
     > "$dir/out" 2> "$dir/valgrind.log") &
  PID=$!
  for _ in $(seq 3000); do grep -q listening "$dir/out" 2>/dev/null && break; sleep 0.1; done
  local base
  base=$(sed -n 's/^toolgate listening on //p' "$dir/out")
  [ -n "$base" ] || { echo "$side did not start" >&2; cat "$dir/out" "$dir/valgrind.log" >&2; exit 1; }
  local args=(-t1 -c1 -H "$AUTH")
  [ -n "$script" ] && args+=(-s "$script")
  wrk "${args[@]}" -d2s "$base$path" > /dev/null   # the first answer made and cached
  callgrind_control -i on "$PID" > /dev/null
  callgrind_control -z "$PID" > /dev/null
  wrk "${args[@]}" -d"${SECONDS_PER_RUN}s" "$base$path" > "$dir/wrk.txt"
  callgrind_control -d "$PID" > /dev/null
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  grep -q "Non-2xx" "$dir/wrk.txt" && { echo "$side $route: non-2xx answers" >&2; exit 1; }
  local requests instructions
  requests=$(awk '/requests in/ {print $1}' "$dir/wrk.txt")
  instructions=$(python3 - "$dir" <<'PY'
import glob, sys
# The dump made on request (the one with the most events): its "summary:" line.
best = 0
for path in glob.glob(f"{sys.argv[1]}/callgrind.out.*"):
    for line in open(path, errors="replace"):
        if line.startswith(("summary:", "totals:")):
            best = max(best, int(line.split()[1]))
print(best)
PY
)
  echo "$side $route $((instructions / requests)) $requests"
}

{
  count before "$BEFORE" rest /agents/tools
  count after "$AFTER" rest /agents/tools
  count before "$BEFORE" mcp /mcp "$WORK/list.lua"
  count after "$AFTER" mcp /mcp "$WORK/list.lua"
} | tee "$WORK/counts.txt"
python3 - "$WORK/counts.txt" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    side, route, per_request, requests = line.split()
    rows[(side, route)] = int(per_request)
for route, label in (("rest", "GET /agents/tools"), ("mcp", "MCP tools/list")):
    before, after = rows[("before", route)], rows[("after", route)]
    print(f"{label}: {before} → {after} instructions per request, after ÷ before {after / before:.3f}")
PY
