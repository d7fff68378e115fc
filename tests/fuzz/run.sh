#!/usr/bin/env bash
# Runs each fuzz target for a bounded time (make fuzz): one line per target with its
# executions, the corpus it reached and what it found; exit status 1 when anything was
# found (crash, sanitizer report, leak, timeout, out of memory).
#   tests/fuzz/run.sh BUILD_DIR SECONDS TARGET...
set -u
build=$1 seconds=$2
shift 2
found=0
mkdir -p "$build/findings"
for t in "$@"; do
    bin=$build/fuzz_$t corpus=$build/corpus/$t seeds=$build/seeds/$t log=$build/fuzz_$t.log
    mkdir -p "$corpus" "$seeds"
    # -timeout: one input taking this long is a hang; -rss_limit_mb: more is a finding
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/findings/$t-" "$corpus" "$seeds" >"$log" 2>&1
    status=$?
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    units=$(ls "$corpus" | wc -l)
    if [ $status -ne 0 ]; then
        found=1
        echo "FAIL  fuzz_$t: ${runs:-?} runs in ${seconds} s, then a finding (status $status): $log"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -3 | sed 's/^/        /'
        ls "$build/findings" | grep "^$t-" | sed "s|^|        input: $build/findings/|"
    else
        echo "PASS  fuzz_$t: ${runs:-?} runs in ${seconds} s, nothing found (corpus: $units inputs)"
    fi
done
exit $found
