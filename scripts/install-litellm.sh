#!/usr/bin/env bash
# Installs LiteLLM's proxy, the second real OpenAI-compatible server of the integration
# tests (a gateway on FastAPI and uvicorn, put in front of the llama.cpp server that
# scripts/install-real-server.sh installs), into .venv-litellm/ at the repository root.
# Every package is pinned in scripts/litellm-requirements.txt and installed with
# --no-deps, so nothing unpinned comes in; all are wheels (nothing is compiled).
# Idempotent: when the pinned versions are already there it only checks them.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo_root/.venv-litellm"
py="$venv/bin/python"
pins="$repo_root/scripts/litellm-requirements.txt"

# Exits non-zero unless every pinned package is installed at its pinned version and the
# proxy's module is there; prints LiteLLM's version.
check() {
    "$py" - "$pins" <<'PY'
import importlib.metadata as md, importlib.util, os, sys
wrong = []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        got = md.version(name)
    except md.PackageNotFoundError:
        got = None
    if got != want:
        wrong.append(f"{name} {got} (want {want})")
# A top-level find_spec does not import the package (importing LiteLLM takes seconds).
spec = importlib.util.find_spec("litellm")
if spec is None or not os.path.isdir(os.path.join(os.path.dirname(spec.origin), "proxy")):
    wrong.append("litellm.proxy missing")
if wrong:
    print("; ".join(wrong[:5]), file=sys.stderr)
    sys.exit(1)
print(f"litellm {md.version('litellm')}")
PY
}

if [[ -x "$py" ]] && summary="$(check 2>/dev/null)"; then
    echo "LiteLLM proxy ready in .venv-litellm ($summary)"
    exit 0
fi

fail() {
    echo "install-litellm: $*" >&2
    [[ -n "${log:-}" && -s "$log" ]] && { echo "--- pip output ---" >&2; tail -n 40 "$log" >&2; }
    exit 1
}

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

if [[ ! -x "$py" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >"$log" 2>&1 || fail "could not create a virtual environment with 'python3 -m venv' at $venv"
fi

"$py" -m pip install --quiet --no-deps --only-binary=:all: -r "$pins" >>"$log" 2>&1 \
    || fail "pip could not install the pinned packages of $pins"
"$py" -m pip check >>"$log" 2>&1 \
    || fail "the pinned packages of $pins do not satisfy each other's requirements (pip check)"

summary="$(check 2>>"$log")" || fail "installed, but not at the pinned versions (try: rm -rf $venv and run again)"
echo "LiteLLM proxy installed in .venv-litellm ($summary)"
