#!/usr/bin/env bash
# make bench (after the CNN) and make bench-transformer: lesson 04's transformer, the
# tutorial's training step (forward, cross-entropy, backward, clip 0.5, SGD lr 5.0) on
# the fortunes text, in C (this library) and, where Debian's python3-torch is installed,
# in PyTorch with the same threads, model, vocabulary, batches and step. For each
# preset the two run alternately, ROUNDS rounds each (default 3), and the best round of
# each counts: this machine may be shared, and the best round is the least disturbed.
# Then one more C run of the seed's model times each layer (--profile).
#   bench/run-bench-transformer.sh BENCH_BINARY THREADS
set -euo pipefail
bin=$1 threads=$2
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
rounds=${ROUNDS:-3}
models=${MODELS:-tutorial seed}

best() { # best tokens_per_s among JSON lines on stdin
    sed -E 's/.*"tokens_per_s": ([0-9.]+).*/\1/' | sort -g | tail -1
}
field() { # field NAME JSON_LINE
    sed -E "s/.*\"$1\": \"?([^,\"}]+)\"?.*/\1/" <<<"$2"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }

have_torch=no
"$python" -c 'import torch' >/dev/null 2>&1 && have_torch=yes
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo
echo "lesson 04 transformer training (tutorial's step: forward, cross-entropy, backward," \
     "clip 0.5, SGD lr 5.0), batch 20 x 35 tokens,"
echo "the fortunes text; $threads threads on $cpu ($(nproc) cores); load before: $(cut -d' ' -f1-3 /proc/loadavg)"

for model in $models; do
    c_runs="" t_runs=""
    for ((r = 1; r <= rounds; r++)); do
        c_runs+=$(OMP_NUM_THREADS=$threads "$bin" --model "$model" --threads "$threads" --json)$'\n'
        if [ $have_torch = yes ]; then
            t_runs+=$(OMP_NUM_THREADS=$threads "$python" "$here/pytorch_transformer.py" \
                      --model "$model" --threads "$threads" --vocab 28782)$'\n'
        fi
    done
    c_best=$(printf '%s' "$c_runs" | best)
    c_line=$(printf '%s' "$c_runs" | grep -F "\"tokens_per_s\": $c_best" | head -1)
    gflops=$(field gflops "$c_line") peak=$(field peak_gflops "$c_line")
    echo
    echo "$model model: $(field params "$c_line") parameters, vocabulary $(field vocab "$c_line")" \
         "(the text has $(field corpus_vocab "$c_line") words; ids beyond map to the last)," \
         "GEMM: $(field gemm "$c_line"); best of $rounds alternating rounds"
    printf '  %-20s %12s %10s %12s\n' "" "tokens/s" "GFLOP/s" "of FMA peak"
    printf '  %-20s %12.0f %10.1f %11s%%\n' "C (this library)" "$c_best" "$gflops" "$(pct "$gflops" "$peak")"
    if [ $have_torch = yes ]; then
        t_best=$(printf '%s' "$t_runs" | best)
        t_line=$(printf '%s' "$t_runs" | grep -F "\"tokens_per_s\": $t_best" | head -1)
        [ "$(field vocab "$t_line")" = "$(field vocab "$c_line")" ] ||
            echo "  (!) PyTorch ran with vocabulary $(field vocab "$t_line")"
        t_gflops=$(awk -v r="$t_best" -v g="$gflops" -v c="$c_best" 'BEGIN { print g * r / c }')
        printf '  %-20s %12.0f %10.1f %11s%%\n' "PyTorch $(field version "$t_line")" "$t_best" \
            "$t_gflops" "$(pct "$t_gflops" "$peak")"
        r=$(awk -v a="$c_best" -v b="$t_best" 'BEGIN { printf "%.2f", a / b }')
        printf '  ratio C / PyTorch: %sx\n' "$r"
        [ -z "${BENCH_SUMMARY:-}" ] ||
            echo "transformer ($model), fixed batch (fortunes, vocabulary $(field vocab "$c_line")): ${r}x" >>"$BENCH_SUMMARY"
    else
        echo "  (PyTorch: not installed for $python; sudo make deps adds python3-torch)"
    fi
    echo "  measured FMA peak: $peak GFLOP/s; C step: forward $(field forward_ms "$c_line") ms," \
         "loss $(field loss_ms "$c_line") ms, backward $(field backward_ms "$c_line") ms," \
         "zero_grad + clip + SGD $(field other_ms "$c_line") ms"
done

if [[ " $models " == *" seed "* ]]; then
    echo
    OMP_NUM_THREADS=$threads "$bin" --model seed --threads "$threads" --profile 2>&1 | sed 's/^/  /'
fi
