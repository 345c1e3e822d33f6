#!/usr/bin/env bash
# How closely a trace replay keeps the trace's times. Replays a Mooncake-style trace
# (default: the committed tests/fixtures/mooncake_trace.jsonl, 240 requests over 4.4 s, up to
# 8 blocks of 512 words) against the built-in exact simulator, ROUNDS times, and prints for
# each replay: the largest difference between a request's scheduled offset and its trace
# timestamp (the schedule itself, expected 0), and the send lag (first byte written −
# scheduled) at p50 / p95 / p99 / max, with the share of requests sent more than 2 ms late.
#
# Usage: bench/trace_lag.sh [TRACE.jsonl]   (ROUNDS=3 by default)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
trace=${1:-tests/fixtures/mooncake_trace.jsonl}
rounds=${ROUNDS:-3}
cargo build --release -q
bin=target/release/servebench
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "trace $trace, load average $(cut -d' ' -f1 /proc/loadavg)"
echo "| replay | requests | max |scheduled − timestamp| (ms) | lag p50 / p95 / p99 / max (ms) | sent > 2 ms late |"
echo "|---|---|---|---|---|"
for i in $(seq 1 "$rounds"); do
    "$bin" run --sim-preset exact --dataset-name trace --dataset-path "$trace" --output-len 4 \
        --quiet --result-dir "$dir" --result-filename "r$i.json" >/dev/null
    python3 - "$dir/r$i.records.jsonl" "$trace" "$i" <<'PY'
import json, sys
records = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda r: r["id"])
lines = sorted((json.loads(l) for l in open(sys.argv[2]) if l.strip()), key=lambda l: l["timestamp"])
t0, ts0 = records[0]["scheduled_ns"], lines[0]["timestamp"]
sched = max(abs((r["scheduled_ns"] - t0) / 1e6 - (l["timestamp"] - ts0)) for r, l in zip(records, lines))
lag = sorted((r["sent_ns"] - r["scheduled_ns"]) / 1e6 for r in records)
q = lambda p: lag[min(len(lag) - 1, int(p * len(lag)))]
late = sum(1 for x in lag if x > 2.0)
print(f"| {sys.argv[3]} | {len(records)} | {sched:.3f} | {q(.5):.2f} / {q(.95):.2f} / {q(.99):.2f} / {lag[-1]:.2f} | {late} |")
PY
done
