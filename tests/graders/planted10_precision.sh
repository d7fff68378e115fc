#!/usr/bin/env bash
# Lesson 10's mixed-precision TODOs (10.7-10.10) against the mistakes participants make:
# each is planted in a temporary copy of the solution, the grader is linked against it,
# and the TODO's check must FAIL with the hint that names the mistake. Then each TODO
# alone is put back to its stub: its check must fail ("not implemented yet"), the others
# pass (or wait for it: "fix TODO X first"). Needs `make all` first (the solution's
# objects, the library, the grader's framework). Last line: "N passed, M failed".
#   tests/graders/planted10_precision.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
flags() { make -s --no-print-directory BUILD="$build" --eval='print-%: ; @echo $($*)' "print-$1" | sed 's/-DCOURSE_ROOT=[^ ]*//'; }
CFLAGS=$(flags CFLAGS) LESSON_CFLAGS=$(flags LESSON_CFLAGS) LDLIBS=$(flags LDLIBS)
GRADE_LDFLAGS=$(flags GRADE_LDFLAGS_10) FRAMEWORK=$(flags FRAMEWORK_OBJ)
src=solutions/10-performance course=course/10-performance
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src"/*.c "$src"/*.h "$tmp"/
# shellcheck disable=SC2086
cc $CFLAGS -I"$tmp" -DLESSON_PATH="\"$tmp\"" -c tests/graders/grade10.c -o "$tmp/grade.o" || exit 1
objs=""
for f in "$tmp"/*.c; do
    b=$(basename "$f" .c)
    [ "$b" = main ] && continue
    objs="$objs $tmp/$b.o"
    cc $LESSON_CFLAGS -I"$tmp" -c "$f" -o "$tmp/$b.o" || exit 1
    cp "$tmp/$b.o" "$tmp/$b.o.orig"
done
passed=0 failed=0
# Only part 2's checks run: the profile's program check (2 ranks, timed) tests none of this.
PRECISION_CHECKS="bf16 rounding,master weights,unscale,scale update,fp16 step"
# grade FILE: the planted copy of FILE (in $tmp/FILE.new) in place, graded; the output
grade() {
    local f=$1 b=${1%.c}
    cp "$tmp/$f" "$tmp/$f.orig" && cp "$tmp/$f.new" "$tmp/$f"
    # shellcheck disable=SC2086
    cc $LESSON_CFLAGS -I"$tmp" -c "$tmp/$f" -o "$tmp/$b.o" 2>&1 &&
        cc "$tmp/grade.o" $objs $FRAMEWORK "$build/libcourse.a" $GRADE_LDFLAGS $LDLIBS -o "$tmp/grade" 2>&1 &&
        CHECK_ONLY="$PRECISION_CHECKS" "$tmp/grade" 2>&1
    cp "$tmp/$f.orig" "$tmp/$f" && cp "$tmp/$b.o.orig" "$tmp/$b.o"
}
verdict() { # name, ok
    if [ "$2" = 1 ]; then echo "PASS  $1"; passed=$((passed + 1)); else echo "FAIL  $1"; failed=$((failed + 1)); fi
}
# plant NAME FILE TODO HINT PYTHON-REPLACEMENTS...: each "old|||new" pair must match
plant() {
    local name=$1 f=$2 todo=$3 hint=$4 out
    shift 4
    python3 - "$tmp/$f" "$tmp/$f.new" "$@" <<'PY' || { verdict "$name (the patch did not apply)" 0; return; }
import sys
text = open(sys.argv[1]).read()
for pair in sys.argv[3:]:
    old, new = pair.split("|||")
    if old not in text: sys.exit(1)
    text = text.replace(old, new, 1)
open(sys.argv[2], "w").write(text)
PY
    out=$(grade "$f")
    local block
    block=$(awk -v t="TODO $todo " 'index($0, "FAIL  " t) == 1 { on = 1; print; next } /^[A-Z]/ { on = 0 } on' <<<"$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\"" 1
        grep -m1 'hint:' <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}
B='const uint32_t lsb = (u >> 16) & 1u;'
plant "rounding by truncation" bf16.c 10.7 "that is cutting the low 16 bits" \
    "return (uint16_t)((u + 0x7fffu + lsb) >> 16);|||return (uint16_t)(u >> 16);"
plant "ties away from zero" bf16.c 10.7 "ties go to the even pattern" "(u + 0x7fffu + lsb)|||(u + 0x8000u)"
plant "NaN turned into inf" bf16.c 10.7 "a NaN turned into infinity" \
    "if ((u & 0x7fffffffu) > 0x7f800000u) return|||if (0) return"
plant "the library's converter" bf16.c 10.7 "uses the library's dtype_bf16_from" \
    "    uint32_t u;|||    return dtype_bf16_from_f32(x);
    uint32_t u;"
plant "the bits converted as an integer" bf16.c 10.7 "converts the integer" \
    "const uint32_t u = (uint32_t)h << 16;|||return (float)h;
    const uint32_t u = (uint32_t)h << 16;"
plant "the update applied to the bf16 copy" master.c 10.8 "applied to the bf16 copy" \
    "master[k] -= lr * grad[k];|||work[k] = lesson_bf16_from_f32(lesson_f32_from_bf16(work[k]) - lr * grad[k]);" \
    "work[k] = lesson_bf16_from_f32(master[k]);|||master[k] = lesson_f32_from_bf16(work[k]);"
plant "the working copy not refreshed" master.c 10.8 "the working copy was not refreshed" \
    "work[k] = lesson_bf16_from_f32(master[k]);|||"
plant "NaN missed" loss_scale.c 10.9 "a NaN was missed" "found |= !isfinite(g[k]);|||found |= isinf(g[k]);"
plant "divided by S" loss_scale.c 10.9 "that is g / S" "g[k] *= inv;|||g[k] /= scale;"
plant "growth count not reset on overflow" loss_scale.c 10.9 "not reset on the overflow" \
    "s->growth_tracker = 0;
        s->steps_skipped++;|||s->steps_skipped++;"
plant "doubling every clean step" loss_scale.c 10.9 "doubled after every clean step" \
    "if (++s->growth_tracker == s->growth_interval) {|||if (++s->growth_tracker >= 1) {"
plant "a skip not counted" loss_scale.c 10.9 "counted as skipped" "s->steps_skipped++;|||"
plant "scaling not undone before clipping" loss_scale.c 10.10 "clipped the scaled gradients: unscale first" \
    "clip_grad_norm(p, st->max_norm);         /* on the true gradients */|||" \
    "    const bool found = lesson_unscale|||    clip_grad_norm(p, st->max_norm);
    const bool found = lesson_unscale"
