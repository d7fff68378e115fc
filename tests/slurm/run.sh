#!/usr/bin/env bash
# The Slurm tests: every tests/slurm/test-*.sh, each submitting real jobs with the
# local site profile, to the project's own single-node Slurm (tools/slurm-local.sh:
# cluster course-local, partition local). Needs a Slurm that answers `sinfo`; as root
# with slurm-wlm installed, it starts the local one. Without either, each test is
# reported as skipped. Beside a Slurm that is not the project's own (an instructor on
# a cluster's login node, any machine with a Slurm of its own) the tests are skipped
# with the reason, never failed, and never start daemons with that site's slurm.conf:
# they would queue real jobs there. COURSE_TEST_PARTITION=NAME (or =default, the
# cluster's default partition) runs them there all the same.
# Last line: "N passed, M failed[, K skipped]".
set -u
cd "$(dirname "$0")/../.."
tests=(tests/slurm/test-*.sh)
conf=${SLURM_CONF:-/etc/slurm/slurm.conf}

skip_all() { # $1: the reason
    local t
    for t in "${tests[@]}"; do echo "SKIP  $(basename "$t" .sh): $1"; done
    echo "0 passed, 0 failed, ${#tests[@]} skipped"
    exit 0
}

if ! sinfo -h >/dev/null 2>&1; then
    if [ -f "$conf" ] && ! grep -qF "# written by tools/slurm-local.sh" "$conf"; then
        skip_all "the Slurm configured in $conf is not the project's own and does not answer (not started for a test)"
    elif [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null; then
        tools/slurm-local.sh start || { echo "FAIL  the local Slurm did not start"; echo "0 passed, 1 failed"; exit 1; }
    else
        skip_all "no Slurm here (sudo make deps, then sudo make slurm-start)"
    fi
fi

# A Slurm answers: the project's own, or another one
cluster=$(scontrol show config 2>/dev/null | sed -nE 's/^ClusterName *= *//p' | head -1)
if [ "$cluster" != course-local ]; then
    if [ -z "${COURSE_TEST_PARTITION:-}" ]; then
        skip_all "the Slurm here is cluster '${cluster:-unknown}', not the project's single-node one (tools/slurm-local.sh): the tests would queue jobs there (COURSE_TEST_PARTITION=NAME, or =default, runs them in that partition)"
    fi
    part=$COURSE_TEST_PARTITION
    [ "$part" = default ] && part=$(sinfo -h -o %P 2>/dev/null | sed -n 's/[*]$//p' | head -1)
    [ -n "$part" ] || skip_all "cluster '$cluster' names no default partition: set COURSE_TEST_PARTITION=NAME"
    export COURSE_PARTITION=$part
    echo "note: running the sbatch tests on cluster '$cluster', partition $part (COURSE_TEST_PARTITION)"
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
