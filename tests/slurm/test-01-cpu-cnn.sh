#!/usr/bin/env bash
# Lesson 01's sbatch script under the local Slurm: a short run on the synthetic set
# must complete, print its per-epoch line and write its metrics to the scratch dir.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

if ! submit_job 1 --solution -- --dataset synthetic --epochs 1 --train-limit 600 --test-limit 200; then
    fail "lesson 01: make submit 1 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 01: job $JOB completed (sbatch, srun, site profile local)"
else
    fail "lesson 01: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
# the per-epoch line: epoch 1, then loss, loss, accuracy, seconds, images/s
if grep -qE '^ +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+$' "$JOB_OUT"; then
    pass "lesson 01: the job's output has the per-epoch line"
else
    fail "lesson 01: no per-epoch line in $JOB_OUT"
    show_output "$JOB_OUT"
fi
metrics="$COURSE_SCRATCH_DIR/dl-course/01-cpu-cnn/metrics-$JOB.jsonl"
if grep -q '"epoch": *1' "$metrics" 2>/dev/null; then
    pass "lesson 01: metrics written to the site's scratch directory"
else
    fail "lesson 01: no metrics in $metrics"
    show_output "$JOB_OUT"
fi
exit $status
