#!/usr/bin/env bash
# make bench's whole-epoch ratio: a lesson's solution program for one whole epoch as a
# participant runs it (reading the data, training, evaluating; its default options but
# the threads) against the same epoch in PyTorch (bench/pytorch_cnn_epoch.py, or
# bench/pytorch_transformer.py --train), alternating, ROUNDS rounds each (EPOCH_ROUNDS,
# default 3; 0 skips this), the best round of each counting. Where the fixed-batch
# benchmark times the kernels of one training step, this adds what a real epoch does
# around them: data loading, a new batch every step, the evaluation, the program's own
# layers.
#   bench/run-bench-epoch.sh cnn BUILD THREADS          lesson 01 on Fashion-MNIST
#   bench/run-bench-epoch.sh transformer BUILD THREADS  lesson 04 on EPOCH_TEXT
# Two numbers each side: the training rate of the epoch as the programs print it
# (examples over training seconds) and the whole run's seconds (for C the process, for
# PyTorch from its script's start after `import torch`, which is not counted).
# EPOCH_TEXT: the transformer's text, a file cut 80/10/10 (default: two of Debian's
# fortunes files, cookie and computers: 16.5k words, 75k training tokens; the whole
# fortunes text takes minutes an epoch). The transformer also runs the fixed-batch
# step (bench_transformer and pytorch_transformer.py) on that text, so that the two
# ratios compare on one vocabulary. EPOCH_ARGS: more options for the C program (e.g.
# "--pool mine": lesson 01 with the participant's max-pool, as it ran before).
set -euo pipefail
model=$1 build=$2 threads=$3
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
rounds=${EPOCH_ROUNDS:-3}
[ "$rounds" -gt 0 ] || exit 0

note() { echo "  (whole epoch: $*)"; }
"$python" -c 'import torch' >/dev/null 2>&1 || { note "PyTorch not installed for $python; sudo make deps adds python3-torch"; exit 0; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
max() { sort -g | tail -1; }
min() { sort -g | head -1; }
json() { sed -E "s/.*\"$1\": ([0-9.eE+-]+).*/\1/" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
export OMP_NUM_THREADS=$threads

# ---------------------------------------------------------------- the runs
c_rate="" c_secs="" t_rate="" t_secs="" c_fixed="" t_fixed="" c_out=""
case $model in
cnn)
    prog=$build/solutions/01-cpu-cnn/train
    [ -x "$prog" ] || { echo "error: $prog is not built (make $prog)" >&2; exit 1; }
    probe=$("$prog" --threads "$threads" --dataset fashion-mnist --train-limit 1 --test-limit 1 2>&1) ||
        { note "lesson 01 could not read Fashion-MNIST (sudo make deps, or make datasets):"
          sed 's/^/    /' <<<"$probe" | tail -3; exit 0; }
    dir=$(dirname "$(sed -nE 's/^data: .*\((.*)\)$/\1/p' <<<"$probe" | head -1)")
    what="lesson 01: one epoch of Fashion-MNIST (60,000 images, batch 100, Adam; then the 10,000 test images), $dir"
    unit=images/s
    for ((r = 1; r <= rounds; r++)); do
        t0=$(date +%s.%N)
        c_out=$("$prog" --threads "$threads" --dataset fashion-mnist --data "$dir" --epochs 1 ${EPOCH_ARGS:-})
        c_secs+="$(seconds_since "$t0")"$'\n'
        c_rate+="$(grep -A1 '^epoch' <<<"$c_out" | tail -1 | awk '{print $6}')"$'\n'
        line=$("$python" "$here/pytorch_cnn_epoch.py" --data "$dir" --threads "$threads" --epochs 1)
        t_secs+="$(json total_s "$line")"$'\n'
        t_rate+="$(json images_per_s "$line")"$'\n'
    done
    ;;
transformer)
    prog=$build/solutions/04-transformer/train
    [ -x "$prog" ] || { echo "error: $prog is not built (make $prog)" >&2; exit 1; }
    text=${EPOCH_TEXT:-}
    if [ -z "$text" ]; then
        fortunes=/usr/share/games/fortunes
        [ -f $fortunes/cookie ] && [ -f $fortunes/computers ] ||
            { note "no text: Debian's fortunes package is missing (sudo make deps), or give EPOCH_TEXT=FILE"; exit 0; }
        text=$build/bench/epoch-text.txt
        mkdir -p "$(dirname "$text")"
        cat $fortunes/cookie $fortunes/computers >"$text"
    fi
    probe=$("$prog" --threads "$threads" --dataset text --data "$text" --epochs 1 --max-steps 1 2>&1) ||
        { note "lesson 04 could not read $text:"; sed 's/^/    /' <<<"$probe" | tail -3; exit 0; }
    vocab=$(sed -nE 's/^ +([0-9]+) words .*/\1/p' <<<"$probe")
    tokens=$(sed -nE 's/.*; ([0-9]+) \/ ([0-9]+) \/ ([0-9]+) train.*/\1, \2 and \3/p' <<<"$probe")
    what="lesson 04: one epoch of the tutorial's model on $text ($vocab words; $tokens train, valid and test tokens; SGD lr 5, batch 20 x 35, dropout 0.2; then valid and test)"
    unit=tokens/s
    for ((r = 1; r <= rounds; r++)); do
        line=$("$build/bench/bench_transformer" --threads "$threads" --dataset text --data "$text" \
               --vocab "$vocab" --json 2>/dev/null)
        c_fixed+="$(json tokens_per_s "$line")"$'\n'
        line=$("$python" "$here/pytorch_transformer.py" --threads "$threads" --dataset text \
               --data "$text" --vocab "$vocab")
        t_fixed+="$(json tokens_per_s "$line")"$'\n'
        t0=$(date +%s.%N)
        c_out=$("$prog" --threads "$threads" --dataset text --data "$text" --epochs 1 ${EPOCH_ARGS:-})
        c_secs+="$(seconds_since "$t0")"$'\n'
        c_rate+="$(sed -nE 's/.*\| +([0-9.]+) tokens\/s \|.*/\1/p' <<<"$c_out" | head -1)"$'\n'
        out=$("$python" "$here/pytorch_transformer.py" --train --epochs 1 --threads "$threads" \
              --dataset text --data "$text" --json)
        t_secs+="$(json total_s "$(tail -1 <<<"$out")")"$'\n'
        t_rate+="$(json tokens_per_s "$(head -1 <<<"$out")")"$'\n'
    done
    ;;
