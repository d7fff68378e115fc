#!/usr/bin/env bash
# The measurements behind the figure 01-conv-loops-vs-library: lesson 01's solution
# trained for one epoch on 2,000 Fashion-MNIST images, on one thread, once with the
# convolution as plain loops (TODO 1.1, 1.2) and once with the library's. One JSON
# line per run on stdout, with "conv" saying which.
#   tools/figures/record.sh 01-conv-loops-vs-library -- tools/figures/runs/01-conv-loops-vs-library.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
make --no-print-directory -s build/solutions/01-cpu-cnn/train >&2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for conv in loops library; do
    OMP_NUM_THREADS=1 build/solutions/01-cpu-cnn/train --threads 1 --dataset fashion-mnist \
        --train-limit 2000 --test-limit 1000 --epochs 1 --conv $conv --metrics "$tmp" >&2
    sed "s/^{/{\"conv\": \"$conv\", /" "$tmp"
done
