#!/usr/bin/env bash
# Can the simulated server (exact mode) sustain a streaming load on ONE core?
#
# Starts `servebench sim` pinned to CPU 0 (taskset), and a raw load generator
# (examples/sim_load.rs, one thread) pinned to CPU 1. STREAMS concurrent streams of TOKENS
# tokens each at ITL_MS between chunks offer STREAMS × 1000 / ITL_MS events per second
# (4096 streams at 20 ms: 204,800/s). Prints the event rate, the server's CPU time per chunk
# (robust to sharing the core with other work), its context switches per chunk, whether it
# kept its schedule (GET /sim/stats: chunks handed over > 1 ms late) and the load average
# (other processes competing for the server's core make chunks late whatever the server costs).
# Then the same load against the floor (examples/send_floor.rs: pre-built events of the
# simulator's mean chunk size, a heap and one send per chunk, on the same core): its CPU per
# chunk is what the kernel costs here, and the ratio says how far above it the simulator is.
#
# Usage: bench/sim_throughput.sh      (environment: STREAMS=4096 TOKENS=200 ITL_MS=20
#                                     SIM_THREADS=1, the server's runtime worker threads;
#                                     SIM_BIN=path of another servebench build to compare;
#                                     SKIP_BUILD=1: use the binaries already built;
#                                     SIM_CPUS=0 and LOAD_CPUS=1, the CPUs of the simulator
#                                     and of the load generator (one thread: it reads about
#                                     300,000 events/s, so several cores of simulator need
#                                     several of these, not one))
# Needs: Linux, taskset, python3, 2+ CPUs, `ulimit -n` above STREAMS + 100.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

STREAMS="${STREAMS:-4096}"
TOKENS="${TOKENS:-200}"
ITL_MS="${ITL_MS:-20}"
ulimit -n $((STREAMS * 2 + 256)) 2>/dev/null || true
[ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet --bin servebench --example sim_load --example send_floor
source bench/lib.sh
# Real-time priority where permitted (as bench/fidelity.sh): on a shared machine a compiler
# preempting the server makes it late, and a late server sends fewer, larger segments, whose
# CPU per chunk is not comparable with an on-time run's.
PRIO=()
if chrt -f 10 true 2>/dev/null; then PRIO=(chrt -f 10); fi
echo "priority: ${PRIO[*]:-normal (chrt not permitted)}"
start_sim "${PRIO[@]}" taskset -c "${SIM_CPUS:-0}" "${SIM_BIN:-target/release/servebench}" sim --threads "${SIM_THREADS:-1}" --ttft-ms 20 --itl-ms "$ITL_MS"
cpu() { awk '{print $14 + $15}' "/proc/$SIM_PID/stat"; }
system() { awk '{print $15}' "/proc/$SIM_PID/stat"; }
switches() { cat /proc/"$SIM_PID"/task/*/status | awk '/ctxt_switches/ {n += $2} END {print n}'; }
TICKS=$(getconf CLK_TCK)
before=$(cpu) sys_before=$(system)
sw_before=$(switches)
"${PRIO[@]}" taskset -c "${LOAD_CPUS:-1}" target/release/examples/sim_load "${URL#http://}" "$STREAMS" "$TOKENS" "$ITL_MS"
after=$(cpu) sys_after=$(system)
sw_after=$(switches)
# The simulator's mean chunk on the wire (chunk framing included), for the floor's events.
EVENT_BYTES=$(( $(curl -s --raw -N -d "{\"prompt\":\"x\",\"max_tokens\":$TOKENS,\"stream\":true}" "$URL/v1/completions" | wc -c) / TOKENS ))
curl -s "$URL/sim/stats" >"$OUT/stats.json"
stop_sim
start_sim "${PRIO[@]}" taskset -c 0 target/release/examples/send_floor "$STREAMS" "$TOKENS" "$EVENT_BYTES" 20 "$ITL_MS"
"${PRIO[@]}" taskset -c 1 target/release/examples/sim_load "${URL#http://}" "$STREAMS" "$TOKENS" "$ITL_MS"
wait "$SIM_PID" || true
SIM_PID=
FLOOR_US=$(grep -o '[0-9.]* us per chunk' "$OUT/sim.log" | cut -d' ' -f1)
echo "floor ($EVENT_BYTES-byte events): $(grep '^floor' "$OUT/sim.log")"
python3 - "$OUT/stats.json" "$before" "$after" "$TICKS" "$STREAMS" "$TOKENS" "$ITL_MS" "$sw_before" "$sw_after" "$FLOOR_US" "$sys_before" "$sys_after" <<'PY'
import json, os, sys
stats, before, after, hz, streams, tokens, itl, sw0, sw1, floor, sys0, sys1 = sys.argv[1], *map(float, sys.argv[2:])
s = json.load(open(stats))
cpu = (after - before) / hz
events = streams * (tokens + 1)  # content chunks + the [DONE] event written with the last one
chunks = streams * tokens
print(f"offered: {streams * 1000 / itl:,.0f} events/s ({streams:.0f} streams, ITL {itl:g} ms)")
print(f"server CPU: {cpu:.2f} s for {chunks:,.0f} chunks = {chunks / max(cpu, 1e-9):,.0f} chunks per CPU-second = {1e6 * cpu / chunks:.2f} us per chunk, of which system (kernel) {1e6 * (sys1 - sys0) / hz / chunks:.2f} us")
print(f"floor: {floor:.2f} us per chunk = {1e6 / floor:,.0f} chunks per CPU-second; simulator / floor = {1e6 * cpu / chunks / floor:.2f}")
print(f"server context switches: {sw1 - sw0:,.0f} ({(sw1 - sw0) / chunks:.3f} per chunk)")
print(f"late chunks (> 1 ms): {s['late_chunks']:,} of {chunks:,.0f} ({100 * s['late_chunks'] / chunks:.2f}%), max lateness {s['max_lateness_us'] / 1000:.1f} ms; ok streams {s['ok']}")
print(f"late intakes (read > 1 ms after arrival): {s.get('late_intakes', '?')}, max {s.get('max_intake_us', 0) / 1000:.1f} ms")
print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
PY
