#!/usr/bin/env bash
# Calibration of the simulator's 405B presets against the seeds (vLLM benchmark_serving
# reports in ../shared/reference/seeds: 001 = TGI, 002 = vLLM, Llama-3.1-405B).
#
# For each preset it starts `servebench sim --preset P --time-scale K`, drives it with the
# real client (`servebench run`, 80-word prompts, all requests at once as the seeds'
# `--request-rate inf`), converts the client's figures back to simulated time (times × K,
# throughput ÷ K) and prints measured vs seed with the ratio, as a Markdown table.
#
# Then vLLM with one long prompt at a time (seed 002's single-prompt rows: TTFT only).
#
# Usage: bench/calibrate.sh [K]     (K defaults to 20; environment: COUNTS="1 16 256 2048",
#        LONG="10000 16000 32000 64000 128000"; either may be empty to skip those rows)
# Needs: a release build (built here if missing), python3. Takes under two minutes at K=20.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

K="${1:-20}"
COUNTS="${COUNTS-1 16 256 2048}"
LONG="${LONG-10000 16000 32000 64000 128000}"
BIN=target/release/servebench
[ -x "$BIN" ] || cargo build --release
source bench/lib.sh

run_client() { # backend n input_len name
    "$BIN" run --quiet --base-url "$URL" --tokenizer words --backend "$1" --num-prompts "$2" --input-len "$3" \
        --output-len 256 --timeout 3600 --result-dir "$OUT" --result-filename "$4.json"
}

# preset, backend, seed file, then "n throughput ttft tpot" rows from the seed's tables.
calibrate() {
    local preset=$1 backend=$2 seed=$3; shift 3
    start_sim "$BIN" sim --preset "$preset" --time-scale "$K"
    for n in $COUNTS; do run_client "$backend" "$n" 80 "$preset-$n"; done
    if [ "$preset" = vllm-llama-405b ]; then
        for len in $LONG; do run_client "$backend" 1 "$len" "$preset-$len"; done
    fi
    stop_sim
}

calibrate tgi-llama-405b tgi 001
calibrate vllm-llama-405b openai 002

python3 - "$OUT" "$K" "$COUNTS" "$LONG" <<'PY'
import json, sys, os
out, k, counts = sys.argv[1], float(sys.argv[2]), [int(c) for c in sys.argv[3].split()]
# The seeds' figures: output tok/s, mean TTFT ms, mean TPOT ms (80-token book prompts).
seeds = {
    ("tgi-llama-405b", "001"): {1: (22.27, 123.48, 43.48), 16: (165.52, 581.37, 60.53),
        256: (667.82, 6981.56, 194.79), 2048: (852.79, 55778.92, 767.29)},
    ("vllm-llama-405b", "002"): {1: (18.75, 314.58, 50.19), 16: (142.52, 1034.69, 63.38),
        256: (345.83, 11787.27, 389.49), 2048: (438.42, 128150.28, 461.09)},
}
limits = {"thr": 0.25, "ttft": 0.35, "tpot": 0.35}
def cell(got, want, lim):
    r = got / want
    mark = "" if abs(r - 1) <= lim else " ✗"
    return f"{got:.1f} / {want:.1f} | {r:.2f}{mark}"
print(f"time scale K = {k:g}; measured (client figures × K, throughput ÷ K) / seed | ratio\n")
print("| preset (seed) | prompts at once | output tok/s | ratio | mean TTFT ms | ratio | mean TPOT ms | ratio |")
print("|---|---|---|---|---|---|---|---|")
bad = 0
for (preset, seed), rows in seeds.items():
    for n in counts:
        if n not in rows: continue
        r = json.load(open(os.path.join(out, f"{preset}-{n}.json")))
        thr, ttft, tpot = r["output_throughput"] / k, r["mean_ttft_ms"] * k, r["mean_tpot_ms"] * k
        w = rows[n]
        cells = [cell(thr, w[0], limits["thr"]), cell(ttft, w[1], limits["ttft"]), cell(tpot, w[2], limits["tpot"])]
        bad += sum("✗" in c for c in cells)
        print(f"| {preset} ({seed}) | {n} | " + " | ".join(cells) + " |")
# Seed 002's single long prompts: input tokens, mean TTFT ms.
long = {10000: 12286.18, 16000: 23828.07, 32000: 66549.57, 64000: 209674.58, 128000: 734188.96}
for n in [int(x) for x in sys.argv[4].split()]:
    r = json.load(open(os.path.join(out, f"vllm-llama-405b-{n}.json")))
    c = cell(r["mean_ttft_ms"] * k, long[n], limits["ttft"]); bad += "✗" in c
    print(f"| vllm-llama-405b (002) | 1 × {n:,}-token prompt | | | {c} | | |")
print(f"\nlimits: throughput ±25%, TTFT and TPOT ±35%; {'all within' if bad == 0 else f'{bad} outside (✗)'}")
PY
