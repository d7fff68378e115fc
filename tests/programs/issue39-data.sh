#!/usr/bin/env bash
# The lessons' programs (the solutions' builds) against what issue 39's trials and fault
# probe found about data that must never be lost or overwritten, and about options; each
# run short, on a small text of its own and a tiny model, writing only inside a
# temporary directory made here:
#   - lesson 10's --token-file naming a character device (a copy of /dev/null's node,
#     made here), a FIFO, a symbolic link or a file of the user's: exit 1 naming it, the
#     thing left as it was; a new name is written, and written again over itself;
#   - lesson 08 killed during its first checkpoint: --resume starts afresh and says so;
#     with a complete older checkpoint, resumes from it and says the unfinished one was
#     skipped;
#   - lessons 06 and 08 without --resume into a directory that holds another run's
#     checkpoints: exit 1 ("already holds checkpoints of an earlier run ... --resume"),
#     the checkpoints untouched;
#   - a loss that diverges but stays finite (--lr 200) ends with exit 1 in lessons 04,
#     06 (CNN and transformer), 08 and 10, while the default rate trains to the end; on 2
#     ranks (lesson 06, mpirun) every rank stops; --weight-decay 1e30 (lessons 04, 08,
#     10) and --reward-scale 1e38 (lesson 05) are named, not --lr;
#   - lesson 06: --batch-size 100000 on 300 images refused at once (the cap, 65536), 301
#     refused naming the 300 images; lesson 08 --collectives on 3 ranks (it trains
#     nothing) is not refused for the batch size;
#   - options: a string option followed by another option (--target-return --steps
#     2000) is refused as a missing value, naming it; lesson 04's valid split too small
#     for --eval-batch-size names --eval-batch-size; --max-steps 3000000000 names the
#     real limit (lessons 04, 08, 10).
# Last line: "N passed, M failed[, K skipped]".
#   tests/programs/issue39-data.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary

