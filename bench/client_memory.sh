#!/usr/bin/env bash
# Client heap per in-flight stream: `valgrind --tool=massif` on `servebench run` against the
# exact-mode simulator (TTFT 50 ms, a chunk every 10 ms, 200 tokens), at 1 stream (the base)
# and at N streams (N warm-ups, then N measured requests, N in flight). Prints the peak of
# heap + allocator overhead for each and (peak(N) − peak(1)) / (N − 1), the figure the
# project bounds at 16 KiB. The simulator runs on CPU 0, the client under valgrind on CPU 1.
#
# Then the same for peak RSS (GNU time, no valgrind): 2N measured requests at concurrency
# LOW (default 64) and at N, so both runs keep the same per-request data (the summary's
# samples, the per-request arrays built at the end) and the difference is what N − LOW more
# streams in flight cost: (RSS(N) − RSS(LOW)) / (N − LOW).
#
# Usage: bench/client_memory.sh [N]      (default 256)
# Needs: Linux, taskset, valgrind, GNU time, python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

N="${1:-256}"
ulimit -n 65536 2>/dev/null || true
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
cargo build --release --quiet --bin servebench
source bench/lib.sh

start_sim taskset -c 0 target/release/servebench sim --threads 1 --ttft-ms 50 --itl-ms 10

for C in 1 "$N"; do
    taskset -c 1 valgrind --tool=massif --massif-out-file="$OUT/massif.$C" \
        target/release/servebench run --base-url "$URL" --tokenizer words --num-prompts "$C" \
        --max-concurrency "$C" --input-len 32 --output-len 200 --num-warmups "$C" \
        --no-preflight -q --result-dir "$OUT/r$C" >/dev/null 2>"$OUT/valgrind.$C" ||
        { tail "$OUT/valgrind.$C" >&2; exit 1; }
done
python3 - "$OUT/massif.1" "$OUT/massif.$N" "$N" <<'PY'
import re, sys
def peak(path):
    best, cur = 0, 0
    for line in open(path):
        m = re.match(r"mem_heap(_extra)?_B=(\d+)", line)
        if m:
            cur = int(m.group(2)) if not m.group(1) else cur + int(m.group(2))
            best = max(best, cur)
    return best
base, top, n = peak(sys.argv[1]), peak(sys.argv[2]), int(sys.argv[3])
print(f"peak heap: {base / 1e6:.2f} MB at 1 stream, {top / 1e6:.2f} MB at {n} streams")
print(f"per in-flight stream: {(top - base) / (n - 1) / 1024:.1f} KiB")
PY

LOW="${LOW:-64}"
for C in "$LOW" "$N"; do
    /usr/bin/time -f "%M" -o "$OUT/rss.$C" taskset -c 1 target/release/servebench run \
        --base-url "$URL" --tokenizer words --num-prompts $((2 * N)) --max-concurrency "$C" \
        --input-len 32 --output-len 200 --num-warmups 0 --no-preflight -q \
        --result-dir "$OUT/rss$C" >/dev/null
done
low=$(tail -1 "$OUT/rss.$LOW") high=$(tail -1 "$OUT/rss.$N")
echo "peak RSS, $((2 * N)) requests: ${low} KiB at $LOW streams, ${high} KiB at $N streams"
awk -v l="$low" -v h="$high" -v n="$N" -v lo="$LOW" \
    'BEGIN { printf "per in-flight stream (RSS): %.1f KiB\n", (h - l) / (n - lo) }'
