#!/usr/bin/env bash
# The project's whole test command (CI runs it through .ci/run): installs the
# real llama.cpp server and model used by the integration tests, then checks
# formatting, lints, and runs every test target.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-real-server.sh
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# Release: the integration tests compare measured latencies with the simulator's exact
# schedule, and an unoptimized client would measure itself.
cargo test --release
