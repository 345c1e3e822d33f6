#!/usr/bin/env bash
# Do requests leave on time, and what does the precise send timer cost?
#
# Ground truth: `servebench sim` in exact mode (TTFT 50 ms, a chunk every 10 ms) on CPU 0; the
# client on CPU 1, both under SCHED_FIFO 10 when permitted (as bench/fidelity.sh). For each
# rate in RATES (default 1000 10000 requests/s), an open-loop run of SECONDS × rate requests of
# 2 tokens (Poisson arrivals, no concurrency cap, RATE/20 warm-ups so the pool holds
# connections), and for each: the schedule lag (first byte written − scheduled send) at p50 /
# p99 / max, the share of sends more than 0.5 ms late, the client's CPU per request (µs, user +
# system, warm-ups included), and the verdict.
#
# Each rate runs twice: "poisson", the arrivals as drawn (sent on time, the server's answers
# arrive as spread out as the sends), and "1 ms grid", a trace of the same count of Poisson
# arrivals with each send time rounded up to a whole millisecond (about rate/1000 sends due
# together, as tokio's 1 ms timer wheel sent them). The grid row compares clients at the same
# send pattern: what the send timer itself costs, apart from what sending on time costs.
#
# Usage: bench/send_lag.sh    environment: RATES="1000 10000" SECONDS_EACH=5
#        CLIENT_BIN= (another servebench binary as the client: an older build for "before")
# Needs: Linux, taskset, /usr/bin/time (GNU time), python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a RATES <<<"${RATES:-1000 10000}"
SECS="${SECONDS_EACH:-5}"
ulimit -n 65536 2>/dev/null || true
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
cargo build --release --quiet --bin servebench
source bench/lib.sh
CLIENT="${CLIENT_BIN:-target/release/servebench}"

PRIO=()
if chrt -f 10 true 2>/dev/null; then PRIO=(chrt -f 10); fi
start_sim "${PRIO[@]}" taskset -c 0 target/release/servebench sim --threads 1 --ttft-ms 50 --itl-ms 10

echo "client $CLIENT on CPU 1, simulator on CPU 0; priority: ${PRIO[*]:-normal (chrt not permitted)}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| rate (req/s) | arrivals | requests | lag p50 / p99 / max (ms) | sent > 0.5 ms late | client µs per request | verdict |"
echo "|---|---|---|---|---|---|---|"
for R in "${RATES[@]}"; do
    N=$((R * SECS))
    W=$((R / 20))
    python3 - "$R" "$N" >"$OUT/grid.$R.jsonl" <<'PY'
import json, math, random, sys
rate, n = int(sys.argv[1]), int(sys.argv[2])
rng, t = random.Random(26), 0.0
for i in range(n):
    t += rng.expovariate(rate / 1000.0)
    print(json.dumps({"timestamp": math.ceil(t), "input_length": 16, "output_length": 2}))
PY
    for ARRIVALS in poisson grid; do
        if [ "$ARRIVALS" = grid ]; then
            LOAD=(--dataset-name trace --dataset-path "$OUT/grid.$R.jsonl")
        else
            LOAD=(--request-rate "$R" --input-len 16 --output-len 2)
        fi
        /usr/bin/time -f "%M %U %S" -o "$OUT/time.$R" "${PRIO[@]}" taskset -c 1 "$CLIENT" run \
            --base-url "$URL" --tokenizer words --num-prompts "$N" "${LOAD[@]}" \
            --num-warmups "$W" --result-dir "$OUT" --overwrite \
            --result-filename "r$R.json" --no-preflight -q || true
        python3 - "$OUT/r$R.json" "$OUT/r$R.records.jsonl" "$OUT/time.$R" "$R" "$N" "$W" "$ARRIVALS" <<'PY'
import json, sys
result, records, timef = sys.argv[1:4]
rate, n, w = (int(x) for x in sys.argv[4:7])
arrivals = "1 ms grid" if sys.argv[7] == "grid" else "poisson"
r = json.load(open(result))
rss_kib, user, sys_s = open(timef).read().split()[-3:]
lag = sorted((x["sent_ns"] - x["scheduled_ns"]) / 1e6
             for x in map(json.loads, open(records)) if not x.get("warmup"))
q = lambda p: lag[min(len(lag) - 1, int(p * len(lag)))]
late = sum(1 for x in lag if x > 0.5) / max(1, len(lag))
cpu_us = (float(user) + float(sys_s)) / (n + w) * 1e6
v = r.get("validity") or {}
print(f"| {rate:,} | {arrivals} | {n:,} ({r['completed']:,} ok) | {q(.5):.3f} / {q(.99):.3f} / {lag[-1]:.2f} | {100 * late:.1f}% | {cpu_us:.1f} | {v.get('verdict', '?')} |")
PY
    done
done
