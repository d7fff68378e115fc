#!/usr/bin/env bash
# Lesson 05's sbatch script under the local Slurm: a job array of two seeds (the
# script asks for five; COURSE_SBATCH_OPTIONS overrides it), each a short run. Every
# task must complete, print its per-update lines, write its metrics with the keys of
# the lesson to the site's scratch directory, and the two seeds must train differently.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

export COURSE_SBATCH_OPTIONS="--array=1-2"
# one thread: the local Slurm's 16 advertised CPUs share this machine's few cores
if ! submit_job 5 --solution -- --steps 15360 --threads 1; then
    fail "lesson 05: make submit 5 SITE=local SOLUTION=1 did not submit"
    exit 1
fi

# the states of all tasks of the array, counted
array_states() { scontrol show job "$1" 2>/dev/null | sed -nE 's/.*JobState=([A-Z_]+).*/\1/p' | sort | uniq -c; }
# the log of array task $2 of job array $1: logs/05-ppo-<the task's own job id>.out
task_log() {
    scontrol show job "$1" 2>/dev/null | awk -v t="$2" '/^JobId=/ { split($1, a, "="); id = a[2] }
        /ArrayTaskId=/ { if (match($0, /ArrayTaskId=[0-9]+/) && substr($0, RSTART + 12, RLENGTH - 12) == t) print "logs/05-ppo-" id ".out" }'
}
for ((i = 0; i < 300; i++)); do
    states=$(array_states "$JOB")
    [ -n "$states" ] && ! grep -qE 'PENDING|RUNNING|CONFIGURING|COMPLETING' <<<"$states" && break
    sleep 1
done
if [ "$(tr -s ' ' <<<"$states" | sed 's/^ //')" = "2 COMPLETED" ]; then
    pass "lesson 05: both tasks of job array $JOB completed (sbatch --array, srun, site profile local)"
else
    fail "lesson 05: job array $JOB: task states $(tr '\n' ' ' <<<"$states")"
    for t in 1 2; do show_output "$(task_log "$JOB" $t)"; done
    scancel "$JOB" 2>/dev/null
    exit 1
fi

dir="$COURSE_SCRATCH_DIR/dl-course/05-ppo"
keys='"step".*"mean_return".*"episode_length".*"policy_loss".*"value_loss".*"entropy".*"approx_kl".*"clip_fraction".*"explained_variance".*"steps_per_s".*"wall_s"'
digests="" lines=""
for seed in 1 2; do
    metrics="$dir/metrics-${JOB}_$seed.jsonl"
    if [ "$(grep -cE "$keys" "$metrics" 2>/dev/null)" = 30 ]; then
        pass "lesson 05: seed $seed wrote 30 metrics lines (one per update) with the lesson's keys"
    else
        fail "lesson 05: seed $seed: expected 30 lines with the lesson's keys in $metrics"
        ls -la "$dir" 2>&1 | sed 's/^/        /'
    fi
    log=$(task_log "$JOB" $seed)
    digests+="$(sed -nE 's/^parameter digest: ([0-9a-f]+)$/\1/p' "$log" 2>/dev/null)"$'\n'
    lines+="$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9.-]+ +[0-9.-]+ ' "$log" 2>/dev/null) "
done
if [ "$(grep -c . <<<"$digests")" = 2 ] && [ "$(grep . <<<"$digests" | sort -u | wc -l)" = 2 ] && [ "$lines" = "2 2 " ]; then
    pass "lesson 05: each task printed its update lines (--log-every 20: updates 20 and 30), and the two seeds trained differently"
else
    fail "lesson 05: expected 2 update lines per task and two different parameter digests; lines: $lines, digests: $(tr '\n' ' ' <<<"$digests")"
    for t in 1 2; do show_output "$(task_log "$JOB" $t)"; done
fi
exit $status
