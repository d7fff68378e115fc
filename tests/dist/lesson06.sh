#!/usr/bin/env bash
# Lesson 06's solution beyond one process group on one machine:
#   - two hosts on one machine: two network namespaces joined by a veth pair, one rank
#     in each, Open MPI over TCP only (no shared memory), mpirun starting the second
#     rank inside the second namespace (its "ssh" is `ip netns exec`); the ranks must
#     end with the parameters of the same run on one host. Needs root and iproute2
#     (network namespaces), else skipped.
#   - lesson 03's checkpoints across rank counts: one epoch on 2 ranks, then the second
#     resumed from its checkpoint on 3 ranks; it must end normally with an epoch-2 line
#     and the same digest on all 3 ranks.
#   - the transformer in fp16, resumed: one epoch, then the second resumed from its
#     checkpoint, must end with the weights of the uninterrupted two epochs, bit for bit.
#     Made to need the loss scaler's state: a text of 12,000 made-up words and one token
#     per rank and step, so that step 1's scaled loss gradient (65536 x (p - 1), p about
#     1/12000) overflows float16, the step is skipped and the scale halves; a resume
#     without the scaler in the checkpoint starts again at 65536, skips again, and ends
#     elsewhere. Then the same checkpoint resumed in bf16, and a float32 one in fp16 (a
#     note: no loss scale in it), both run. Dropout 0: the blocks' dropout streams are
#     not in lesson 06's checkpoint (each rank has its own), so only a run without
#     dropout resumes bit for bit.
#   - a rank killed with SIGKILL mid-epoch: the job must end within its --timeout
#     plus a margin, non-zero, with a message naming the rank.
#   - issue 30, fault 4: ranks started with different options (mpirun's MPMD form, one
#     command line each): a different --batch-size, a different --lr: the job ends at
#     start-up, non-zero, naming the option and both values; a different --metrics
#     (only rank 0 writes it) is allowed.
#   - issue 30, fault 5: SIGTERM to mpirun mid-run: rank 0 says it was stopped by
#     SIGTERM and names the last checkpoint, which is the newest file in the directory.
#   - --help under 2 ranks prints the help once.
# Last line: "N passed, M failed[, K skipped]".
#   tests/dist/lesson06.sh BUILD_DIR
set -u
build=${1:-build}
bin=$build/solutions/06-ddp/train
. "$(dirname "$0")/../lib-checks.sh" # pass, fail, skip, show, checks_summary
finish() {
    checks_summary
    exit
}

if ! command -v mpirun >/dev/null || [ ! -x "$bin" ]; then
    skip "lesson 06 across hosts: needs ranks: Open MPI's mpirun (sudo make deps) and $bin"
    finish
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
run=(--threads 1 --dataset synthetic --train-limit 800 --test-limit 200 --epochs 1 --timeout 20)
digests() { sed -nE 's/^rank ([0-9]+) parameter digest: ([0-9a-f]+)$/\1 \2/p' <<<"$1" | sort; }

# ---- two hosts in network namespaces
tag=$$ scratch=$(mktemp -d) # tag: this run's, in the names the checks below give their jobs
. "$(dirname "$0")/two_hosts.sh"
cleanup() { two_hosts_down; rm -rf "$scratch"; }
trap cleanup EXIT
if ! two_hosts_up "$scratch"; then
    skip "lesson 06 on two hosts: $TWO_HOSTS_WHY"
else
    one=$(timeout 120 mpirun -n 2 --oversubscribe --mca btl self,vader,tcp "$bin" "${run[@]}" 2>&1)
    two=$(two_hosts_mpirun "$bin" "${run[@]}" 2>&1)
    d1=$(digests "$one") d2=$(digests "$two")
    if ! grep -q "2 ranks on 2 nodes" <<<"$two"; then
        fail "lesson 06 on two hosts: the job did not see 2 nodes"
        tail -15 <<<"$two" | sed 's/^/        /'
    elif [ "$(wc -l <<<"$d2")" -ne 2 ] || [ "$d1" != "$d2" ]; then
        fail "lesson 06 on two hosts: digests differ from one host (one host: $(echo $d1); two: $(echo $d2))"
        tail -15 <<<"$two" | sed 's/^/        /'
    else
        pass "lesson 06 on two hosts (namespaces, Open MPI over TCP): the same parameters as on one host ($(head -1 <<<"$d2" | cut -d' ' -f2))"
    fi
