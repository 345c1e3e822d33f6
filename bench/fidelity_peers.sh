#!/usr/bin/env bash
# Peer clients measured the way bench/fidelity.sh measures servebench, against the same
# simulator in the same run, each named in PEERS (space-separated):
#
# - `guidellm`: GuideLLM (PyPI `guidellm`, pinned), installed on first use into a throwaway
#   virtualenv outside the repository (${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/
#   servebench-peers/venv}; about 6 GB, as it pulls in PyTorch). Nothing of it is committed.
#   GuideLLM needs a Hugging Face tokenizer and cannot download one here, so the script saves a
#   whitespace word-level tokenizer (the `tokenizers` package that GuideLLM installs builds
#   it) into a local folder and passes its path: the simulator's answers are words, so output
#   counts agree.
# - `vllm-bench`: vLLM's Rust client, the binary VLLM_BENCH points at (built with cargo from
#   vLLM's public source, `rust/src/bench`, or its standalone repository), run as `vllm bench
#   serve` is: the random dataset, `--ignore-eos`, the tokenizer PEER_TOKENIZER (a
#   `tokenizer.json` or a folder holding one: give the one servebench's row counted with).
#   Its JSON result has vLLM's keys, so its TTFT, ITL and E2EL are its own figures.
#
# Prompts are synthetic (32 tokens, 200 output tokens, as servebench's).
#
# Usage (called by bench/fidelity.sh): bench/fidelity_peers.sh URL OUTDIR PREFIX C...
#   PREFIX is the command prefix that pins the client (e.g. "chrt -f 10 taskset -c 1").
# Prints one table row per peer and level, in bench/fidelity.sh's columns.
set -euo pipefail
URL="$1" OUT="$2" PREFIX="$3"
shift 3
ROUNDS="${ROUNDS:-2}"
TOKENS="${TOKENS:-200}"
VENV="${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench-peers/venv}"
ITL_MS="${ITL_MS:-10}"
read -r -a PEER_LIST <<<"${PEERS:-guidellm}"
read -r -a PIN <<<"$PREFIX"

guidellm_level() { # C N
    local C="$1" N="$2"
    if [ ! -x "$VENV/bin/guidellm" ]; then
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q guidellm==0.8.1 >&2
    fi
    [ -d "$OUT/peer-tokenizer" ] || "$VENV/bin/python" - "$OUT/peer-tokenizer" <<'PY'
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(sys.argv[1])
PY
    HF_HUB_OFFLINE=1 /usr/bin/time -f "%M %U %S" -o "$OUT/peer-time.$C" "${PIN[@]}" \
        "$VENV/bin/guidellm" run --backend "kind=openai_http,target=$URL,model=servebench-sim" \
        --profile "kind=concurrent,streams=$C" \
        --data "kind=synthetic_text,prompt_tokens=32,output_tokens=$TOKENS" \
        --tokenizer "kind=huggingface_auto,model=$OUT/peer-tokenizer" \
        --constraint "kind=max_requests,count=$N" \
        --output "kind=json,path=$OUT/peer-c$C.json" --disable-console >"$OUT/peer.$C.log" 2>&1 || true
    python3 - "$OUT/peer-c$C.json" "$OUT/peer-time.$C" "$C" "$N" "$TOKENS" <<'PY'
import json, sys
path, timef, c, n, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rss_kib, user, sys_s = open(timef).read().split()[-3:]
try:
    b = json.load(open(path))["benchmarks"][0]
except (OSError, ValueError, KeyError, IndexError) as e:
    print(f"| {c} (GuideLLM) | {n} (no result: {type(e).__name__}) | | | | | {int(rss_kib)/1024:.0f} | | | |")
    sys.exit()
ok = b["requests"]["successful"]
def pct(v, q):
    v = sorted(v)
    k = (len(v) - 1) * q / 100
    f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
def err(v, truth):
    return " / ".join(f"{x - truth:+.2f}" for x in (sum(v) / len(v), pct(v, 50), pct(v, 99)))
# GuideLLM's own per-request figures: TTFT (ms) and request latency (s, to the end of the
# response). Its ITL is a mean per request; the p50/p99 columns are of those means.
ttft = [r["time_to_first_token_ms"] for r in ok]
e2el = [r["request_latency"] * 1e3 for r in ok]
itl = [r["inter_token_latency_ms"] for r in ok if r.get("inter_token_latency_ms") is not None]
events = sum(r["info"]["timings"]["token_iterations"] for r in ok) or 1
cpu_us = (float(user) + float(sys_s)) / events * 1e6
print(f"| {c} (GuideLLM) | {n} ({len(ok)} ok) | {err(ttft, 50.0)} | {err(itl, 10.0) if itl else '—'} | {err(e2el, 50.0 + (tokens - 1) * 10.0)} | {cpu_us:.2f} | {int(rss_kib)/1024:.0f} | | | |")
PY
}

vllm_bench_level() { # C N
    local C="$1" N="$2"
    [ -x "${VLLM_BENCH:-}" ] || { echo "| $C (vllm-bench) | VLLM_BENCH is not an executable: nothing run | | | | | | | | |"; return; }
    /usr/bin/time -f "%M %U %S" -o "$OUT/vb-time.$C" "${PIN[@]}" "$VLLM_BENCH" \
        --backend vllm --base-url "$URL" --model servebench-sim --tokenizer "${PEER_TOKENIZER:?set PEER_TOKENIZER}" \
        --dataset-name random --random-input-len 32 --random-output-len "$TOKENS" --ignore-eos \
        --num-prompts "$N" --max-concurrency "$C" --num-warmups "$C" \
        --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 \
        --save-result --result-dir "$OUT" --result-filename "vb-c$C.json" --disable-tqdm \
        >"$OUT/vb.$C.log" 2>&1 || true
    python3 - "$OUT/vb-c$C.json" "$OUT/vb-time.$C" "$C" "$N" "$TOKENS" "$ITL_MS" <<'PY'
import json, sys
path, timef, c, n, tokens, itl = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
rss_kib, user, sys_s = open(timef).read().split()[-3:]
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"| {c} (vllm-bench) | {n} (no result: {type(e).__name__}) | | | | | {int(rss_kib)/1024:.0f} | | | |")
    sys.exit()
truth = {"ttft": 50.0, "itl": itl, "e2el": 50.0 + (tokens - 1) * itl}
def err(m):
    return " / ".join(f"{r[f'{k}_{m}_ms'] - truth[m]:+.2f}" for k in ("mean", "median", "p99"))
# Its warm-ups stream as many chunks each as a measured request, one token a chunk.
events = (r.get("total_output_tokens") or r["completed"] * tokens) * (n + c) / n or 1
cpu_us = (float(user) + float(sys_s)) / events * 1e6
print(f"| {c} (vllm-bench) | {n} ({r['completed']} ok) | {err('ttft')} | {err('itl')} | {err('e2el')} | {cpu_us:.2f} | {int(rss_kib)/1024:.0f} | | | |")
PY
}

for C in "$@"; do
    N=$((C * ROUNDS))
    for P in "${PEER_LIST[@]}"; do
        case "$P" in
            guidellm) guidellm_level "$C" "$N" ;;
            vllm-bench) vllm_bench_level "$C" "$N" ;;
            *) echo "unknown peer: $P (guidellm, vllm-bench)" >&2; exit 2 ;;
        esac
    done
done
