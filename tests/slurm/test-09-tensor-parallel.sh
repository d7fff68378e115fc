#!/usr/bin/env bash
# Lesson 09's sbatch script under the local Slurm, shrunk to 1 node x 4 tasks (the script
# asks 2 nodes x 4; the local Slurm is one node), CPU ranks (srun --mpi=pmix, the
# tutorial's model), made tiny: a text the test writes, a 32-wide model of 4 heads, 3
# steps. The script's layout, --dp 2 --tp 4, becomes --dp 2 --tp 2 on the 4 tasks
# (later options win): two replicas of a model cut in two. The job must complete, print
# the grid, the table of what each rank holds against the count from the shapes, and
# the tensor group's communication against the formula; every rank must print the same
# digest, and every rank must write a metrics line per step with the keys instructors'
# scripts read (in their order; precision, fp32 by default, last).
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

text=$(mktemp "${TMPDIR:-/tmp}/course-09-text.XXXXXX")
trap 'rm -f "$text"' EXIT
awk 'BEGIN { srand(9); for (l = 0; l < 3000; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$text"
chmod a+r "$text"

export COURSE_SBATCH_OPTIONS="--nodes=1 --ntasks-per-node=4 --cpus-per-task=1"
if ! submit_job 9 --solution -- --dataset text --data "$text" --d-model 32 --heads 4 \
    --d-hid 32 --layers 2 --batch-size 8 --max-steps 3 --dp 2 --tp 2 --timeout 60; then
    fail "lesson 09: make submit 9 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 09: job $JOB completed on 4 ranks (sbatch, srun --mpi=pmix, site profile local)"
else
    fail "lesson 09: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
digests=$(grep -oE '^rank [0-3] parameter digest: [0-9a-f]{16}$' "$JOB_OUT")
comm=$(sed -nE 's/^communication of rank 0 a step: [0-9]+ all-reduces in its tensor group, ([0-9.]+) MB sent there \(your formula 9\.5: ([0-9.]+) MB\).*/\1 \2/p' "$JOB_OUT")
if grep -qE '^dist: mpi backend, 4 ranks' "$JOB_OUT" &&
    grep -qE '^grid: 2 data x 1 pipeline x 2 tensor over 4 ranks' "$JOB_OUT" &&
    [ "$(grep -cE '^ +[0-3] +\([01],0,[01]\) ' "$JOB_OUT")" = 4 ] && ! grep -q 'not what the shapes give' "$JOB_OUT" &&
    [ -n "$comm" ] && [ "${comm% *}" = "${comm#* }" ] &&
    [ "$(grep -c . <<<"$digests")" = 4 ] && [ "$(sed 's/.*: //' <<<"$digests" | sort -u | wc -l)" = 1 ]; then
    pass "lesson 09: 2 replicas x 2 tensor ranks over MPI, what each rank holds and sends as counted, the same digest on all 4"
else
    fail "lesson 09: no 4-rank 2 x 1 x 2 grid with the parameter table, the communication line as counted and equal digests in $JOB_OUT"
    show_output "$JOB_OUT"
fi
dir="$COURSE_SCRATCH_DIR/dl-course/09-tensor-parallel"
keys='"loss": .*"tokens_per_s": .*"bytes_sent": .*"all_reduces": .*"step_seconds": .*"param_bytes": .*"activation_bytes": .*"precision": "fp32"'
bad=
for r in 0 1 2 3; do
    f="$dir/metrics-$JOB.jsonl"
    [ $r = 0 ] || f="$dir/metrics-$JOB.rank$r.jsonl"
    [ "$(grep -cE "^\{\"step\": [1-3], \"epoch\": 1, \"rank\": $r, $keys" "$f" 2>/dev/null)" = 3 ] || bad="$bad $r"
done
if [ -z "$bad" ]; then
    pass "lesson 09: metrics in the site's scratch directory: 3 step lines from each of the 4 ranks with loss ... activation_bytes, precision"
else
    fail "lesson 09: expected 3 step lines with loss ... activation_bytes, precision from ranks$bad in $dir"
    ls -la "$dir" 2>&1 | sed 's/^/        /'
    sed 's/^/        /' "$dir/metrics-$JOB.jsonl" 2>/dev/null | head -4
fi
exit $status
