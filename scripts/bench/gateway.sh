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
