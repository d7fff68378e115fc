#!/usr/bin/env bash
# Lesson 08's sbatch script under the local Slurm, shrunk to 1 node x 2 tasks (the script
# asks 2 nodes x 4; the local Slurm is one node), CPU ranks (srun --mpi=pmix, the
# tutorial's model), made tiny: a text the test writes, a 32-wide model, 3 steps of
# stage 3. The job must complete, print the memory table and the communication line,
# both ranks must print the same digests, and rank 0 must write a metrics line per step
# with the keys instructors' scripts read.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

text=$(mktemp "${TMPDIR:-/tmp}/course-08-text.XXXXXX")
trap 'rm -f "$text"' EXIT
awk 'BEGIN { srand(8); for (l = 0; l < 3000; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$text"
chmod a+r "$text"

export COURSE_SBATCH_OPTIONS="--nodes=1 --ntasks-per-node=2 --cpus-per-task=1"
if ! submit_job 8 --solution -- --dataset text --data "$text" --d-model 32 --heads 2 \
    --d-hid 32 --layers 2 --batch-size 8 --max-steps 3 --timeout 60; then
    fail "lesson 08: make submit 8 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 08: job $JOB completed on 2 ranks (sbatch, srun --mpi=pmix, site profile local)"
else
    fail "lesson 08: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
d0=$(grep -oE '^rank 0 (parameter|optimizer) digest: [0-9a-f]{16}' "$JOB_OUT" | sed 's/^rank 0 //' | sort)
d1=$(grep -oE '^rank 1 (parameter|optimizer) digest: [0-9a-f]{16}' "$JOB_OUT" | sed 's/^rank 1 //' | sort)
if grep -qE '^dist: mpi backend, 2 ranks' "$JOB_OUT" && grep -qE 'stage 3 on 2 ranks' "$JOB_OUT" &&
    grep -qE '^  allocated ' "$JOB_OUT" && grep -qE '^communication: [0-9.]+ MB sent per step' "$JOB_OUT" &&
    [ "$(grep -c . <<<"$d0")" = 2 ] && [ "$d0" = "$d1" ]; then
    pass "lesson 08: stage 3 over MPI, the memory table, the bytes per step, the same digests on both ranks"
else
    fail "lesson 08: no 2-rank stage 3 run with memory, communication and equal digests in $JOB_OUT"
    show_output "$JOB_OUT"
fi
metrics="$COURSE_SCRATCH_DIR/dl-course/08-zero/metrics-$JOB.jsonl"
keys='"loss": .*"tokens_per_s": .*"bytes_sent": .*"bytes_received": .*"param_bytes": .*"grad_bytes": .*"optim_bytes": .*"peak_bytes": .*"step_seconds": .*"exposed_comm_seconds": '
if [ "$(grep -cE "^\{\"step\": [1-3], \"epoch\": 1, $keys" "$metrics" 2>/dev/null)" = 3 ]; then
    pass "lesson 08: metrics in the site's scratch directory: 3 step lines with the memory and communication keys"
else
    fail "lesson 08: expected 3 step lines with loss ... exposed_comm_seconds in $metrics"
    sed 's/^/        /' "$metrics" 2>/dev/null | head -4
fi
exit $status
