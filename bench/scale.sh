#!/usr/bin/env bash
# Thread per core. Does `--client-threads T` keep the truth as the load grows with T,
# and what does each thread cost per streamed event?
#
# Ground truth: `servebench sim` in exact mode (TTFT 50 ms, a chunk every 10 ms, TOKENS tokens,
# so E2EL 50 + (TOKENS − 1) × 10 ms) in its own process on SIM_CPUS (`--threads` one per CPU
# there). The client: `servebench run` on CLIENT_CPUS. Both under SCHED_FIFO 10 (`chrt`) when
# the user may set it, as bench/fidelity.sh.
#
# Scaling table: for each T in THREADS, STREAMS_PER_THREAD × T streams (each 100 events/s:
# the demanded event rate grows with T), C warm-ups and C × ROUNDS measured requests with at
# most C in flight. Printed for each: events/s achieved (the measured chunks over the run's
# duration), mean and p99 TTFT and E2EL error against the truth, client CPU per event (µs,
# warm-ups included in both the CPU and the events), the simulator's CPU per event over the
# same run (/proc; its ceiling is about 1e6 / this × its cores, if it is not late), its late
# chunks (> 1 ms; and their share of all its chunks), and the verdict.
#
# The simulator serves exact-mode streams from one scheduler thread per runtime worker
# (`--threads`, one per CPU of SIM_CPUS here), so the truth's ceiling grows with SIM_CPUS;
# each streamed chunk costs it ~5-6 µs, mostly the kernel's TCP send (docs/performance.md,
# "Simulator throughput"), so 1,000,000 events/s needs about 6 of its cores busy.
#
# A million events per second (16 cores: the truth on 8, the client on 8; 1,280 streams of
# 100 events/s per client thread: 1,024,000 demanded at T = 8; every process needs an
# open-file limit above its streams, checked below):
#   SIM_CPUS=0-7 CLIENT_CPUS=8-15 THREADS="1 2 4 8" STREAMS_PER_THREAD=1280 PAIRS=0 \
#   bench/scale.sh
# Past one address's ephemeral ports (about 28,000-64,500 connections to one server port),
# add CLIENT_ARGS="--source-addresses 127.0.0.2,127.0.0.3".
#
# Same-core table (the 2-core variant): `--client-threads 1` and `--client-threads 2` both
# pinned to the first CPU of CLIENT_CPUS at the same PINNED streams, PAIRS times alternately;
# the CPU per event of each and the ratio T=2 / T=1 of each pair.
#
# Usage: bench/scale.sh
#   environment: THREADS="1 2" STREAMS_PER_THREAD=512 ROUNDS=2 TOKENS=200 SIM_CPUS=0
#   CLIENT_CPUS=1 PINNED=512 PAIRS=3 (PAIRS=0 skips the same-core table), CLIENT_ARGS=
#   (extra `servebench run` options), CLIENT_BIN= (another servebench binary as the client),
#   SKIP_BUILD=1 (use what is built)
#   On a many-core machine, e.g.: SIM_CPUS=0-7 CLIENT_CPUS=8-15 THREADS="1 2 4 8"
# Needs: Linux, taskset, /usr/bin/time (GNU time), python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a THREADS <<<"${THREADS:-1 2}"
PER="${STREAMS_PER_THREAD:-512}"
ROUNDS="${ROUNDS:-2}"
TOKENS="${TOKENS:-200}"
SIM_CPUS="${SIM_CPUS:-0}"
CLIENT_CPUS="${CLIENT_CPUS:-1}"
PINNED="${PINNED:-512}"
PAIRS="${PAIRS:-3}"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
MOST=0
for T in "${THREADS[@]}"; do [ $((PER * T)) -gt "$MOST" ] && MOST=$((PER * T)); done
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((MOST + 256)) ]; then
    echo "open-file limit $(ulimit -n) is below the $MOST streams of the largest run (+256): raise the hard limit (ulimit -Hn)" >&2
    exit 2
