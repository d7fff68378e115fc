# Helpers for the Slurm tests (tests/slurm/test-*.sh), sourced after `cd` to the
# course root. Each test prints "PASS  ..." / "FAIL  ..." lines, shows the job's
# output when it fails, and exits non-zero on a failure.

pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; status=1; }
status=0

# submit_job ARGS...: tools/submit.sh ARGS --site local; sets JOB (the id) and
# JOB_OUT (its output file); returns non-zero when the submission failed.
submit_job() {
    local out
    out=$(tools/submit.sh --site local "$@" 2>&1) || { echo "$out"; return 1; }
    JOB=$(sed -nE 's/^submitted job ([0-9]+).*/\1/p' <<<"$out")
    JOB_OUT=$(sed -nE 's/^output: +([^ ]+).*/\1/p' <<<"$out")
    [ -n "$JOB" ] || { echo "$out"; return 1; }
}

job_state() { scontrol show job "$1" 2>/dev/null | sed -nE 's/.*JobState=([A-Z_]+).*/\1/p'; }
job_exit() { scontrol show job "$1" 2>/dev/null | sed -nE 's/.* ExitCode=([0-9]+:[0-9]+).*/\1/p'; }

# wait_job ID [SECONDS]: until the job has ended; prints its final state.
wait_job() {
    local id=$1 limit=${2:-300} s i
    for ((i = 0; i < limit; i++)); do
        s=$(job_state "$id")
        case "$s" in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
            echo "$s"; return ;;
        esac
        sleep 1
    done
    scancel "$id" 2>/dev/null
    echo "TIMEOUT_WAITING"
}

# wait_running ID [SECONDS]: until the job runs; returns non-zero if it never did.
wait_running() {
    local id=$1 limit=${2:-120} i
    for ((i = 0; i < limit; i++)); do
        [ "$(job_state "$id")" = RUNNING ] && return 0
        sleep 1
    done
    return 1
}

show_output() { # $1: output file
    echo "        ---- ${1:-no output file} ----"
    sed 's/^/        /' "${1:-/dev/null}" 2>/dev/null | tail -40
}
