#!/usr/bin/env bash
# Import time and memory of one OpenAPI document: a release gateway with an empty catalog,
# then POST /admin/sources with the document by `config.url` (served from a local
# python3 http.server), timed by curl from request to response (fetch, parse, import, commit).
# Prints per binary: the answer's status and time, the import summary (tools created,
# operations skipped or cut), the gateway's RSS before, its peak RSS (VmHWM), and its RSS 1 s
# and 15 s after the source is deleted again (the import's memory belongs to a blocking-pool
# thread, whose heap the allocator reclaims once the thread idles out after 10 s, or at the
# next write).
#
#   scripts/bench/import.sh DOCUMENT [binary…]
#
# Pass several builds' binaries to compare them on one document in one run; without one, the
# current tree is built and used.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

DOC=$(realpath "$1")
shift
if [ $# = 0 ]; then
  build_gateway
  set -- "$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/toolgate"
fi
WORK=$(mktemp -d)
PID=""
HTTP_PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$(dirname "$DOC")" "$PORT" > /dev/null 2>&1 &
HTTP_PID=$!
URL="http://127.0.0.1:$PORT/$(basename "$DOC")"
for _ in $(seq 100); do curl -sf -o /dev/null "$URL" && break; sleep 0.05; done

export TOOLGATE_JWT_SECRET=import-benchmark-secret-of-32-bytes
export TOOLGATE_LOG_LEVEL=warn
kib() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$PID/status"; }
echo "document: $DOC ($(stat -c %s "$DOC") bytes)"
for BIN in "$@"; do
  rm -rf "$WORK/data"
  echo '{}' > "$WORK/catalog.json"
  start_gateway "$BIN" "$WORK" 30
  ADMIN=$("$BIN" token --sub bench-admin --role admin --ttl-secs 3600)
  RSS_START=$(kib VmRSS)
  ANSWER=$(curl -s -o "$WORK/answer" -w '%{http_code} %{time_total}' -X POST \
    -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' \
    -d "{\"id\": \"doc\", \"name\": \"doc\", \"type\": \"openapi\", \"config\": {\"url\": \"$URL\"}}" \
    "$BASE/admin/sources")
  SUMMARY=$(curl -s -H "Authorization: Bearer $ADMIN" "$BASE/admin/audit" | python3 -c '
import json, sys
records = [r for r in json.load(sys.stdin)["data"] if r["action"] == "refresh"]
after = records[-1]["after"] if records else {}
print(" ".join(f"{k}={after.get(k)}" for k in ("created", "deprecated", "skipped", "cut")))')
  HWM=$(kib VmHWM)
  curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $ADMIN" "$BASE/admin/sources/doc"
  sleep 1
  RSS_END=$(kib VmRSS)
  sleep 14
  RSS_LATER=$(kib VmRSS)
  echo "$BIN: answer $ANSWER s; $SUMMARY; RSS start ${RSS_START} kB, peak ${HWM} kB, after delete ${RSS_END} kB, 15 s after ${RSS_LATER} kB"
  [ "${ANSWER%% *}" = 201 ] || head -c 600 "$WORK/answer"; echo
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
