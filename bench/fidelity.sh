#!/usr/bin/env bash
# How accurate is servebench's own measurement, and what does it cost?
#
# Ground truth: `servebench sim` in exact mode (TTFT 50 ms, a chunk every 10 ms, 200 tokens,
# so E2EL 2,040 ms), in its own process pinned to CPU 0 (one runtime thread). The client:
# `servebench run` pinned to CPU 1. For each concurrency level C (default 1 64 512 2048 4096)
# it runs C warm-up requests (which leave C open connections in the pool) and then C × ROUNDS
# measured requests with at most C in flight, and prints, against the truth:
# reported − true TTFT, ITL and E2EL (mean, p50, p99, ms); client CPU per streamed event
# (µs); client peak RSS; whether the server kept its schedule (its own count of chunks handed
# over > 1 ms late, GET /sim/stats; and its requests read > 1 ms after the kernel received
# them, with the largest such delay: they keep their schedule from the arrival, see
# src/sim/mod.rs, but show the one-thread simulator falling behind); and servebench's
# validity verdict for the run.
#
# Both processes run under real-time priority (SCHED_FIFO 10, `chrt`) when the user may set
# it (root or CAP_SYS_NICE): on a machine shared with other work, a compiler preempting the
# simulator or the client for a scheduler slice (~4 ms) otherwise shows up as a step in every
# stream in flight, and that, not the client, was most of the error measured at 64 streams.
# The line before the table says which was used, and the load average.
#
# Reference row: at each level, a minimal tokio client (examples/sim_load: one thread, no HTTP
# library, no parsing beyond counting SSE events, no timestamps) streams C × (ROUNDS + 1)
# requests of the same shape from the same simulator, pinned the same way; its CPU per event
# is what reading C streams costs on this machine before any measurement work, so
# servebench's figure is read against it (the row prints servebench's / the minimal client's).
#
# PEERS=guidellm also runs GuideLLM (bench/fidelity_peers.sh: a throwaway virtualenv outside
# the repository), PEERS=vllm-bench vLLM's Rust client (VLLM_BENCH=its binary,
# PEER_TOKENIZER=the tokenizer.json it counts with), or both ("guidellm vllm-bench"), against
# the same simulator right after servebench at each level, pinned the same way, and prints
# their rows in the same table.
#
# Cold start: after the table, for each level in COLD (default 512; COLD= skips
# it) one run of C requests with no warm-up, so every request opens its connection at the same
# instant, and a second table: TTFT error (counted from the first byte written, after the
# connect), the new connections and their mean connect time, and the error of "TTFT including
# connection setup" (what a client that times from before the connect reports).
#
# Usage: bench/fidelity.sh [LEVELS...]      environment: ROUNDS=2 TOKENS=200 PEERS= COLD=512
#        ITL_MS=10 (the simulator's chunk interval: a longer one keeps a one-core truth on its
#        schedule at thousands of streams)
#        CLIENT_ARGS= (extra `servebench run` options, e.g. "--backend openai-chat")
#        TOKENIZERS=words (each a `--tokenizer` value; several, space-separated, run one after
#        another at each level, a row each: e.g. "words cl100k_base path/tokenizer.json
#        path/model.gguf" measures what counting answers with each kind costs the measurement)
#        CLIENT_BIN= (another servebench binary as the client, e.g. an older build to compare
#        with; the simulator is always this tree's), SKIP_BUILD=1 (use what is built)
# Needs: Linux, taskset, /usr/bin/time (GNU time: apt-get install time), python3, 2+ CPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LEVELS=("${@:-1 64 512 2048 4096}")
read -r -a LEVELS <<<"${LEVELS[*]}"
ROUNDS="${ROUNDS:-2}"
TOKENS="${TOKENS:-200}"
ulimit -n 65536 2>/dev/null || true
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
[ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet --bin servebench --example sim_load
source bench/lib.sh

PRIO=()
if chrt -f 10 true 2>/dev/null; then PRIO=(chrt -f 10); fi
ITL_MS="${ITL_MS:-10}"
start_sim "${PRIO[@]}" taskset -c 0 target/release/servebench sim --threads 1 --ttft-ms 50 --itl-ms "$ITL_MS"

echo "client and simulator priority: ${PRIO[*]:-normal (chrt not permitted)}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| concurrency | requests | TTFT err mean / p50 / p99 (ms) | ITL err mean / p50 / p99 (ms) | E2EL err mean / p50 / p99 (ms) | client µs per event | client peak RSS (MiB) | server late chunks | server late intakes (max ms) | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
read -r -a TOKS <<<"${TOKENIZERS:-words}"
for C in "${LEVELS[@]}"; do
    N=$((C * ROUNDS))
    : >"$OUT/cpu.$C"
    for T in "${!TOKS[@]}"; do
    /usr/bin/time -f "%M %U %S" -o "$OUT/time.$C" "${PRIO[@]}" taskset -c 1 "${CLIENT_BIN:-target/release/servebench}" run \
        --base-url "$URL" --tokenizer "${TOKS[$T]}" --num-prompts "$N" --max-concurrency "$C" \
        --input-len 32 --output-len "$TOKENS" --num-warmups "$C" --metric-percentiles 50,99 \
        --percentile-metrics ttft,tpot,itl,e2el --result-dir "$OUT" --result-filename "c$C-$T.json" \
        --no-preflight -q ${CLIENT_ARGS:-} || true
    label="$C"
    [ "${#TOKS[@]}" -eq 1 ] || label="$C ($(basename "${TOKS[$T]}"))"
    python3 - "$OUT/c$C-$T.json" "$OUT/time.$C" "$label" "$N" "$TOKENS" "$OUT/cpu.$C" "$ITL_MS" "$C" <<'PY'
import json, sys
path, timef, label, n, tokens = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
cpu_file, itl, c = sys.argv[6], float(sys.argv[7]), int(sys.argv[8])
r = json.load(open(path))
rss_kib, user, sys_s = open(timef).read().split()[-3:]
truth = {"ttft": 50.0, "itl": itl, "e2el": 50.0 + (tokens - 1) * itl}
def err(m):
    return " / ".join(f"{r[f'{k}_{m}_ms'] - truth[m]:+.2f}" for k in ("mean", "median", "p99"))
# The client's CPU time also covers the C warm-up requests, which stream as many chunks each.
events = (r["summary"]["total_output_chunks"] * (n + c) / n) or 1
cpu_us = (float(user) + float(sys_s)) / events * 1e6
open(cpu_file, "a").write(f"{cpu_us}\n")
v = r.get("validity") or {}
ss = v.get("server_stats") or {}
late = ss.get("late_chunks", "?")
intakes = f"{ss.get('late_intakes', '?')} ({ss.get('max_intake_us', 0) / 1000:.1f})"
print(f"| {label} | {n} ({r['completed']} ok) | {err('ttft')} | {err('itl')} | {err('e2el')} | {cpu_us:.2f} | {int(rss_kib)/1024:.0f} | {late} | {intakes} | {v.get('verdict', '?')} |")
PY
    done
    /usr/bin/time -f "%M %U %S" -o "$OUT/rawtime.$C" "${PRIO[@]}" taskset -c 1 bash -c \
        'for _ in $(seq 0 "$4"); do "$1" "$2" "$3" "$5" 0 || exit 1; done' _ \
        target/release/examples/sim_load "${URL#http://}" "$C" "$ROUNDS" "$TOKENS" >"$OUT/raw.$C"
    python3 - "$OUT/raw.$C" "$OUT/rawtime.$C" "$C" "$OUT/cpu.$C" <<'PY'
import re, sys
out, timef, c = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
rss_kib, user, sys_s = open(timef).read().split()[-3:]
events = sum(int(e) for e in re.findall(r"events=(\d+)", out)) or 1
floor = (float(user) + float(sys_s)) / events * 1e6
ours = " / ".join(f"{float(x) / floor:.2f}" for x in open(sys.argv[4]).read().split())
print(f"| {c} (minimal tokio client) | — | — | — | — | {floor:.2f} (servebench / this: {ours}) | {int(rss_kib)/1024:.0f} | — | — | — |")
PY
    if [ -n "${PEERS:-}" ]; then
        ROUNDS="$ROUNDS" TOKENS="$TOKENS" bench/fidelity_peers.sh "$URL" "$OUT" "${PRIO[*]} taskset -c 1" "$C"
    fi
done

read -r -a COLD_LEVELS <<<"${COLD-512}"
if [ "${#COLD_LEVELS[@]}" -gt 0 ]; then
    echo
    echo "| cold start: concurrency | requests | TTFT err mean / p50 / p99 (ms) | new connections | connect mean / p99 (ms) | TTFT incl. setup err mean / p99 (ms) | server late chunks | verdict |"
    echo "|---|---|---|---|---|---|---|---|"
fi
for C in "${COLD_LEVELS[@]}"; do
    "${PRIO[@]}" taskset -c 1 "${CLIENT_BIN:-target/release/servebench}" run \
        --base-url "$URL" --tokenizer words --num-prompts "$C" --max-concurrency "$C" \
        --input-len 32 --output-len "$TOKENS" --num-warmups 0 --metric-percentiles 50,99 \
        --result-dir "$OUT" --result-filename "cold$C.json" --no-preflight -q ${CLIENT_ARGS:-} || true
    python3 - "$OUT/cold$C.json" "$C" <<'PY'
import json, sys
r, c = json.load(open(sys.argv[1])), int(sys.argv[2])
s = r["summary"]
ttft = " / ".join(f"{r[f'{k}_ttft_ms'] - 50.0:+.2f}" for k in ("mean", "median", "p99"))
setup = s.get("connection_setup_ms") or {}
with_setup = s.get("ttft_with_setup_ms") or {}
def p99(d):
    return next((v for p, v in d.get("percentiles", []) if p == 99.0), float("nan"))
setup_s = f"{setup.get('mean', float('nan')):.2f} / {p99(setup):.2f}"
cold_s = f"{with_setup.get('mean', float('nan')) - 50.0:+.2f} / {p99(with_setup) - 50.0:+.2f}"
v = r.get("validity") or {}
late = (v.get("server_stats") or {}).get("late_chunks", "?")
print(f"| {c} | {c} ({r['completed']} ok) | {ttft} | {s.get('new_connections', '?')} | {setup_s} | {cold_s} | {late} | {v.get('verdict', '?')} |")
PY
done
