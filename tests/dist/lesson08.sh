#!/usr/bin/env bash
# Lesson 08's solution as users run it, with mpirun:
#   - a run saved on 2 ranks at stage 3 resumes on 2 ranks at stage 1 and ends with the
#     digests of the uninterrupted run (bit for bit: the same sums, the dropout streams
#     restored), and on 3 ranks (stage 2) and 1 rank (stage 0) with the uninterrupted
#     run's last loss within 1e-5 (dropout off: the sums over ranks add in another order)
#   - a rank killed with SIGKILL while the job saves a checkpoint every step: the job
#     ends within 30 s, non-zero, naming rank 1; the last complete checkpoint resumes
#   - ranks that disagree on --stage are refused at start, naming the option and the
#     ranks; --stage 4 is refused
# Last line: "N passed, M failed[, K skipped]".
#   tests/dist/lesson08.sh BUILD_DIR
set -u
build=${1:-build}
bin=$build/solutions/08-zero/train
. "$(dirname "$0")/../lib-checks.sh" # pass, fail, skip, show, checks_summary
finish() {
    checks_summary
    exit
}
text=/usr/share/common-licenses/GPL-3 # Debian's base-files
if ! command -v mpirun >/dev/null || [ ! -x "$bin" ] || [ ! -r "$text" ]; then
    skip "lesson 08 with ranks: needs Open MPI's mpirun (sudo make deps), $bin and $text"
    finish
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --mca btl self,vader,tcp)
small=(--threads 1 --dataset text --data "$text" --d-model 24 --heads 2 --d-hid 32 --layers 2
       --bptt 8 --batch-size 12 --valid-batches 2 --timeout 20)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
digests() { sed -nE 's/^rank [0-9]+ (parameter|optimizer) digest: ([0-9a-f]+)$/\1 \2/p' <<<"$1" | sort -u; }
last_loss() { grep -oE '"loss": [-0-9.e+]+' "$1" | tail -1 | cut -d' ' -f2; }

# ---- resumed on the same ranks: the uninterrupted run's digests
whole=$("${mpi[@]}" -n 2 "$bin" "${small[@]}" --stage 3 --max-steps 6 2>&1)
"${mpi[@]}" -n 2 "$bin" "${small[@]}" --stage 3 --max-steps 4 --checkpoint-dir "$scratch/a" \
    --checkpoint-every 2 >"$scratch/save.out" 2>&1
resumed=$("${mpi[@]}" -n 2 "$bin" "${small[@]}" --stage 1 --max-steps 6 --checkpoint-dir "$scratch/a" --resume 2>&1)
if grep -q '^resumed from step 4 ' <<<"$resumed" && [ "$(digests "$resumed" | wc -l)" = 2 ] &&
    [ "$(digests "$resumed")" = "$(digests "$whole")" ]; then
    pass "saved on 2 ranks at stage 3, resumed on 2 at stage 1: the uninterrupted run's parameters and AdamW state, bit for bit"
else
    fail "resumed on 2 ranks: digests $(digests "$resumed" | tr '\n' ' ') against $(digests "$whole" | tr '\n' ' ')"
    tail -8 <<<"$resumed" | sed 's/^/        /'
fi

# ---- resumed on other rank counts (dropout off): the same training, to rounding
"${mpi[@]}" -n 2 "$bin" "${small[@]}" --dropout 0 --stage 3 --max-steps 6 --metrics "$scratch/whole.jsonl" >/dev/null 2>&1
"${mpi[@]}" -n 2 "$bin" "${small[@]}" --dropout 0 --stage 3 --max-steps 4 --checkpoint-dir "$scratch/b" >/dev/null 2>&1
want=$(last_loss "$scratch/whole.jsonl")
for run in "3 2" "1 0"; do
    n=${run% *} stage=${run#* }
    cp -r "$scratch/b" "$scratch/b$n"
    out=$("${mpi[@]}" -n "$n" "$bin" "${small[@]}" --dropout 0 --stage "$stage" --max-steps 6 \
        --checkpoint-dir "$scratch/b$n" --resume --metrics "$scratch/r$n.jsonl" 2>&1)
    got=$(last_loss "$scratch/r$n.jsonl")
    if grep -q '^resumed from step 4 .* now on '"$n"' rank' <<<"$out" && [ "$(digests "$out" | wc -l)" = 2 ] &&
        awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d <= 1e-5 * (b < 0 ? -b : b)) }'; then
        pass "saved on 2 ranks at stage 3, resumed on $n at stage $stage: step 6's loss $got, the uninterrupted run's $want (1e-5)"
    else
        fail "saved on 2 ranks, resumed on $n at stage $stage: step 6's loss '$got' against '$want', or no resume line, or digests that differ between ranks"
        tail -8 <<<"$out" | sed 's/^/        /'
    fi
