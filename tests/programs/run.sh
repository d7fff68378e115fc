#!/usr/bin/env bash
# The lessons' programs (the solutions' builds) as participants run them, against what
# a trial and a fault probe found (issue 16), each run short on small data:
#   - a diverged run (--lr 3e38) exits 1 naming the step or epoch and --lr (lessons 01, 03);
#   - every checkpoint save fails (a file-size limit: writes fail with EFBIG, as on a
#     full disk): lesson 03 exits 1 with a message and prints no path that is not there;
#   - a checkpoint of another data set of the same sizes is refused on --resume, files
#     untouched; --allow-other-data goes on (lesson 03);
#   - lesson 00: --device cuda without a GPU exits 1 (skipped where there is a GPU);
#     --repeats outside 1..1000 is refused;
#   - make demo's program shows its progress with images/s on a terminal (a pty from
#     script(1)), and no progress at all into a pipe (a batch log);
#   - fault 7: --resume --metrics FILE appends: lesson 03 run for epoch 1, then resumed
#     to epoch 2 with the same file, leaves epochs 1 and 2 in it;
#   - lesson 05 (issue 12): one CartPole update with --target-return -1e9 stops with its
#     "reached" line; --metrics has exactly the issue's keys; --gif draws the GIFs and PNG
#     strips before and after; --target-return abc exits 1 with a message;
#   - lesson 05 (issue 30, fault 6): PPO that diverges without a NaN (--lr 1e10) warns
#     that the policy collapsed and, with --target-return 475 missed, exits 1;
#   - lesson 07: bad options (--batch-size not a multiple of the micro-batches,
#     --micro-batches 0, --schedule bogus, --split on one rank, --ranks 4 on 1 rank) and,
#     under mpirun (skipped without it), what only ranks reveal (--split of the wrong
#     count, not increasing or out of range, more stages than blocks, --dp that does not
#     divide the ranks, named before the batch size (issue 30, fault 9), --ranks 4 on 2,
#     ranks started with different options (fault 4)): each exits 1 within the time
#     limit with its message, never a crash or a hang; a loss that diverges without a
#     NaN (--lr 1000 on a tiny model: far above its start) stops with a message (fault 10).
# Last line: "N passed, M failed[, K skipped]".
#   tests/programs/run.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary

