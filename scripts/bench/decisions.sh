#!/usr/bin/env bash
# Decisions against the listing, on the benches' large catalog (examples/catalog_json.rs:
# 10,000 tools over 50 sources, 1,000 groups, 1,000 policies) with the benches' reference agent
# (matching about 20 policies), all with the same token, in one run, in alternating rounds so
# that machine noise hits all three alike:
#   - GET /agents/tools             the agent's manifest (a cache hit: its bytes)
#   - POST /access/v1/evaluation    one decision: a tool the agent may call
#   - POST /access/v1/evaluations   a batch of 100 decisions for that agent (every 100th tool
#                                   of the catalog: some permitted, most not)
# Prints requests/s and p50/p99 of each, and their ratios to GET /agents/tools (ratios, because
# absolute figures on a shared machine mean little).
#
#   scripts/bench/decisions.sh [seconds-per-round=5] [connections=16] [rounds=2]
#
# Needs wrk (Debian package `wrk`; installed if missing) and python3. Builds the release binary
# (in CARGO_TARGET_DIR when set).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-5}
CONNECTIONS=${2:-16}
ROUNDS=${3:-2}
THREADS=1

ensure_wrk
ulimit -n 65536 2>/dev/null || true

build_gateway
BIN=${CARGO_TARGET_DIR:-target}/release/toolgate
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

bench_tool catalog_json
CATALOG_JSON=$TOOL
"$CATALOG_JSON" large > "$WORK/catalog.json"
"$CATALOG_JSON" large --agent-claims 20 > "$WORK/claims.json"

export TOOLGATE_JWT_SECRET=decision-benchmark-secret-of-32-b!
export TOOLGATE_LOG_LEVEL=warn
# One subject sends thousands of requests per second here: the limiters stay on (their lookup is
# part of what is measured) with budgets this load never spends.
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
export TOOLGATE_RATE_LIMIT_DECISIONS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_DECISIONS_BURST=1000000000
start_gateway "$BIN" "$WORK" 120

# The reference agent's claims, with a fresh validity window (its own iat/nbf/exp are fixed).
CLAIMS=$(python3 -c 'import json, sys
claims = json.load(open(sys.argv[1]))
for key in ("exp", "iat", "nbf"):
    claims.pop(key, None)
print(json.dumps(claims))' "$WORK/claims.json")
TOKEN=$("$BIN" token --claims "$CLAIMS" --ttl-secs 3600)
AUTH="Authorization: Bearer $TOKEN"

curl -sf -H "$AUTH" "$BASE/agents/tools" > "$WORK/manifest.json"
# The request bodies and wrk scripts; what they answer, checked once.
python3 - "$WORK" "$TOKEN" <<'PY'
import json, sys
work, token = sys.argv[1], sys.argv[2]
manifest = json.load(open(f"{work}/manifest.json"))
catalog = json.load(open(f"{work}/catalog.json"))
if not manifest["data"]:
    sys.exit("the reference agent's manifest is empty")
one = {"action": {"name": "call"},
       "resource": {"type": "tool", "id": manifest["data"][0]["tool_id"]}}
ids = sorted(tool["id"] for tool in catalog["tools"])
batch = {"action": {"name": "call"},
         "evaluations": [{"resource": {"type": "tool", "id": i}} for i in ids[::100][:100]]}
assert len(batch["evaluations"]) == 100
for name, body in (("evaluation", one), ("evaluations", batch)):
    text = json.dumps(body)
    json.dump(body, open(f"{work}/{name}.json", "w"))
    with open(f"{work}/{name}.lua", "w") as lua:
        lua.write('wrk.method = "POST"\n')
        lua.write('wrk.headers["Content-Type"] = "application/json"\n')
        lua.write(f'wrk.body = {json.dumps(text)}\n')
PY
TOOLS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$WORK/manifest.json")
BYTES=$(wc -c < "$WORK/manifest.json")
SINGLE=$(curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' \
  --data-binary @"$WORK/evaluation.json" "$BASE/access/v1/evaluation")
PERMITS=$(curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' \
  --data-binary @"$WORK/evaluations.json" "$BASE/access/v1/evaluations" \
  | python3 -c 'import json,sys; e = json.load(sys.stdin)["evaluations"]; assert len(e) == 100; print(sum(x["decision"] for x in e))')
echo "$SINGLE" | grep -q '"decision":true' || { echo "the single evaluation is not a permit: $SINGLE" >&2; exit 1; }

echo "large catalog: manifest of $TOOLS tools, $BYTES bytes; batch: 100 tools, $PERMITS permitted;"
echo "$CONNECTIONS connections, $THREADS wrk thread, ${SECONDS_PER_ROUND}s rounds, $ROUNDS rounds"
for route in "agents_tools /agents/tools" "evaluation /access/v1/evaluation $WORK/evaluation.lua" \
             "evaluations /access/v1/evaluations $WORK/evaluations.lua"; do
  read -r _ path script <<< "$route"
  wrk_warm "$path" "${script:-}"
done
RESULTS=()
for round in $(seq "$ROUNDS"); do
  RESULTS+=("$(wrk_round "agents_tools_$round" /agents/tools "")")
  RESULTS+=("$(wrk_round "evaluation_$round" /access/v1/evaluation "$WORK/evaluation.lua")")
  RESULTS+=("$(wrk_round "evaluations_100_$round" /access/v1/evaluations "$WORK/evaluations.lua")")
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
wrk_ratios "$WORK/results.txt" "agents_tools=GET /agents/tools" \
  "evaluation=single evaluation" "evaluations_100=100-tool batch"
python3 - "$WORK/results.txt" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
def mean(prefix):
    picked = [float(r[1]) for r in rows if r[0].rsplit("_", 1)[0] == prefix]
    return sum(picked) / len(picked)
batch, single = mean("evaluations_100"), mean("evaluation")
print(f"decisions/s: single {single:.0f}, in batches of 100 {batch * 100:.0f} "
      f"({batch * 100 / single:.1f}x)")
PY
