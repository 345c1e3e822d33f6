#!/usr/bin/env bash
# Checks that two servebench binaries (say, before and after a refactor) write the same
# documents and print the same reports, one run of each subcommand.
#
#   bench/same_output.sh OLD_BINARY NEW_BINARY
#
# Measured runs (run, a sweep, search, shards) differ in their timings from one run to the
# next, so their result documents are compared field by field: every key, every count, token
# total, prompt length and config value must be equal, and the timing figures within 50 % + 2 (a loaded machine moves a minimum by milliseconds)
# (against the exact-mode simulator both binaries measure the same schedule). What renders a
# saved document (report, report --html, compare, plot, import, merge) must be byte-identical
# when both binaries read the same input. Measured: a run, `--repeat 2` (each repetition and the
# spread), `--stages` (the run, each stage and the sweep document), a sweep and a search. Each
# rule between flags is broken once: the refusal's stderr and exit code must be byte-identical
# (each binary's own name aside).
set -euo pipefail
OLD="$(realpath "$1")"
NEW="$(realpath "$2")"
cd "$(dirname "$0")/.."
source bench/lib.sh

fails=0
same_bytes() { # NAME FILE_A FILE_B (each binary's own output folder named OUT in both)
    # (and each binary's own name, which clap's usage lines print)
    local norm="s#$OUT/old#OUT#g; s#$OUT/new#OUT#g; s#$(basename "$OLD") #servebench #g; s#$(basename "$NEW") #servebench #g"
    if cmp -s <(sed "$norm" "$2") <(sed "$norm" "$3"); then echo "identical  $1"; else echo "DIFFERENT  $1"; diff <(head -c 4000 "$2") <(head -c 4000 "$3") | head -20 || true; fails=$((fails + 1)); fi
}
same_doc() { # NAME FILE_A FILE_B: same keys and exact values, timings within 20 %
    if python3 - "$2" "$3" <<'PY'
import json, sys, math
a, b = (json.load(open(p)) for p in sys.argv[1:3])
# Values that are times, or derived from when/how fast things happened (and the simulator's
# port, which the system picks).
TIMING = ("_ms", "_s", "duration", "throughput", "date", "started_at", "lag", "cpu", "rate",
          "ttfts", "itls", "e2els", "utilisation", "records_file", "result", "unix_ns",
          "offset", "uncertainty", "late", "intake", "server_stats", "good", "samples",
          "event_loop", "std", "reasons", "base_url", "verdict", "max_", "min_", "p99", "p50", "mean", "median")
bad = []
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        if set(x) != set(y):
            bad.append(f"{path}: keys differ: {sorted(set(x) ^ set(y))}")
        for k in set(x) & set(y):
            walk(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, list) and isinstance(y, list):
        timing = any(t in path for t in TIMING)
        if len(x) != len(y) and not timing:
            bad.append(f"{path}: {len(x)} vs {len(y)} items")
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, f"{path}[{i}]")
    elif isinstance(x, float) or isinstance(y, float):
        if any(t in path for t in TIMING):
            if x is not None and y is not None and abs(x - y) > 0.5 * max(abs(x), abs(y)) + 2.0:
                bad.append(f"{path}: {x} vs {y}")
        elif x != y:
            bad.append(f"{path}: {x} vs {y}")
    elif x != y and not any(t in path for t in TIMING):
        bad.append(f"{path}: {x!r} vs {y!r}")
walk(a, b, "")
if bad:
    print("\n".join(bad[:20]))
    sys.exit(1)
PY
    then echo "equivalent $1"; else echo "DIFFERENT  $1"; fails=$((fails + 1)); fi
}

common=(--sim-preset exact --num-prompts 40 --request-rate 80 --seed 7 --input-len 32 --output-len 16 --quiet)
for v in old new; do
    bin=OLD; [ $v = new ] && bin=NEW
    b="${!bin}"
    mkdir -p "$OUT/$v"
    "$b" run "${common[@]}" --result-dir "$OUT/$v" --result-filename run.json
    "$b" run --sim-preset exact --num-prompts 8 --max-concurrency 1,4 --seed 7 --quiet \
        --result-dir "$OUT/$v" --result-filename sweep.json
    "$b" search --sim-preset exact --num-prompts 20 --seed 7 --quiet --goodput ttft:80 \
        --start 50 --max 200 --max-probes 3 --result-dir "$OUT/$v" --result-filename search.json \
        >"$OUT/$v/search.txt" || true
    "$b" run "${common[@]}" --repeat 2 --result-dir "$OUT/$v" --result-filename rep.json \
        >/dev/null
    "$b" run --sim-preset exact --stages 40:0.5,80:0.5 --seed 7 --input-len 32 --output-len 16 \
        --quiet --result-dir "$OUT/$v" --result-filename staged.json
    # Refusals: each rule between flags, its one line and exit code.
    i=0
    while IFS= read -r line; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        (cd "$OUT/$v" && "$b" $line >/dev/null 2>"refusal$i.txt"; echo "exit $?" >>"refusal$i.txt") || true
    done <<'REFUSALS'
