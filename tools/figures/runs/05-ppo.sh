#!/usr/bin/env bash
# The measurements behind the figures 05-ppo-ENV: lesson 05's solution trained for
# 500,000 steps with its defaults for ENV (cartpole, acrobot: CleanRL's ppo.py;
# pendulum: its continuous-action settings), once per seed. One JSON line per fourth
# update on stdout (the --metrics keys, with "seed"); each run's closing lines go to
# stderr. BUILD=DIR: the build directory (default build).
#   tools/figures/record.sh 05-ppo-cartpole -- tools/figures/runs/05-ppo.sh cartpole 5
set -euo pipefail
env=${1:?which environment: cartpole, acrobot or pendulum}
seeds=${2:-5}
cd "$(dirname "$0")/../../.."
build=${BUILD:-build}
make --no-print-directory -s BUILD="$build" "$build/solutions/05-ppo/train" >&2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((s = 1; s <= seeds; s++)); do
    "$build/solutions/05-ppo/train" --env "$env" --seed "$s" --metrics "$dir/run.jsonl" --log-every 1000000 |
        tail -n 3 | sed "s/^/$env seed $s: /" >&2
    awk -v s="$s" 'NR % 4 == 1 || NR == n' n="$(wc -l <"$dir/run.jsonl")" "$dir/run.jsonl" |
        sed "s/^{/{\"seed\": $s, /"
done
