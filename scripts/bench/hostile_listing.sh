#!/usr/bin/env bash
# What a hostile MCP upstream's listing costs the gateway that imports it (issue 41, items 1
# and 3), for each binary given (default: the release build), on a fresh gateway each time:
#   1. a listing of 8 pages of 15 MiB of tools (each page under the 16 MiB a response may
#      have): the answer to creating the source, and the gateway's peak resident memory
#      (VmHWM) before and after;
#   2. a tool whose description is 192 KiB of `https://ab ` (under the 256 KiB a tool may
#      have): the time to create the source, and how long an unrelated admin write (a label)
#      made at the same time waits.
#
#   scripts/bench/hostile_listing.sh [binary…]
#
# Needs python3 and curl (scripts/bench/hostile_listing.py is the upstream).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

BINARIES=("$@")
if [ ${#BINARIES[@]} -eq 0 ]; then
  build_gateway
  BINARIES=("${CARGO_TARGET_DIR:-target}/release/toolgate")
fi
WORK=$(mktemp -d)
PID=""
UPSTREAM=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$UPSTREAM" ] && kill "$UPSTREAM" 2>/dev/null; rm -rf "$WORK"' EXIT

upstream() {
  [ -n "$UPSTREAM" ] && kill "$UPSTREAM" 2>/dev/null
  python3 scripts/bench/hostile_listing.py "$@" > "$WORK/upstream" &
  UPSTREAM=$!
  for _ in $(seq 100); do grep -q listening "$WORK/upstream" 2>/dev/null && break; sleep 0.05; done
  UPSTREAM_URL=$(sed -n 's/^listening on //p' "$WORK/upstream")
}
peak() { awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/$PID/status"; }
admin() {
  curl -s -o "$WORK/answer.json" -w '%{http_code} %{time_total}' -X "$1" "$BASE$2" \
    -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' --data-binary "$3"
}

echo '{}' > "$WORK/catalog.json"
export TOOLGATE_JWT_SECRET=hostile-benchmark-secret-of-32-b!!
export TOOLGATE_LOG_LEVEL=error
for BIN in "${BINARIES[@]}"; do
  echo "$BIN"
  ADMIN=$("$BIN" token --sub bench-admin --admin --ttl-secs 3600)

  upstream 8 15 128
  rm -rf "$WORK/data"
  start_gateway "$BIN" "$WORK"
  BEFORE=$(peak)
  RESULT=$(admin POST /admin/sources "{\"id\":\"big\",\"name\":\"big\",\"type\":\"mcp\",\"config\":{\"url\":\"$UPSTREAM_URL\"}}")
  echo "  8 pages x 15 MiB: answer ${RESULT% *} in ${RESULT#* } s, peak memory $BEFORE -> $(peak): $(head -c 160 "$WORK/answer.json")"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""

  upstream --urls 192
  rm -rf "$WORK/data"
  start_gateway "$BIN" "$WORK"
  admin POST /admin/sources "{\"id\":\"links\",\"name\":\"links\",\"type\":\"mcp\",\"config\":{\"url\":\"$UPSTREAM_URL\"}}" > "$WORK/create" &
  CREATE=$!
  sleep 0.5
  LABEL=$(admin POST /admin/labels '{"id":"l","name":"unrelated"}')
  wait "$CREATE"
  CREATED=$(cat "$WORK/create")
  echo "  192 KiB of URLs: source created (${CREATED% *}) in ${CREATED#* } s; a label written meanwhile (${LABEL% *}) in ${LABEL#* } s"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
