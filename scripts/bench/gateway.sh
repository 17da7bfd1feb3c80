# Sourced by the bench scripts: start_gateway BIN WORK [timeout-seconds] starts
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
