#!/usr/bin/env bash
# Grades each lesson's stub (lessons/, TODOs not done) and turns the result around:
# every check that names a TODO must FAIL there, or the check cannot tell a done
# TODO from an undone one. Prints one line per lesson and "N passed, M failed".
#   tests/check-stubs.sh BUILD_DIR
set -u
build=${1:-build}
passed=0 failed=0
for grader in "$build"/lessons/*/grade; do
    lesson=$(basename "$(dirname "$grader")")
    out=$("$grader" 2>&1)
    total=$(grep -cE '^(PASS|FAIL|SKIP)  TODO' <<<"$out")
    wrong=$(grep -E '^(PASS|SKIP)  TODO' <<<"$out")
    if [ "$total" -gt 0 ] && [ -z "$wrong" ]; then
        echo "PASS  stub of $lesson: all $total TODO checks fail before the TODOs are done"
        passed=$((passed + 1))
    else
        echo "FAIL  stub of $lesson: these TODO checks do not fail on the stub (of $total):"
        sed 's/^/        /' <<<"${wrong:-        (no TODO checks ran)}"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
