#!/usr/bin/env bash
# lib/dist with several ranks, as users start them: mpirun with 2 and 3 CPU ranks
# (more ranks than cores is fine: --oversubscribe); lib/parallel/pipeline with 2, 3
# and 4 stages against the unsplit transformer; then the faults a job must
# survive by ending: a rank that hangs, a rank that dies, ranks with different models.
# Each must end the whole job within a bounded time, with a message naming the cause.
# Last line: "N passed, M failed[, K skipped]". Skipped (never passed) without mpirun.
#   tests/dist/run.sh BUILD_DIR
set -u
build=${1:-build}
bin=$build/tests/dist/test_collectives
pipe_bin=$build/tests/dist/test_pipeline
passed=0 failed=0 skipped=0
pass() { echo "PASS  $*"; passed=$((passed + 1)); }
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }

if ! command -v mpirun >/dev/null || [ ! -x "$bin" ] || [ ! -x "$pipe_bin" ]; then
    echo "SKIP  lib/dist with several ranks: needs ranks: Open MPI's mpirun (sudo make deps) and $bin"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
# as root (CI, containers) Open MPI wants to be told that this is meant
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --mca btl self,vader,tcp)

for run in "$bin 2" "$bin 3" "$pipe_bin 2" "$pipe_bin 3" "$pipe_bin 4"; do
    prog=${run% *} n=${run##* } what=lib/dist
    [ "$prog" = "$pipe_bin" ] && what=lib/parallel/pipeline
    out=$(timeout 300 "${mpi[@]}" -n "$n" "$prog" 2>&1)
    printf '%s\n' "$out" | grep -E '^(PASS|FAIL|==|        )' | sed 's/^/    /'
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -1)
    p=$(sed -nE 's/^([0-9]+) passed.*/\1/p' <<<"$line")
    f=$(sed -nE 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/p' <<<"$line")
    if [ -n "$line" ] && [ "$f" = 0 ]; then
        pass "$what with $n ranks: $p checks"
    else
        fail "$what with $n ranks: ${line:-no result line}"
        printf '%s\n' "$out" | tail -20 | sed 's/^/        /'
    fi
done

# fault KIND WANT...: the job must fail within 60 s and its output contain every WANT
fault() {
    local kind=$1 t0 out status took
    shift
    t0=$(date +%s)
    out=$(timeout 120 "${mpi[@]}" -n 3 "$bin" --fault "$kind" 2>&1)
    status=$? took=$(($(date +%s) - t0))
    local missing=
    for want in "$@"; do grep -q -- "$want" <<<"$out" || missing="$missing '$want'"; done
    if [ $status -ne 0 ] && [ $status -ne 124 ] && [ "$took" -le 60 ] && [ -z "$missing" ] &&
        ! grep -q "went on after the fault" <<<"$out"; then
        pass "fault '$kind': the job ended in ${took} s (exit $status) with a message naming it"
    else
        fail "fault '$kind': exit $status after ${took} s; missing from the output:${missing:- nothing}"
        printf '%s\n' "$out" | tail -15 | sed 's/^/        /'
    fi
}
fault hang "did not finish within 5 s" "rank 1 does not answer"
fault die "rank 1"
fault mismatch "the ranks disagree" "on rank 1"

if [ $skipped -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ $failed -eq 0 ]
