#!/usr/bin/env bash
# Does servebench scale to a million requests in bounded memory and time?
#
# Starts `servebench sim` (exact mode, TTFT 10 ms, a chunk every 2 ms, clock 100× faster than
# real time, one runtime thread) and runs N requests (default 1,000,000) of 16 words in and
# 4 tokens out, at most C (default 256) in flight, under GNU time. Prints the client's peak
# RSS, wall time and requests per second, whether every request completed, the size of the
# result and records files, and then times the re-report of the saved result
# (`servebench report`, best of 3).
#
# Usage: bench/million.sh [N] [C]       environment: BIN=target/release/servebench (skip the build)
# Needs: Linux, /usr/bin/time (GNU time: apt-get install time), python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

N="${1:-1000000}"
C="${2:-256}"
ulimit -n 65536 2>/dev/null || true
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet --bin servebench
    BIN=target/release/servebench
fi
source bench/lib.sh

start_sim "$BIN" sim --threads 1 --ttft-ms 10 --itl-ms 2 --time-scale 100

/usr/bin/time -f "%M %e %U %S" -o "$OUT/time" "$BIN" run --base-url "$URL" --tokenizer words \
    --num-prompts "$N" --max-concurrency "$C" --input-len 16 --output-len 4 --num-warmups 0 \
    --metric-percentiles 50,99 --result-dir "$OUT" --result-filename million.json \
    --no-preflight -q >/dev/null
best=
for _ in 1 2 3; do
    s=$(date +%s.%N)
    "$BIN" report "$OUT/million.json" >"$OUT/report.txt"
    e=$(date +%s.%N)
    t=$(python3 -c "print($e - $s)")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then best=$t; fi
done
python3 - "$OUT/million.json" "$OUT/time" "$N" "$C" "$best" "$OUT/million.records.jsonl" <<'PY'
import json, os, sys
path, timef, n, c, report_s, records = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
r = json.load(open(path))
rss_kib, wall, user, sys_s = open(timef).read().split()[-4:]
s = r["summary"]
print(f"requests: {n} at concurrency {c}: {s['completed']} ok, {s['failed']} failed")
print(f"client peak RSS: {int(rss_kib) / 1024:.0f} MiB")
print(f"client wall: {float(wall):.1f} s ({n / float(wall):.0f} requests/s), CPU {float(user) + float(sys_s):.1f} s")
print(f"result file: {os.path.getsize(path) / 1e6:.2f} MB, records file: {os.path.getsize(records) / 1e6:.0f} MB")
methods = {k: v.get("percentile_method", "exact") for k, v in s.items() if isinstance(v, dict) and "percentiles" in v}
print("percentile method: " + ", ".join(f"{k}={m}" for k, m in sorted(methods.items())))
print(f"re-report (servebench report, best of 3): {report_s:.2f} s")
PY
