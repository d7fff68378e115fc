#!/usr/bin/env bash
# make bench-trace: what --trace (lib/core/trace.h) costs lesson 06's training.
#   1. End to end: the CNN on RANKS ranks (one thread each, overlapped buckets, as
#      make bench-ddp's fastest setting) for one epoch, with and without --trace, taking
#      turns within each round (a disturbance hits one round of each, not all rounds of
#      one); each keeps its best images/s of ROUNDS (the least disturbed) and the median.
#      On a shared machine the rounds scatter by more than the 1% asked of tracing: the
#      difference of the best rounds is the number, its scatter is in every round's list.
#   2. Counted: a range's cost and a counter sample's (bench/bench_trace.c, best of 5
#      rounds of 100,000 ranges), times the ranges of a step in the traced run's file
#      (every event inside its steps, rank 0), over that run's mean step: the cost
#      without the noise of the first, a bound on what tracing adds to the host's work.
#   bench/run-bench-trace.sh BUILD_DIR RANKS [ROUNDS]
set -euo pipefail
build=$1 ranks=$2 rounds=${3:-5}
bin=$build/solutions/06-ddp/train
command -v mpirun >/dev/null || { echo "error: make bench-trace needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
data=(--dataset fashion-mnist --train-limit 12000 --test-limit 500)
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    ls datasets/data/fashion-mnist/train-images* >/dev/null 2>&1 || data=(--dataset synthetic --test-limit 500)
tmp=$(mktemp -d /tmp/bench_trace_XXXXXX)
trap 'rm -rf "$tmp"' EXIT

declare -A best seen
best[plain]=0 best[traced]=0 seen[plain]= seen[traced]=
run() { # MODE: one epoch; keeps its images/s
    local m=$1 out rate extra=()
    [ "$m" = traced ] && extra=(--trace "$tmp/t.json")
    out=$(mpirun -n "$ranks" --oversubscribe --bind-to core "$bin" --threads 1 "${data[@]}" --epochs 1 \
        --grad-sync buckets --bucket-mb 0.1 "${extra[@]}" 2>&1) ||
        { echo "error: the run failed ($m):" >&2; tail -5 <<<"$out" >&2; exit 1; }
    rate=$(awk '$1 == "1" && NF == 6 { print $6 }' <<<"$out")
    [ -n "$rate" ] || { echo "error: no epoch line in:" >&2; tail -5 <<<"$out" >&2; exit 1; }
    [ "$rate" -gt "${best[$m]}" ] && best[$m]=$rate
    seen[$m]+=" $rate"
}
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.0f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== what --trace costs: lesson 06's CNN, $ranks ranks of 1 thread, buckets overlapped, best of $rounds"
echo "   ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%F), load $(cut -d' ' -f1 /proc/loadavg))"
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then run plain; run traced; else run traced; run plain; fi
done
overhead() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", 100 * (1 - a / b) }'; }
mp=$(median "${seen[plain]}") mt=$(median "${seen[traced]}")
printf '%-22s %14s %16s   %s\n' "" "best images/s" "median images/s" "every round"
printf '%-22s %14d %16d  %s\n' "without --trace" "${best[plain]}" "$mp" "${seen[plain]}"
printf '%-22s %14d %16d  %s\n' "with --trace" "${best[traced]}" "$mt" "${seen[traced]}"
end_best=$(overhead "${best[traced]}" "${best[plain]}") end_median=$(overhead "$mt" "$mp")
echo "end to end: tracing costs ${end_best}% of the images/s (best rounds), ${end_median}% (medians)"

read -r _ range_ns < <("$build/bench/bench_trace" | grep '^range_ns')
read -r _ sample_ns < <("$build/bench/bench_trace" | grep '^sample_ns')
read -r per_step step_us < <(python3 - "$tmp/t.rank0.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
steps = [e for e in ev if e.get("cat") == "step"]
inside = sum(1 for e in ev for s in steps if s["ts"] <= e["ts"] < s["ts"] + s["dur"])
print(f"{inside / len(steps):.1f} {sum(s['dur'] for s in steps) / len(steps):.1f}")
PY
)
counted=$(awk -v n="$per_step" -v r="$range_ns" -v s="$sample_ns" -v t="$step_us" \
    'BEGIN { printf "%.3f", 100 * (n * r + s) / 1000 / t }')
echo "counted: $per_step ranges a step x $range_ns ns + a counter sample of $sample_ns ns, over a step of $step_us us: ${counted}%"
echo "(as JSON lines, for tools/figures/record.sh:)"
echo "{\"setup\": \"without --trace\", \"ranks\": $ranks, \"images_per_s\": ${best[plain]}, \"images_per_s_median\": $mp}"
echo "{\"setup\": \"with --trace\", \"ranks\": $ranks, \"images_per_s\": ${best[traced]}, \"images_per_s_median\": $mt, \"overhead_pct\": $end_best, \"overhead_pct_median\": $end_median, \"ranges_per_step\": $per_step, \"range_ns\": $range_ns, \"sample_ns\": $sample_ns, \"step_us\": $step_us, \"counted_overhead_pct\": $counted}"
