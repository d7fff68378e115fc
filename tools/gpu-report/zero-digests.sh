#!/usr/bin/env bash
# Lesson 08 in make gpu-report: ZeRO stage 3 against plain data parallel (stage 0), the
# same steps on the same rank(s). Both must end with the same parameter and optimiser
# digests, bit for bit (docs/gpu.md: owed on one GPU, where NCCL moves no data but every
# collective and the optimiser's kernels on pieces of the flat buffer run).
#   tools/gpu-report/zero-digests.sh TRAIN METRICS_PREFIX [OPTIONS OF TRAIN...]
# writes METRICS_PREFIX-stage0.jsonl and -stage3.jsonl; last line "N passed, M failed".
set -u
train=$1 prefix=$2
shift 2
digests() { sed -nE 's/^rank [0-9]+ (parameter|optimizer) digest: ([0-9a-f]+)$/\1 \2/p' <<<"$1" | sort -u; }
declare -A got
status=0
for stage in 0 3; do
    echo "== stage $stage: $train --stage $stage --metrics $prefix-stage$stage.jsonl $*"
    out=$("$train" --stage $stage --metrics "$prefix-stage$stage.jsonl" "$@" 2>&1)
    s=$?
    printf '%s\n' "$out"
    [ $s -eq 0 ] || { echo "FAIL  stage $stage exited with status $s"; status=1; }
    got[$stage]=$(digests "$out")
done
if [ $status -eq 0 ] && [ "$(grep -c . <<<"${got[0]}")" = 2 ] && [ "${got[0]}" = "${got[3]}" ]; then
    echo "PASS  stage 3 ends with stage 0's digests: $(paste -sd' ' <<<"${got[3]}")"
    echo "1 passed, 0 failed"
else
    echo "FAIL  stage 3's digests differ from stage 0's (or a run printed none)"
    echo "        stage 0: $(paste -sd' ' <<<"${got[0]}")"
    echo "        stage 3: $(paste -sd' ' <<<"${got[3]}")"
    echo "0 passed, 1 failed"
    exit 1
fi
