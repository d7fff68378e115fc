#!/usr/bin/env bash
# Lesson 03's sbatch script run directly (outside Slurm, as on a login node or a
# laptop): SIGUSR1 to the script reaches the program, which checkpoints and exits
# with 75, passed on by the script; SIGTERM stops it without a requeue; running the
# script again resumes and ends with the digest of an uninterrupted run. Needs no Slurm.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

build=${COURSE_TEST_BUILD:-build}
bin=$build/solutions/03-checkpointing/train
make --no-print-directory BUILD="$build" "$bin" >/dev/null 2>&1 || { fail "lesson 03 outside Slurm: cannot build $bin"; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/test-03-outside.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
args=(--dataset synthetic --epochs 2 --train-limit 3000 --test-limit 100 --batch-size 50
      --threads 1 --checkpoint-every 5)
# a command, not a function: "function &" would put a subshell between the signal and bash
script=(env -u SLURM_JOB_ID COURSE_SITE=local COURSE_SCRATCH_DIR="$scratch" SOLUTION=1
        COURSE_BUILD="$build" bash slurm/03-checkpointing.sbatch "${args[@]}")
ckpt_dir=$scratch/dl-course/03-checkpointing/checkpoints-local

# $1: signal; runs the script until it has written a checkpoint, then signals it
signal_script() {
    local sig=$1 i
    "${script[@]}" >"$scratch/$sig.out" 2>&1 &
    local p=$!
    for ((i = 0; i < 300; i++)); do  # the program runs (and has something to save)
        grep -qE "^(resumed from|  +1 +[0-9])|/ckpt-" "$scratch/$sig.out" 2>/dev/null &&
            compgen -G "$ckpt_dir/ckpt-*.ckpt" >/dev/null && break
        sleep 0.1
    done
    kill "-$sig" "$p"
    for ((i = 0; i < 300; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p"; echo timeout; return; fi
    wait "$p"
    echo $?
}

rc=$(signal_script USR1)
if [ "$rc" = 75 ] && grep -q "User defined signal 1" "$scratch/USR1.out" && ! pgrep -f "$ckpt_dir" >/dev/null; then
    pass "lesson 03 outside Slurm: SIGUSR1 to the script -> checkpoint, exit 75"
else
    fail "lesson 03 outside Slurm: SIGUSR1 to the script ended with $rc (the program did not stop on it?)"
    show_output "$scratch/USR1.out"
fi
rc=$(signal_script TERM)
if [ "$rc" = 0 ] && grep -q "^resumed from" "$scratch/TERM.out" && grep -q "(Terminated)" "$scratch/TERM.out" &&
    grep -q "not requeued" "$scratch/TERM.out"; then
    pass "lesson 03 outside Slurm: resumed, then SIGTERM -> checkpoint, not requeued, exit 0"
else
    fail "lesson 03 outside Slurm: after a resume, SIGTERM to the script ended with $rc"
    show_output "$scratch/TERM.out"
fi
got=$("${script[@]}" 2>&1 | sed -nE 's/^parameter digest: ([0-9a-f]+)$/\1/p')
want=$(OMP_NUM_THREADS=1 "$bin" "${args[@]}" --checkpoint-dir "$scratch/ref" 2>&1 |
    sed -nE 's/^parameter digest: ([0-9a-f]+)$/\1/p')
if [ -n "$want" ] && [ "$got" = "$want" ]; then
    pass "lesson 03 outside Slurm: two stops, then the digest of an uninterrupted run ($got)"
else
    fail "lesson 03 outside Slurm: digest ${got:-(none)} after the stops, ${want:-(none)} without"
fi
exit $status
