#!/usr/bin/env bash
# The measurements behind the figure 03-resume: lesson 03's solution trained twice
# on the same data with the same seed, once straight through and once stopped every
# 70 steps (as a job at its time limit) and resumed from its checkpoint. One JSON
# line per epoch and run on stdout, with "run" saying which; the parameter digests
# of both runs go to stderr.
#   tools/figures/record.sh 03-resume -- tools/figures/runs/03-resume.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
make --no-print-directory -s build/solutions/03-checkpointing/train >&2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
train=(build/solutions/03-checkpointing/train --dataset fashion-mnist --train-limit 6000
       --test-limit 2000 --epochs 5 --threads 2 --checkpoint-every 20)

"${train[@]}" --checkpoint-dir "$dir/straight" --metrics "$dir/straight.jsonl" >"$dir/straight.log"
sed 's/^{/{"run": "straight through", /' "$dir/straight.jsonl"

starts=0
while :; do
    starts=$((starts + 1))
    status=0
    "${train[@]}" --checkpoint-dir "$dir/stopped" --resume --stop-after-steps 70 \
        --metrics "$dir/part$starts.jsonl" >"$dir/stopped$starts.log" || status=$?
    sed 's/^{/{"run": "stopped every 70 steps, resumed", /' "$dir/part$starts.jsonl"
    [ $status = 75 ] || break
    [ $starts -lt 50 ] || { echo "03-resume.sh: still not done after 50 starts" >&2; exit 1; }
done
[ $status = 0 ] || { echo "03-resume.sh: the resumed run failed (status $status)" >&2; cat "$dir/stopped$starts.log" >&2; exit 1; }
echo "straight through: $(grep 'parameter digest' "$dir/straight.log")" >&2
echo "stopped $((starts - 1)) times:  $(grep 'parameter digest' "$dir/stopped$starts.log")" >&2
