#!/usr/bin/env bash
# make bench-zero: lesson 08's stages on RANKS (2) CPU ranks of this machine, the same
# model and batch: the step time of stages 1-3 against plain data parallel (stage 0),
# the communication the step did not hide (exposed), the bytes a rank sent against the
# formula and the memory it held. The stages take turns within each round (a
# disturbance hits one round of each, not every round of one); each reports the median
# step time of its best round (steps 2.. of MAX_STEPS: the first warms up), its
# exposed time there, and every round's median.
#   bench/run-bench-zero.sh BUILD_DIR RANKS [ROUNDS]
# What runs: lesson 08's program on the tutorial's model and the default text (Debian's
# fortunes, 55k words: the embedding and decoder are 97% of the parameters), a batch of
# BATCH (64) sequences, MAX_STEPS (8) steps, one thread per rank; MODEL_ARGS adds or
# overrides options (MODEL_ARGS="--dataset text --data FILE --layers 6": a model of many
# even blocks).
set -euo pipefail
build=$1 ranks=$2 rounds=${3:-3}
batch=${BATCH:-64} steps=${MAX_STEPS:-8}
bin=$build/solutions/08-zero/train
command -v mpirun >/dev/null || { echo "error: make bench-zero needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A best_step best_exposed rounds_seen sent formula mem
for s in 0 1 2 3; do best_step[$s]=; rounds_seen[$s]=; done

# the median of one key over the step lines 2.. of a metrics file
median() { grep -oE "\"$2\": [-0-9.e+]+" "$1" | tail -n +2 | awk '{ print $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (!NR) exit 1; printf "%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run() {
    local s=$1 out m=$tmp/m$1.jsonl step exposed
    out=$(mpirun -n "$ranks" --oversubscribe --bind-to core "$bin" --threads 1 --stage "$s" \
        --batch-size "$batch" --max-steps "$steps" --valid-batches 1 --impl library --metrics "$m" \
        ${MODEL_ARGS:-} 2>&1) ||
        { echo "error: stage $s failed:" >&2; tail -5 <<<"$out" >&2; exit 1; }
    step=$(median "$m" step_seconds) exposed=$(median "$m" exposed_comm_seconds)
    rounds_seen[$s]+=" $step"
    if [ -z "${best_step[$s]}" ] || awk -v a="$step" -v b="${best_step[$s]}" 'BEGIN { exit !(a < b) }'; then
        best_step[$s]=$step best_exposed[$s]=$exposed
    fi
    sent[$s]=$(sed -nE 's/^communication: ([0-9.]+) MB sent per step.*/\1/p' <<<"$out")
    formula[$s]=$(sed -nE 's/^communication: .* = ([0-9.]+) MB$/\1/p' <<<"$out")
    mem[$s]=$(awk '/^  allocated/ { print $5 }' <<<"$out")
}

echo "== lesson 08: ZeRO stages on $ranks CPU ranks, tutorial model${MODEL_ARGS:+ ($MODEL_ARGS)}, batch $batch, median of steps 2-$steps, best of $rounds rounds"
echo "   ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%F), load $(cut -d' ' -f1 /proc/loadavg))"
for ((r = 1; r <= rounds; r++)); do
    for s in 0 1 2 3; do run "$s"; done
done
printf '%-6s %12s %10s %14s %12s %14s %12s  %s\n' stage "step (s)" "x stage 0" "exposed (s)" "sent MB" "formula MB" "state MB" "every round's median step (s)"
for s in 0 1 2 3; do
    ratio=$(awk -v a="${best_step[$s]}" -v b="${best_step[0]}" 'BEGIN { printf "%.2f", a / b }')
    printf '%-6s %12s %10s %14s %12s %14s %12s %s\n' "$s" "${best_step[$s]}" "$ratio" "${best_exposed[$s]}" \
        "${sent[$s]}" "${formula[$s]}" "${mem[$s]}" "${rounds_seen[$s]}"
done
