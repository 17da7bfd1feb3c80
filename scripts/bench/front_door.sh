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

front_door_setup "$WORK" "$AFTER"

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
