#!/usr/bin/env bash
# Runs at scale (docs/runs.md):
#   1. memory: 100,000 live runs on one gateway on the embedded store (runs in its memory),
#      then on two gateways sharing one MongoDB (nx-27017) and one Redis (runs in Redis): the
#      resident memory the runs add to the gateway that started them, and to Redis;
#   2. a transition seen on the other instance: with those 100,000 runs live, one run moved
#      back and forth by tools/call through the first gateway while the second is polled with
#      the run token until its GET /agents/tools shows the new state's tool; the time from the
#      call's answer to the other instance's first answer with the new state, p50 and p99.
#
#   scripts/bench/runs_scale.sh [runs=100000] [transitions=300]
#
# Needs redis-server, python3, curl, and nx-27017 in .venv-mongo (made here when missing, as
# scripts/test.sh makes it). Builds the release binary (in CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

RUNS=${1:-100000}
TRANSITIONS=${2:-300}

if [ ! -x .venv-mongo/bin/nx-27017 ]; then
  python3 -m venv .venv-mongo
  .venv-mongo/bin/pip install --quiet --disable-pip-version-check \
    nx-27017==0.8.1 neosqlite==1.17.2 pymongo==4.20.0
fi
ulimit -n 65536 2>/dev/null || true
build_gateway
BIN=${GATEWAY_BIN:-${CARGO_TARGET_DIR:-target}/release/toolgate}
WORK=$(mktemp -d)
PID=""
PIDS=()
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

export TOOLGATE_JWT_SECRET=runs-scale-benchmark-secret-32-bytes
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_TOOL_CALLS_BURST=1000000000
export TOOLGATE_RUNS_MAX=$((RUNS * 2 + 10))
export TOOLGATE_PUBLIC_URL=https://gateway.example.com

# The upstream: another gateway, whose /healthz and /readyz answer without a token.
mkdir -p "$WORK/upstream"
echo '{}' > "$WORK/upstream/catalog.json"
start_gateway "$BIN" "$WORK/upstream" 30
UPSTREAM=$BASE
PIDS+=("$PID")
PID=""

# Two tools that move a run between states sa and sb.
python3 - "$WORK/catalog.json" "$UPSTREAM" <<'PY'
import json, sys
path, upstream = sys.argv[1:]
spec = {"openapi": "3.1.0", "info": {"title": "upstream", "version": "1"},
        "servers": [{"url": upstream}],
        "paths": {p: {"get": {"operationId": op, "responses": {"200": {"description": "ok"}}}}
                  for p, op in (("/healthz", "to_b"), ("/readyz", "to_a"))}}
tools = [{"source_id": "flip", "operation_id": "to_b", "name": "to_b", "method": "GET",
          "path": "/healthz", "available_in_states": ["sa"], "next_state": "sb"},
         {"source_id": "flip", "operation_id": "to_a", "name": "to_a", "method": "GET",
          "path": "/readyz", "available_in_states": ["sb"], "next_state": "sa"}]