tmp=$(mktemp -d /tmp/faults_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
l00=$build/solutions/00-hello-gpu/train l01=$build/solutions/01-cpu-cnn/train
l03=$build/solutions/03-checkpointing/train l05=$build/solutions/05-ppo/train
l07=$build/solutions/07-pipeline/train
for bin in "$l00" "$l01" "$l03" "$l05" "$l07"; do
    [ -x "$bin" ] || { fail "$bin is not built (make BUILD=$build all)"; echo "$passed passed, $failed failed"; exit 1; }
done
small=(--dataset synthetic --train-limit 300 --test-limit 100 --threads 1)

# run OUT CMD...: the command's output (both streams) in OUT; its exit status in $rc
run() { local out=$1; shift; timeout 120 "$@" >"$out" 2>&1; rc=$?; }

# ---------------------------------------------------------------- fault 3: divergence
run "$tmp/f3-01" "$l01" "${small[@]}" --epochs 1 --lr 3e38
if [ $rc -eq 1 ] && grep -q 'diverged.*epoch 1.*--lr 3e+38' "$tmp/f3-01"; then
    pass "lesson 01, --lr 3e38: exit 1, the message names the epoch and --lr"
else
    fail "lesson 01, --lr 3e38: exit $rc (expected 1 and \"diverged ... epoch 1 ... --lr 3e+38\")"
    show "$tmp/f3-01"
fi
run "$tmp/f3-03" "$l03" "${small[@]}" --epochs 1 --lr 3e38 --checkpoint-dir "$tmp/f3-ckpt" --checkpoint-every 1
if [ $rc -eq 1 ] && grep -q 'diverged.*step [0-9]\+.*--lr 3e+38' "$tmp/f3-03"; then
    pass "lesson 03, --lr 3e38: exit 1, the message names the step and --lr"
else
    fail "lesson 03, --lr 3e38: exit $rc (expected 1 and \"diverged ... step N ... --lr 3e+38\")"
    show "$tmp/f3-03"
fi

# ---------------------------------------------------------------- fault 4: no save succeeds
# A path the run names on a line of its own (not a warning about a failed write) must exist.
paths_exist() { # $1: output file, $2: checkpoint directory
    local p missing=
    while read -r p; do
        [ -e "$p" ] || missing+=" $p"
    done < <(grep -v '^warning:' "$1" | grep -oE "$2[^ ):,]*" | sed 's/[.]$//' | sort -u)
    [ -z "$missing" ] || { echo "        named but not there:$missing"; return 1; }
}
ckpt_run=(--epochs 2 --checkpoint-every 2)
run "$tmp/f4-ok" "$l03" "${small[@]}" "${ckpt_run[@]}" --checkpoint-dir "$tmp/f4-ok-ckpt"
if [ $rc -eq 0 ] && grep -q "best test accuracy .*$tmp/f4-ok-ckpt/best.ckpt" "$tmp/f4-ok" &&
    paths_exist "$tmp/f4-ok" "$tmp/f4-ok-ckpt"; then
    pass "lesson 03, saves that work: exit 0, names best.ckpt, which is there"
else
    fail "lesson 03, saves that work: exit $rc, or a named path is missing"
    show "$tmp/f4-ok"
fi
# files of at most 200 KB (ulimit -f counts 1024-byte blocks; a checkpoint is 1.9 MB),
# SIGXFSZ ignored so that a write fails with EFBIG instead of killing the program
(trap '' XFSZ; ulimit -f 200; exec timeout 120 "$l03" "${small[@]}" "${ckpt_run[@]}" \
    --checkpoint-dir "$tmp/f4-ckpt" >"$tmp/f4" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q '^error: .*could not be written' "$tmp/f4" &&
    ! grep -q 'best\.ckpt)' "$tmp/f4" && paths_exist "$tmp/f4" "$tmp/f4-ckpt" &&
    [ -z "$(ls -A "$tmp/f4-ckpt")" ]; then
    pass "lesson 03, every checkpoint save fails: exit 1 with a message, no path named that is not there"
else
    fail "lesson 03, every checkpoint save fails: exit $rc (expected 1, \"error: ... could not be written\", no best.ckpt named, nothing left in the directory)"
    show "$tmp/f4"
    ls -A "$tmp/f4-ckpt" 2>&1 | sed 's/^/        in the directory: /'
fi

# ---------------------------------------------------------------- fault 6: other data
# Two MNIST-format sets of the same sizes (200 + 100 images of 28x28, 10 classes), other pixels.
make_idx() { # $1: directory, $2: seed
    mkdir -p "$1/mnist"
    python3 - "$1/mnist" "$2" <<'EOF'
import random, struct, sys
out, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
for prefix, n in (("train", 200), ("t10k", 100)):
    with open("%s/%s-images-idx3-ubyte" % (out, prefix), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        f.write(bytes(rng.randrange(256) for _ in range(n * 28 * 28)))
    with open("%s/%s-labels-idx1-ubyte" % (out, prefix), "wb") as f:
        f.write(struct.pack(">II", 0x801, n))
        f.write(bytes(rng.randrange(10) for _ in range(n)))
EOF
}
if ! command -v python3 >/dev/null; then
    skip "lesson 03, a checkpoint of other data: needs python3 to write two small IDX sets"
else
    make_idx "$tmp/data-a" 1 && make_idx "$tmp/data-b" 2
    common=(--dataset mnist --threads 1 --checkpoint-dir "$tmp/f6-ckpt" --checkpoint-every 0)
    run "$tmp/f6-a" "$l03" "${common[@]}" --data "$tmp/data-a" --epochs 1
    if [ $rc -ne 0 ]; then
        fail "lesson 03 on a small IDX set: exit $rc"
        show "$tmp/f6-a"
    else
        before=$(cd "$tmp/f6-ckpt" && ls -l --time-style=+%s.%N && cat -- * | cksum)
        run "$tmp/f6-b" "$l03" "${common[@]}" --data "$tmp/data-b" --epochs 2 --resume
        after=$(cd "$tmp/f6-ckpt" && ls -l --time-style=+%s.%N && cat -- * | cksum)
        if [ $rc -eq 1 ] && grep -q 'another training set of the same sizes' "$tmp/f6-b" &&
            grep -q -- '--allow-other-data' "$tmp/f6-b" && [ "$before" = "$after" ]; then
            pass "lesson 03, --resume on another data set of the same sizes: exit 1, names --allow-other-data, checkpoints untouched"
        else
            fail "lesson 03, --resume on another data set of the same sizes: exit $rc (expected 1, the message, checkpoints untouched)"
            show "$tmp/f6-b"
        fi
        run "$tmp/f6-c" "$l03" "${common[@]}" --data "$tmp/data-b" --epochs 2 --resume --allow-other-data
        if [ $rc -eq 0 ] && grep -q 'warning: continuing on another training set' "$tmp/f6-c" &&
            grep -qE '^ +2 ' "$tmp/f6-c" && ! grep -qE '^ +1 ' "$tmp/f6-c"; then
            pass "lesson 03, the same with --allow-other-data: a warning, epoch 2 trained on the new set"
        else
            fail "lesson 03, --resume --allow-other-data: exit $rc (expected 0, the warning, only epoch 2)"
            show "$tmp/f6-c"
        fi
        run "$tmp/f6-d" "$l03" "${common[@]}" --data "$tmp/data-b" --epochs 3 --resume
        if [ $rc -eq 0 ] && grep -qE '^ +3 ' "$tmp/f6-d"; then
            pass "lesson 03, then --resume on that set without the option: its checkpoints are its own"
        else
            fail "lesson 03, --resume on the set the last checkpoint was written for: exit $rc"
            show "$tmp/f6-d"
        fi
    fi
fi

# ---------------------------------------------------------------- fault 7: --resume --metrics
f7=(--dataset synthetic --train-limit 200 --test-limit 100 --threads 1 --checkpoint-dir "$tmp/f7-ckpt"
    --checkpoint-every 0 --metrics "$tmp/f7.jsonl")
run "$tmp/f7-a" "$l03" "${f7[@]}" --epochs 1
rc1=$rc
run "$tmp/f7-b" "$l03" "${f7[@]}" --epochs 2 --resume
epochs=$(python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["epoch"]) for l in open(sys.argv[1]) if l.strip()))' \
         "$tmp/f7.jsonl" 2>&1)
if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && [ "$(wc -l <"$tmp/f7.jsonl")" -eq 2 ] && [ "$epochs" = "1 2" ]; then
    pass "lesson 03, --epochs 1 then --epochs 2 --resume with the same --metrics: 2 lines, epochs 1 and 2"
else
    fail "lesson 03, --resume --metrics: exits $rc1 and $rc, epochs in the file \"$epochs\" (expected 0, 0 and \"1 2\")"
    show "$tmp/f7-b"
    show "$tmp/f7.jsonl"
fi

# ---------------------------------------------------------------- lesson 05's program
# One update of 4 x 128 steps; a target of -1e9 is reached at once.
run "$tmp/l05" "$l05" --env cartpole --steps 2048 --target-return -1e9 --threads 1 \
    --metrics "$tmp/l05.jsonl" --gif "$tmp/l05.gif"
if [ $rc -eq 0 ] && grep -q '^reached a mean return of .* at step 512' "$tmp/l05"; then
    pass "lesson 05, --target-return -1e9: stops after one update with its \"reached\" line"
else
    fail "lesson 05, --target-return -1e9: exit $rc (expected 0 and \"reached a mean return of ... at step 512\")"
    show "$tmp/l05"
fi
keys=$(python3 - "$tmp/l05.jsonl" <<'EOF' 2>&1
import json, sys
want = {"step", "mean_return", "episode_length", "policy_loss", "value_loss", "entropy", "approx_kl",
        "clip_fraction", "explained_variance", "steps_per_s", "wall_s"}
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [f"line {i + 1}: missing {sorted(want - set(r))}, extra {sorted(set(r) - want)}"
       for i, r in enumerate(rows) if set(r) != want]
print("; ".join(bad) if bad else f"ok {len(rows)}" if rows else "no lines")
EOF
)
if [ "$keys" = "ok 1" ]; then
    pass "lesson 05, --metrics: one line per update with exactly the keys issue 12 names"
else
    fail "lesson 05, --metrics: $keys"
    show "$tmp/l05.jsonl"
fi
ok=1
for f in l05-before.gif l05.gif l05-before.png l05.png; do
    case $f in *.gif) magic=474946383961 ;; *) magic=89504e470d0a1a0a ;; esac
    if [ ! -s "$tmp/$f" ] || [ "$(head -c $((${#magic} / 2)) "$tmp/$f" | od -An -tx1 | tr -d ' \n')" != "$magic" ]; then
        ok=
        fail "lesson 05, --gif: $f is missing, empty or does not start with the bytes $magic"
    fi
