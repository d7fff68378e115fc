#!/usr/bin/env bash
# Each lesson README lists its grader's checks as `TODO N.k  name`; this compares that
# list with the check_run(...) calls of tests/graders/gradeNN.c, both ways, so the
# sheet never promises a check the grader lacks or names one under the wrong TODO.
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0
for readme in course/*/README.md; do
    dir=$(dirname "$readme") lesson=$(basename "$(dirname "$readme")")
    grader=tests/graders/grade${lesson%%-*}.c
    [ -f "$grader" ] || continue
    # check_run("TODO 1.1", "name", ...) -> "TODO 1.1|name" (calls may span two lines)
    have=$(tr '\n' ' ' <"$grader" | grep -oE 'check_run\("TODO [^"]+", *"([^"\\]|\\.)*"' |
        sed -E 's/check_run\("(TODO [^"]+)", *"(.*)"$/\1|\2/; s/\\"/"/g' | sort -u)
    listed=$(grep -oE '`TODO [0-9][0-9.-]*[0-9] +[^`]+`' "$readme" |
        sed -E 's/^`(TODO [0-9.-]+) +(.*)`$/\1|\2/' | sort -u)
    missing=$(comm -23 <(echo "$have") <(echo "$listed"))
    extra=$(comm -13 <(echo "$have") <(echo "$listed"))
    if [ -z "$missing" ] && [ -z "$extra" ]; then
        echo "PASS  $lesson: the README lists the grader's $(grep -c . <<<"$have") checks under their TODOs"
        passed=$((passed + 1))
    else
        echo "FAIL  $lesson: the README's check list and $grader disagree"
        [ -n "$missing" ] && sed 's/^/        in the grader, not in the README: /' <<<"$missing"
        [ -n "$extra" ] && sed 's/^/        in the README, not in the grader: /' <<<"$extra"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