plant "stepping on inf" loss_scale.c 10.10 "stepped on inf" "if (!found) {|||if (1) {"
plant "a skip's gradients not zeroed" loss_scale.c 10.10 "set to zero" "if (found) tensor_fill(&p->grads, 0.0f);|||"
plant "the fp16 working copy not refreshed" loss_scale.c 10.10 "working copy was not refreshed" \
    "params_refresh_working(p);|||"
plant "the scale not updated" loss_scale.c 10.10 "the scale was not updated" "lesson_scale_update(st->scaler, found);|||"

# each TODO alone back to its stub: its nth "#ifdef SOLUTION" in course/ made "#if 0"
stub() { # TODO FILE N(th block)  DEPENDENT-TODO(or -)
    local todo=$1 f=$2 n=$3 dep=$4 out
    python3 - "$course/$f" "$tmp/$f.pre" "$n" <<'PY'
import sys
parts = open(sys.argv[1]).read().split("#ifdef SOLUTION")
n = int(sys.argv[3])
out = parts[0] + "".join(("#if 0" if i == n else "#ifdef SOLUTION") + p for i, p in enumerate(parts[1:], 1))
open(sys.argv[2], "w").write(out)
PY
    unifdef -x2 -DSOLUTION -o "$tmp/$f.new" "$tmp/$f.pre"
    out=$(grade "$f")
    local fails others
    fails=$(grep -c "^FAIL  TODO $todo " <<<"$out")
    others=$(grep "^FAIL  TODO" <<<"$out" | grep -v "^FAIL  TODO $todo " | grep -vc "^FAIL  TODO $dep ")
    if [ "$fails" -ge 1 ] && grep -q "TODO $todo is not implemented yet" <<<"$out" && [ "$others" -eq 0 ]; then
        verdict "stub of TODO $todo alone ($f block $n): its checks fail, the rest pass$([ "$dep" != - ] && echo " (TODO $dep waits for it)")" 1
    else
        verdict "stub of TODO $todo alone ($f block $n)" 0
        sed 's/^/    /' <<<"$out" | head -20
    fi
}
stub 10.7 bf16.c 1 10.8
stub 10.7 bf16.c 2 10.8
stub 10.8 master.c 1 -
stub 10.9 loss_scale.c 1 10.10
stub 10.9 loss_scale.c 2 10.10
stub 10.10 loss_scale.c 3 -
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