done
[ -n "$ok" ] && pass "lesson 05, --gif: the episode before and after training as GIF89a and PNG files"
run "$tmp/l05-bad" "$l05" --target-return abc
if [ $rc -eq 1 ] && grep -q -- "--target-return expects a number, got 'abc'" "$tmp/l05-bad"; then
    pass "lesson 05, --target-return abc: exit 1 with a message"
else
    fail "lesson 05, --target-return abc: exit $rc (expected 1 and \"--target-return expects a number, got 'abc'\")"
    show "$tmp/l05-bad"
fi
# issue 30, fault 6: lr 1e10 sends the policy to one action (entropy 0, return about 9,
# value loss 1e21) without a NaN; 40 updates
run "$tmp/l05-lr" "$l05" --env cartpole --steps 20480 --lr 1e10 --target-return 475 --threads 1 --log-every 100
if [ $rc -eq 1 ] && grep -q '^warning: update [0-9]*: the policy has collapsed: entropy' "$tmp/l05-lr" &&
    grep -q 'below the target of 475 (exit status 1)' "$tmp/l05-lr"; then
    pass "lesson 05, --lr 1e10 --target-return 475: warns of the collapsed policy, exit 1 for the missed target"
else
    fail "lesson 05, --lr 1e10 --target-return 475: exit $rc (expected 1, \"warning: ... the policy has collapsed\" and \"below the target of 475 (exit status 1)\")"
    show "$tmp/l05-lr"
