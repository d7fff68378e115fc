#!/usr/bin/env bash
# make bench-gpu-lm (issue 28): lesson 04's transformer at the seed's size, the library
# in bf16 (--precision bf16) against PyTorch's strongest version of the same model (bf16
# autocast, scaled_dot_product_attention, fused AdamW, torch.compile) on the same GPU,
# at 20 x 35, 64 x 128 and 128 x 256 tokens, alternating rounds, the best counting;
# the library in float32 and PyTorch without torch.compile beside them.
# bench/bench_gpu_lm.py does the work (its --help lists the options).
#   bench/run-bench-gpu-lm.sh BUILD [--rounds N] [--json FILE] [--time-limit S] ...
#   bench/run-bench-gpu-lm.sh BUILD --smoke     # the CPU, tiny sizes: the script's path
# PYTHON: the Python with PyTorch (default: python3 where it imports torch, else
# /usr/bin/python3). Exit status 0: measured; 3: the program has no --precision bf16
# (the library's bf16 column is empty, the reason said); 1: a run failed.
set -euo pipefail
build=${1:?usage: bench/run-bench-gpu-lm.sh BUILD [options]}
shift
here=$(dirname "$0")
prog=$build/solutions/04-transformer/train
[ -x "$prog" ] || { echo "bench-gpu-lm: $prog is not built (make $prog)" >&2; exit 1; }
python=${PYTHON:-}
if [ -z "$python" ]; then
    python=/usr/bin/python3
    if command -v python3 >/dev/null && python3 -c 'import torch' >/dev/null 2>&1; then python=$(command -v python3); fi
fi
exec "$python" "$here/bench_gpu_lm.py" --build "$build" "$@"
