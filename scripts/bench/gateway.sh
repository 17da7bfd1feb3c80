# Sourced by the bench scripts.
#
# start_gateway BIN WORK [timeout-seconds] starts
# `BIN serve` on a free port with its data in WORK/data, seeded from WORK/catalog.json, and
# sets PID and BASE (http://127.0.0.1:port) once it listens; it exits the script with the
# gateway's output if it does not.
start_gateway() {
  local bin=$1 work=$2 timeout=${3:-10}
  "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --seed "$work/catalog.json" > "$work/out" &
  PID=$!
  for _ in $(seq $((timeout * 20))); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.05; done
  BASE=$(sed -n 's/^toolgate listening on //p' "$work/out")
  if [ -z "$BASE" ]; then
    echo "the gateway did not start:" >&2
    cat "$work/out" >&2
    exit 1
  fi
}

# build_gateway [cargo option…] builds the release gateway binary. Every script builds this same
# set (no examples: they pull in dev-dependencies, whose features would change the library's
# and rebuild the whole-program-optimised binary for minutes at every switch of script).
build_gateway() {
  cargo build --release --locked --quiet --bin toolgate "$@"
}

# bench_tool NAME builds the example NAME (a catalog generator, a load client) in the
# `bench-tools` profile, the release profile without LTO in a directory of its own (they are
# not what is measured), and sets TOOL to its path.
bench_tool() {
  cargo build --profile bench-tools --locked --quiet --example "$1"
  TOOL=${CARGO_TARGET_DIR:-target}/bench-tools/examples/$1
}

# bench_setup [binary…] sets BINARIES (the binaries given, else $TARGET/release/toolgate) and
# WORK (a temporary directory, removed on exit with the gateway PID names, if any).
bench_setup() {
  BINARIES=("$@")
  [ ${#BINARIES[@]} -eq 0 ] && BINARIES=("$TARGET/release/toolgate")
  WORK=$(mktemp -d)
  PID=""
  trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
}

# ensure_wrk installs wrk (the Debian package) when it is missing.
ensure_wrk() {
  command -v wrk >/dev/null 2>&1 && return
  local sudo=sudo
  [ "$(id -u)" = 0 ] && sudo=""
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >/dev/null
}

# wrk_row LABEL FILE prints "LABEL req/s p50 p99" from wrk's --latency output in FILE; it exits
# the script, showing FILE, if any response was not 2xx/3xx.
wrk_row() {
  local label=$1 file=$2
  if grep -q "Non-2xx" "$file"; then
    echo "$label: some responses were not 2xx/3xx:" >&2; cat "$file" >&2; exit 1
  fi
  echo "$label $(awk '/Requests\/sec/ {print $2}' "$file") $(awk '$1=="50%" {print $2}' "$file") $(awk '$1=="99%" {print $2}' "$file")"
}

# wrk_round LABEL PATH [SCRIPT] runs one measured round of wrk against $BASE$PATH with the
# header $AUTH, $THREADS threads, $CONNECTIONS connections for $SECONDS_PER_ROUND seconds (and
# the Lua SCRIPT, if given), keeps its output in $WORK/LABEL.txt and prints its wrk_row line.
wrk_round() {
  local args=(-t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_ROUND}s" --latency -H "$AUTH")
  [ -n "${3:-}" ] && args+=(-s "$3")
  wrk "${args[@]}" "$BASE$2" > "$WORK/$1.txt"
  wrk_row "$1" "$WORK/$1.txt"
}

# wrk_warm PATH [SCRIPT] runs the same load for two unmeasured seconds.
wrk_warm() {
  local args=(-t"$THREADS" -c"$CONNECTIONS" -d2s -H "$AUTH")
  [ -n "${2:-}" ] && args+=(-s "$2")
  wrk "${args[@]}" "$BASE$1" > /dev/null
}

# wrk_ratios FILE BASELINE=LABEL PREFIX=LABEL… prints the wrk_row lines of FILE (labels
# PREFIX_ROUND) as a table, then, for each PREFIX, its mean req/s and worst p99 ÷ those of
# BASELINE.
wrk_ratios() {
  python3 - "$@" <<'PY'
import sys
path, (baseline, baseline_label), pairs = sys.argv[1], sys.argv[2].split("=", 1), sys.argv[3:]
rows = [line.split() for line in open(path) if line.strip()]
def ms(text):
    for unit, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
print(f"{'route':<24}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
for name, rps, p50, p99 in rows:
    print(f"{name:<24}{float(rps):>12.0f}{ms(p50):>10.3f}{ms(p99):>10.3f}")
def of(prefix):
    picked = [r for r in rows if r[0].rsplit("_", 1)[0] == prefix]
    return sum(float(r[1]) for r in picked) / len(picked), max(ms(r[3]) for r in picked)
base, base_p99 = of(baseline)
for pair in pairs:
    prefix, label = pair.split("=", 1)
    rps, p99 = of(prefix)
    print(f"{label} ÷ {baseline_label}: req/s {rps / base:.2f}, p99 {p99 / base_p99:.2f}")
PY
}

# front_door_setup WORK BIN writes the benches' large catalog (WORK/catalog.json) and a wrk
# script of a stateless MCP tools/list (WORK/list.lua, 2026-07-28, one page), sets TOKEN and
# AUTH to the reference agent's token (minted by BIN), and exports what the front-door benches
# serve under: the manifest in one page, budgets this load never spends (the limiters stay on:
# their lookup is part of what is measured).
front_door_setup() {
  local work=$1 bin=$2
  bench_tool catalog_json
  "$TOOL" large > "$work/catalog.json"
  "$TOOL" large --agent-claims 20 > "$work/claims.json"
  export TOOLGATE_JWT_SECRET=front-door-benchmark-secret-32-bytes
  export TOOLGATE_LOG_LEVEL=warn
  export TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC=1000000000
  export TOOLGATE_RATE_LIMIT_AGENT_READS_BURST=1000000000
  export TOOLGATE_MCP_PAGE_SIZE=100000
  local claims
  claims=$(python3 -c 'import json, sys
claims = json.load(open(sys.argv[1]))
for key in ("exp", "iat", "nbf"):
    claims.pop(key, None)
print(json.dumps(claims))' "$work/claims.json")
  TOKEN=$("$bin" token --claims "$claims" --ttl-secs 3600)
  AUTH="Authorization: Bearer $TOKEN"
  python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
with open(f"{work}/list.lua", "w") as lua:
    lua.write('wrk.method = "POST"\n')
    lua.write('wrk.headers["Content-Type"] = "application/json"\n')
    lua.write('wrk.headers["Accept"] = "application/json, text/event-stream"\n')
    lua.write('wrk.headers["MCP-Protocol-Version"] = "2026-07-28"\n')
    lua.write('wrk.headers["Mcp-Method"] = "tools/list"\n')
    lua.write(f'wrk.body = {json.dumps(json.dumps(body))}\n')
PY
}
