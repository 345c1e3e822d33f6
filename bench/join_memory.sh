#!/usr/bin/env bash
# Peak memory of `servebench join` against the size of the trace it reads: a run of REQUESTS
# requests against the simulator (default 2,000), its spans (`GET /sim/otlp`) and spans of
# other requests (the simulator's span shape, ids no request has) until the file holds SIZE_MB
# megabytes (default 150), in both shapes a trace comes in: documents of 1,000 spans, one per
# line (an OpenTelemetry Collector's file exporter), and one document holding every span.
# Prints, for each, the trace's size, join's peak RSS (GNU time), its wall time and RSS /
# trace size; the join must match every request (checked).
#
# Usage: bench/join_memory.sh [SIZE_MB] [REQUESTS]
#   BIN=path/to/servebench bench/join_memory.sh   measures that binary (e.g. an older build)
# Needs: Linux, GNU time, curl, python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SIZE_MB="${1:-150}"
REQUESTS="${2:-2000}"
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet --bin servebench
    BIN=target/release/servebench
fi
source bench/lib.sh

start_sim "$BIN" sim --ttft-ms 5 --itl-ms 1
"$BIN" run --base-url "$URL" --tokenizer words --num-prompts "$REQUESTS" --max-concurrency 64 \
    --input-len 16 --output-len 4 --no-preflight -q --result-dir "$OUT" \
    --result-filename run.json >/dev/null
curl -sf "$URL/sim/otlp" >"$OUT/sim_spans.json"
stop_sim

python3 - "$OUT/sim_spans.json" "$OUT" "$SIZE_MB" <<'PY'
import copy, json, sys
doc = json.load(open(sys.argv[1]))
spans = [s for r in doc["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
template, limit = spans[0], int(float(sys.argv[3]) * 1e6)
def other(n):
    s = copy.deepcopy(template)
    for a in s["attributes"]:
        if a["key"] == "gen_ai.request.id":
            a["value"] = {"stringValue": f"cmpl-other-{n}-0"}
    return json.dumps(s)
wrap = ('{"resourceSpans": [{"scopeSpans": [{"spans": [', ']}]}]}')
lines = open(sys.argv[2] + "/lines.json", "w")
one = open(sys.argv[2] + "/one.json", "w")
lines.write(json.dumps(doc) + "\n")
one.write(wrap[0] + ", ".join(json.dumps(s) for s in spans))
n = 0
while lines.tell() < limit:
    batch = [other(n + k) for k in range(1000)]
    n += 1000
    lines.write(wrap[0] + ", ".join(batch) + wrap[1] + "\n")
    one.write(", " + ", ".join(batch))
one.write(wrap[1] + "\n")
print(f"trace: {len(spans)} spans of the run, {n} others")
PY

for shape in lines one; do
    /usr/bin/time -f "%M %e" -o "$OUT/time" "$BIN" join "$OUT/run.json" "$OUT/$shape.json" \
        --format json -o "$OUT/join.json" 2>/dev/null
    read -r rss_kib wall <"$OUT/time"
    matched=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["matched"])' "$OUT/join.json")
    bytes=$(stat -c %s "$OUT/$shape.json")
    [ "$matched" = "$REQUESTS" ] || { echo "$shape: matched $matched of $REQUESTS" >&2; exit 1; }
    awk -v s="$shape" -v b="$bytes" -v r="$rss_kib" -v w="$wall" 'BEGIN {
        printf "%-5s trace %.1f MB: join peak RSS %.1f MB (%.2f x the trace), wall %.1f s\n",
            s, b / 1e6, r * 1024 / 1e6, r * 1024 / b, w }'
done
