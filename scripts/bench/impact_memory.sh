#!/usr/bin/env bash
# Peak memory of one `POST /admin/impact` over 10,000 claim sets, on the benches' large catalog
# (examples/catalog_json.rs: 10,000 tools, 1,000 groups, 1,000 policies).
#
# For each binary given (default: the release build), starts a fresh gateway (the kernel's
# high-water mark, VmHWM, cannot be reset, so one process per measurement), reads VmRSS once it
# has served a first impact preview with one claim set (so that what every run needs once —
# the lazily built parts of the snapshot, the allocator's arenas — is counted before), then
# sends one preview with CLAIM_SETS claim sets (varied identities: random roles, departments,
# tenants, depths, so that most fall into a decision of their own) and reads VmHWM. The growth,
# VmHWM after − VmRSS before, is what one run costs at its peak. Also prints the time of the
# run and the answer's size.
#
# The change previewed (CHANGE=all, the default) replaces the whole catalog with one where every
# policy that allows groups is reversed (it denies them, at +1,000 priority): every claim set
# loses every tool it had, the largest answer a catalog change can give these identities. With
# CHANGE=one, one policy (pol-0032, as benches/impact.rs picks) is reversed the same way, as one
# entity change: a change of the everyday kind.
#
#   [CHANGE=all|one] scripts/bench/impact_memory.sh [claim-sets=10000] [binary…]
#
# Needs python3 and curl. The body limit is raised (TOOLGATE_BODY_LIMIT_BYTES) so that the
# claim sets fit in one request.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

CLAIM_SETS=${1:-10000}
CHANGE=${CHANGE:-all}
shift || true
BINARIES=("$@")
if [ ${#BINARIES[@]} -eq 0 ]; then
  build_gateway
  BINARIES=("${CARGO_TARGET_DIR:-target}/release/toolgate")
fi
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

bench_tool catalog_json
CATALOG_JSON=$TOOL
"$CATALOG_JSON" large > "$WORK/catalog.json"
python3 - "$WORK" "$CLAIM_SETS" "$CHANGE" <<'PY'
import json, random, sys
work, count, change = sys.argv[1], int(sys.argv[2]), sys.argv[3]
catalog = json.load(open(f"{work}/catalog.json"))
rng = random.Random(24)
departments = ["engineering", "finance", "hr", "legal", "marketing", "operations", "sales",
               "support"]
scopes = ["agents:spawn", "audit:read", "billing:write", "tools:admin", "tools:read",
          "tools:write"]
def identity(i):
    roles = sorted({f"role-{rng.randrange(250)}" for _ in range(rng.randrange(5, 40))})
    return {"sub": f"agent-{i}", "roles": roles, "realm_access": {"roles": roles},
            "department": rng.choice(departments), "email_verified": rng.random() < 0.7,
            "scopes": rng.sample(scopes, rng.randrange(1, 4)),
            "tenant": f"tenant-{rng.randrange(40):02}", "depth": rng.randrange(4)}
changed = json.loads(json.dumps(catalog))
for policy in changed["policies"]:
    if policy["allowed_group_ids"]:
        policy["denied_group_ids"] = policy["allowed_group_ids"]
        policy["allowed_group_ids"] = []
        policy["priority"] += 1000
sets = [identity(i) for i in range(count)]
if change == "one":
    policy = next(p for p in changed["policies"] if p["id"] == "pol-0032")
    proposal = {"change": {"collection": "policies", "id": "pol-0032", "op": "patch", "body": {
        key: policy[key] for key in ("allowed_group_ids", "denied_group_ids", "priority")}}}
else:
    proposal = {"catalog": changed}
json.dump({**proposal, "claims_sets": sets}, open(f"{work}/impact.json", "w"))
json.dump({**proposal, "claims_sets": sets[:1]}, open(f"{work}/warm.json", "w"))
PY

export TOOLGATE_JWT_SECRET=impact-benchmark-secret-of-32-b!!
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_BODY_LIMIT_BYTES=$((256 * 1024 * 1024))
export TOOLGATE_REQUEST_TIMEOUT_SECS=600
kb() { awk -v key="$1:" '$1 == key {print $2}' "/proc/$PID/status"; }
echo "change: $CHANGE; $CLAIM_SETS claim sets, body $(wc -c < "$WORK/impact.json") bytes"
for BIN in "${BINARIES[@]}"; do
  rm -rf "$WORK/data"
  start_gateway "$BIN" "$WORK" 120
  TOKEN=$("$BIN" token --admin --ttl-secs 3600)
  post() {
    curl -s -o "$WORK/answer.json" -w '%{http_code} %{time_total}' -X POST \
      -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \
      --data-binary @"$1" "$BASE/admin/impact"
  }
  WARM=$(post "$WORK/warm.json")
  [ "${WARM% *}" = 200 ] || { echo "the warm-up preview failed: $WARM" >&2; cat "$WORK/answer.json" >&2; exit 1; }
  BEFORE=$(kb VmRSS)
  BEFORE_HWM=$(kb VmHWM)
  RESULT=$(post "$WORK/impact.json")
  PEAK=$(kb VmHWM)
  python3 - "$WORK/answer.json" "${RESULT% *}" "${RESULT#* }" "$BEFORE" "$BEFORE_HWM" "$PEAK" "$BIN" <<'PY'
import json, os, sys
path, status, seconds, before, before_hwm, peak, binary = sys.argv[1:]
size = os.path.getsize(path)
summary = ""
if status == "200":
    answer = json.load(open(path))
    given = answer["claims_sets"]
    listed = sum(len(s["gained"]) + len(s["lost"]) for s in given + answer["seen"])
    summary = (f"; {len(given)} answered, {sum(1 for s in given if s['gained'] or s['lost'])} "
               f"change, {listed} tool ids listed, {len(answer['totals'])} tools in totals, "
               f"warnings: {answer['warnings']}")
else:
    summary = "; " + open(path).read(300)
mb = lambda kb: int(kb) / 1024
print(f"{binary}: HTTP {status} in {float(seconds):.2f} s, answer {size} bytes{summary}")
print(f"  VmRSS before {mb(before):.1f} MB (VmHWM {mb(before_hwm):.1f} MB), VmHWM after "
      f"{mb(peak):.1f} MB: peak growth {mb(peak) - mb(before):.1f} MB")
PY
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
done
