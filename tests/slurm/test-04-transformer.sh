#!/usr/bin/env bash
# Lesson 04's sbatch script under the local Slurm, on the CPU path (the local profile has
# no GPU: --device cpu): a short run on one fortunes file must complete, print the
# tutorial's epoch line and the test perplexity, and write its metrics to the scratch dir.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

text=/usr/share/games/fortunes/computers
if [ ! -r "$text" ]; then
    echo "SKIP  lesson 04: no $text (sudo apt-get install fortunes)"
    exit 0
fi
if ! submit_job 4 --solution -- --dataset text --data "$text" --epochs 1 --max-steps 5; then
    fail "lesson 04: make submit 4 SITE=local SOLUTION=1 did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 04: job $JOB completed on the CPU path (sbatch, srun, site profile local)"
else
    fail "lesson 04: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
if grep -qE '^\| end of epoch +1 \| time: +[0-9.]+s \| valid loss +[0-9.]+ \| valid ppl +[0-9.]+ \| +[0-9]+ tokens/s \|' "$JOB_OUT" &&
    grep -qE '^\| End of training \| test loss +[0-9.]+ \| test ppl +[0-9.]+' "$JOB_OUT"; then
    pass "lesson 04: the job's output has the epoch line and the test perplexity"
else
    fail "lesson 04: no epoch line or test perplexity in $JOB_OUT"
    show_output "$JOB_OUT"
fi
metrics="$COURSE_SCRATCH_DIR/dl-course/04-transformer/metrics-$JOB.jsonl"
if grep -qE '^\{"epoch": 1, "train_loss": [0-9.e+-]+, "valid_loss": [0-9.e+-]+, "valid_ppl": [0-9.e+-]+, "seconds": [0-9.e+-]+, "tokens_per_s": [0-9.e+-]+, "precision": "fp32", "skipped_steps": 0\}$' "$metrics" 2>/dev/null; then
    pass "lesson 04: metrics written to the site's scratch directory, with their keys (precision fp32, no skipped steps)"
else
    fail "lesson 04: no metrics line with epoch, train_loss, valid_loss, valid_ppl, seconds, tokens_per_s, precision fp32, skipped_steps 0 in $metrics"
    sed 's/^/        /' "$metrics" 2>/dev/null
    show_output "$JOB_OUT"
fi
exit $status
