# shellcheck shell=bash
# Sourced by the test scripts that print one line per check and a result line at the
# end, "N passed, M failed[, K skipped]" (tests/lib-tally.sh adds those up):
#   . tests/lib-checks.sh
#   pass "what held"; fail "what did not"; skip "what could not run, and why"
#   show FILE [LINES]     # a file's last lines (8), indented under a check's line
#   checks_summary        # the result line; its status is 0 only when nothing failed
passed=0 failed=0 skipped=0
pass() { echo "PASS  $*"; passed=$((passed + 1)); }
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
skip() { echo "SKIP  $*"; skipped=$((skipped + 1)); }
show() { sed 's/^/        /' "$1" | tail -"${2:-8}"; }
checks_summary() {
    if [ "$skipped" -gt 0 ]; then
        echo "$passed passed, $failed failed, $skipped skipped"
    else
        echo "$passed passed, $failed failed"
    fi
    [ "$failed" -eq 0 ]
}
