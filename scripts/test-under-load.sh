#!/usr/bin/env bash
# Runs the whole test command (scripts/test.sh) several times in a row (default 3) with every
# core of the machine kept busy by a busy loop (`yes`), as on a shared CI machine. The loops
# are started here and stopped by their process ids when this script ends, however it ends.
# Stops at the first failing run. Prints each run's start, duration and load average.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${1:-3}"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$(nproc)"); do
    yes >/dev/null &
    pids+=("$!")
done
for i in $(seq "$runs"); do
    start=$(date +%s)
    echo "test-under-load: run $i of $runs at $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    scripts/test.sh
    echo "test-under-load: run $i of $runs passed in $(($(date +%s) - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
