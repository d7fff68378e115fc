#!/usr/bin/env bash
# Lesson 03's sbatch script under the local Slurm: a job that receives SIGUSR1 (as
# Slurm sends it before the time limit; here through `scancel --signal=USR1 --batch`)
# writes a checkpoint, is requeued, resumes, and ends with the same parameter digest
# as the same binary run without interruption.
#
# COURSE_TEST_SITE picks another site profile than local (one whose SITE_ARCH builds
# into its own directory, for example).
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

site=${COURSE_TEST_SITE:-local}
args=(--dataset synthetic --epochs 3 --train-limit 3000 --test-limit 200 --batch-size 50
      --threads 1 --checkpoint-every 5)

out=$(tools/submit.sh 3 --solution --site "$site" -- "${args[@]}" 2>&1)
JOB=$(sed -nE 's/^submitted job ([0-9]+).*/\1/p' <<<"$out")
JOB_OUT=$(sed -nE 's/^output: +([^ ]+).*/\1/p' <<<"$out")
if [ -z "$JOB" ]; then
    fail "lesson 03: make submit 3 SITE=$site SOLUTION=1 did not submit"
    echo "$out"
    exit 1
fi

# where the job writes (as slurm/lib/job.sh decides) and which binary it runs (as
# tools/submit.sh decides)
. slurm/lib/job.sh
COURSE_SITE=$site
job_load_site
if [ -n "$SITE_SCRATCH" ]; then run_dir=$SITE_SCRATCH/dl-course/03-checkpointing; else run_dir=runs/03-checkpointing; fi
ckpt_dir=$run_dir/checkpoints-$JOB
build=build
[ "${SITE_ARCH:-native}" = native ] || build="build/arch-$SITE_ARCH"
bin=$build/solutions/03-checkpointing/train

# Signal once the job runs and has written a checkpoint (made progress).
if ! wait_running "$JOB" 120; then
    fail "lesson 03: job $JOB never started"
    scancel "$JOB" 2>/dev/null
    show_output "$JOB_OUT"
    exit 1
fi
for ((i = 0; i < 600; i++)); do
    compgen -G "$ckpt_dir/ckpt-*.ckpt" >/dev/null && break
    [ "$(job_state "$JOB")" = RUNNING ] || break
    sleep 0.1
done
if ! compgen -G "$ckpt_dir/ckpt-*.ckpt" >/dev/null; then
    fail "lesson 03: job $JOB wrote no checkpoint to $ckpt_dir while running"
    scancel "$JOB" 2>/dev/null
    show_output "$JOB_OUT"
    exit 1
fi
scancel --signal=USR1 --batch "$JOB"

state=$(wait_job "$JOB" 400)
restarts=$(scontrol show job "$JOB" 2>/dev/null | sed -nE 's/.*Restarts=([0-9]+).*/\1/p')
if [ "$state" = COMPLETED ]; then
    pass "lesson 03: job $JOB completed after ${restarts:-?} restart(s)"
else
    fail "lesson 03: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
if grep -q "User defined signal 1" "$JOB_OUT" && grep -q "requeued" "$JOB_OUT" &&
    grep -q "^resumed from" "$JOB_OUT" && [ "${restarts:-0}" -ge 1 ]; then
    pass "lesson 03: SIGUSR1 -> checkpoint -> exit 75 -> scontrol requeue -> resumed"
else
    fail "lesson 03: the output does not show the stop on SIGUSR1, the requeue and the resume (restarts: ${restarts:-?})"
    show_output "$JOB_OUT"
fi

# The same binary, never interrupted, with its own checkpoint directory.
ref_dir=$(mktemp -d "${TMPDIR:-/tmp}/test-03-ref.XXXXXX")
want=$(OMP_NUM_THREADS=1 "$bin" "${args[@]}" --checkpoint-dir "$ref_dir" 2>&1 |
    sed -nE 's/^parameter digest: ([0-9a-f]+)$/\1/p')
rm -rf "$ref_dir"
got=$(sed -nE 's/^parameter digest: ([0-9a-f]+)$/\1/p' "$JOB_OUT" | tail -1)
if [ -n "$want" ] && [ "$got" = "$want" ]; then
    pass "lesson 03: the requeued job ends with the digest of an uninterrupted run ($got)"
else
    fail "lesson 03: parameter digest ${got:-(none)} after the requeue, ${want:-(none)} without interruption"
    show_output "$JOB_OUT"
fi
exit $status
