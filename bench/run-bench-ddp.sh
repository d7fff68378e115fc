#!/usr/bin/env bash
# make bench-ddp: lesson 06's data-parallel scaling on this machine. The CNN trains
# with 1 rank and with RANKS ranks, one thread each (so that the cores are the unit),
# the same batch per rank; images/s of the whole job, the scaling efficiency
# (rate on N ranks / (N x rate on 1)), and the communication time per step that the
# backward did not hide, with the gradient buckets overlapped and not. Best of
# ROUNDS runs each (a shared machine: the best run is the least disturbed).
#   bench/run-bench-ddp.sh BUILD_DIR RANKS [ROUNDS]
set -euo pipefail
build=$1 ranks=$2 rounds=${3:-3}
bin=$build/solutions/06-ddp/train
command -v mpirun >/dev/null || { echo "error: make bench-ddp needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
data=(--dataset fashion-mnist --train-limit 12000 --test-limit 500)
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    ls datasets/data/fashion-mnist/train-images* >/dev/null 2>&1 || data=(--dataset synthetic --test-limit 500)

# run N SYNC [OVERLAP]: prints "images/s exposed-ms" of the best of the rounds
run() {
    local n=$1 best=0 best_ms=- out rate ms
    shift
    for ((r = 1; r <= rounds; r++)); do
        out=$(mpirun -n "$n" --oversubscribe --bind-to core "$bin" --threads 1 "${data[@]}" \
            --epochs 1 "$@" 2>&1) || { echo "error: the run failed:" >&2; tail -5 <<<"$out" >&2; exit 1; }
        rate=$(awk '$1 == "1" && NF == 6 { print $6 }' <<<"$out")
        ms=$(sed -nE 's/.*not hidden: ([0-9.]+) ms per step.*/\1/p' <<<"$out")
        if [ "${rate:-0}" -gt "$best" ]; then best=$rate best_ms=${ms:--}; fi
    done
    echo "$best $best_ms"
}
echo "== data-parallel CNN training, 1 thread per rank, batch 100 per rank, best of $rounds"
echo "   ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%F), load $(cut -d' ' -f1 /proc/loadavg))"
read -r one _ < <(run 1 --grad-sync buckets)
printf '%-34s %10s %11s %22s\n' "" "images/s" "efficiency" "exposed comm ms/step"
printf '%-34s %10d %11s %22s\n' "1 rank" "$one" "-" "-"
json='{"setup": "1 rank", "ranks": 1, "images_per_s": '$one'}'
for mode in overlap no-overlap; do
    extra=(--grad-sync buckets)
    [ $mode = no-overlap ] && extra+=(--no-overlap)
    read -r rate ms < <(run "$ranks" "${extra[@]}")
    eff=$(awk -v a="$rate" -v b="$one" -v n="$ranks" 'BEGIN { printf "%.0f%%", 100 * a / (n * b) }')
    printf '%-34s %10d %11s %22s\n' "$ranks ranks, buckets, $mode" "$rate" "$eff" "$ms"
    label=$([ $mode = overlap ] && echo "overlapped" || echo "after the backward")
    json+=$'\n''{"setup": "'"$ranks ranks $label"'", "ranks": '$ranks', "images_per_s": '$rate', "efficiency": '$(awk -v a="$rate" -v b="$one" -v n="$ranks" 'BEGIN { printf "%.4f", a / (n * b) }')', "exposed_ms_per_step": '${ms/-/null}'}'
done
echo "(as JSON lines, for tools/figures/record.sh:)"
printf '%s\n' "$json"
