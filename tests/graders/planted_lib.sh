# The machinery of the planted-mistake scripts (tests/graders/planted*.sh), sourced by
# them: a temporary copy of a lesson's solution with its objects and the grader built
# against it; each mistake (or a TODO put back to its stub) is patched into the copy,
# the grader relinked and run on the checks in $PLANTED_CHECKS (CHECK_ONLY's words),
# and its verdict counted. The script sets PLANTED_CHECKS and calls, in this order:
#   planted_setup BUILD_DIR LESSON GRADER      e.g. build 10-performance tests/graders/grade10.c
#   plant NAME FILE TODO HINT "old|||new"...   the TODO's check fails with HINT
#   stub TODO FILE BLOCKS DEPENDENT-TODO [SAYS] the TODO alone back to its stub
#   planted_end                                "N passed, M failed"; the exit status
# Needs `make all` first (the solution's objects, the library, the grader's framework).
# shellcheck shell=bash

passed=0 failed=0

# planted_setup BUILD_DIR LESSON GRADER: the copy in $tmp, its objects and the grader's
planted_setup() {
    build=$1 src=solutions/$2 course=course/$2
    local grader=$3 n
    n=$(basename "$grader" .c) && n=${n#grade}
    flags() { make -s --no-print-directory BUILD="$build" --eval='print-%: ; @echo $($*)' "print-$1" | sed 's/-DCOURSE_ROOT=[^ ]*//'; }
    CFLAGS=$(flags CFLAGS) LESSON_CFLAGS=$(flags LESSON_CFLAGS) LDLIBS=$(flags LDLIBS)
    GRADE_LDFLAGS=$(flags "GRADE_LDFLAGS_$n") FRAMEWORK=$(flags FRAMEWORK_OBJ)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp "$src"/*.c "$src"/*.h "$tmp"/
    # shellcheck disable=SC2086
    cc $CFLAGS -I"$tmp" -DLESSON_PATH="\"$tmp\"" -c "$grader" -o "$tmp/grade.o" || exit 1
    objs=""
    local f b
    for f in "$tmp"/*.c; do
        b=$(basename "$f" .c)
        [ "$b" = main ] && continue
        objs="$objs $tmp/$b.o"
        # shellcheck disable=SC2086
        cc $LESSON_CFLAGS -I"$tmp" -c "$f" -o "$tmp/$b.o" || exit 1
        cp "$tmp/$b.o" "$tmp/$b.o.orig"
    done
}

# grade FILE: the planted copy of FILE (in $tmp/FILE.new) in place, graded; the output
grade() {
    local f=$1 b=${1%.c}
    cp "$tmp/$f" "$tmp/$f.orig" && cp "$tmp/$f.new" "$tmp/$f"
    # shellcheck disable=SC2086
    cc $LESSON_CFLAGS -I"$tmp" -c "$tmp/$f" -o "$tmp/$b.o" 2>&1 &&
        cc "$tmp/grade.o" $objs $FRAMEWORK "$build/libcourse.a" $GRADE_LDFLAGS $LDLIBS -o "$tmp/grade" 2>&1 &&
        CHECK_ONLY="$PLANTED_CHECKS" "$tmp/grade" 2>&1
    cp "$tmp/$f.orig" "$tmp/$f" && cp "$tmp/$b.o.orig" "$tmp/$b.o"
}

verdict() { # name, ok
    if [ "$2" = 1 ]; then echo "PASS  $1"; passed=$((passed + 1)); else echo "FAIL  $1"; failed=$((failed + 1)); fi
}

# patched FILE "old|||new"...: the copy's FILE with each pair replaced once, written to
# $tmp/FILE.new for grade; fails when an "old" is not in it
patched() {
    local f=$1
    shift
    python3 - "$tmp/$f" "$tmp/$f.new" "$@" <<'PY'
import sys
text = open(sys.argv[1]).read()
for pair in sys.argv[3:]:
    old, new = pair.split("|||")
    if old not in text: sys.exit(1)
    text = text.replace(old, new, 1)
open(sys.argv[2], "w").write(text)
PY
}

# failed_block TODO OUTPUT: the lines of OUTPUT from the first "FAIL  TODO <TODO> " to the
# next verdict line
failed_block() {
    awk -v t="TODO $1 " 'index($0, "FAIL  " t) == 1 { on = 1; print; next } /^[A-Z]/ { on = 0 } on' <<<"$2"
}

# plant NAME FILE TODO HINT PYTHON-REPLACEMENTS...: each "old|||new" pair must match
plant() {
    local name=$1 f=$2 todo=$3 hint=$4 out
    shift 4
    patched "$f" "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    out=$(grade "$f")
    local block
    block=$(failed_block "$todo" "$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\"" 1
        grep -m1 -F -- "$hint" <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}

# plant_not NAME FILE TODO HINT NOT "old|||new"...: as plant, and the TODO's lines must
# not say NOT (a hint that blames something else)
plant_not() {
    local name=$1 f=$2 todo=$3 hint=$4 not=$5 out block
    shift 5
    patched "$f" "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    out=$(grade "$f")
    block=$(failed_block "$todo" "$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block" && ! grep -qF -- "$not" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\", not \"$not\"" 1
        grep -m1 -F -- "$hint" <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\", not \"$not\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}

# stub TODO FILE BLOCKS DEPENDENT-TODO(or -) [SAYS]: the TODO alone back to its stub:
# the BLOCKS-th "#ifdef SOLUTION"s in course/ (one, or several "3,4") made "#if 0". Its
# checks must fail, saying SAYS ("TODO N.k is not implemented yet" unless given: a stub
# that runs says something of its own), the others pass, but DEPENDENT-TODO's (a check
# that runs it too, or waits for it: "fix TODO X first").
stub() {
    local todo=$1 f=$2 n=$3 dep=$4 says=${5:-"TODO $1 is not implemented yet"} out
    python3 - "$course/$f" "$tmp/$f.pre" "$n" <<'PY'
import sys
parts = open(sys.argv[1]).read().split("#ifdef SOLUTION")
n = {int(k) for k in sys.argv[3].split(",")}
out = parts[0] + "".join(("#if 0" if i in n else "#ifdef SOLUTION") + p for i, p in enumerate(parts[1:], 1))
open(sys.argv[2], "w").write(out)
PY
    unifdef -x2 -DSOLUTION -o "$tmp/$f.new" "$tmp/$f.pre"
    out=$(grade "$f")
    local fails others
    fails=$(grep -c "^FAIL  TODO $todo " <<<"$out")
    others=$(grep "^FAIL  TODO" <<<"$out" | grep -v "^FAIL  TODO $todo " | grep -vc "^FAIL  TODO $dep ")
    if [ "$fails" -ge 1 ] && grep -qF -- "$says" <<<"$out" && [ "$others" -eq 0 ]; then
        verdict "stub of TODO $todo alone ($f block $n): its checks fail, the rest pass$([ "$dep" != - ] && echo " (TODO $dep waits for it)")" 1
    else
        verdict "stub of TODO $todo alone ($f block $n)" 0
        sed 's/^/    /' <<<"$out" | head -20
    fi
}

planted_end() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
