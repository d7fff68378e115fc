#!/usr/bin/env bash
# Each task gets the cores its job asked for (slurm/cpus-check.sbatch: 2 tasks of 8
# cores under the local Slurm): srun since Slurm 22.05 does not inherit the job's
# --cpus-per-task, so the course's launcher must pass it on (issue 30). Each rank must
# report 8 cpus per task from srun, and may run on 8 cores, or on all of the node's
# where Slurm binds no cores (the local Slurm: TaskPlugin=task/none).
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

if ! submit_job cpus-check; then
    fail "cpus: make submit cpus-check SITE=local did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 120)
cores=$(nproc --all)
want=8
[ "$cores" -lt $want ] && want=$cores # a task may run on at most the node's cores
ok=$(grep -cE "^rank [01]: 8 cpus per task \(asked 8\), may run on ([0-9]+) cores$" "$JOB_OUT" 2>/dev/null)
bound=$(sed -nE 's/^rank [01]: .* may run on ([0-9]+) cores$/\1/p' "$JOB_OUT" 2>/dev/null | sort -n | head -1)
if [ "$state" = COMPLETED ] && [ "$ok" = 2 ] && [ "${bound:-0}" -ge "$want" ]; then
    pass "cpus: both ranks of a 2 x 8-core job got 8 cpus per task from srun, may run on $bound cores (job $JOB)"
else
    fail "cpus: job $JOB ended $state; $ok of 2 ranks got 8 cpus per task, the fewest cores a rank may run on: ${bound:-none} (want at least $want)"
    show_output "$JOB_OUT"
fi
exit $status
