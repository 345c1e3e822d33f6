#!/usr/bin/env bash
# Where the client's CPU goes per streamed event, natively: `perf record -e cpu-clock` (a
# software clock, so it works in a VM without hardware counters) on `servebench run` and on
# the minimal client (examples/sim_load), each pinned to CPU 1 against the exact-mode simulator
# on CPU 0 (TTFT 50 ms, a chunk every ITL_MS), the same load as `bench/fidelity.sh`: C
# warm-ups and C × ROUNDS requests for servebench, C × (ROUNDS + 1) for the minimal client.
# Prints each one's user and kernel µs per event, then the TOP functions (user and kernel) by
# µs per event, side by side. Samples are taken at 2,999 Hz; a function's µs per event is its
# samples ÷ 2,999 ÷ the events (perf's own overhead included, so totals read 5-15% above
# `fidelity.sh`'s).
#
# Usage: bench/client_perf.sh [C]      environment: ROUNDS=2 TOKENS=100 ITL_MS=40 TOP=40
#        CLIENT_BIN= (another servebench binary as the client), SKIP_BUILD=1
# Needs: Linux, perf, taskset, /usr/bin/time, python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

C="${1:-4096}"
ROUNDS="${ROUNDS:-2}"
TOKENS="${TOKENS:-100}"
command -v perf >/dev/null || { echo "needs perf" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || true
[ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet --bin servebench --example sim_load
source bench/lib.sh
start_sim taskset -c 0 target/release/servebench sim --threads 1 --ttft-ms 50 --itl-ms "${ITL_MS:-40}"

record() { # record NAME COMMAND...: perf data and /usr/bin/time's "user sys" for NAME
    local name=$1
    shift
    /usr/bin/time -f "%U %S" -o "$OUT/$name.time" taskset -c 1 \
        perf record -q -e cpu-clock -F 2999 -o "$OUT/$name.data" -- "$@" >"$OUT/$name.out" 2>/dev/null
}
N=$((C * ROUNDS))
record servebench "${CLIENT_BIN:-target/release/servebench}" run --base-url "$URL" \
    --tokenizer words --num-prompts "$N" --max-concurrency "$C" --input-len 32 \
    --output-len "$TOKENS" --num-warmups "$C" --no-preflight -q --result-dir "$OUT/r" \
    --result-filename r.json || true
record minimal bash -c 'for _ in $(seq 0 "$4"); do "$1" "$2" "$3" "$5" 0 || exit 1; done' _ \
    target/release/examples/sim_load "${URL#http://}" "$C" "$ROUNDS" "$TOKENS"
for name in servebench minimal; do
    perf report -i "$OUT/$name.data" --stdio --no-children --sort sym -F sample,sym \
        >"$OUT/$name.report" 2>/dev/null
done
python3 - "$OUT" "$N" "$C" "${TOP:-40}" <<'PY'
import json, re, sys
out, n, c, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = json.load(open(f"{out}/r/r.json"))
# The warm-ups stream as many chunks each as the measured requests.
events = {"servebench": r["summary"]["total_output_chunks"] * (n + c) / n,
          "minimal": sum(int(e) for e in re.findall(r"events=(\d+)", open(f"{out}/minimal.out").read()))}
per = {}
for name, ev in events.items():
    user, sys_s = open(f"{out}/{name}.time").read().split()[-2:]
    print(f"{name}: {ev:,.0f} events, user {float(user) / ev * 1e6:.2f} µs, kernel {float(sys_s) / ev * 1e6:.2f} µs per event")
    per[name] = {}
    for line in open(f"{out}/{name}.report"):
        m = re.match(r"\s*(\d+)\s+\[(.)\]\s+(.*)$", line)
        if m:
            key = f"[{m.group(2)}] {m.group(3).strip()[:100]}"
            per[name][key] = int(m.group(1)) / 2999 / ev * 1e6
print()
print("| function | servebench µs/event | minimal client µs/event |")
print("|---|---|---|")
s, m = per["servebench"], per["minimal"]
for k in sorted(set(s) | set(m), key=lambda k: -max(s.get(k, 0), m.get(k, 0)))[:top]:
    print(f"| `{k}` | {s.get(k, 0):.3f} | {m.get(k, 0):.3f} |")
PY