tmp=$(mktemp -d /tmp/issue39_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
l04=$build/solutions/04-transformer/train l05=$build/solutions/05-ppo/train
l06=$build/solutions/06-ddp/train l08=$build/solutions/08-zero/train
l10=$build/solutions/10-performance/train
for bin in "$l04" "$l05" "$l06" "$l08" "$l10"; do
    [ -x "$bin" ] || { fail "$bin is not built (make BUILD=$build all)"; echo "$passed passed, $failed failed"; exit 1; }
done

# run OUT CMD...: the command's output (both streams) in OUT; its exit status in $rc
run() { local out=$1; shift; timeout 120 "$@" >"$out" 2>&1; rc=$?; }
# expect WHAT OUT REGEX: exit 1 and an error line matching REGEX
expect_error() {
    if [ $rc -eq 1 ] && grep -qE -- "^error: .*$3" "$2"; then
        pass "$1: exit 1, \"$(grep -m1 -oE -- "$3" "$2" | cut -c1-70)...\""
    else
        fail "$1: exit $rc (expected 1 and \"error: ...$3\")"
        show "$2"
    fi
}

# a text of a few hundred words, and a tiny model
awk 'BEGIN { srand(7); for (l = 0; l < 1500; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$tmp/words.txt"
tiny=(--dataset text --data "$tmp/words.txt" --d-model 16 --heads 2 --d-hid 16 --threads 1)
images=(--dataset synthetic --train-limit 300 --test-limit 100 --threads 1)

# ---------------------------------------------------------------- lesson 10: --token-file
mkfifo "$tmp/fifo"
printf 'precious\n' >"$tmp/notes.txt"
ln -s "$tmp/notes.txt" "$tmp/link"
targets=(fifo notes.txt link)
if mknod "$tmp/null" c 1 3 2>/dev/null; then targets=(null "${targets[@]}"); else
    skip "lesson 10, --token-file on a character device: mknod needs root"
fi
for t in "${targets[@]}"; do
    before=$(stat -c '%F %t:%T %s %i' "$tmp/$t"; cat "$tmp/notes.txt")
    run "$tmp/t10-$t" "$l10" "${tiny[@]}" --max-steps 2 --token-file "$tmp/$t"
    after=$(stat -c '%F %t:%T %s %i' "$tmp/$t"; cat "$tmp/notes.txt")
    kind=$(stat -c %F "$tmp/$t")
    if [ $rc -eq 1 ] && grep -q "^error: $tmp/$t is .*left as it is" "$tmp/t10-$t" && [ "$before" = "$after" ] &&
        [ ! -e "$tmp/$t.tmp" ]; then
        pass "lesson 10, --token-file on a $kind: exit 1 naming it, left as it was"
    else
        fail "lesson 10, --token-file on a $kind: exit $rc (expected 1, \"error: $tmp/$t is ... left as it is\", it unchanged: '$before' then '$after')"
        show "$tmp/t10-$t"
    fi
done
run "$tmp/t10-new" "$l10" "${tiny[@]}" --max-steps 2 --token-file "$tmp/train.tokens"
rc1=$rc
run "$tmp/t10-again" "$l10" "${tiny[@]}" --max-steps 2 --token-file "$tmp/train.tokens"
if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && [ -f "$tmp/train.tokens" ] && [ ! -L "$tmp/train.tokens" ] &&
    [ "$(head -c 7 "$tmp/train.tokens")" = CTOKENS ]; then
    pass "lesson 10, --token-file at a new name, then again over the token file it wrote: exit 0 both"
else
    fail "lesson 10, --token-file at a new name (exit $rc1), then over itself (exit $rc): expected 0 and a token file"
    show "$tmp/t10-new"
    show "$tmp/t10-again"
fi

# ---------------------------------------------------------------- lesson 08: an unfinished first save
l08_run=("$l08" "${tiny[@]}" --batch-size 4 --checkpoint-every 1)
# the test hook stops the first checkpoint write half way; the job is killed there
COURSE_CKPT_STALL=1 "${l08_run[@]}" --max-steps 3 --checkpoint-dir "$tmp/k1" >"$tmp/k1.out" 2>&1 &
job=$!
for _ in $(seq 1 600); do grep -q COURSE_CKPT_STALL "$tmp/k1.out" && break; sleep 0.1; done
{ kill -9 $job; wait $job; } 2>/dev/null
run "$tmp/k1-resume" "${l08_run[@]}" --max-steps 3 --checkpoint-dir "$tmp/k1" --resume
if grep -q 'COURSE_CKPT_STALL' "$tmp/k1.out" && [ $rc -eq 0 ] &&
    grep -q "note: skipping an unfinished save, not a checkpoint: $tmp/k1/zero-000000001 has no index.ckpt" "$tmp/k1-resume" &&
    grep -q "^no checkpoint in $tmp/k1: starting afresh" "$tmp/k1-resume" &&
    [ -f "$tmp/k1/zero-000000003/index.ckpt" ]; then
    pass "lesson 08 killed in its first checkpoint: --resume skips the unfinished save, starts afresh and says so"
else
    fail "lesson 08 killed in its first checkpoint: --resume exit $rc (expected 0, the note, \"no checkpoint in ...: starting afresh\", then checkpoints)"
    show "$tmp/k1.out" 3
    show "$tmp/k1-resume"
fi
run "$tmp/k2.out" "${l08_run[@]}" --max-steps 2 --checkpoint-dir "$tmp/k2"
rm -f "$tmp/k2/zero-000000002/index.ckpt" # step 2's save cut short before its index
run "$tmp/k2-resume" "${l08_run[@]}" --max-steps 3 --checkpoint-dir "$tmp/k2" --resume
if [ $rc -eq 0 ] && grep -q "note: skipping an unfinished save, not a checkpoint: $tmp/k2/zero-000000002 has no" "$tmp/k2-resume" &&
    grep -q "^resumed from step 1 in $tmp/k2" "$tmp/k2-resume"; then
    pass "lesson 08, an unfinished save after a complete one: resumes from step 1, says step 2 was skipped"
else
    fail "lesson 08, an unfinished save after a complete one: exit $rc (expected 0, the note and \"resumed from step 1\")"
    show "$tmp/k2-resume"
fi

# ---------------------------------------------------------------- lessons 06 and 08: another run's checkpoints
sums() { (cd "$1" && find . -type f | sort | xargs cksum); }
before=$(sums "$tmp/k2")
run "$tmp/k2-again" "${l08_run[@]}" --max-steps 3 --checkpoint-dir "$tmp/k2"
if [ $rc -eq 1 ] && grep -q "^error: $tmp/k2 already holds checkpoints of an earlier run (newest: step 3): pass --resume" "$tmp/k2-again" &&
    [ "$before" = "$(sums "$tmp/k2")" ]; then
    pass "lesson 08 without --resume into another run's checkpoints: exit 1, names --resume, checkpoints untouched"
else
    fail "lesson 08 without --resume into another run's checkpoints: exit $rc (expected 1 and \"already holds checkpoints of an earlier run\", nothing changed)"
    show "$tmp/k2-again"
fi
run "$tmp/c6.out" "$l06" "${images[@]}" --checkpoint-dir "$tmp/c6"
before=$(sums "$tmp/c6")
run "$tmp/c6-again" "$l06" "${images[@]}" --epochs 2 --checkpoint-dir "$tmp/c6"
if [ $rc -eq 1 ] && grep -q "^error: $tmp/c6 already holds checkpoints of an earlier run (newest: step 3): pass --resume" "$tmp/c6-again" &&
    [ "$before" = "$(sums "$tmp/c6")" ]; then
    pass "lesson 06 without --resume into another run's checkpoints: exit 1, names --resume, checkpoints untouched"
else
    fail "lesson 06 without --resume into another run's checkpoints: exit $rc (expected 1 and \"already holds checkpoints of an earlier run\", nothing changed)"
    show "$tmp/c6-again"
fi
run "$tmp/c6-resume" "$l06" "${images[@]}" --epochs 2 --checkpoint-dir "$tmp/c6" --resume
if [ $rc -eq 0 ] && grep -q "^resumed from $tmp/c6/ckpt-000000000003.ckpt" "$tmp/c6-resume"; then
    pass "lesson 06, the same with --resume: continues it"
else
    fail "lesson 06, --resume: exit $rc (expected 0 and \"resumed from ...ckpt-000000000003.ckpt\")"
    show "$tmp/c6-resume"
fi

# ---------------------------------------------------------------- a finite divergence
diverged='the training diverged: the loss has averaged .* far above where it started'
run "$tmp/d04" "$l04" "${tiny[@]}" --epochs 2 --lr 200
expect_error "lesson 04, --lr 200" "$tmp/d04" "$diverged.*\(--lr 200\)"
run "$tmp/d06" "$l06" "${images[@]}" --train-limit 600 --batch-size 10 --lr 200
expect_error "lesson 06 (CNN), --lr 200" "$tmp/d06" "$diverged.*V = 10 classes.*\(--lr 200\)"
run "$tmp/d06t" "$l06" --model transformer --text text --data "$tmp/words.txt" --d-model 16 --heads 2 \
    --d-hid 16 --threads 1 --batch-size 4 --lr 200
expect_error "lesson 06 (transformer), --lr 200" "$tmp/d06t" "$diverged.*\(--lr 200\)"
run "$tmp/d08" "$l08" "${tiny[@]}" --batch-size 4 --optimizer sgd --lr 200
expect_error "lesson 08, --optimizer sgd --lr 200" "$tmp/d08" "$diverged.*\(--lr 200\)"
run "$tmp/d10" "$l10" "${tiny[@]}" --loader plain --max-steps 60 --lr 200
expect_error "lesson 10, --lr 200" "$tmp/d10" "$diverged.*\(--lr 200\)"
# what was set is named, not --lr
named='This run set --weight-decay 1e\+30, which can make a run diverge'
run "$tmp/w04" "$l04" "${tiny[@]}" --epochs 1 --optimizer adamw --weight-decay 1e30
expect_error "lesson 04, --weight-decay 1e30" "$tmp/w04" "the training diverged.*$named"
run "$tmp/w08" "$l08" "${tiny[@]}" --batch-size 4 --weight-decay 1e30
expect_error "lesson 08, --weight-decay 1e30" "$tmp/w08" "the training diverged.*$named"
run "$tmp/w10" "$l10" "${tiny[@]}" --loader plain --max-steps 10 --weight-decay 1e30
expect_error "lesson 10, --weight-decay 1e30" "$tmp/w10" "the training diverged.*$named"
run "$tmp/r05" "$l05" --env cartpole --steps 2048 --reward-scale 1e38 --threads 1
expect_error "lesson 05, --reward-scale 1e38" "$tmp/r05" "training diverged. This run set --reward-scale 1e\+38, which can make a run diverge"
for f in w04 w08 w10 r05; do
    if grep -q 'learning rate' "$tmp/$f"; then fail "$f: the message still blames the learning rate"; show "$tmp/$f"; fi
done
# the default rates train to the end (no false alarm on the same data)
ok=1
for what in "04:$l04 ${tiny[*]} --epochs 2" "06:$l06 ${images[*]} --train-limit 600 --batch-size 10" \
    "08:$l08 ${tiny[*]} --batch-size 4" "10:$l10 ${tiny[*]} --loader plain --max-steps 60"; do
    n=${what%%:*} cmd=${what#*:}
    # shellcheck disable=SC2086 # the words of the command
    run "$tmp/ok$n" $cmd
    if [ $rc -ne 0 ] || grep -q diverged "$tmp/ok$n"; then
        ok=
        fail "lesson $n at its default rate: exit $rc, or a divergence where it trains"
        show "$tmp/ok$n"
    fi
done
[ -n "$ok" ] && pass "lessons 04, 06, 08 and 10 at their default rates on the same data: trained to the end, exit 0"
if ! command -v mpirun >/dev/null; then
    skip "lesson 06 on 2 ranks, --lr 200: needs Open MPI's mpirun"
    skip "lesson 08 --collectives on 3 ranks: needs Open MPI's mpirun"
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # as root (CI, containers)
    mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader,tcp -n)
    start=$SECONDS
    run "$tmp/d06-2" "${mpi[@]}" 2 "$l06" "${images[@]}" --train-limit 600 --batch-size 10 --lr 200 --timeout 30
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c "^error: $diverged" "$tmp/d06-2")" -eq 2 ] &&
        [ $((SECONDS - start)) -lt 25 ]; then
        pass "lesson 06 on 2 ranks, --lr 200: both ranks stop with the message ($((SECONDS - start)) s, exit $rc)"
    else
        fail "lesson 06 on 2 ranks, --lr 200: exit $rc after $((SECONDS - start)) s, $(grep -c "^error: $diverged" "$tmp/d06-2") of 2 ranks said it diverged"
        show "$tmp/d06-2"
    fi
    run "$tmp/coll" "${mpi[@]}" 3 "$l08" --collectives --timeout 30
    if [ $rc -eq 0 ] && grep -q 'the same sums' "$tmp/coll" && ! grep -q 'does not split' "$tmp/coll"; then
        pass "lesson 08 --collectives on 3 ranks (batch size 32): runs, not refused for the batch size"
    else
        fail "lesson 08 --collectives on 3 ranks: exit $rc (expected 0 and the ring's checks)"
        show "$tmp/coll"
    fi
