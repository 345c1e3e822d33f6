# Sourced by the bench scripts: a temporary folder $OUT removed on exit, and one background
# `servebench sim` at a time, stopped on exit.
OUT="$(mktemp -d)"
SIM_PID=
cleanup() { if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; fi; rm -rf "$OUT"; }
trap cleanup EXIT

# start_sim COMMAND...: runs COMMAND (a `servebench sim` command line, perhaps behind taskset
# or chrt) in the background, logging to $OUT/sim.log; sets SIM_PID, and URL once it listens.
start_sim() {
    "$@" >"$OUT/sim.log" 2>&1 &
    SIM_PID=$!
    URL=
    for _ in $(seq 100); do
        URL="$(grep -o 'http://[0-9.:]*' "$OUT/sim.log" 2>/dev/null || true)"
        [ -n "$URL" ] && return 0
        sleep 0.1
    done
    echo "sim did not start" >&2
    cat "$OUT/sim.log" >&2
    exit 2
}

stop_sim() { kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=; }