*)
    echo "error: model cnn or transformer, got '$model'" >&2
    exit 2
    ;;
esac

# ---------------------------------------------------------------- the table
cr=$(printf '%s' "$c_rate" | max) tr=$(printf '%s' "$t_rate" | max)
cs=$(printf '%s' "$c_secs" | min) ts=$(printf '%s' "$t_secs" | min)
echo
echo "whole epoch, $what;"
echo "$threads threads, best of $rounds alternating rounds${EPOCH_ARGS:+, C with $EPOCH_ARGS}; load after: $(load)"
printf '  %-20s %16s %20s\n' "" "epoch's $unit" "whole run, seconds"
printf '  %-20s %16.0f %20.2f\n' "C (solution)" "$cr" "$cs"
printf '  %-20s %16.0f %20.2f\n' "PyTorch" "$tr" "$ts"
printf '  ratio C / PyTorch: %sx the epoch'"'"'s rate, %sx the whole run\n' "$(ratio "$cr" "$tr")" "$(ratio "$ts" "$cs")"
fixed=""
if [ -n "$c_fixed" ]; then
    cf=$(printf '%s' "$c_fixed" | max) tf=$(printf '%s' "$t_fixed" | max)
    printf '  the fixed-batch step on this text: C %.0f, PyTorch %.0f tokens/s: %sx\n' "$cf" "$tf" "$(ratio "$cf" "$tf")"
    fixed="; the fixed-batch step on that text $(ratio "$cf" "$tf")x"
fi
[ -z "${BENCH_SUMMARY:-}" ] || echo "$( [ "$model" = cnn ] && echo CNN || echo "transformer (tutorial)"), whole epoch (lesson $( [ "$model" = cnn ] && echo 01 || echo 04)'s solution): $(ratio "$cr" "$tr")x the epoch's rate, $(ratio "$ts" "$cs")x the whole run$fixed" >>"$BENCH_SUMMARY"
