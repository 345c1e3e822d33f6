#!/usr/bin/env bash
# Peak memory of a run's media: `servebench run` under GNU time (`/usr/bin/time -v`, maximum
# resident set size) against the simulator (`servebench sim`, TTFT 20 ms, a chunk every
# 10 ms), every request sent at once (`--request-rate inf`), so every body is in flight
# together: the worst case of the bound in docs/reliability.md's Limits table.
#
# Rows: a text-only run (the base), random-mm images (N requests of one SIDE × SIDE noise
# PNG), and transcription clips (N requests of one CLIP_S-second 16 kHz WAV). For each: the
# media bytes as sent (the result's `media.generation.bytes`), the peak RSS, and
# (peak − base) / media bytes, the factor the bound on the media is set by.
#
# Usage: bench/media_memory.sh [N]     (default 60; environment: SIDE=2048, CLIP_S=600)
# Needs: Linux, GNU time, python3. About 2 minutes on 2 cores at the defaults (1 GB of media).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

N="${1:-60}"
SIDE="${SIDE:-2048}"
CLIP_S="${CLIP_S:-600}"
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
cargo build --release --quiet --bin servebench
BIN=target/release/servebench
source bench/lib.sh

start_sim "$BIN" sim --ttft-ms 20 --itl-ms 10

# measure NAME ARGS...: one run under GNU time; prints "NAME media_bytes peak_kib".
measure() {
    local name=$1; shift
    /usr/bin/time -v -o "$OUT/$name.time" "$BIN" run --quiet --base-url "$URL" --tokenizer words \
        --num-prompts "$N" --request-rate inf --input-len 16 --output-len 4 --timeout 600 \
        --result-dir "$OUT" --result-filename "$name.json" "$@" >/dev/null
    python3 - "$OUT/$name.json" "$OUT/$name.time" "$name" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
def find(v):
    if isinstance(v, dict):
        g = v.get("generation")
        if isinstance(g, dict) and "bytes" in g:
            return g["bytes"]
        return next((b for b in map(find, v.values()) if b is not None), None)
    if isinstance(v, list):
        return next((b for b in map(find, v) if b is not None), None)
    return None
s = doc["summary"]
assert s["completed"] == s.get("num_prompts", s["completed"]), "not every request completed"
peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[2]).read()).group(1))
print(sys.argv[3], find(doc) or 0, peak)
PY
}

{
    measure text
    measure images --dataset-name random-mm --backend openai-chat \
        --random-mm-bucket-config "{($SIDE, $SIDE, 1): 1}" --random-mm-base-items-per-request 1
    measure clips --backend openai-audio --audio-duration-s "$CLIP_S"
} >"$OUT/rows"

python3 - "$OUT/rows" "$N" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
base = int(rows[0][2]) * 1024
print(f"{sys.argv[2]} requests at once; peak RSS (GNU time)\n")
print("| run | media bytes as sent | peak RSS | (peak − text-only) / media |")
print("|---|---:|---:|---:|")
for name, media, kib in rows:
    media, peak = int(media), int(kib) * 1024
    ratio = f"{(peak - base) / media:.2f}" if media else "—"
    print(f"| {name} | {media / 2**20:,.0f} MiB | {peak / 2**20:,.0f} MiB | {ratio} |")
PY
