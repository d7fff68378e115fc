#!/usr/bin/env bash
# make bench-ddp: lesson 06's data-parallel scaling on this machine. The CNN trains
# with 1 rank and with RANKS ranks, one thread each (so that the cores are the unit),
# the same batch per rank: images/s of the whole job, the scaling efficiency
# (rate on N ranks / (N x rate on 1)), and the communication time per step that the
# backward did not hide ("exposed": from the end of the backward until every rank holds
# the averaged gradients, lib/parallel/ddp.c), for three ways to average the gradients:
#   (a) one all-reduce of all of them after the backward, no buckets (what TODO 6.4
#       does; here the library's with one bucket larger than the model);
#   (b) buckets of BUCKET_MB (default 0.1 MB: the CNN's 0.62 MB in 3), all started
#       after the backward;
#   (c) the same buckets, each started as soon as the backward has finished it.
# The share hidden by the overlap is 1 - exposed(c) / exposed(b) (same buckets, overlap
# on and off), and 1 - exposed(c) / exposed(a) against the plain all-reduce. Exposed
# time also holds the wait for a rank that is behind (on a shared machine, one that
# lost its core for a while), which no overlap can hide.
# The modes take turns within each round (a disturbance hits one round of each, not all
# rounds of one); each reports its best images/s and its least exposed time over ROUNDS
# (the least disturbed), the median exposed time, and every round's numbers.
#   bench/run-bench-ddp.sh BUILD_DIR RANKS [ROUNDS]
set -euo pipefail
build=$1 ranks=$2 rounds=${3:-3}
bucket_mb=${BUCKET_MB:-0.1}
bin=$build/solutions/06-ddp/train
command -v mpirun >/dev/null || { echo "error: make bench-ddp needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
data=(--dataset fashion-mnist --train-limit 12000 --test-limit 500)
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    ls datasets/data/fashion-mnist/train-images* >/dev/null 2>&1 || data=(--dataset synthetic --test-limit 500)

modes=(one plain after overlap)
declare -A label n_of args best_rate best_ms nbuckets rounds_seen
label[one]="1 rank" label[plain]="$ranks ranks, one all-reduce after the backward"
label[after]="$ranks ranks, buckets after the backward" label[overlap]="$ranks ranks, buckets overlapped"
n_of[one]=1 n_of[plain]=$ranks n_of[after]=$ranks n_of[overlap]=$ranks
args[one]="--bucket-mb 1000 --no-overlap" args[plain]="--bucket-mb 1000 --no-overlap"
args[after]="--bucket-mb $bucket_mb --no-overlap" args[overlap]="--bucket-mb $bucket_mb"
for m in "${modes[@]}"; do best_rate[$m]=0 best_ms[$m]=- nbuckets[$m]=- rounds_seen[$m]=; done

# run MODE: one training run; keeps the best rate and the least exposed time of MODE
run() {
    local m=$1 out rate ms nb
    # shellcheck disable=SC2086 # args[$m] is a list of options
    out=$(mpirun -n "${n_of[$m]}" --oversubscribe --bind-to core "$bin" --threads 1 "${data[@]}" \
        --epochs 1 --grad-sync buckets ${args[$m]} 2>&1) ||
        { echo "error: the run failed (${label[$m]}):" >&2; tail -5 <<<"$out" >&2; exit 1; }
    rate=$(awk '$1 == "1" && NF == 6 { print $6 }' <<<"$out")
    ms=$(sed -nE 's/.*not hidden: ([0-9.]+) ms per step.*/\1/p' <<<"$out")
    nb=$(sed -nE 's/^buckets: ([0-9]+) of up to.*/\1/p' <<<"$out")
    [ -n "$rate" ] && [ -n "$ms" ] || { echo "error: no epoch line or exposed time in:" >&2; tail -5 <<<"$out" >&2; exit 1; }
    if [ "$rate" -gt "${best_rate[$m]}" ]; then best_rate[$m]=$rate; fi
    if [ "${best_ms[$m]}" = - ] || awk -v a="$ms" -v b="${best_ms[$m]}" 'BEGIN { exit !(a < b) }'; then
        best_ms[$m]=$ms
    fi
    nbuckets[$m]=$nb
    rounds_seen[$m]+=" $rate/$ms"
}

echo "== data-parallel CNN training, 1 thread per rank, batch 100 per rank, best of $rounds"
echo "   ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%F), load $(cut -d' ' -f1 /proc/loadavg))"
for ((r = 1; r <= rounds; r++)); do
    for m in "${modes[@]}"; do run "$m"; done
done
one=${best_rate[one]}
# the median of MODE's exposed times over the rounds
median_ms() { tr ' ' '\n' <<<"${rounds_seen[$1]}" | sed -n 's|.*/||p' | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-46s %8s %9s %11s %16s %8s\n' "" "buckets" "images/s" "efficiency" "exposed ms/step" "median"
json=""
for m in "${modes[@]}"; do
    rate=${best_rate[$m]} eff=- effj=null ms=${best_ms[$m]} msj=${best_ms[$m]} med=$(median_ms "$m")
    medj=$med
    if [ "$m" != one ]; then
        eff=$(awk -v a="$rate" -v b="$one" -v n="$ranks" 'BEGIN { printf "%.0f%%", 100 * a / (n * b) }')
        effj=$(awk -v a="$rate" -v b="$one" -v n="$ranks" 'BEGIN { printf "%.4f", a / (n * b) }')
    else
        ms=- msj=null med=- medj=null
    fi
    printf '%-46s %8s %9d %11s %16s %8s\n' "${label[$m]}" "${nbuckets[$m]}" "$rate" "$eff" "$ms" "$med"
    json+='{"setup": "'"${label[$m]}"'", "ranks": '${n_of[$m]}', "buckets": '${nbuckets[$m]}', "images_per_s": '$rate', "efficiency": '$effj', "exposed_ms_per_step": '$msj', "exposed_ms_median": '$medj'}'$'\n'
done
echo "every round (images/s / exposed ms per step), in the order run:"
for m in "${modes[@]}"; do printf '  %-44s%s\n' "${label[$m]}" "${rounds_seen[$m]}"; done
hidden() { awk -v c="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * (1 - c / b); else printf "-" }'; }
echo "share of the exposed communication the overlap hides (least exposed times; medians in brackets):"
echo "  $(hidden "${best_ms[overlap]}" "${best_ms[after]}") ($(hidden "$(median_ms overlap)" "$(median_ms after)")) of the same buckets started after the backward"
echo "  $(hidden "${best_ms[overlap]}" "${best_ms[plain]}") ($(hidden "$(median_ms overlap)" "$(median_ms plain)")) of one all-reduce after the backward"
echo "(as JSON lines, for tools/figures/record.sh:)"
printf '%s' "$json"
