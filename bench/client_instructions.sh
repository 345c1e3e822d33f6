#!/usr/bin/env bash
# User-space instructions the client spends per streamed event: `valgrind --tool=callgrind` on
# `servebench run` (chat API, 16 streams, 16 warm-ups + 32 requests, `--tokenizer words`)
# against the exact-mode simulator (TTFT 50 ms, a chunk every 40 ms, so the client keeps up
# under valgrind), once with 50 and once with 150 tokens per answer. The difference of the
# two totals ÷ the difference of their chunks (48 × 100 = 4,800) is the cost of one more event,
# start-up excluded. Kernel time is not counted (see bench/fidelity.sh for CPU time).
#
# Usage: bench/client_instructions.sh      environment: BIN=target/release/servebench
#        CLIENT_ARGS= (extra `servebench run` options)
# Needs: Linux, taskset, valgrind, python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN="${BIN:-target/release/servebench}"
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
[ "$BIN" != target/release/servebench ] || cargo build --release --quiet --bin servebench
source bench/lib.sh

start_sim taskset -c 0 "$BIN" sim --threads 1 --ttft-ms 50 --itl-ms 40

for T in 50 150; do
    taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$T" \
        "$BIN" run --backend openai-chat --base-url "$URL" --tokenizer words --num-prompts 32 \
        --max-concurrency 16 --input-len 32 --output-len "$T" --num-warmups 16 \
        --no-preflight -q --result-dir "$OUT/r$T" ${CLIENT_ARGS:-} >/dev/null 2>"$OUT/valgrind.$T" ||
        { tail "$OUT/valgrind.$T" >&2; exit 1; }
done
python3 - "$OUT/valgrind.50" "$OUT/valgrind.150" <<'PY'
import re, sys
def total(path):
    return int(re.search(r"Collected : (\d+)", open(path).read()).group(1))
a, b = total(sys.argv[1]), total(sys.argv[2])
print(f"instructions: {a / 1e6:.1f} M (50 tokens), {b / 1e6:.1f} M (150 tokens)")
print(f"per event: {(b - a) / (48 * 100):,.0f}")
PY
