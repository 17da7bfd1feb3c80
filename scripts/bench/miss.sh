#!/usr/bin/env bash
# Cache misses of GET /agents/tools on the benches' large catalog (examples/catalog_json.rs:
# 10,000 tools, 1,000 groups, 1,000 policies) for an agent with a large manifest (its claims
# match about 600 policies' worth of roles: ~7,000 tools, ~2.9 MB), against the same request in
# the reference system's algorithm (scripts/bench/reference_manifest.py: a faithful Python
# re-implementation of its published code, no I/O, no cache), all in one run.
#
# For each gateway binary given (default: this tree's release build), in alternating rounds, one
# connection, one request at a time:
#   - hot        the same token again and again (a cache hit)
#   - new_claims a token never seen before per request, with the same access decision (an extra,
#                unmatched value in a claim the policies read)
#   - new_access a token never seen before per request whose roles are a random subset of the
#                agent's: (almost) every request is a new access decision, so a new render
# Then the gateway's resident memory after all those distinct claim sets (VmRSS, and its peak).
# Prints median/p99 per route and binary, and the reference's median over each miss median.
#
#   scripts/bench/miss.sh [seconds-per-round=3] [rounds=2] [binary…]
#
# Give an older build's binary beside the new one to compare them in one run. Needs wrk (Debian
# package; installed if missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/gateway.sh
. scripts/bench/gateway.sh

SECONDS_PER_ROUND=${1:-3}
ROUNDS=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
ensure_wrk
build_gateway
bench_tool catalog_json
TARGET=${CARGO_TARGET_DIR:-target}
bench_setup "$@"

"$TOOL" large > "$WORK/catalog.json"
"$TOOL" large --agent-claims 600 > "$WORK/claims.json"

export TOOLGATE_JWT_SECRET=miss-benchmark-secret-of-32-bytes!!!
export TOOLGATE_LOG_LEVEL=warn
export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000

# Tokens: HS256, signed here (tens of thousands; `toolgate token` per token would be slow).
# Each round of each binary gets its own never-seen claim sets.
python3 - "$WORK" "$ROUNDS" "${#BINARIES[@]}" <<'PY'
import base64, hashlib, hmac, json, os, random, sys, time
work, rounds, binaries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
secret = os.environ["TOOLGATE_JWT_SECRET"].encode()
claims = json.load(open(f"{work}/claims.json"))
for key in ("exp", "iat", "nbf"):
    claims.pop(key, None)
now = int(time.time())
def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
def token(extra):
    body = dict(claims, iat=now, exp=now + 7200, **extra)
    signing = header + "." + b64(json.dumps(body, separators=(",", ":")).encode())
    return signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())
open(f"{work}/hot.tokens", "w").write(token({}) + "\n")
roles = claims["realm_access"]["roles"]
rng = random.Random(7)
PER_ROUND = 20000
for b in range(binaries):
    for r in range(rounds):
        with open(f"{work}/new_claims.{b}.{r}.tokens", "w") as out:
            for i in range(PER_ROUND):
                realm = dict(claims["realm_access"], roles=roles + [f"bench-{b}-{r}-{i}"])
                out.write(token({"realm_access": realm}) + "\n")
        with open(f"{work}/new_access.{b}.{r}.tokens", "w") as out:
            for i in range(PER_ROUND):
                kept = [role for role in roles if rng.random() < 0.9]
                realm = dict(claims["realm_access"], roles=kept + [f"bench-{b}-{r}-{i}"])
                out.write(token({"realm_access": realm}) + "\n")
json.dump(claims, open(f"{work}/reference_claims.json", "w"))
PY
cat > "$WORK/tokens.lua" <<'LUA'
-- One token per request, in file order: never the same claim set twice (TOKENS names the file).
local tokens = {}
for line in io.lines(os.getenv("TOKENS")) do tokens[#tokens + 1] = line end
local next_token = 0
request = function()
  next_token = next_token % #tokens + 1
  return wrk.format("GET", "/agents/tools", {["Authorization"] = "Bearer " .. tokens[next_token]})
end
LUA

run() { # $1 = label, $2 = token file
  TOKENS=$2 wrk -t1 -c1 -d"${SECONDS_PER_ROUND}s" --latency -s "$WORK/tokens.lua" "$BASE/agents/tools" > "$WORK/$1.txt"
  local requests
  requests=$(awk '/requests in/ {print $1}' "$WORK/$1.txt")
  if [ "$(wc -l < "$2")" -gt 1 ] && [ "$requests" -gt "$(wc -l < "$2")" ]; then
    echo "$1: $requests requests but only $(wc -l < "$2") distinct tokens: lengthen the token list" >&2; exit 1
  fi
  echo "$(wrk_row "$1" "$WORK/$1.txt") $requests"
}

RESULTS=()
for b in "${!BINARIES[@]}"; do
  bin=${BINARIES[$b]}
  rm -rf "$WORK/data"
  start_gateway "$bin" "$WORK" 120
  TOKEN=$(head -1 "$WORK/hot.tokens")
  curl -sf -H "Authorization: Bearer $TOKEN" "$BASE/agents/tools" > "$WORK/manifest.json"
  echo "binary $b: $bin; the agent's manifest: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$WORK/manifest.json") tools, $(wc -c < "$WORK/manifest.json") bytes" >&2
  for round in $(seq 0 $((ROUNDS - 1))); do
    RESULTS+=("$(run "b${b}_hot_$round" "$WORK/hot.tokens")")
    RESULTS+=("$(run "b${b}_new_claims_$round" "$WORK/new_claims.$b.$round.tokens")")
    RESULTS+=("$(run "b${b}_new_access_$round" "$WORK/new_access.$b.$round.tokens")")
  done
  RESULTS+=("b${b}_memory $(awk '/VmRSS|VmHWM/ {printf "%s=%s ", $1, $2}' "/proc/$PID/status")")
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
REFERENCE=$(python3 scripts/bench/reference_manifest.py "$WORK/catalog.json" "$WORK/reference_claims.json" 5 --numeric-ops 2>/dev/null)
printf '%s\n' "${RESULTS[@]}" "$REFERENCE" > "$WORK/results.txt"
python3 - "$WORK/results.txt" "${BINARIES[@]}" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
binaries = sys.argv[2:]
def ms(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
reference = dict(item.split("=") for item in lines[-1].split()[1:])
print(f"reference algorithm (Python, no I/O, {reference['tools']} tools): median {float(reference['median_ms']):.0f} ms, p99 {float(reference['p99_ms']):.0f} ms")
print(f"{'binary':8} {'route':12} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8} {'reference ÷ p50':>16}")
for b, binary in enumerate(binaries):
    for route in ("hot", "new_claims", "new_access"):
        rows = [line.split() for line in lines if re.fullmatch(rf"b{b}_{route}_\d+", line.split()[0])]
        p50 = statistics.median(ms(row[2]) for row in rows)
        p99 = max(ms(row[3]) for row in rows)
        requests = sum(int(row[4]) for row in rows)
        print(f"{b:<8} {route:12} {requests:>9} {p50:>8.2f} {p99:>8.2f} {float(reference['median_ms']) / p50:>16.0f}")
    memory = next(line for line in lines if line.startswith(f"b{b}_memory"))
    print(f"{b:<8} memory after every request above: {' '.join(memory.split()[1:])} kB   ({binary})")
PY
