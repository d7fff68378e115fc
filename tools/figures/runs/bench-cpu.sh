#!/usr/bin/env bash
# The measurements behind the figure bench-cpu: the simple CNN's training speed on
# the CPU in C (this library) and in PyTorch with the same threads, in alternating
# rounds as make bench runs them (the figure keeps each side's best round). One JSON
# line per round and side on stdout. Run it on a quiet machine: the best round must
# be an undisturbed one.
#   tools/figures/record.sh bench-cpu -- tools/figures/runs/bench-cpu.sh [THREADS [ROUNDS]]
set -euo pipefail
cd "$(dirname "$0")/../../.."
threads=${1:-$(nproc)}
python=${PYTHON:-/usr/bin/python3}
make --no-print-directory -s build/bench/bench_cnn >&2
rounds=${2:-3}
for ((round = 1; round <= rounds; round++)); do
    OMP_NUM_THREADS=$threads build/bench/bench_cnn --threads "$threads" --json
    if "$python" -c 'import torch' >/dev/null 2>&1; then
        OMP_NUM_THREADS=$threads "$python" bench/pytorch_cnn.py "$threads"
    fi
done