fi
run "$tmp/l05-ok" "$l05" --env cartpole --steps 20480 --threads 1 --log-every 100
if [ $rc -eq 0 ] && ! grep -q 'collapsed' "$tmp/l05-ok"; then
    pass "lesson 05, the default --lr without a target: exit 0, no collapse warning"
else
    fail "lesson 05, the default --lr: exit $rc, or a collapse warning where the policy learns"
    show "$tmp/l05-ok"
fi

# ---------------------------------------------------------------- lesson 00's options
run "$tmp/l00-auto" "$l00" --size-mb 1 --repeats 1 --device auto
if grep -q '<- this process' "$tmp/l00-auto"; then
    skip "lesson 00, --device cuda without a GPU: this machine has one"
else
    run "$tmp/l00-cuda" "$l00" --size-mb 1 --repeats 1 --device cuda
    if [ $rc -eq 1 ] && grep -q '^error: --device cuda: .*--device cpu' "$tmp/l00-cuda"; then
        pass "lesson 00, --device cuda without a GPU: exit 1, says why and what to run instead"
    else
        fail "lesson 00, --device cuda without a GPU: exit $rc (expected 1 and \"error: --device cuda: ... --device cpu\")"
        show "$tmp/l00-cuda"
    fi
fi
ok=1
for bad in 0 1001 2000000000; do
    run "$tmp/l00-rep" "$l00" --size-mb 1 --repeats "$bad" --device cpu
    if [ $rc -ne 1 ] || ! grep -q -- "--repeats must be 1 to 1000, got $bad" "$tmp/l00-rep"; then
        ok=
        fail "lesson 00, --repeats $bad: exit $rc (expected 1 and \"--repeats must be 1 to 1000\")"
        show "$tmp/l00-rep"
    fi
done
run "$tmp/l00-rep" "$l00" --size-mb 1 --repeats 1000 --device cpu
if [ $rc -ne 0 ]; then
    ok=
    fail "lesson 00, --repeats 1000 (the limit) on the CPU: exit $rc"
    show "$tmp/l00-rep"
fi
[ -n "$ok" ] && pass "lesson 00, --repeats: 0, 1001 and 2e9 refused with exit 1; 1000 runs"

# ---------------------------------------------------------------- lesson 07's options
# A small text of its own (a few hundred words) and a tiny model: a run that got past
# the checks would take a second, and --timeout 20 ends ranks that wait on each other.
awk 'BEGIN { srand(7); for (l = 0; l < 1500; l++) { s = ""; n = 5 + int(rand() * 10)
     for (i = 0; i < n; i++) s = s " w" int(rand() * rand() * 300); print s " ." } }' >"$tmp/l07.txt"
l07_small=(--dataset text --data "$tmp/l07.txt" --d-model 16 --heads 2 --d-hid 16 --epochs 1
           --max-steps 1 --threads 1 --timeout 20)