fi

# ---- checkpoints across rank counts: 2 ranks write, 3 ranks resume
ck=$scratch/ck
small=(--threads 1 --dataset synthetic --train-limit 600 --test-limit 100 --batch-size 50 --timeout 20
    --checkpoint-dir "$ck")
first=$(timeout 120 mpirun -n 2 --oversubscribe --mca btl self,vader,tcp "$bin" "${small[@]}" --epochs 1 2>&1)
first_status=$?
second=$(timeout 120 mpirun -n 3 --oversubscribe --mca btl self,vader,tcp "$bin" "${small[@]}" --epochs 2 --resume 2>&1)
second_status=$?
d3=$(digests "$second")
if [ $first_status -ne 0 ] || ! ls "$ck"/*.ckpt >/dev/null 2>&1; then
    fail "resume on another rank count: the 2-rank epoch ended with $first_status and left no checkpoint in $ck"
    tail -15 <<<"$first" | sed 's/^/        /'
elif [ $second_status -ne 0 ] || ! grep -q "now on 3 ranks" <<<"$second" || ! grep -qE '^ +2 +[0-9]' <<<"$second"; then
    fail "resume on another rank count: 3 ranks resuming 2 ranks' checkpoint ended with $second_status, without a resumed epoch 2"
    tail -15 <<<"$second" | sed 's/^/        /'
elif [ "$(wc -l <<<"$d3")" -ne 3 ] || [ "$(cut -d' ' -f2 <<<"$d3" | sort -u | wc -l)" -ne 1 ]; then
    fail "resume on another rank count: the 3 ranks end with different parameters ($(echo $d3))"
    tail -15 <<<"$second" | sed 's/^/        /'
else
    pass "checkpoint of 2 ranks resumed on 3: epoch 2 trained, all 3 ranks at $(head -1 <<<"$d3" | cut -d' ' -f2)"
fi

# ---- the fp16 transformer resumed: its loss scaler in the checkpoint
words=$scratch/words.txt
awk 'BEGIN { srand(1); for (l = 0; l < 3000; l++) { s = ""; for (k = 0; k < 12; k++) s = s " w" int(rand() * 12000); print s } }' >"$words"
lm=(--model transformer --text text --data "$words" --d-model 16 --heads 2 --d-hid 16 --layers 1
    --dropout 0 --batch-size 1 --bptt 1 --train-limit 40 --test-limit 10 --threads 1 --timeout 20)
mp2() { timeout 120 mpirun -n 2 --oversubscribe --mca btl self,vader,tcp "$bin" "${lm[@]}" "$@" 2>&1; }
whole=$(mp2 --precision fp16 --epochs 2)
part1=$(mp2 --precision fp16 --epochs 1 --checkpoint-dir "$scratch/ck16")
part2=$(mp2 --precision fp16 --epochs 2 --checkpoint-dir "$scratch/ck16" --resume)
dw=$(digests "$whole") dr=$(digests "$part2")
if ! grep -q 'fp16: 1 steps skipped so far' <<<"$part1"; then
    fail "fp16 resumed: the first epoch skipped no step (the check needs step 1 to overflow)"
    tail -8 <<<"$part1" | sed 's/^/        /'
elif [ "$(wc -l <<<"$dr")" -ne 2 ] || [ "$dw" != "$dr" ] || ! grep -q 'loss scale 32768, 1 steps skipped so far (from the checkpoint)' <<<"$part2"; then
    fail "fp16 resumed: not the uninterrupted run's weights (uninterrupted: $(echo $dw); resumed: $(echo $dr))"
    tail -8 <<<"$part2" | sed 's/^/        /'
else
    pass "fp16 transformer, epoch 2 resumed: the uninterrupted run's weights bit for bit ($(head -1 <<<"$dr" | cut -d' ' -f2)), the scale 32768 and 1 skip from the checkpoint"
fi
bf=$(mp2 --precision bf16 --epochs 3 --checkpoint-dir "$scratch/ck16" --resume); bf_status=$?
mp2 --precision fp32 --epochs 1 --checkpoint-dir "$scratch/ck32" >/dev/null
f16=$(mp2 --precision fp16 --epochs 2 --checkpoint-dir "$scratch/ck32" --resume); f16_status=$?
if [ $bf_status -eq 0 ] && [ $f16_status -eq 0 ] && grep -q 'holds no loss scale' <<<"$f16" && grep -qE '^ +3 +[0-9]' <<<"$bf"; then
    pass "an fp16 checkpoint resumed in bf16, a float32 one in fp16 (noted: no loss scale in it, 65536 again)"
else
    fail "an fp16 checkpoint resumed in bf16 (exit $bf_status), a float32 one in fp16 (exit $f16_status, the note?)"
    tail -5 <<<"$bf" | sed 's/^/        /'; tail -5 <<<"$f16" | sed 's/^/        /'
fi

# ---- ranks started with different options (issue 30, fault 4)
opts=(--threads 1 --dataset synthetic --train-limit 200 --test-limit 50 --epochs 1 --timeout 20)
mpmd() { # OPTIONS-OF-RANK-0 -- OPTIONS-OF-RANK-1: both ranks' output
    local a=() b=()
    while [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    timeout 120 mpirun --oversubscribe --mca btl self,vader,tcp -n 1 "$bin" "${opts[@]}" "${a[@]}" \
        : -n 1 "$bin" "${opts[@]}" "${b[@]}" 2>&1
}
for case in "--batch-size|32|16|32|16" "--lr|0.001|0.01|0.001|0.01"; do
    IFS='|' read -r name v0 v1 want0 want1 <<<"$case"
    t0=$(date +%s)
    out=$(mpmd "$name" "$v0" -- "$name" "$v1")
    status=$? took=$(($(date +%s) - t0))
    if [ $status -ne 0 ] && [ $status -ne 124 ] &&
        grep -q "^error: the ranks were started with different options: $name is $want0 on rank 0 but $want1 on rank 1" <<<"$out" &&
        ! grep -q "MPI_ERR\|^ *1 " <<<"$out"; then
        pass "ranks started with $name $v0 and $v1: ended at start-up in $took s (exit $status), naming $name and both values"
    else
        fail "ranks started with $name $v0 and $v1: exit $status after $took s (expected non-zero and \"the ranks were started with different options: $name is $want0 on rank 0 but $want1 on rank 1\", before any epoch)"
        tail -15 <<<"$out" | sed 's/^/        /'
    fi
done
out=$(mpmd --metrics "$scratch/m0.jsonl" -- --metrics "$scratch/m1.jsonl")
status=$?
if [ $status -eq 0 ] && [ "$(digests "$out" | cut -d' ' -f2 | sort -u | wc -l)" -eq 1 ]; then
    pass "ranks started with different --metrics files (rank 0 alone writes one): trained, the same digest"
else
    fail "ranks with different --metrics: exit $status (expected 0 and one digest)"
    tail -15 <<<"$out" | sed 's/^/        /'
fi

# ---- --help once under 2 ranks
out=$(timeout 60 mpirun --oversubscribe -n 2 "$bin" --help 2>&1)
if [ "$(grep -c '^usage:' <<<"$out")" -eq 1 ] && grep -q -- '--batch-size VALUE  *examples (images, or sequences) per step on each rank' <<<"$out"; then
    pass "--help on 2 ranks: printed once; --batch-size said to be per rank"
else
    fail "--help on 2 ranks: $(grep -c '^usage:' <<<"$out") usage lines (expected 1), or --batch-size's help not per rank"
    grep -- '--batch-size' <<<"$out" | sed 's/^/        /'
fi

# ---- SIGTERM to mpirun (issue 30, fault 5): the last checkpoint named
ck5=$scratch/ck5 out=$scratch/term.out
COURSE_TEST_RUN=term$tag mpirun -n 2 --oversubscribe --mca btl self,vader,tcp -x COURSE_TEST_RUN \
    "$bin" --threads 1 --dataset synthetic --train-limit 2000 --test-limit 100 --batch-size 50 \
    --epochs 100 --timeout 20 --checkpoint-dir "$ck5" >"$out" 2>&1 &
job=$!
for _ in $(seq 1 900); do # up to 90 s for two checkpoints
    [ "$(grep -c '^checkpoint ' "$out")" -ge 2 ] && break
    sleep 0.1
done
kill -TERM $job
( sleep 60; kill -9 $job 2>/dev/null ) & watchdog=$!
wait $job
status=$?
kill $watchdog 2>/dev/null
newest=$(ls "$ck5"/ckpt-*.ckpt 2>/dev/null | sort | tail -1)
named=$(sed -nE 's/^stopped by SIGTERM .*the last checkpoint is ([^ ]+) \(after step [0-9]+\).*/\1/p' "$out")
if [ $status -ne 0 ] && [ -n "$newest" ] && [ "$named" = "$newest" ] && grep -q -- '--resume' "$out"; then
    pass "SIGTERM to mpirun: exit $status, \"stopped by SIGTERM\" naming the last checkpoint ($(basename "$newest")) and --resume"
