#!/usr/bin/env bash
# Grades each lesson's stub (lessons/, TODOs not done) and turns the result around:
# every check that names a TODO must FAIL there, or the check cannot tell a done
# TODO from an undone one. A GPU check that SKIPs because there is no GPU (its
# first line says "needs a GPU: ...") cannot run here: it is reported as skipped,
# never as passed. Every other TODO check (the host-side ones) must still fail, and
# a lesson needs at least one failing TODO check: one whose TODO checks all skip
# is skipped, not passed. Last line: "N passed, M failed[, K skipped]".
#   tests/check-stubs.sh BUILD_DIR
set -u
build=${1:-build}
passed=0 failed=0 skipped=0
for grader in "$build"/lessons/*/grade; do
    lesson=$(basename "$(dirname "$grader")")
    out=$("$grader" 2>&1)
    total=$(grep -cE '^(PASS|FAIL|SKIP)  TODO' <<<"$out")
    nfail=$(grep -cE '^FAIL  TODO' <<<"$out")
    # TODO checks that pass, or skip for another reason than a missing GPU
    wrong=$(awk '
        /^(PASS|FAIL|SKIP)  TODO/ { flush(); line = $0; v = $1; gpu = 0; next }
        /^        needs (a GPU|ranks): / { if (v == "SKIP") gpu = 1; next }
        /^[^ ]/ { flush() }
        function flush() { if (v == "PASS" || (v == "SKIP" && !gpu)) print line; v = "" }
        END { flush() }' <<<"$out")
    gpu_skips=$((total - nfail - $(grep -c . <<<"${wrong:-}")))
    if [ -n "$wrong" ] || [ "$total" -eq 0 ]; then
        echo "FAIL  stub of $lesson: these TODO checks do not fail on the stub (of $total):"
        sed 's/^/        /' <<<"${wrong:-(no TODO checks ran)}"
        failed=$((failed + 1))
    elif [ "$nfail" -eq 0 ]; then
        echo "SKIP  stub of $lesson: all $total TODO checks need a GPU or ranks, and there are none here"
        skipped=$((skipped + 1))
    else
        if [ "$gpu_skips" -gt 0 ]; then
            echo "PASS  stub of $lesson: all $nfail host-side TODO checks fail before the TODOs are done; $gpu_skips GPU or multi-rank checks skipped (no GPU or mpirun)"
        else
            echo "PASS  stub of $lesson: all $total TODO checks fail before the TODOs are done"
        fi
        passed=$((passed + 1))
        skipped=$((skipped + gpu_skips))
    fi
done
if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