# l07_expect WHAT MESSAGE-REGEX [mpirun ... -n N] -- PROGRAM OPTIONS: exit 1 with the
# message (every rank may print it: they all see the same options), no check failure, no
# hang (run's timeout).
l07_expect() {
    local what=$1 want=$2 launch=()
    shift 2
    while [ "$1" != -- ]; do launch+=("$1"); shift; done
    shift
    run "$tmp/l07" "${launch[@]}" "$l07" "${l07_small[@]}" "$@"
    if [ $rc -eq 1 ] && grep -qE -- "^error: $want" "$tmp/l07" && ! grep -q 'check failed' "$tmp/l07"; then
        pass "lesson 07, $what: exit 1, \"$(grep -m1 -oE -- "$want" "$tmp/l07" | cut -c1-64)...\""
    else
        fail "lesson 07, $what: exit $rc (expected 1 and \"error: $want\"$([ $rc -eq 124 ] && echo '; it hung'))"
        show "$tmp/l07"
    fi
}
l07_expect "--batch-size 30 with 8 micro-batches" \
    '--batch-size 30 does not split into 8 micro-batches of equal size: make it a multiple of 8' \
    -- --batch-size 30
l07_expect "--dp 3 on one rank (and a --batch-size 32 that 3 x 8 does not divide: the ranks first)" \
    '1 rank cannot form --dp 3 pipelines of equal length: start a multiple of 3 ranks' \
    -- --batch-size 32 --dp 3
l07_expect "--micro-batches 0" '--micro-batches must be 1 to [0-9]+, got 0' -- --micro-batches 0
l07_expect "--schedule bogus" "--schedule must be one of gpipe\|1f1b, got 'bogus'" -- --schedule bogus
l07_expect "--split 1,2 on one rank (one stage)" '--split 1,2: one rank per pipeline is one stage' -- --split 1,2
l07_expect "--ranks 4 on one rank" 'this job has 1 rank but 4 were asked for' -- --ranks 4
if ! command -v mpirun >/dev/null; then
    skip "lesson 07 with several ranks: needs Open MPI's mpirun (sudo make deps)"
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # as root (CI, containers)
    mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader,tcp -n)
    # the tiny model has 4 blocks: 0 the embedding, 1 and 2 the layers, 3 the decoder
    l07_expect "2 ranks, --split 1,2 (2 stages take 1 number)" '--split 1,2: 2 stages take one block number: where stage 1 begins' \
        "${mpi[@]}" 2 -- --split 1,2
    l07_expect "3 ranks, --split 2,2 (not increasing)" '--split 2,2: stage 2 cannot begin at block 2: the numbers must increase' \
        "${mpi[@]}" 3 -- --split 2,2
    l07_expect "2 ranks, --split 4 (past the last block)" '--split 4: stage 1 cannot begin at block 4: .*from 1 to 3' \
        "${mpi[@]}" 2 -- --split 4
    l07_expect "2 ranks, --split 0 (stage 0 would be empty)" '--split 0: stage 1 cannot begin at block 0' \
        "${mpi[@]}" 2 -- --split 0
    l07_expect "5 ranks for a model of 4 blocks" '5 stages for a model of 4 blocks .*at most 4 ranks per pipeline' \
        "${mpi[@]}" 5 --
    l07_expect "4 ranks for a model of 3 blocks (--layers 1)" \
        '4 stages for a model of 3 blocks \(embedding, 1 encoder layer, decoder\)' "${mpi[@]}" 4 -- --layers 1
    l07_expect "3 ranks, --dp 2 (does not divide them)" '3 ranks cannot form --dp 2 pipelines of equal length' \
        "${mpi[@]}" 3 -- --dp 2 --batch-size 16
    l07_expect "2 ranks launched, --ranks 4" 'this job has 2 ranks but 4 were asked for' "${mpi[@]}" 2 -- --ranks 4
    # issue 30, fault 9: the rank count before the batch size
    l07_expect "2 ranks, --dp 3 (the default --batch-size 32 does not split 3 x 8 ways either)" \
        '2 ranks cannot form --dp 3 pipelines of equal length: start a multiple of 3 ranks' "${mpi[@]}" 2 -- --dp 3
    l07_expect "2 ranks, --dp 2, --batch-size 24 (not 2 x 8 micro-batches)" \
        '--batch-size 24 does not split into 8 micro-batches on each of --dp pipelines .*multiple of 16' \
        "${mpi[@]}" 2 -- --dp 2 --batch-size 24
    # issue 30, fault 4: ranks started with different options (MPMD: one command line each)
    run "$tmp/l07-opt" timeout 60 mpirun --oversubscribe --bind-to none --mca btl self,vader,tcp \
        -n 1 "$l07" "${l07_small[@]}" --lr 5 : -n 1 "$l07" "${l07_small[@]}" --lr 0.1 --metrics "$tmp/l07-opt.jsonl"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
        grep -q "^error: the ranks were started with different options: --lr is 5 on rank 0 but 0.1 on rank 1" "$tmp/l07-opt" &&
        ! grep -q 'metrics' "$tmp/l07-opt"; then
        pass "lesson 07, ranks started with --lr 5 and --lr 0.1: exit $rc, names --lr and both values (not --metrics, which may differ)"
    else
        fail "lesson 07, ranks with different --lr: exit $rc (expected non-zero and \"the ranks were started with different options: --lr is 5 on rank 0 but 0.1 on rank 1\")"
        show "$tmp/l07-opt"
    fi
