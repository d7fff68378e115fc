#!/usr/bin/env bash
# Lesson 10's job pieces under the local Slurm:
#   1. slurm/lib/job.sh's job_monitor_start / job_monitor_stop in a job of 2 tasks: the
#      monitor runs as a step beside a 2-task step that does not ask to overlap (srun
#      --overlap must not hold it back), writes a line a second into the run directory,
#      and stops on job_monitor_stop with whole lines, the job completing;
#   2. slurm/10-performance.sbatch (make submit 10 SOLUTION=1), 1 node x 2 tasks, tiny:
#      the job completes, the monitor file is there and stopped, a trace per rank, and
#      sstat's and sacct's lines, or the one-line notes of a Slurm without accounting
#      (the local one: jobacct_gather/none, accounting_storage/none). Skipped, saying
#      so, where the lesson's program is not built with its options (--loader).
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

build=${COURSE_BUILD:-build}
monitor=$build/tools/node-monitor
if [ ! -x "$monitor" ]; then
    fail "lesson 10: $monitor is not built (make $monitor)"
    exit 1
fi
host=$(hostname -s)
dir=$(mktemp -d "${COURSE_SCRATCH_DIR:-${TMPDIR:-/tmp}}/course-10-monitor.XXXXXX")
chmod a+rwx "$dir"

# ---------------------------------------------------------------- 1. the helpers
cat >"$dir/job.sh" <<'EOF'
#!/bin/bash
set -euo pipefail
. slurm/lib/job.sh
JOB_ID=$SLURM_JOB_ID
trap job_monitor_stop EXIT
job_monitor_start "$1"
srun --ntasks=2 --cpus-per-task=1 bash -c 'sleep 3.5; echo "task $SLURM_PROCID ran beside the monitor"'
job_monitor_stop
echo "helpers: done"
EOF
job=$(sbatch --parsable --partition="${COURSE_PARTITION:-local}" --job-name=10-monitor --nodes=1 \
    --ntasks=2 --cpus-per-task=1 --time=00:05:00 --chdir="$PWD" --output="$dir/job-%j.out" \
    --export="ALL,COURSE_BUILD=$build" "$dir/job.sh" "$dir/run" 2>&1)
job=${job%%;*}
if ! [[ "$job" =~ ^[0-9]+$ ]]; then
    fail "lesson 10: sbatch refused the monitor helpers' job: $job"
    exit 1
fi
state=$(wait_job "$job" 120)
out=$dir/job-$job.out
file=$dir/run/monitor-$job-$host.jsonl
lines=$(grep -c '"source": "'"$host"' cpu"' "$file" 2>/dev/null)
if [ "$state" = COMPLETED ] && [ "$(grep -c 'ran beside the monitor' "$out")" = 2 ] &&
    grep -q "node-monitor: stopped by SIGUSR1" "$out" && [ "${lines:-0}" -ge 3 ] &&
    python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$file" 2>/dev/null; then
    pass "lesson 10: job_monitor_start beside a 2-task step (srun --overlap), $lines CPU lines in monitor-$job-$host.jsonl, stopped (SIGUSR1 through srun) with whole lines"
else
    fail "lesson 10: the monitor helpers' job $job ended $state; expected 2 task lines, 'stopped by SIGUSR1' and >= 3 CPU lines (got ${lines:-no file})"
    show_output "$out"
fi

# ---------------------------------------------------------------- 2. the lesson's job
train=$build/solutions/10-performance/train
if ! [ -x "$train" ] || ! "$train" --help 2>&1 | grep -q -- "--loader"; then
    echo "SKIP  lesson 10: $train is not built, or not the lesson's program (no --loader in its --help): slurm/10-performance.sbatch not run"
    rm -rf "$dir"
    exit $status
fi
text=$dir/text.txt
awk 'BEGIN { srand(10); for (l = 0; l < 3000; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$text"
chmod a+r "$text"
export COURSE_SBATCH_OPTIONS="--nodes=1 --ntasks-per-node=2 --cpus-per-task=1"
export COURSE_SSTAT_AFTER=2
if ! submit_job 10 --solution -- --dataset text --data "$text" --d-model 32 --heads 2 --d-hid 32 \
    --layers 2 --batch-size 8 --max-steps 6 --read-latency-us 2000; then
    fail "lesson 10: make submit 10 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 10: job $JOB completed on 2 ranks with the monitor beside it (sbatch, srun --mpi=pmix, srun --overlap)"
else
    fail "lesson 10: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
run=$COURSE_SCRATCH_DIR/dl-course/10-performance
file=$run/monitor-$JOB-$host.jsonl
if [ "$(grep -c '"source": "'"$host"' cpu"' "$file" 2>/dev/null)" -ge 1 ] && grep -q "node-monitor: stopped by SIGUSR1" "$JOB_OUT" &&
    [ -s "$run/trace-$JOB.rank0.json" ] && [ -s "$run/trace-$JOB.rank1.json" ]; then
    pass "lesson 10: monitor-$JOB-$host.jsonl written and stopped; trace-$JOB.rank0.json and rank1.json"
else
    fail "lesson 10: expected $file (stopped by SIGUSR1) and trace-$JOB.rank{0,1}.json in $run"
    ls -la "$run" 2>&1 | sed 's/^/        /'
    show_output "$JOB_OUT"
fi
# where accounting is on, sstat's and sacct's tables; where it is off, the notes
if grep -qE '^sstat( \(the running steps|: this Slurm gathers no usage|: the training ended)' "$JOB_OUT" &&
    grep -qE '^sacct( \(CPU efficiency|: this Slurm keeps no accounting)' "$JOB_OUT"; then
    pass "lesson 10: the job's sstat and sacct lines: $(grep -E '^(sstat|sacct)' "$JOB_OUT" | cut -c1-60 | tr '\n' '|')"
else
    fail "lesson 10: no sstat and sacct lines (or notes) at the end of the job's output"
    show_output "$JOB_OUT"
fi
rm -rf "$dir"
exit $status
