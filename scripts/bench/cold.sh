#!/usr/bin/env bash
# The first GET /agents/tools after a catalog write (a "cold" request: a new revision, so a new
# decision and a new render), against the same request again (hot), on the benches' large
# catalog (examples/catalog_json.rs: 10,000 tools, 1,000 groups, 1,000 policies) for an agent
# whose manifest holds most of it (its claims match about AGENT_POLICIES=1000 policies: ~9,500
# tools, ~3.9 MB), and the reference system's algorithm for the same request
# (scripts/bench/reference_manifest.py, no I/O, no cache), all in one run.
#
# For each gateway binary given (default: this tree's release build), one keep-alive
# connection, one request at a time:
#   - first     the first request after start (nothing served yet)
#   - cold      WRITES times: an admin write (POST /admin/tools/{id}/disable or /enable,
#               alternating, on a tool outside the agent's reach: none of its policies grants
#               it), then the agent's request
#               (the manifest is carried to the new revision: src/domain/continuity.rs)
#   - hot       the same request right after each cold one
#   - touched   WRITES times: the same writes on a tool *in* the manifest (it leaves and comes
#               back), then the agent's request: a new render of the whole manifest
# Prints the medians, cold ÷ hot, the goal (1.5 × hot + 1 ms), touched ÷ hot, and
# reference ÷ cold.
#
#   scripts/bench/cold.sh [writes=30] [binary…]
#
# Give an older build's binary beside the new one to compare them in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

WRITES=${1:-30}
shift $(( $# < 1 ? $# : 1 ))
build_gateway
bench_tool catalog_json
TARGET=${CARGO_TARGET_DIR:-target}
bench_setup "$@"

"$TOOL" large > "$WORK/catalog.json"
"$TOOL" large --agent-claims "${AGENT_POLICIES:-1000}" > "$WORK/claims.json"

export TOOLGATE_JWT_SECRET=cold-benchmark-secret-of-32-bytes!!!
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC=1000000
export TOOLGATE_RATE_LIMIT_ADMIN_WRITES_BURST=1000000

: > "$WORK/results.txt"
for bin in "${BINARIES[@]}"; do
  rm -rf "$WORK/data"
  start_gateway "$bin" "$WORK" 120
  ADMIN=$("$bin" token --sub bench-admin --role admin --ttl-secs 3600)
  AGENT=$("$bin" token --sub bench-agent --ttl-secs 3600 --claims "$(python3 -c '
import json, sys
claims = json.load(open(sys.argv[1]))
print(json.dumps({k: v for k, v in claims.items() if k not in ("exp", "iat", "nbf")}))' "$WORK/claims.json")")
  python3 - "$BASE" "$ADMIN" "$AGENT" "$WORK/catalog.json" "$WRITES" "$bin" >> "$WORK/results.txt" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
base, admin, agent, catalog, writes, binary = sys.argv[1:7]
url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port)
def get():
    started = time.perf_counter()
    conn.request("GET", "/agents/tools", headers={"Authorization": f"Bearer {agent}"})
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status == 200, (response.status, body[:300])
    return elapsed, body
first, body = get()
listed = {entry["tool_id"] for entry in json.loads(body)["data"]}
# Outside its reach: a tool none of the agent's policies grants (the admin preview lists the
# granted ones, hidden or not), so that the write cannot change the agent's manifest.
claims_of_agent = json.loads(__import__("base64").urlsafe_b64decode(agent.split(".")[1] + "=="))
conn.request("POST", "/admin/preview", body=json.dumps({"claims": claims_of_agent, "include_disabled": True}),
             headers={"Authorization": f"Bearer {admin}", "content-type": "application/json"})
response = conn.getresponse()
granted = {entry["tool_id"] for entry in json.loads(response.read())["data"]}
assert response.status == 200, response.status
outside = next(tool["id"] for tool in json.load(open(catalog))["tools"] if tool["id"] not in granted)
inside = sorted(listed)[len(listed) // 2]
def write(i, tool):
    action = "disable" if i % 2 == 0 else "enable"
    conn.request("POST", f"/admin/tools/{urllib.parse.quote(tool, safe='')}/{action}",
                 body=json.dumps({"reason": "cold benchmark"}),
                 headers={"Authorization": f"Bearer {admin}", "content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    assert response.status == 200, response.status
cold, hot, touched = [], [], []
for i in range(int(writes)):
    write(i, outside)
    cold.append(get()[0])
    hot.append(get()[0])
for i in range(int(writes) // 2 * 2):
    write(i, inside)
    elapsed, body = get()
    assert (inside in {entry["tool_id"] for entry in json.loads(body)["data"]}) == (i % 2 == 1)
    touched.append(elapsed)
print(json.dumps({"binary": binary, "tools": len(listed), "bytes": len(body), "first": first,
                  "cold": statistics.median(cold), "hot": statistics.median(hot),
                  "touched": statistics.median(touched)}))
PY
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
python3 scripts/bench/reference_manifest.py "$WORK/catalog.json" "$WORK/claims.json" 3 --numeric-ops 2>/dev/null >> "$WORK/results.txt"
python3 - "$WORK/results.txt" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
reference = dict(item.split("=") for item in lines[-1].split()[1:])
reference_ms = float(reference["median_ms"])
print(f"reference algorithm (Python, no I/O, {reference['tools']} tools): median {reference_ms:.0f} ms")
print(f"{'binary':8} {'tools':>6} {'MB':>5} {'first ms':>9} {'cold ms':>8} {'hot ms':>7} {'cold÷hot':>9} {'goal ms':>8} {'touched ms':>11} {'touched÷hot':>12} {'ref÷cold':>9}")
for b, line in enumerate(lines[:-1]):
    row = json.loads(line)
    goal = 1.5 * row["hot"] + 1
    print(f"{b:<8} {row['tools']:>6} {row['bytes'] / 1e6:>5.1f} {row['first']:>9.2f} {row['cold']:>8.2f} "
          f"{row['hot']:>7.2f} {row['cold'] / row['hot']:>9.1f} {goal:>8.2f} {row['touched']:>11.2f} "
          f"{row['touched'] / row['hot']:>12.1f} {reference_ms / row['cold']:>9.0f}   ({row['binary']})")
PY
