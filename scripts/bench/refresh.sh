#!/usr/bin/env bash
# A refresh of a large OpenAPI source with a few changed operations (issue 28's figure): a
# release gateway with an empty catalog, an OpenAPI document of N operations (default 10,000,
# each with a query parameter and a JSON body) served by a local python3 http.server, the source
# created (everything imported and approved), then the document changed in P% of its
# operations (default 1%: their descriptions) and the source refreshed, timed by curl from
# request to answer (fetch, parse, import, hash every definition, find, diff, commit).
# Prints per binary: the creation's time, the unchanged refresh's time, the changed refresh's
# time and summary (pending revisions, or updated under pinning warn), the gateway's RSS after
# creation and after the changed refresh, its peak RSS (VmHWM), and its RSS 15 s later, once
# the import's blocking-pool thread has idled out and its heap is returned.
#
#   scripts/bench/refresh.sh [N] [PERCENT] [PINNING] [binary…]
#
# PINNING is the source's `pinning` (default `hold`); a binary older than pinning ignores it
# only if it accepts the key (pass `none` to leave the key out). Several binaries are compared
# in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

N=${1:-10000}
PERCENT=${2:-1}
PINNING=${3:-hold}
shift $(( $# < 3 ? $# : 3 ))
if [ $# = 0 ]; then
  build_gateway
  set -- "$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/toolgate"
fi
WORK=$(mktemp -d)
PID=""
HTTP_PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

# document.py N CHANGED: an OpenAPI 3.0 document of N operations; the first CHANGED of them
# have another description.
cat > "$WORK/document.py" <<'PY'
import json, sys
n, changed = int(sys.argv[1]), int(sys.argv[2])
paths = {}
for i in range(n):
    note = " (revised)" if i < changed else ""
    paths[f"/items{i}/{{id}}"] = {"post": {
        "operationId": f"updateItem{i}",
        "summary": f"Update item {i}",
        "description": f"Updates item {i} of the inventory with the fields given{note}.",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}],
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}},
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}}}}}
doc = {"openapi": "3.0.3", "info": {"title": "Inventory", "version": "1"},
       "servers": [{"url": "https://inventory.example/api"}], "paths": paths,
       "components": {"schemas": {"Item": {"type": "object", "required": ["name"], "properties": {
           "name": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}}
json.dump(doc, sys.stdout)
PY
CHANGED=$(( N * PERCENT / 100 ))
mkdir -p "$WORK/www"
python3 "$WORK/document.py" "$N" 0 > "$WORK/www/original.json"
python3 "$WORK/document.py" "$N" "$CHANGED" > "$WORK/www/changed.json"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$WORK/www" "$PORT" > /dev/null 2>&1 &
HTTP_PID=$!
URL="http://127.0.0.1:$PORT/doc.json"
cp "$WORK/www/original.json" "$WORK/www/doc.json"
for _ in $(seq 100); do curl -sf -o /dev/null "$URL" && break; sleep 0.05; done

export TOOLGATE_JWT_SECRET=refresh-benchmark-secret-of-32-bytes
export TOOLGATE_LOG_LEVEL=warn
kib() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$PID/status"; }
CONFIG="{\"url\": \"$URL\"}"
[ "$PINNING" != none ] && CONFIG="{\"url\": \"$URL\", \"pinning\": \"$PINNING\"}"
echo "document: $N operations ($(stat -c %s "$WORK/www/original.json") bytes), $CHANGED changed, pinning $PINNING"
for BIN in "$@"; do
  rm -rf "$WORK/data"
  echo '{}' > "$WORK/catalog.json"
  cp "$WORK/www/original.json" "$WORK/www/doc.json"
  start_gateway "$BIN" "$WORK" 30
  ADMIN=$("$BIN" token --sub bench-admin --role admin --ttl-secs 3600)
  post() { curl -s -o "$WORK/answer" -w '%{http_code} %{time_total}' -X POST \
    -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' "$@"; }
  CREATE=$(post -d "{\"id\": \"inv\", \"name\": \"inv\", \"type\": \"openapi\", \"config\": $CONFIG}" "$BASE/admin/sources")
  RSS_CREATED=$(kib VmRSS)
  SAME=$(post "$BASE/admin/sources/inv/refresh")
  cp "$WORK/www/changed.json" "$WORK/www/doc.json"
  CHANGE=$(post "$BASE/admin/sources/inv/refresh")
  SUMMARY=$(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
print(" ".join(f"{k}={a.get(k)}" for k in ("imported", "updated", "pending", "unchanged")))' "$WORK/answer")
  echo "$BIN"
  echo "  create (import $N): $CREATE s; RSS after $((RSS_CREATED / 1024)) MiB"
  echo "  refresh, unchanged: $SAME s"
  echo "  refresh, $CHANGED changed: $CHANGE s ($SUMMARY); RSS after $(( $(kib VmRSS) / 1024 )) MiB, peak $(( $(kib VmHWM) / 1024 )) MiB"
  # The import's memory belongs to a blocking-pool thread, reclaimed once it idles out (10 s).
  sleep 15
  echo "  RSS 15 s later (settled): $(( $(kib VmRSS) / 1024 )) MiB"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
