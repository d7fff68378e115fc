#!/usr/bin/env bash
# Lesson 07's sbatch script under the local Slurm: its own 1 node x 2 tasks, one pipeline
# stage per task, as CPU ranks (the local profile has no GPU: srun --mpi=pmix, the
# tutorial's model), made tiny so that it takes seconds: a text the test writes, a
# 32-wide model of 2 layers, 3 steps. The job must complete, print the partition into
# 2 stages and the epoch line with the bubble, and rank 0 must write the metrics (a line
# per step with loss, tokens_per_s and bubble_fraction, then the epoch's) and the
# timeline of both stages to the site's scratch directory.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

# A small text of its own (the job reads it from the submit directory's file system):
# lines of words from a few hundred, so that a 32 x 35-token batch has many steps.
text=$(mktemp "${TMPDIR:-/tmp}/course-07-text.XXXXXX")
trap 'rm -f "$text"' EXIT
awk 'BEGIN { srand(7); for (l = 0; l < 3000; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$text"
chmod a+r "$text"

# --cpus-per-task=1: one thread per rank (the script's 8 would oversubscribe the few
# real cores of a CI machine); the script's nodes and tasks stay as they are.
export COURSE_SBATCH_OPTIONS="--cpus-per-task=1"
if ! submit_job 7 --solution -- --dataset text --data "$text" --d-model 32 --heads 2 \
    --d-hid 32 --layers 2 --epochs 1 --max-steps 3 --timeout 60; then
    fail "lesson 07: make submit 7 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 07: job $JOB completed on 2 ranks (sbatch, srun --mpi=pmix, site profile local)"
else
    fail "lesson 07: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
if grep -qE '^dist: mpi backend, 2 ranks' "$JOB_OUT" && grep -qE '^  stage 1: ' "$JOB_OUT" &&
    grep -qE '^\| end of epoch +1 \| time: +[0-9.]+s \| train loss +[0-9.]+ \| valid loss +[0-9.]+ \| valid ppl +[0-9.]+ \| [0-9]+ tokens/s \| bubble [0-9.]+ \(formula 0\.111\)$' "$JOB_OUT" &&
    grep -qE '^\| end of training \| test loss +[0-9.]+ \| test ppl +[0-9.]+' "$JOB_OUT"; then
    pass "lesson 07: 2 stages over MPI, the epoch line with the bubble against (p-1)/(m+p-1), the test loss"
else
    fail "lesson 07: no 2-rank mpi line, stage 1, epoch line with 'bubble ... (formula 0.111)' or test loss in $JOB_OUT"
    show_output "$JOB_OUT"
fi
dir="$COURSE_SCRATCH_DIR/dl-course/07-pipeline"
metrics="$dir/metrics-$JOB.jsonl"
num='-?[0-9.]+(e[+-]?[0-9]+)?'
steps=$(grep -cE "^\{\"step\": [1-3], \"epoch\": 1, \"loss\": $num, \"tokens_per_s\": $num, \"bubble_fraction\": $num," "$metrics" 2>/dev/null)
if [ "${steps:-0}" = 3 ] && [ "$(grep -c '^{"epoch": 1, .*"bubble_formula"' "$metrics")" = 1 ] &&
    [ "$(wc -l <"$metrics")" = 4 ]; then
    pass "lesson 07: metrics in the site's scratch directory: 3 step lines (loss, tokens_per_s, bubble_fraction) and 1 epoch line"
else
    fail "lesson 07: expected 3 step lines with loss, tokens_per_s, bubble_fraction and one epoch line in $metrics"
    sed 's/^/        /' "$metrics" 2>/dev/null | head -8
    ls -la "$dir" 2>&1 | sed 's/^/        /'
    show_output "$JOB_OUT"
fi
timeline="$dir/timeline-$JOB.jsonl"
if grep -q '"rank": 0, "kind": "forward"' "$timeline" 2>/dev/null &&
    grep -q '"rank": 1, "kind": "backward"' "$timeline"; then
    pass "lesson 07: the timeline holds both stages' forwards and backwards"
else
    fail "lesson 07: no forwards of rank 0 and backwards of rank 1 in $timeline"
    head -4 "$timeline" 2>&1 | sed 's/^/        /'
fi
exit $status
