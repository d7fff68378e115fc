#!/usr/bin/env bash
# Runs test programs that each end with "N passed, M failed[, K skipped]" and prints
# the sum as the last line. A program that dies without that line counts as one
# failure. Exit status 0 only when nothing failed.
#   tests/run-suites.sh PROGRAM...
set -u
passed=0 failed=0 skipped=0
for prog in "$@"; do
    out=$("$prog" 2>&1)
    status=$?
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL  $prog ended (status $status) without a result line"
        failed=$((failed + 1))
        continue
    fi
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
    if [ "$f" -eq 0 ] && [ $status -ne 0 ]; then
        echo "FAIL  $prog exited with status $status"
        failed=$((failed + 1))
    fi
done
if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
