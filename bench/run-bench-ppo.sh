#!/usr/bin/env bash
# make bench-ppo: PPO on CartPole-v1 with CleanRL's settings, lesson 05's C program
# against the same algorithm in PyTorch (bench/pytorch_ppo.py), on this machine:
#   - wall time until the mean return of the last 20 episodes reaches 475 (checked after
#     each update), per seed and its median over the seeds; C on 1 and on THREADS
#     threads, PyTorch on PYTORCH_THREADS (default 1: its fastest for these tiny
#     networks; on the 2-core VM two threads took 3 to 15 times longer per step);
#   - environment steps per second for the whole training loop, and for stepping the
#     environments alone (4 copies, random actions);
#   - where the time goes: environments, the networks' forward in rollouts, updates.
# The runs of one seed follow each other (C, C, ..., PyTorch) before the next seed's, so
# that a disturbance from other jobs hits both sides; C, being fast, runs C_ROUNDS times
# per seed and its best round counts. A seed that does not reach 475 within 500,000
# steps counts as infinitely slow in the median.
#   bench/run-bench-ppo.sh BUILD_DIR THREADS [SEEDS] [C_ROUNDS]
# BENCH_PPO_JSONL=FILE also writes every run as a JSON line (for docs/figures/).
set -euo pipefail
build=$1 threads=$2 seeds=${3:-5} c_rounds=${4:-3}
py_threads=${PYTORCH_THREADS:-1}
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
train=$build/solutions/05-ppo/train
jsonl=${BENCH_PPO_JSONL:-/dev/null}
: >"$jsonl"

have_torch=no
"$python" -c 'import torch' >/dev/null 2>&1 && have_torch=yes
c_threads=(1)
[ "$threads" -gt 1 ] && c_threads+=("$threads")

# one C run: prints "STEPS SECONDS ENV ACT VALUES UPDATE", or "- inf ..." when not reached
c_run() { # $1 seed, $2 threads
    local out steps secs
    out=$(OMP_NUM_THREADS=$2 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-$([ "$2" -gt 1 ] && echo passive || echo active)} \
          "$train" --env cartpole --seed "$1" --threads "$2" --target-return 475 \
          --log-every 1000000)
    if grep -q '^reached' <<<"$out"; then
        steps=$(sed -nE 's/^reached .* at step ([0-9]+), ([0-9.]+) s after.*/\1/p' <<<"$out")
        secs=$(sed -nE 's/^reached .* at step ([0-9]+), ([0-9.]+) s after.*/\2/p' <<<"$out")
    else
        steps=- secs=inf
    fi
    sed -nE 's/^time: .* environments ([0-9.]+) s, actor in rollouts ([0-9.]+) s, critic values ([0-9.]+) s, updates ([0-9.]+) s.*/\1 \2 \3 \4/p' <<<"$out" |
        { read -r e a v u; echo "$steps $secs $e $a $v $u"; }
}
json() { sed -nE "s/.*\"$1\": \"?([^,\"}]+)\"?.*/\1/p" <<<"$2"; }
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "PPO on CartPole-v1 to a mean return of 475 (last 20 episodes), CleanRL's settings"
echo "$cpu, $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "C: $train, best of $c_rounds rounds per seed (several threads: OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}); PyTorch: $( [ $have_torch = yes ] && "$python" -c 'import torch; print(torch.__version__)' || echo 'not installed'), $py_threads thread(s)"
echo
printf '%-5s' seed
for t in "${c_threads[@]}"; do printf '  %22s' "C, $t thread$([ "$t" -gt 1 ] && echo s)"; done
printf '  %22s\n' "PyTorch, $py_threads thread$([ "$py_threads" -gt 1 ] && echo s)"

# per configuration, one line per seed: "SECONDS STEPS ENV ACT VALUES UPDATE" (its best round)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((s = 1; s <= seeds; s++)); do
    printf '%-5s' "$s"
    for t in "${c_threads[@]}"; do
        best="inf -"
        for ((r = 1; r <= c_rounds; r++)); do
            read -r steps secs e a v u < <(c_run "$s" "$t")
            echo "{\"impl\": \"c\", \"threads\": $t, \"seed\": $s, \"round\": $r, \"steps_to_target\": \"$steps\", \"seconds_to_target\": \"$secs\"}" >>"$jsonl"
            if awk -v a="$secs" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best="$secs $steps $e $a $v $u"; fi
        done
        echo "$best" >>"$tmp/c$t"
        read -r secs steps _ <<<"$best"
        printf '  %9s steps %6s s' "$steps" "$secs"
    done
    if [ $have_torch = yes ]; then
        line=$(OMP_NUM_THREADS=$py_threads "$python" "$here/pytorch_ppo.py" --seed "$s" --threads "$py_threads")
        echo "$line" >>"$jsonl"
        if [ "$(json reached "$line")" = true ]; then
            secs=$(json seconds_to_target "$line") steps=$(json steps_to_target "$line")
        else
            secs=inf steps=-
        fi
        echo "$secs $steps $(json env_s "$line") $(json forward_s "$line") 0 $(json update_s "$line")" >>"$tmp/py"
        printf '  %9s steps %6.1f s\n' "$steps" "$secs"
    else
        echo
    fi
done

echo
printf '%-5s' median
for t in "${c_threads[@]}"; do printf '  %22s' "$(cut -d' ' -f1 "$tmp/c$t" | median) s"; done
if [ $have_torch = yes ]; then
    t_med=$(cut -d' ' -f1 "$tmp/py" | median)
    printf '  %22s\n' "$t_med s"
    for t in "${c_threads[@]}"; do
        printf 'PyTorch / C on %d thread%s: %.1fx (median seconds to 475)\n' "$t" "$([ "$t" -gt 1 ] && echo s)" \
            "$(awk -v a="$t_med" -v b="$(cut -d' ' -f1 "$tmp/c$t" | median)" 'BEGIN { print a / b }')"
    done
else
    echo
    echo "(PyTorch: not installed for $python; sudo make deps adds python3-torch)"
fi

echo
echo "steps/s of the whole training loop (steps to 475 / seconds) and where the time went, over the seeds' runs:"
split() { # $1 file, $2 name; columns: seconds steps env act values update
    awk -v name="$2" '$2 != "-" { s += $1; n += $2; e += $3; a += $4; v += $5; u += $6 }
        END { printf "  %s: %.0f steps/s; environments %.1f%%, forward in rollouts %.1f%%, updates %.1f%%, the rest %.1f%%\n",
              name, n / s, 100 * e / s, 100 * (a + v) / s, 100 * u / s, 100 * (s - e - a - v - u) / s }' "$1"
}
for t in "${c_threads[@]}"; do split "$tmp/c$t" "C, $t thread$([ "$t" -gt 1 ] && echo s)"; done
[ $have_torch = yes ] && split "$tmp/py" "PyTorch, $py_threads thread(s)"
echo "environment steps/s alone, 4 CartPole copies, random actions:"
c_env=$("$build/bench/bench_ppo" 1)
echo "$c_env" >>"$jsonl"
printf '  C: %.0f (and the actor choosing actions alone: %.0f observations/s)\n' "$(json env_steps_per_s "$c_env")" \
    "$(json act_obs_per_s "$c_env")"
if [ $have_torch = yes ]; then
    py_env=$("$python" "$here/pytorch_ppo.py" --env-only 1)
    echo "$py_env" >>"$jsonl"
    printf '  Python (the PyTorch script'"'"'s CartPole): %.0f\n' "$(json env_steps_per_s "$py_env")"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
