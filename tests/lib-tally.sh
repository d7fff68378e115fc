# Sourced by tests/run-all.sh and tests/run-suites.sh: adding up the result lines of
# test programs, "N passed, M failed[, K skipped]", into one total of the same form.
#   . tests/lib-tally.sh
#   tally_add "$out" || echo "no result line"     # the last result line of $out
#   tally_total                                    # prints the total; false if any failed

passed=0 failed=0 skipped=0
tally_failed=0 # the failures of the line tally_add counted last

# Adds the last result line of the text $1 to the totals; false (counting nothing) when
# the text has no result line.
tally_add() {
    local line p s
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$1" | tail -1)
    [ -n "$line" ] || return 1
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    tally_failed=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
    passed=$((passed + p)) failed=$((failed + tally_failed)) skipped=$((skipped + ${s:-0}))
}

# Prints the total line; its status is 0 only when nothing failed.
tally_total() {
    if [ $skipped -gt 0 ]; then
        echo "$passed passed, $failed failed, $skipped skipped"
    else
        echo "$passed passed, $failed failed"
    fi
    [ $failed -eq 0 ]
}