run --num-prompts 2,3 --max-concurrency 1,2
run --num-prompts 2,3 --shard 0/2
run --stages 1:1 --repeat 2
run --repeat 2 --shard 0/2
run --summary-only
run --base-url http://127.0.0.1:9 --sim-preset exact --tokenizer words
run --base-url http://127.0.0.1:9 --time-scale 2 --tokenizer words
run --base-url http://127.0.0.1:9
run --metadata a=1 --metadata a=2
run --num-prompts 2,100000000
run --cooldown=-1 --num-prompts 2,3
run --request-rate 0
search --goodput ttft:10 --target 2
search --goodput ttft:10 --start 5 --max 1
search --goodput ttft:10 --precision 1
search
search --goodput ttft:10 --shard 0/2
sim --preset exact --max-num-seqs 4
REFUSALS
done
same_doc "run result" "$OUT/old/run.json" "$OUT/new/run.json"
same_doc "sweep document" "$OUT/old/sweep.sweep.json" "$OUT/new/sweep.sweep.json"
for f in "$OUT"/old/sweep-*.json; do
    case "$f" in *.records.jsonl) continue ;; esac
    same_doc "sweep step $(basename "$f")" "$f" "$OUT/new/$(basename "$f")"
done
same_doc "search document" "$OUT/old/search.search.json" "$OUT/new/search.search.json"
for f in "$OUT"/old/rep.rep?.json "$OUT"/old/rep.repeat.json "$OUT"/old/staged*.json; do
    same_doc "$(basename "$f")" "$f" "$OUT/new/$(basename "$f")"
done
for f in "$OUT"/old/refusal*.txt; do
    same_bytes "$(basename "$f" .txt): $(head -c 70 "$f" | head -1)" "$f" "$OUT/new/$(basename "$f")"
done

# Renderers, both binaries reading the new binary's saved documents.
for v in old new; do
    bin=OLD; [ $v = new ] && bin=NEW
    b="${!bin}"
    r="$OUT/$v/render"
    mkdir -p "$r/plots"
    "$b" report "$OUT/new/run.json" >"$r/report.txt"
    "$b" report "$OUT/new/sweep.sweep.json" >"$r/sweep-report.txt"
    "$b" report "$OUT/new/run.json" --html "$r/run.html" 2>/dev/null
    for fmt in csv markdown; do # every format both binaries print, each document kind
        "$b" report "$OUT/new/run.json" --format $fmt >"$r/report-$fmt.$fmt"
        "$b" report "$OUT/new/sweep.sweep.json" --format $fmt >"$r/sweep-report-$fmt.$fmt"
        "$b" report tests/fixtures/seed002_vllm.txt --format $fmt >"$r/seed002-report-$fmt.$fmt"
        "$b" compare --format $fmt "$OUT/new/sweep.sweep.json" "$OUT/old/sweep.sweep.json" >"$r/compare-$fmt.$fmt"
    done
    "$b" report "$OUT/new/run.records.jsonl" --format csv >"$r/records.csv"
    "$b" compare "$OUT/new/run.json" "$OUT/old/run.json" >"$r/compare.txt"
    "$b" compare --markdown "$OUT/new/sweep.sweep.json" "$OUT/old/sweep.sweep.json" >"$r/compare.md"
    "$b" plot "$OUT/new/sweep.sweep.json" --out-dir "$r/plots" >/dev/null
    for s in 000_llmperf 001_tgi 002_vllm 003_report; do
        "$b" import "tests/fixtures/seed$s.txt" --output "$r/import-$s.json" >"$r/import-$s.txt"
        "$b" report "$r/import-$s.json" >"$r/import-report-$s.txt"
        "$b" report "$r/import-$s.json" --format csv >"$r/import-report-$s.csv"
        "$b" report "$r/import-$s.json" --format markdown >"$r/import-report-$s.md"
    done
done
for f in "$OUT"/old/render/*.* "$OUT"/old/render/plots/*; do
    rel="${f#"$OUT"/old/render/}"
    same_bytes "$rel" "$f" "$OUT/new/render/$rel"
done

# Merge: four shards run once against one simulator, merged by both binaries.
mkdir -p "$OUT/shards"
start_sim "$NEW" sim
pids=()
for i in 0 1 2 3; do # the shards run together, as they would on four hosts
    "$NEW" run --base-url "$URL" --tokenizer words --num-prompts 40 --request-rate 80 --max-concurrency 40 --output-len 16 --seed 7 \
        --shard "$i/4" --quiet --result-dir "$OUT/shards" --result-filename "s$i.json" &
    pids+=($!)
done
wait "${pids[@]}"
"$OLD" merge "$OUT"/shards/s?.json --output "$OUT/old/merged.json" --quiet
stop_sim
"$NEW" merge "$OUT"/shards/s?.json --output "$OUT/new/merged.json" --quiet
same_bytes "merged result" "$OUT/old/merged.json" "$OUT/new/merged.json"
same_bytes "merged records" "$OUT/old/merged.records.jsonl" "$OUT/new/merged.records.jsonl"

echo "$fails difference(s)"
[ "$fails" = 0 ]