json.dump({"sources": [{"id": "flip", "name": "flip", "type": "openapi",
                        "config": {"spec": spec}}],
           "tools": tools,
           "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
           "policies": [{"id": "p-all", "name": "all", "allowed_group_ids": ["g-all"],
                         "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]},
          open(path, "w"))
PY
TOKEN=$("$BIN" token --sub scale-agent --ttl-secs 7200)

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# Starts $2 runs at $1 with 16 threads; prints how long it took.
start_runs() {
  python3 - "$1" "$2" "$TOKEN" <<'PY'
import http.client, sys, threading, time, urllib.parse
base, count, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
url = urllib.parse.urlparse(base)
per = [count // 16 + (1 if i < count % 16 else 0) for i in range(16)]
failures = []
def work(n):
    conn = http.client.HTTPConnection(url.hostname, url.port)
    for _ in range(n):
        conn.request("POST", "/runs", body=b'{"state": "sa"}',
                     headers={"Authorization": "Bearer " + token,
                              "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        if response.status != 201:
            failures.append(response.status)
started = time.time()
threads = [threading.Thread(target=work, args=(n,)) for n in per]
for t in threads: t.start()
for t in threads: t.join()
if failures:
    sys.exit(f"{len(failures)} starts failed: {failures[:5]}")
print(f"{time.time() - started:.1f}")
PY
}

echo "== $RUNS live runs on the embedded store (one gateway)"
mkdir -p "$WORK/embedded"
cp "$WORK/catalog.json" "$WORK/embedded/catalog.json"
start_gateway "$BIN" "$WORK/embedded" 30
curl -sf -H "Authorization: Bearer $TOKEN" "$BASE/agents/tools" > /dev/null
BEFORE=$(rss_kib "$PID")
TOOK=$(start_runs "$BASE" "$RUNS")
AFTER=$(rss_kib "$PID")
echo "started in ${TOOK} s; gateway RSS ${BEFORE} KiB -> ${AFTER} KiB: +$(( (AFTER - BEFORE) / 1024 )) MiB for $RUNS runs ($(( (AFTER - BEFORE) * 1024 / RUNS )) bytes per run)"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""

echo "== $RUNS live runs on Redis, two gateways on one MongoDB"
REDIS_PORT=$(free_port)
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --protected-mode no > "$WORK/redis.log" 2>&1 &
PIDS+=($!)
MONGO_PORT=$(free_port)
mkdir -p "$WORK/mongo"
.venv-mongo/bin/nx-27017 --host 127.0.0.1 -p "$MONGO_PORT" --data-dir "$WORK/mongo" \
  --log-file "$WORK/mongo.log" --pid-file "$WORK/mongo.pid" > /dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
  redis-cli -p "$REDIS_PORT" ping > /dev/null 2>&1 && \
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $MONGO_PORT), 0.2)" 2>/dev/null && break
  sleep 0.05
done
export TOOLGATE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export TOOLGATE_MONGODB_URI="mongodb://127.0.0.1:$MONGO_PORT"
export TOOLGATE_MONGODB_DATABASE=runs_scale
for name in a b; do
  mkdir -p "$WORK/$name"
  cp "$WORK/catalog.json" "$WORK/$name/catalog.json"
  start_gateway "$BIN" "$WORK/$name" 60
  PIDS+=("$PID")
  eval "PID_${name^^}=$PID BASE_${name^^}=$BASE"
  PID=""
done
curl -sf -H "Authorization: Bearer $TOKEN" "$BASE_A/agents/tools" > /dev/null
REDIS_BEFORE=$(redis-cli -p "$REDIS_PORT" info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')
BEFORE=$(rss_kib "$PID_A")
TOOK=$(start_runs "$BASE_A" "$RUNS")
AFTER=$(rss_kib "$PID_A")
REDIS_AFTER=$(redis-cli -p "$REDIS_PORT" info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')
echo "started in ${TOOK} s; gateway RSS +$(( (AFTER - BEFORE) / 1024 )) MiB; Redis used_memory +$(( (REDIS_AFTER - REDIS_BEFORE) / 1048576 )) MiB ($(( (REDIS_AFTER - REDIS_BEFORE) / RUNS )) bytes per run)"

echo "== a transition through one instance, seen by the other ($TRANSITIONS transitions)"
python3 - "$BASE_A" "$BASE_B" "$TOKEN" "$TRANSITIONS" <<'PY'
import http.client, json, sys, time, urllib.parse
a, b, token, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def conn(base):
    url = urllib.parse.urlparse(base)
    return http.client.HTTPConnection(url.hostname, url.port)
ca, cb = conn(a), conn(b)
def ask(c, method, path, token, body=None, headers=None):
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    return r.status, r.read()
status, body = ask(ca, "POST", "/runs", token, b'{"state": "sa"}')
run = json.loads(body)["access_token"]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
def call(name):
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": name, "arguments": {}, "_meta": meta}}).encode()
    status, body = ask(ca, "POST", "/mcp", run, payload,
                       {"Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                        "Mcp-Name": name})
    assert status == 200 and b'"isError":false' in body, body
def listed():
    status, body = ask(cb, "GET", "/agents/tools", run)
    assert status == 200, body
    return [t["tool_id"] for t in json.loads(body)["data"]]
assert listed() == ["flip:to_b"], listed()
seen = []
polls = 0
state = "sa"
for i in range(count):
    name, expect = ("flip.to_b", "flip:to_a") if state == "sa" else ("flip.to_a", "flip:to_b")
    call(name)
    answered = time.perf_counter()
    while True:
        polls += 1
        if listed() == [expect]:
            break
    seen.append((time.perf_counter() - answered) * 1000)
    state = "sb" if state == "sa" else "sa"
seen.sort()
p = lambda q: seen[min(len(seen) - 1, int(q * len(seen)))]
print(f"seen on the other instance after: p50 {p(0.50):.2f} ms, p99 {p(0.99):.2f} ms, "
      f"max {seen[-1]:.2f} ms ({len(seen)} transitions, {polls / len(seen):.1f} polls each)")
PY