else
    fail "SIGTERM to mpirun: exit $status; named \"$named\", newest in the directory \"$newest\" (expected the same, and the words)"
    tail -8 "$out" | sed 's/^/        /'
fi

# ---- a rank killed mid-epoch
out=$scratch/kill.out
t0=$(date +%s)
# (the victim is found by an environment variable of this run's ranks only)
COURSE_TEST_RUN=kill$tag mpirun -n 2 --oversubscribe --mca btl self,vader,tcp -x COURSE_TEST_RUN \
    "$bin" --threads 1 --dataset synthetic --train-limit 20000 --test-limit 200 --epochs 5 \
    --timeout 10 >"$out" 2>&1 &
job=$!
victim=
for _ in $(seq 1 600); do # up to 60 s for training to start
    if grep -q "^epoch" "$out"; then
        for p in $(pgrep -f "$bin"); do
            env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null)
            grep -qx "COURSE_TEST_RUN=kill$tag" <<<"$env" && grep -qx OMPI_COMM_WORLD_RANK=1 <<<"$env" &&
                victim=$p
        done
        [ -n "$victim" ] && break
    fi
    sleep 0.1
done
if [ -z "$victim" ]; then
    kill -9 $job 2>/dev/null
    fail "kill a rank mid-epoch: rank 1 never started training"
    tail -15 "$out" | sed 's/^/        /'
else
    sleep 1
    kill -9 "$victim"
    t1=$(date +%s)
    ( sleep 60; kill -9 $job 2>/dev/null ) & watchdog=$!
    wait $job
    status=$? took=$(($(date +%s) - t1))
    kill $watchdog 2>/dev/null
    if [ $status -ne 0 ] && [ $took -le 30 ] && grep -qi "rank 1" "$out"; then
        pass "kill -9 of rank 1 mid-epoch: the job ended $took s later (exit $status), naming rank 1"
    else
        fail "kill -9 of rank 1 mid-epoch: exit $status $took s later (want non-zero within 30 s and a message naming rank 1)"
        tail -15 "$out" | sed 's/^/        /'
    fi
fi
finish
