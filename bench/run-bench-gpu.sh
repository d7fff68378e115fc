#!/usr/bin/env bash
# make bench-gpu: the simple CNN's training speed on the GPU in C (this library)
# and in PyTorch on the same GPU, three alternating rounds each, the best counting;
# then the CNN's GEMM shapes through the library against cuBLAS called directly.
#   bench/run-bench-gpu.sh BENCH_GPU_BINARY
# BENCH_GPU_JSON=FILE also keeps every round's JSON lines there (make gpu-report does).
set -euo pipefail
bin=${1:-}
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
if [ -z "$bin" ]; then
    echo "bench-gpu: this build has no CUDA (make config): nothing to run" >&2
    exit 1
fi
best() { sed -nE 's/.*"images_per_s": ([0-9.]+).*/\1/p' | sort -g | tail -1; }

c_runs="" t_runs="" gemms=""
for r in 1 2 3; do
    out=$("$bin" --gemms "$([ $r = 1 ] && echo 1 || echo 0)")
    c_runs+=$(grep '"impl"' <<<"$out")$'\n'
    [ $r = 1 ] && gemms=$(grep '"gemm"' <<<"$out")
    if "$python" -c 'import torch' >/dev/null 2>&1; then
        t_runs+=$("$python" "$here/pytorch_cnn_gpu.py")$'\n'
    fi
done
[ -z "${BENCH_GPU_JSON:-}" ] || printf '%s%s%s\n' "$c_runs" "$t_runs" "$gemms" | { grep '^{' || true; } >"$BENCH_GPU_JSON"
device=$(head -1 <<<"$c_runs" | sed -E 's/.*"device": "([^"]+)".*/\1/')
c_best=$(best <<<"$c_runs")
echo "simple CNN training, 1x28x28, batch 100, Adam, FP32, on $device; best of 3 rounds"
printf '%-22s %12s\n' "" "images/s"
printf '%-22s %12.0f\n' "C (this library)" "$c_best"
t_best=$(best <<<"$t_runs" || true)
if [ -n "$t_best" ]; then
    printf '%-22s %12.0f\n' "PyTorch" "$t_best"
    printf 'ratio C / PyTorch: %.2fx\n' "$(awk -v a="$c_best" -v b="$t_best" 'BEGIN { print a / b }')"
else
    echo "(PyTorch with CUDA: not available for $python)"
    grep -h '"error"' <<<"$t_runs" || true
fi
echo
printf '%-16s %6s %6s %6s %14s %14s\n' "GEMM" M N K "library GF/s" "cuBLAS GF/s"
sed -E 's/.*"gemm": "([^"]+)", "M": ([0-9]+), "N": ([0-9]+), "K": ([0-9]+), "library_gflops": ([0-9.]+), "cublas_gflops": ([0-9.]+).*/\1|\2|\3|\4|\5|\6/' <<<"$gemms" |
    awk -F'|' '{ printf "%-16s %6d %6d %6d %14.1f %14.1f\n", $1, $2, $3, $4, $5, $6 }'