fi

# ---------------------------------------------------------------- lesson 06: a batch larger than the data
start=$SECONDS
run "$tmp/b06" "$l06" "${images[@]}" --batch-size 100000
expect_error "lesson 06, --batch-size 100000 ($((SECONDS - start)) s)" "$tmp/b06" '--batch-size must be 1 to 65536, got 100000'
run "$tmp/b06b" "$l06" "${images[@]}" --batch-size 301
expect_error "lesson 06, --batch-size 301 on 300 images" "$tmp/b06b" '--batch-size 301 is more than the 300 training images.*at most 300'

# ---------------------------------------------------------------- options
run "$tmp/o05" "$l05" --target-return --steps 2000
expect_error "lesson 05, --target-return --steps 2000" "$tmp/o05" '--target-return needs a value, but the option --steps follows it'
run "$tmp/o04" "$l04" "${tiny[@]}" --eval-batch-size 2000
expect_error "lesson 04, a valid split too small for --eval-batch-size 2000" "$tmp/o04" 'the valid split has [0-9]+ tokens, too few .*Use a smaller --eval-batch-size'
for l in 04 08 10; do
    bin=$(eval echo "\$l$l")
    run "$tmp/m$l" "$bin" --max-steps 3000000000
    expect_error "lesson $l, --max-steps 3000000000" "$tmp/m$l" '--max-steps must be [01] to 1073741824, got 3000000000'
done

checks_summary