fi

# issue 30, fault 10: a loss far above ln V without a NaN stops the run (one rank)
run "$tmp/l07-div" "$l07" "${l07_small[@]}" --max-steps 60 --epochs 5 --lr 1000
if [ $rc -eq 1 ] && grep -q '^error: the training diverged: the loss has averaged .* far above where it started .*(--lr 1000)' "$tmp/l07-div"; then
    pass "lesson 07, --lr 1000: stops with \"the loss has averaged ... far above where it started\", exit 1"
else
    fail "lesson 07, --lr 1000: exit $rc (expected 1 and \"error: the training diverged: the loss has averaged ... far above where it started ...\")"
    show "$tmp/l07-div"
fi
run "$tmp/l07-lr5" "$l07" "${l07_small[@]}" --max-steps 60 --epochs 5 --lr 5
if [ $rc -eq 0 ] && grep -q 'end of training' "$tmp/l07-lr5"; then
    pass "lesson 07, the same at the default --lr 5: trains to the end, exit 0"
else
    fail "lesson 07, --lr 5: exit $rc (expected 0 and the end of training)"
    show "$tmp/l07-lr5"
fi

# ---------------------------------------------------------------- lesson 01's --pool
# The library's max-pool by default (the first block fused), yours with --pool mine: the
# solution's max-pool picks the library's argmax, so both train to the same losses to
# float rounding (conv1's gradients are summed in another order when not fused).
pool_run=("$l01" "${small[@]}" --epochs 2)
run "$tmp/pool-lib" "${pool_run[@]}"
rc_lib=$rc
run "$tmp/pool-mine" "${pool_run[@]}" --pool mine
last_loss() { awk '$1 == 2 { print $3 }' "$1"; }
if [ $rc_lib -eq 0 ] && [ $rc -eq 0 ] && grep -q 'library max-pool' "$tmp/pool-lib" &&
    grep -q 'your max-pool' "$tmp/pool-mine" &&
    awk -v a="$(last_loss "$tmp/pool-lib")" -v b="$(last_loss "$tmp/pool-mine")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-3 * a) }'; then
    pass "lesson 01: --pool library and --pool mine say which max-pool ran and agree (test loss $(last_loss "$tmp/pool-lib") and $(last_loss "$tmp/pool-mine"))"
else
    fail "lesson 01: --pool library (exit $rc_lib) and --pool mine (exit $rc) should both train, say which max-pool ran, and agree to 1e-3"
    show "$tmp/pool-lib"
    show "$tmp/pool-mine"
fi

# ---------------------------------------------------------------- the progress line
demo=("$l01" "${small[@]}" --train-limit 600 --epochs 1)
run "$tmp/pipe" "${demo[@]}"
if [ $rc -eq 0 ] && ! grep -q 'images/s, loss' "$tmp/pipe" && ! grep -q $'\r' "$tmp/pipe"; then
    pass "lesson 01 into a pipe (a batch log): no progress line"
else
    fail "lesson 01 into a pipe: exit $rc, or progress lines in the log"
    show "$tmp/pipe"
fi
if ! command -v script >/dev/null; then
    skip "lesson 01 on a terminal: needs script(1) (util-linux) for a pty"
else
    timeout 120 script -qec "$(printf '%q ' "${demo[@]}")" /dev/null </dev/null >"$tmp/tty" 2>&1
    rc=$?
    last=$(tr '\r' '\n' <"$tmp/tty" | grep -a '600/600 images' | tail -1)
    if [ $rc -eq 0 ] && grep -qE '600/600 images, [1-9][0-9]* images/s, loss [0-9.]+' <<<"$last"; then
        pass "lesson 01 on a terminal (make demo): the progress line shows images/s (${last#*images, })"
    else
        fail "lesson 01 on a terminal: exit $rc, last progress line \"$last\" (expected \"600/600 images, N images/s, loss L\")"
        tr '\r' '\n' <"$tmp/tty" | show /dev/stdin
    fi
fi

checks_summary
