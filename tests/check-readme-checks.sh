#!/usr/bin/env bash
# Each lesson README lists its grader's checks as `TODO N.k  name`; this compares that
# list with the check_run(...) calls of tests/graders/gradeNN.c and its parts
# (gradeNN_*.h), both ways, so the sheet never promises a check the grader lacks or
# names one under the wrong TODO.
# Also: lesson 06's table of measured numbers against the run its figure is drawn from.
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0
for readme in course/*/README.md; do
    dir=$(dirname "$readme") lesson=$(basename "$(dirname "$readme")")
    grader=tests/graders/grade${lesson%%-*}.c
    [ -f "$grader" ] || continue
    # check_run("TODO 1.1", "name", ...) -> "TODO 1.1|name" (calls may span two lines)
    # (a grader's parts in gradeNN_*.h register checks too)
    have=$(cat "$grader" tests/graders/grade${lesson%%-*}_*.h 2>/dev/null | tr '\n' ' ' | grep -oE 'check_run\("TODO [^"]+", *"([^"\\]|\\.)*"' |
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

# Lesson 06's Performance table and its figure come from the same measured run
# (docs/figures/data/06-scaling.jsonl, make bench-ddp): every setup there must be a row
# of the table with the same images/s and exposed communication time, so the sheet and
# the figure never tell two stories.
data=docs/figures/data/06-scaling.jsonl readme=course/06-ddp/README.md
if [ -f "$data" ]; then
    bad=$(python3 - "$data" "$readme" <<'PY'
import json, re, sys
rows = {}
for line in open(sys.argv[2], encoding="utf-8"):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if line.startswith("|") and len(cells) >= 5:
        rows[cells[0]] = cells
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    r, n = json.loads(line), n + 1
    cells = rows.get(r["setup"])
    if cells is None:
        print("no row \"%s\" in the table" % r["setup"])
        continue
    rate = int(cells[2].replace(",", "")) if re.fullmatch(r"[0-9,]+", cells[2]) else None
    if rate != r["images_per_s"]:
        print("%s: %s images/s in the table, %s in the data" % (r["setup"], cells[2], r["images_per_s"]))
    want = "-" if r.get("exposed_ms_per_step") is None else "%g ms" % r["exposed_ms_per_step"]
    if cells[4] != want:
        print("%s: exposed %s in the table, %s in the data" % (r["setup"], cells[4], want))
if n == 0:
    print("no measured setups in the data")
PY
)
    if [ -z "$bad" ]; then
        echo "PASS  06-ddp: the Performance table shows $data's numbers"
        passed=$((passed + 1))
    else
        echo "FAIL  06-ddp: the Performance table and $data disagree (make bench-ddp, then both):"
        sed 's/^/        /' <<<"$bad"
        failed=$((failed + 1))
    fi
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
