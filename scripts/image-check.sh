#!/usr/bin/env bash
# Runs a binary built by scripts/docker-build.sh as the container image runs it: as the image's
# non-root user (uid/gid 10001) when this runs as root, listening on every interface, on an
# empty data dir owned by that user, with the demo seed; then checks /healthz, /readyz, an
# agent's manifest, and a SIGTERM that ends it with status 0 within 2 s.
#
#   scripts/image-check.sh BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "$1")
work=$(mktemp -d)
chmod 0755 "$work"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/data"
run_as=()
if [ "$(id -u)" = 0 ]; then
  chown 10001:10001 "$work/data"
  run_as=(setpriv --reuid=10001 --regid=10001 --clear-groups)
fi
export TOOLGATE_JWT_SECRET
TOOLGATE_JWT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cp config/demo-catalog.yaml "$work/seed.yaml"
chmod 0644 "$work/seed.yaml"
env -i PATH="$PATH" TOOLGATE_JWT_SECRET="$TOOLGATE_JWT_SECRET" TOOLGATE_LISTEN=0.0.0.0:0 \
  TOOLGATE_DATA_DIR="$work/data" TOOLGATE_SEED="$work/seed.yaml" \
  "${run_as[@]}" "$binary" serve > "$work/stdout" 2> "$work/stderr" &
pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
port=$(sed -n 's#.*listening on http://[^:]*:\([0-9]*\).*#\1#p' "$work/stdout")
[ -n "$port" ] || { echo "image-check: the gateway did not start:"; cat "$work/stderr"; exit 1; }
base="http://127.0.0.1:$port"
curl -sf "$base/healthz" > /dev/null
curl -sf "$base/readyz" > /dev/null
agent=$("$binary" token --sub image-check --role agent)
curl -sf -H "Authorization: Bearer $agent" "$base/agents/tools" | grep -q '"crm:get_customer"'
owner=$(stat -c %u "$work/data/toolgate.redb")
echo "image-check: served on port $port as uid $(ps -o uid= -p "$pid" | tr -d ' '), store owned by uid $owner"
start=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$took" -lt 2000 ] || { echo "image-check: SIGTERM took ${took} ms"; exit 1; }
echo "image-check: healthz, readyz, an agent's manifest, SIGTERM in ${took} ms: ok"