done

# ---- a rank killed while the job saves every step
out=$scratch/kill.out tag=$$
COURSE_TEST_RUN=kill$tag "${mpi[@]}" -n 2 -x COURSE_TEST_RUN "$bin" "${small[@]}" --stage 3 \
    --max-steps 100000 --checkpoint-dir "$scratch/k" --checkpoint-every 1 >"$out" 2>&1 &
job=$! victim=
for _ in $(seq 1 600); do # up to 60 s for two checkpoints
    if [ "$(grep -c '^checkpoint: ' "$out")" -ge 2 ]; then
        for p in $(pgrep -f "$bin"); do
            env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null)
            grep -qx "COURSE_TEST_RUN=kill$tag" <<<"$env" && grep -qx OMPI_COMM_WORLD_RANK=1 <<<"$env" && victim=$p
        done
        [ -n "$victim" ] && break
    fi
    sleep 0.1
done
if [ -z "$victim" ]; then
    kill -9 $job 2>/dev/null
    fail "kill a rank: the job never wrote two checkpoints"
    tail -10 "$out" | sed 's/^/        /'
else
    kill -9 "$victim"
    t1=$(date +%s)
    ( sleep 60; kill -9 $job 2>/dev/null ) & watchdog=$!
    wait $job
    status=$? took=$(($(date +%s) - t1))
    kill $watchdog 2>/dev/null
    if [ $status -ne 0 ] && [ $took -le 30 ] && grep -qi "rank 1" "$out"; then
        pass "kill -9 of rank 1 while saving every step: the job ended $took s later (exit $status), naming rank 1"
    else
        fail "kill -9 of rank 1: exit $status $took s later (want non-zero within 30 s and a message naming rank 1)"
        tail -10 "$out" | sed 's/^/        /'
    fi
    after=$("${mpi[@]}" -n 2 "$bin" "${small[@]}" --stage 3 --max-steps 1 --checkpoint-dir "$scratch/k" \
        --resume --valid-batches 1 2>&1 | head -c 100000)
    if grep -qE '^resumed from step [0-9]+ ' <<<"$after"; then
        pass "after the kill the last complete checkpoint resumes ($(grep -oE 'resumed from step [0-9]+' <<<"$after"))"
    else
        fail "after the kill no checkpoint resumed"
        grep -v '^ *$' <<<"$after" | tail -8 | sed 's/^/        /'
    fi
fi

# ---- options the ranks disagree on, and a stage out of range
out=$("${mpi[@]}" -n 2 sh -c 'exec "$0" "$@" --stage $((3 - OMPI_COMM_WORLD_RANK))' "$bin" "${small[@]}" --max-steps 1 2>&1)
if grep -q 'different options: --stage is 3 on rank 0 but 2 on rank 1' <<<"$out"; then
    pass "ranks started with --stage 3 and 2 are refused at start, naming --stage and both ranks"
else
    fail "ranks with different --stage: no message naming it"
    grep -v '^ *$' <<<"$out" | tail -6 | sed 's/^/        /'
fi
out=$("$bin" "${small[@]}" --stage 4 2>&1)
status=$?
if [ $status -ne 0 ] && grep -q -- '--stage must be 0 to 3, got 4' <<<"$out"; then
    pass "--stage 4 is refused: $(grep -m1 -- '--stage must' <<<"$out")"
else
    fail "--stage 4: exit $status, said: $(head -2 <<<"$out")"
fi
finish
