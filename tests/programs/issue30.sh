#!/usr/bin/env bash
# The lessons' programs (the solutions' builds) against the faults of issue 30 that the
# library mends, each run short on small data:
#   - fault 1: a text of 2 million distinct words (lesson 04) under a memory limit is
#     refused before the model is built, naming the vocabulary, the need and the limit
#     (COURSE_MEMORY_LIMIT stands for a smaller machine; ulimit -v keeps a regression
#     from taking the machine's memory);
#   - fault 2: --metrics naming a symbolic link stops with a message, its target intact
#     (lesson 01); links planted at every .tmp name lesson 03's checkpoints take leave
#     their target intact and the checkpoints regular files;
#   - fault 3: lesson 03 --resume with a 10 GB sparse file as the newest checkpoint
#     falls back to the one before at once, in little memory;
#   - fault 7: --steps 2147483648 (lesson 05) says the largest value allowed;
#   - fault 8: lesson 05's --gif files (GIF and PNG) are 0644 under umask 022.
# Last line: "N passed, M failed".
#   tests/programs/issue30.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary

tmp=$(mktemp -d /tmp/issue30_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
l01=$build/solutions/01-cpu-cnn/train l03=$build/solutions/03-checkpointing/train
l04=$build/solutions/04-transformer/train l05=$build/solutions/05-ppo/train
for bin in "$l01" "$l03" "$l04" "$l05"; do
    [ -x "$bin" ] || { fail "$bin is not built (make BUILD=$build all)"; echo "$passed passed, $failed failed"; exit 1; }
done
small=(--dataset synthetic --train-limit 300 --test-limit 100 --threads 1)

# run OUT CMD...: the command's output (both streams) in OUT; its exit status in $rc
run() { local out=$1; shift; timeout 120 "$@" >"$out" 2>&1; rc=$?; }
# a run in at most 6 GB of address space: a regression fails here instead of filling
# the machine's memory (CPU runs: no GPU visible, whose runtime reserves far more
# address space than it uses)
run_capped() {
    local out=$1
    shift
    (ulimit -v 6000000; CUDA_VISIBLE_DEVICES= timeout 120 "$@") >"$out" 2>&1
    rc=$?
}

# ---------------------------------------------------------------- fault 1: a huge vocabulary
awk 'BEGIN { for (i = 0; i < 2000000; i++) printf "w%d%s", i, (i % 10 == 9) ? "\n" : " " }' >"$tmp/huge.txt"
start=$SECONDS
COURSE_MEMORY_LIMIT=4G run_capped "$tmp/f1" "$l04" --dataset text --data "$tmp/huge.txt" --threads 1 --epochs 1
if [ $rc -eq 1 ] && grep -q 'refused before it is taken): the transformer (a vocabulary of [0-9]\{7\} words.* needs [0-9.]* GB.*more than the 4.3 GB' "$tmp/f1"; then
    pass "lesson 04, 2 million distinct words under a 4 GB limit: refused up front with the need and the limit ($((SECONDS - start)) s)"
else
    fail "lesson 04, 2 million distinct words under a 4 GB limit: exit $rc (expected 1, \"refused before it is taken\" with both numbers)"
    show "$tmp/f1"
fi

# ---------------------------------------------------------------- fault 2: planted links
printf 'precious\n' >"$tmp/precious"
ln -s "$tmp/precious" "$tmp/metrics.jsonl"
run "$tmp/f2-metrics" "$l01" "${small[@]}" --epochs 1 --metrics "$tmp/metrics.jsonl"
if [ $rc -eq 1 ] && grep -q "metrics.jsonl is a symbolic link" "$tmp/f2-metrics" &&
    [ "$(cat "$tmp/precious")" = precious ]; then
    pass "lesson 01, --metrics naming a symbolic link: exit 1 with a message, its target intact"
else
    fail "lesson 01, --metrics naming a symbolic link: exit $rc, target now \"$(head -c 40 "$tmp/precious")\""
    show "$tmp/f2-metrics"
fi
ckpt_run=("${small[@]}" --epochs 2 --checkpoint-every 2)
run "$tmp/f2-names" "$l03" "${ckpt_run[@]}" --checkpoint-dir "$tmp/names"
mkdir -p "$tmp/planted"
names=$(cd "$tmp/names" 2>/dev/null && ls)
for n in $names; do ln -s "$tmp/precious" "$tmp/planted/$n.tmp"; done
run "$tmp/f2-ckpt" "$l03" "${ckpt_run[@]}" --checkpoint-dir "$tmp/planted"
bad=
for n in $names; do [ -f "$tmp/planted/$n" ] && [ ! -L "$tmp/planted/$n" ] || bad+=" $n"; done
if [ $rc -eq 0 ] && [ -n "$names" ] && [ -z "$bad" ] && [ "$(cat "$tmp/precious")" = precious ] &&
    [ -z "$(find "$tmp/planted" -name '*.tmp')" ]; then
    pass "lesson 03, links planted at the .tmp of every checkpoint ($(echo $names | wc -w)): target intact, checkpoints regular files"
else
    fail "lesson 03, links planted at the .tmp names: exit $rc, not regular files:${bad:- none}, target \"$(head -c 40 "$tmp/precious")\""
    show "$tmp/f2-ckpt"
fi

# ---------------------------------------------------------------- fault 3: a sparse checkpoint
newest=$(cd "$tmp/names" 2>/dev/null && ls ckpt-*.ckpt | tail -1)
cp -r "$tmp/names" "$tmp/sparse"
sparse="$tmp/sparse/ckpt-999999999999.ckpt"
truncate -s 10G "$sparse"
start=$SECONDS
run_capped "$tmp/f3" "$l03" "${small[@]}" --epochs 3 --checkpoint-every 2 --checkpoint-dir "$tmp/sparse" --resume
if [ $rc -eq 0 ] && grep -q "ckpt-999999999999.ckpt is not a checkpoint" "$tmp/f3" &&
    grep -q "^resumed from .* $((10#${newest//[^0-9]/})) steps done" "$tmp/f3" && [ $((SECONDS - start)) -lt 60 ]; then
    pass "lesson 03, --resume past a 10 GB sparse file: refused from its header, resumed from $newest ($((SECONDS - start)) s)"
else
    fail "lesson 03, --resume past a 10 GB sparse file: exit $rc after $((SECONDS - start)) s (expected 0, the file refused by name, $newest used)"
    show "$tmp/f3"
fi
rm -f "$sparse"

# ---------------------------------------------------------------- fault 7: integer limits
run "$tmp/f7" "$l05" --steps 2147483648
if [ $rc -eq 1 ] && grep -q -- "--steps: 2147483648 is too large; the largest value allowed is 2147483647" "$tmp/f7"; then
    pass "lesson 05, --steps 2147483648: exit 1, says the largest value allowed"
else
    fail "lesson 05, --steps 2147483648: exit $rc (expected 1 and the largest value allowed)"
    show "$tmp/f7"
fi

# ---------------------------------------------------------------- fault 8: file modes
(umask 022 && timeout 120 "$l05" --env cartpole --steps 2048 --target-return -1e9 --threads 1 \
    --gif "$tmp/l05.gif") >"$tmp/f8" 2>&1
rc=$? modes=
for f in l05-before.gif l05.gif l05-before.png l05.png; do
    modes+=" $f:$(stat -c %a "$tmp/$f" 2>/dev/null || echo missing)"
done
if [ $rc -eq 0 ] && [ "$modes" = " l05-before.gif:644 l05.gif:644 l05-before.png:644 l05.png:644" ]; then
    pass "lesson 05, --gif under umask 022: GIFs and PNGs readable by others (0644)"
else
    fail "lesson 05, --gif under umask 022: exit $rc, modes$modes (expected 644 each)"
    show "$tmp/f8"
fi

checks_summary