fi
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
[ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet --bin servebench
source bench/lib.sh
CLIENT="${CLIENT_BIN:-target/release/servebench}"

PRIO=()
if chrt -f 10 true 2>/dev/null; then PRIO=(chrt -f 10); fi
SIM_THREADS=$(taskset -c "$SIM_CPUS" nproc)
start_sim "${PRIO[@]}" taskset -c "$SIM_CPUS" target/release/servebench sim --threads "$SIM_THREADS" \
    --ttft-ms 50 --itl-ms 10

sim_cpu() { awk '{print $14 + $15}' "/proc/$SIM_PID/stat"; }
sim_chunks() { curl -s "$URL/sim/stats" | python3 -c 'import json, sys; print(json.load(sys.stdin)["chunks"])'; }
TICKS=$(getconf CLK_TCK)

# run NAME CPUS T C: one measured run; prints its table row.
run() {
    local name=$1 cpus=$2 t=$3 c=$4
    local n=$((c * ROUNDS))
    local sim_before chunks_before
    sim_before=$(sim_cpu) chunks_before=$(sim_chunks)
    /usr/bin/time -f "%M %U %S" -o "$OUT/time.$name" "${PRIO[@]}" taskset -c "$cpus" "$CLIENT" run \
        --base-url "$URL" --tokenizer words --num-prompts "$n" --max-concurrency "$c" \
        --input-len 32 --output-len "$TOKENS" --num-warmups "$c" --metric-percentiles 50,99 \
        --client-threads "$t" --result-dir "$OUT" --result-filename "$name.json" \
        --no-preflight -q ${CLIENT_ARGS:-} || true
    local sim_us
    sim_us=$(python3 -c "print(1e6 * ($(sim_cpu) - $sim_before) / $TICKS / max($(sim_chunks) - $chunks_before, 1))")
    python3 - "$OUT/$name.json" "$OUT/time.$name" "$t" "$c" "$n" "$TOKENS" "$sim_us" <<'PY'
import json, sys
path, timef = sys.argv[1], sys.argv[2]
t, c, n, tokens = (int(x) for x in sys.argv[3:7])
sim_us = float(sys.argv[7])
r = json.load(open(path))
rss_kib, user, sys_s = open(timef).read().split()[-3:]
truth = {"ttft": 50.0, "e2el": 50.0 + (tokens - 1) * 10.0}
def err(m):
    return " / ".join(f"{r[f'{k}_{m}_ms'] - truth[m]:+.2f}" for k in ("mean", "p99"))
chunks = r["summary"]["total_output_chunks"]
# The client's CPU time also covers the C warm-up requests, which stream as many chunks each.
events = (chunks * (n + c) / n) or 1
cpu_us = (float(user) + float(sys_s)) / events * 1e6
v = r.get("validity") or {}
ss = v.get("server_stats") or {}
late = ss.get("late_chunks", "?")
share = f" ({100 * late / ss['chunks']:.2f}%)" if isinstance(late, int) and ss.get("chunks") else ""
rate = chunks / r["duration"] if r.get("duration") else float("nan")
print(f"| {v.get('client_threads', t)} | {c} | {c * 100:,} | {rate:,.0f} | {err('ttft')} | {err('e2el')} | {cpu_us:.2f} | {int(rss_kib) / 1024:.0f} | {sim_us:.2f} | {late}{share} | {v.get('verdict', '?')} |")
PY
}

echo "simulator on CPUs $SIM_CPUS ($SIM_THREADS threads), client on CPUs $CLIENT_CPUS; priority: ${PRIO[*]:-normal (chrt not permitted)}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| client threads | streams | events/s demanded | events/s achieved | TTFT err mean / p99 (ms) | E2EL err mean / p99 (ms) | client µs per event | client peak RSS (MiB) | server µs per event | server late chunks | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for T in "${THREADS[@]}"; do
    run "t$T" "$CLIENT_CPUS" "$T" $((PER * T))
done

if [ "$PAIRS" -gt 0 ]; then
    ONE_CPU="${CLIENT_CPUS%%[,-]*}"
    echo
    echo "same core (CPU $ONE_CPU), $PINNED streams:"
    echo
    echo "| client threads | streams | events/s demanded | events/s achieved | TTFT err mean / p99 (ms) | E2EL err mean / p99 (ms) | client µs per event | client peak RSS (MiB) | server µs per event | server late chunks | verdict |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for p in $(seq 1 "$PAIRS"); do
        run "one$p" "$ONE_CPU" 1 "$PINNED" | tee -a "$OUT/pairs"
        run "two$p" "$ONE_CPU" 2 "$PINNED" | tee -a "$OUT/pairs"
    done
    python3 - "$OUT/pairs" <<'PY'
import sys
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("|")]
cost = [float(r[7]) for r in rows]
ratios = [b / a for a, b in zip(cost[0::2], cost[1::2]) if a > 0]
print()
print("CPU per event, 2 threads / 1 thread, per pair: " + ", ".join(f"{x:.2f}" for x in ratios)
      + (f"; median {sorted(ratios)[len(ratios) // 2]:.2f}" if ratios else ""))
PY
fi
