#!/usr/bin/env bash
# A 2-task job launched with srun --mpi=pmix (slurm/mpi-check.sbatch): both ranks
# must start and their all-reduce must be right.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

if ! command -v mpicc >/dev/null; then
    echo "SKIP  mpi: Open MPI is not installed (sudo make deps)"
    exit 0
fi
if ! submit_job mpi-check; then
    fail "mpi: make submit mpi-check SITE=local did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 120)
ranks=$(grep -c '^rank [01] of 2 ' "$JOB_OUT" 2>/dev/null)
if [ "$state" = COMPLETED ] && [ "$ranks" = 2 ] &&
    grep -q 'all-reduce of the ranks: 1 (expected 1) ok' "$JOB_OUT"; then
    pass "mpi: 2 tasks by srun --mpi=pmix, all-reduce correct (job $JOB)"
else
    fail "mpi: job $JOB ended $state with $ranks of 2 ranks reporting"
    show_output "$JOB_OUT"
fi
exit $status
