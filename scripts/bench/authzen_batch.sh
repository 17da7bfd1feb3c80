#!/usr/bin/env bash
# AuthZEN batches against the listing, on the benches' large catalog (examples/catalog_json.rs:
# 10,000 tools over 50 sources, 1,000 groups, 1,000 policies) with the benches' reference agent
# (matching about 20 policies), all with the same token, in one run, in alternating rounds so
# that machine noise hits all three alike:
#   - GET /agents/tools             the agent's manifest (a cache hit: its bytes)
#   - POST /access/v1/evaluations   100 items, one subject, no context (every 100th tool)
#   - POST /access/v1/evaluations   100 items, one subject, 4 distinct contexts (no context,
#                                   state research, state execute, group "*"), 25 items each
# Prints requests/s and p50/p99 of each and their ratios to GET /agents/tools (ratios, because
# absolute figures on a shared machine mean little). Then, once, the time of one batch of
# 1,000 items, each with a context of its own (the most a batch may hold), and a batch of
# 1,001 items (refused).
#
#   scripts/bench/authzen_batch.sh [seconds-per-round=5] [connections=16] [rounds=2] [binary]
#
# Without a binary, builds the release binary (in CARGO_TARGET_DIR when set) and uses it; give
# another build's binary to measure that one. Needs wrk (Debian package `wrk`; installed if
# missing), curl and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-5}
CONNECTIONS=${2:-16}
ROUNDS=${3:-2}
BIN=${4:-}
THREADS=1

ensure_wrk
ulimit -n 65536 2>/dev/null || true

if [ -z "$BIN" ]; then
  build_gateway
  BIN=${CARGO_TARGET_DIR:-target}/release/toolgate
fi
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
# The request bodies and wrk scripts.
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
catalog = json.load(open(f"{work}/catalog.json"))
ids = sorted(tool["id"] for tool in catalog["tools"])
picked = ids[::100][:100]
assert len(picked) == 100
contexts = [{}, {"state": "research"}, {"state": "execute"}, {"group": "*"}]
same = {"action": {"name": "call"},
        "evaluations": [{"resource": {"type": "tool", "id": i}} for i in picked]}
mixed = {"action": {"name": "call"},
         "evaluations": [{"resource": {"type": "tool", "id": i}, "context": contexts[n % 4]}
                         for n, i in enumerate(picked)]}
# The worst a batch may be: 1,000 items, each with a context of its own (a group list that no
# other item names), then one item more.
def distinct(n):
    return {"action": {"name": "call"},
            "evaluations": [{"resource": {"type": "tool", "id": ids[k * 7 % len(ids)]},
                             "context": {"group": [f"grp-{k % 1000:04}", f"nope-{k}"]}}
                            for k in range(n)]}
for name, body in (("same", same), ("mixed", mixed), ("distinct_1000", distinct(1000)),
                   ("distinct_1001", distinct(1001))):
    text = json.dumps(body)
    open(f"{work}/{name}.json", "w").write(text)
    with open(f"{work}/{name}.lua", "w") as lua:
        lua.write('wrk.method = "POST"\n')
        lua.write('wrk.headers["Content-Type"] = "application/json"\n')
        lua.write(f'wrk.body = {json.dumps(text)}\n')
PY
TOOLS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$WORK/manifest.json")
BYTES=$(wc -c < "$WORK/manifest.json")
for name in same mixed; do
  curl -sf -X POST -H "$AUTH" -H 'content-type: application/json' \
    --data-binary @"$WORK/$name.json" "$BASE/access/v1/evaluations" \
    | python3 -c 'import json,sys; e = json.load(sys.stdin)["evaluations"]; assert len(e) == 100, len(e)'
done

echo "binary: $BIN"
echo "large catalog: manifest of $TOOLS tools, $BYTES bytes; batches of 100 tools;"
echo "$CONNECTIONS connections, $THREADS wrk thread, ${SECONDS_PER_ROUND}s rounds, $ROUNDS rounds"
for route in "agents_tools /agents/tools" "same /access/v1/evaluations $WORK/same.lua" \
             "mixed /access/v1/evaluations $WORK/mixed.lua"; do
  read -r _ path script <<< "$route"
  wrk_warm "$path" "${script:-}"
done
RESULTS=()
for round in $(seq "$ROUNDS"); do
  RESULTS+=("$(wrk_round "agents_tools_$round" /agents/tools "")")
  RESULTS+=("$(wrk_round "batch_same_$round" /access/v1/evaluations "$WORK/same.lua")")
  RESULTS+=("$(wrk_round "batch_4_contexts_$round" /access/v1/evaluations "$WORK/mixed.lua")")
done
printf '%s\n' "${RESULTS[@]}" > "$WORK/results.txt"
wrk_ratios "$WORK/results.txt" "agents_tools=GET /agents/tools" \
  "batch_same=100 items, 1 context" "batch_4_contexts=100 items, 4 contexts"

# One worst-case batch, timed alone (a fresh revision's caches are warm from the rounds above,
# but no item's context was asked before): the server's CPU time for it, and what 1,001 gets.
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
TICK=$(getconf CLK_TCK)
BEFORE=$(cpu)
STATUS=$(curl -s -o "$WORK/distinct.out" -w '%{http_code} %{time_total}' -X POST -H "$AUTH" \
  -H 'content-type: application/json' --data-binary @"$WORK/distinct_1000.json" \
  "$BASE/access/v1/evaluations")
AFTER=$(cpu)
echo "1,000 items, 1,000 contexts ($(wc -c < "$WORK/distinct_1000.json") bytes): HTTP ${STATUS% *}," \
  "${STATUS#* } s, server CPU $(python3 -c "print(($AFTER - $BEFORE) / $TICK)") s"
STATUS=$(curl -s -o "$WORK/over.out" -w '%{http_code}' -X POST -H "$AUTH" \
  -H 'content-type: application/json' --data-binary @"$WORK/distinct_1001.json" \
  "$BASE/access/v1/evaluations")
echo "1,001 items: HTTP $STATUS $(head -c 300 "$WORK/over.out")"
