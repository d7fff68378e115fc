#!/usr/bin/env bash
# Lesson 06's sbatch script under the local Slurm with two CPU ranks on one node
# (srun --mpi=pmix): the job must complete, both ranks must end with the same
# parameter digest, and only rank 0 must write the metrics and the checkpoint.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

export COURSE_SBATCH_OPTIONS="--nodes=1 --ntasks-per-node=2 --cpus-per-task=1"
if ! submit_job 6 --solution -- --dataset synthetic --epochs 1 --train-limit 800 \
    --test-limit 200 --timeout 60; then
    fail "lesson 06: make submit 6 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 06: job $JOB completed on 2 ranks (sbatch, srun --mpi=pmix, site profile local)"
else
    fail "lesson 06: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
digests=$(sed -nE 's/^rank ([01]) parameter digest: ([0-9a-f]+)$/\1 \2/p' "$JOB_OUT" | sort)
if [ "$(wc -l <<<"$digests")" -eq 2 ] && [ "$(cut -d' ' -f2 <<<"$digests" | sort -u | wc -l)" -eq 1 ]; then
    pass "lesson 06: ranks 0 and 1 end with the same parameters ($(head -1 <<<"$digests" | cut -d' ' -f2))"
else
    fail "lesson 06: the ranks' parameter digests are missing or differ: ${digests:-none}"
    show_output "$JOB_OUT"
fi
dir="$COURSE_SCRATCH_DIR/dl-course/06-ddp"
if [ "$(grep -c '"epoch"' "$dir/metrics-$JOB.jsonl" 2>/dev/null)" = 1 ] &&
    ls "$dir/checkpoints-$JOB"/*.ckpt >/dev/null 2>&1; then
    pass "lesson 06: one metrics line per epoch and a checkpoint in the site's scratch directory"
else
    fail "lesson 06: expected one metrics line in $dir/metrics-$JOB.jsonl and a checkpoint in $dir/checkpoints-$JOB"
    ls -la "$dir" 2>&1 | sed 's/^/        /'
    show_output "$JOB_OUT"
fi
exit $status
