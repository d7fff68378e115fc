#!/usr/bin/env bash
# The GPU lessons' sbatch scripts (00, 02) under the local Slurm. The local profile
# has no GPUs and sets COURSE_DEVICE=cpu, so this proves the scripts, the site
# plumbing and the programs' CPU paths; the GPU paths need a GPU node. The other GPU
# lessons' scripts have tests of their own: test-04-transformer.sh, test-06-ddp.sh and
# test-07-pipeline.sh (2 ranks, their script's GPU-less CPU-rank path).
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

run_lesson() { # $1: number, $2: name, $3: regex the output must contain, rest: program args
    local n=$1 name=$2 want=$3 state
    shift 3
    if ! submit_job "$n" --solution -- "$@"; then
        fail "lesson $name: make submit $n SITE=local SOLUTION=1 did not submit"
        return
    fi
    state=$(wait_job "$JOB" 300)
    if [ "$state" = COMPLETED ] && grep -qE "$want" "$JOB_OUT"; then
        pass "lesson $name: job $JOB completed on the CPU path and printed its results"
    else
        fail "lesson $name: job $JOB ended $state (exit $(job_exit "$JOB")), or its output lacks /$want/"
        show_output "$JOB_OUT"
    fi
}

run_lesson 0 00-hello-gpu 'vector add on the CPU' --size-mb 16
run_lesson 2 02-gpu-cnn '^cpu +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+$' \
    --dataset synthetic --train-limit 600 --test-limit 200
exit $status
