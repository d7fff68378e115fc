#!/usr/bin/env bash
# Runs test programs that each end with "N passed, M failed[, K skipped]" and prints
# the sum as the last line. A program that dies without that line counts as one
# failure. Exit status 0 only when nothing failed.
#   tests/run-suites.sh PROGRAM...
set -u
. "$(dirname "$0")/lib-tally.sh"
for prog in "$@"; do
    out=$("$prog" 2>&1)
    status=$?
    printf '%s\n' "$out"
    if ! tally_add "$out"; then
        echo "FAIL  $prog ended (status $status) without a result line"
        failed=$((failed + 1))
        continue
    fi
    if [ "$tally_failed" -eq 0 ] && [ $status -ne 0 ]; then
        echo "FAIL  $prog exited with status $status"
        failed=$((failed + 1))
    fi
done
tally_total
