#!/usr/bin/env bash
# The Slurm tests: every tests/slurm/test-*.sh, each submitting real jobs with the
# local site profile. Needs a Slurm that answers `sinfo`; as root with slurm-wlm
# installed, it starts the local one (tools/slurm-local.sh). Without either, each
# test is reported as skipped. Last line: "N passed, M failed[, K skipped]".
set -u
cd "$(dirname "$0")/../.."
tests=(tests/slurm/test-*.sh)

if ! sinfo -h >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null; then
        tools/slurm-local.sh start || { echo "FAIL  the local Slurm did not start"; echo "0 passed, 1 failed"; exit 1; }
    else
        for t in "${tests[@]}"; do
            echo "SKIP  $(basename "$t" .sh): no Slurm here (sudo make deps, then sudo make slurm-start)"
        done
        echo "0 passed, 0 failed, ${#tests[@]} skipped"
        exit 0
    fi
fi

# Each run's output goes to a fresh scratch directory, not to a shared one.
COURSE_SCRATCH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/course-slurm-test.XXXXXX")
export COURSE_SCRATCH_DIR
trap 'rm -rf "$COURSE_SCRATCH_DIR"' EXIT

passed=0 failed=0
for t in "${tests[@]}"; do
    out=$(bash "$t" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    p=$(grep -c '^PASS  ' <<<"$out")
    f=$(grep -c '^FAIL  ' <<<"$out")
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL  $(basename "$t" .sh) exited with $rc without naming a failure"
        f=1
    fi
    passed=$((passed + p)) failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
