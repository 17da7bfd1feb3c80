#!/usr/bin/env bash
# The admin console on the benches' large catalog (examples/catalog_json.rs: 10,000 tools,
# 1,000 groups, 1,000 policies): server time of its pages and their weight, and the time from
# Apply to the agent's SSE event, all in one run against the release build.
#   - Tools page (first page, and a search), a tool's page, View as for the benches' reference
#     agent (about 20 policies) and for the large agent (about 600): time to the last byte over
#     loopback (curl, one at a time, median of N), and bytes (page + its CSS and script);
#   - Apply → event: an agent holds GET /agents/tools/stream open; the console disables one of its
#     tools (the POST of Apply) and the time until the agent's `tools_changed` arrives is measured.
#
#   scripts/bench/console.sh [requests-per-page=20] [binary]
#
# Needs python3 and curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

N=${1:-20}
shift $(( $# < 1 ? $# : 1 ))
build_gateway
bench_tool catalog_json
TARGET=${CARGO_TARGET_DIR:-target}
bench_setup "$@"
"$TOOL" large > "$WORK/catalog.json"
"$TOOL" large --agent-claims 20 > "$WORK/claims20.json"
"$TOOL" large --agent-claims 600 > "$WORK/claims600.json"
export TOOLGATE_JWT_SECRET=console-benchmark-secret-of-32-bytes!
export TOOLGATE_LOG_LEVEL=warn
start_gateway "${BINARIES[0]}" "$WORK" 120
ADMIN=$("${BINARIES[0]}" token --claims '{"sub":"bench-admin","roles":["admin"]}' --ttl-secs 3600)
AGENT=$("${BINARIES[0]}" token --claims "$(python3 -c 'import json,sys
c=json.load(open(sys.argv[1])); [c.pop(k,None) for k in ("exp","iat","nbf")]; print(json.dumps(c))' "$WORK/claims20.json")" --ttl-secs 3600)
python3 - "$BASE" "$ADMIN" "$AGENT" "$WORK" "$N" <<'PY'
import http.client, json, statistics, sys, threading, time, urllib.parse

base, admin, agent, work, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
host = urllib.parse.urlparse(base).netloc

def request(method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(host, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data

form = urllib.parse.urlencode({"token": admin})
response, _ = request("POST", "/console/sign-in", form, {
    "Content-Type": "application/x-www-form-urlencoded", "Origin": base})
cookie = response.getheader("Set-Cookie").split(";")[0]
assets = sum(len(request("GET", f"/console/assets/{name}")[1]) for name in ("console.css", "console.js"))

def timed(path):
    times, size = [], 0
    for _ in range(n):
        started = time.perf_counter()
        response, data = request("GET", path, headers={"Cookie": cookie})
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, (path, response.status, data[:300])
        size = len(data)
    return statistics.median(times), max(times), size

catalog = json.load(open(f"{work}/catalog.json"))
tool = sorted(t.get("id") or f'{t["source_id"]}:{t["operation_id"]}' for t in catalog["tools"])[0]
def claims(name):
    c = json.load(open(f"{work}/{name}"))
    for key in ("exp", "iat", "nbf"):
        c.pop(key, None)
    return urllib.parse.quote(json.dumps(c))
pages = [
    ("Tools, first page", "/console/tools"),
    ("Tools, search 'refund'", "/console/tools?q=refund"),
    ("a tool's page", "/console/tools/" + urllib.parse.quote(tool, safe="")),
    ("View as, ~20 policies", "/console/view-as?claims=" + claims("claims20.json")),
    ("View as, ~600 policies", "/console/view-as?claims=" + claims("claims600.json")),
    ("Audit", "/console/audit"),
    ("Live", "/console/live"),
]
print(f"large catalog: {len(catalog['tools'])} tools; {n} requests per page, one at a time")
print(f"{'page':28}{'p50 ms':>9}{'max ms':>9}{'HTML bytes':>12}{'+ assets':>10}")
for label, path in pages:
    p50, worst, size = timed(path)
    print(f"{label:28}{p50:>9.1f}{worst:>9.1f}{size:>12,}{size + assets:>10,}")

# Apply → the agent's event: the agent's first tool, disabled through the console.
response, data = request("GET", "/agents/tools", headers={"Authorization": "Bearer " + agent})
target = json.loads(data)["data"][0]["tool_id"]
arrived = {}
def listen():
    conn = http.client.HTTPConnection(host, timeout=60)
    conn.request("GET", "/agents/tools/stream", headers={"Authorization": "Bearer " + agent})
    stream = conn.getresponse()
    while True:
        line = stream.fp.readline()
        if not line:
            return
        if line.startswith(b"event: tools_changed"):
            arrived["at"] = time.perf_counter()
            return
listener = threading.Thread(target=listen, daemon=True)
listener.start()
time.sleep(1.0)
page = request("GET", f"/console/tools/{urllib.parse.quote(target, safe='')}/disable", headers={"Cookie": cookie})[1].decode()
csrf = page.split('name="csrf" value="')[1].split('"')[0]
revision = page.split('name="revision" value="')[1].split('"')[0]
body = urllib.parse.urlencode({"csrf": csrf, "revision": revision, "reason": "bench"})
started = time.perf_counter()
response, _ = request("POST", f"/console/tools/{urllib.parse.quote(target, safe='')}/disable", body, {
    "Cookie": cookie, "Origin": base, "Content-Type": "application/x-www-form-urlencoded"})
answered = time.perf_counter()
assert response.status == 303, response.status
listener.join(10)
print(f"Apply (disable {target}): answered in {(answered - started) * 1000:.1f} ms; "
      f"the agent's tools_changed arrived {(arrived['at'] - started) * 1000:.1f} ms after Apply was sent")
PY
