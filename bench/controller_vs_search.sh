#!/usr/bin/env bash
# How long does the SLO controller (`run --adaptive`) take to find what `search` finds?
#
# Ground truth: `servebench sim --preset exact --slots 2` (TTFT 20 ms, 8 more tokens 20 ms
# apart: 180 ms a request in a slot), 8-word prompts asking for exactly 9 tokens, judged by
# `ttft:110` at a target of 0.8. The highest concurrency holding 80% good is exactly 2 (at 3 in
# a closed loop at most half the requests meet ttft:110; tests/suite/adaptive.rs says why).
# Both run against the same simulator with the settings of that test:
#   controller: run --adaptive --adaptive-on concurrency --adaptive-target 0.8
#               --adaptive-step 4 --hold 4 --adaptive-max 16   (windows of at most 4 s)
#   search:     search --by concurrency --start 1 --max 16 --target 0.8 --num-prompts 40
# With SETTINGS=defaults, each runs with its own defaults instead (windows of 30 s and a hold
# of 60 s; probes of 1,000 requests), only the SLO, the target and the range given:
#   controller: run --adaptive --adaptive-on concurrency --adaptive-target 0.8 --adaptive-max 16
#   search:     search --by concurrency --start 1 --max 16 --target 0.8
# Each prints its answer (the controller's sustained concurrency and bracket, search's
# answer and first failing load) and its wall time (the process, start to exit). Each pair
# runs ROUNDS times (default 3), alternating which goes first; the last line gives the
# medians and their ratio.
#
# Usage: bench/controller_vs_search.sh
# Environment: ROUNDS=3, SETTINGS=test|defaults, SKIP_BUILD=1 (use the built binary)
# Needs: Linux, python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS="${ROUNDS:-3}"
case "${SETTINGS:-test}" in
test)
    CONTROLLER_ARGS=(--adaptive-step 4 --hold 4)
    SEARCH_ARGS=(--num-prompts 40)
    ;;
defaults) CONTROLLER_ARGS=() SEARCH_ARGS=() ;;
*) echo "SETTINGS must be test or defaults" >&2; exit 2 ;;
esac
[ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet --bin servebench
source bench/lib.sh
BIN=target/release/servebench
start_sim "$BIN" sim --preset exact --slots 2 --ttft-ms 20 --itl-ms 20

WORKLOAD=(--tokenizer words --input-len 8 --output-len 9 --ignore-eos --goodput ttft:110 --no-tui --quiet)

now() { python3 -c 'import time; print(time.monotonic())'; }

controller() {
    local t0 t1
    t0=$(now)
    "$BIN" run --base-url "$URL" "${WORKLOAD[@]}" --adaptive --adaptive-on concurrency \
        --adaptive-target 0.8 --adaptive-max 16 ${CONTROLLER_ARGS[@]+"${CONTROLLER_ARGS[@]}"} \
        --result-dir "$OUT" --result-filename "c$1.json" >/dev/null
    t1=$(now)
    python3 - "$OUT/c$1.json" "$t0" "$t1" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["adaptive"]
judged = [w for w in a["windows"] if w.get("verdict")]
early = sum(1 for w in judged if w.get("early"))
print(f"controller {float(sys.argv[3]) - float(sys.argv[2]):.1f} s: sustained {a['sustained']} "
      f"in [{a['last_pass']}, {a['first_fail']}), {len(judged)} windows judged, {early} early, "
      f"its own {a['controller_s']:.1f} s")
PY
}

search() {
    local t0 t1
    t0=$(now)
    "$BIN" search --by concurrency --start 1 --max 16 --target 0.8 --base-url "$URL" \
        ${SEARCH_ARGS[@]+"${SEARCH_ARGS[@]}"} "${WORKLOAD[@]}" --result-dir "$OUT" --result-filename "s$1.json" >/dev/null
    t1=$(now)
    python3 - "$OUT/s$1.search.json" "$t0" "$t1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"search {float(sys.argv[3]) - float(sys.argv[2]):.1f} s: answer {s['answer']}, "
      f"first failing {s['first_failing']}, {len(s['probes'])} probes")
PY
}

echo "settings: ${SETTINGS:-test}; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
: >"$OUT/times"
for i in $(seq "$ROUNDS"); do
    if [ $((i % 2)) -eq 1 ]; then
        controller "$i" | tee -a "$OUT/times"
        search "$i" | tee -a "$OUT/times"
    else
        search "$i" | tee -a "$OUT/times"
        controller "$i" | tee -a "$OUT/times"
    fi
done
python3 - "$OUT/times" <<'PY'
import statistics, sys
c, s = [], []
for line in open(sys.argv[1]):
    kind, secs = line.split()[0], float(line.split()[1])
    (c if kind == "controller" else s).append(secs)
mc, ms = statistics.median(c), statistics.median(s)
print(f"median of {len(c)}: controller {mc:.1f} s, search {ms:.1f} s, controller / search = {mc / ms:.2f}")
PY
