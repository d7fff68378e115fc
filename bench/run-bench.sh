#!/usr/bin/env bash
# make bench: the simple CNN's training speed in C (this library) and, where
# Debian's python3-torch is installed, in PyTorch with the same thread count.
# The two run alternately, ROUNDS rounds each (default 3), and the best round of each
# counts: this machine may be shared, and the best round is the least disturbed one.
#   bench/run-bench.sh BENCH_BINARY THREADS
set -euo pipefail
bin=$1 threads=$2
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
rounds=${ROUNDS:-3}

best() { # best images_per_s among JSON lines on stdin
    sed -E 's/.*"images_per_s": ([0-9.]+).*/\1/' | sort -g | tail -1
}

have_torch=no
"$python" -c 'import torch' >/dev/null 2>&1 && have_torch=yes
c_runs="" t_runs=""
for ((r = 1; r <= rounds; r++)); do
    c_runs+=$(OMP_NUM_THREADS=$threads "$bin" --threads "$threads" --json)$'\n'
    if [ $have_torch = yes ]; then
        t_runs+=$(OMP_NUM_THREADS=$threads "$python" "$here/pytorch_cnn.py" "$threads")$'\n'
    fi
done

c_best=$(printf '%s' "$c_runs" | best)
c_line=$(printf '%s' "$c_runs" | grep -F "\"images_per_s\": $c_best" | head -1)
field() { sed -E "s/.*\"$1\": \"?([^,\"}]+)\"?.*/\1/" <<<"$c_line"; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')

echo "simple CNN training, 1x28x28, batch 100, Adam; $threads threads on $cpu ($(nproc) cores)"
echo "GEMM: $(field gemm); best of $rounds alternating rounds"
echo
printf '%-22s %12s %10s %12s\n' "" "images/s" "GFLOP/s" "of FMA peak"
gflops=$(field gflops) peak=$(field peak_gflops)
printf '%-22s %12.0f %10.1f %11.1f%%\n' "C (this library)" "$c_best" "$gflops" \
    "$(awk -v g="$gflops" -v p="$peak" 'BEGIN { print 100 * g / p }')"
if [ $have_torch = yes ]; then
    t_best=$(printf '%s' "$t_runs" | best)
    t_version=$(printf '%s' "$t_runs" | head -1 | sed -E 's/.*"version": "([^"]+)".*/\1/')
    t_gflops=$(awk -v r="$t_best" -v g="$gflops" -v c="$c_best" 'BEGIN { print g * r / c }')
    printf '%-22s %12.0f %10.1f %11.1f%%\n' "PyTorch $t_version" "$t_best" "$t_gflops" \
        "$(awk -v g="$t_gflops" -v p="$peak" 'BEGIN { print 100 * g / p }')"
    r=$(awk -v a="$c_best" -v b="$t_best" 'BEGIN { printf "%.2f", a / b }')
    printf '\nratio C / PyTorch: %sx\n' "$r"
    [ -z "${BENCH_SUMMARY:-}" ] ||
        echo "CNN, fixed batch (bench_cnn, one step's kernels): ${r}x" >>"$BENCH_SUMMARY"
else
    echo "(PyTorch: not installed for $python; sudo make deps adds python3-torch)"
fi
core_peak=$(field peak_one_core_gflops)
if awk -v p="$peak" -v c="$core_peak" -v t="$threads" 'BEGIN { exit !(p < 0.6 * t * c) }'; then
    echo "warning: that run's peak on $threads threads ($peak GFLOP/s) is under 0.6 x $threads x one" \
         "core's ($core_peak): cores were busy while it was measured; run again for a share"
fi
echo "measured FMA peak: $peak GFLOP/s; one step: forward $(field forward_ms) ms," \
     "backward $(field backward_ms) ms, loss + Adam $(field other_ms) ms"
