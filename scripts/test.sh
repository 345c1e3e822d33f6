#!/usr/bin/env bash
# The project's whole test command (CI runs it through .ci/run): installs the
# real llama.cpp server and model used by the integration tests, and LiteLLM's
# proxy (the second real server, a gateway in front of llama.cpp), then checks
# formatting, lints, and runs every test target.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-real-server.sh
scripts/install-litellm.sh
# The HTML report test renders pages in headless Chromium; PNG charts need a system font.
# Debian packages, installed once (CI runs as root). SERVEBENCH_SKIP_BROWSER=1 skips both.
if [ "${SERVEBENCH_SKIP_BROWSER:-}" != 1 ]; then
    if ! command -v chromium >/dev/null || [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            chromium fonts-dejavu-core >/dev/null
    fi
fi
# The live dashboard's test runs the binary in tmux (Debian package, installed when missing).
if ! command -v tmux >/dev/null; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
fi
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# Release: the integration tests compare measured latencies with the simulator's exact
# schedule, and an unoptimized client would measure itself.
cargo test --release
