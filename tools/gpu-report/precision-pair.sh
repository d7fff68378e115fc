#!/usr/bin/env bash
# Lesson 04 in make gpu-report: the same run in float32 and in bf16 on the GPU (issue 28:
# bf16's valid loss within 2 % of float32's), the bf16 run traced (--trace: the blocks'
# GPU times on the stream's track, for Perfetto).
#   tools/gpu-report/precision-pair.sh TRAIN METRICS_PREFIX [OPTIONS OF TRAIN...]
# writes METRICS_PREFIX-fp32.jsonl, -bf16.jsonl and -bf16-trace.json; last line
# "N passed, M failed".
set -u
train=$1 prefix=$2
shift 2
status=0
for p in fp32 bf16; do
    extra=()
    [ "$p" = bf16 ] && extra=(--trace "$prefix-bf16-trace.json")
    echo "== $p: $train --precision $p --metrics $prefix-$p.jsonl ${extra[*]} $*"
    "$train" --precision "$p" --metrics "$prefix-$p.jsonl" "${extra[@]}" "$@" 2>&1
    s=$?
    [ $s -eq 0 ] || { echo "FAIL  --precision $p exited with status $s"; status=1; }
done
[ $status -eq 0 ] || { echo "0 passed, 1 failed"; exit 1; }
python3 - "$prefix-fp32.jsonl" "$prefix-bf16.jsonl" <<'PY'
import json, sys
last = [[json.loads(l) for l in open(p) if l.strip()][-1] for p in sys.argv[1:]]
f32, b16 = (r["valid_loss"] for r in last)
off = abs(b16 - f32) / f32
rates = ", ".join(f"{r['precision']} {r['tokens_per_s']:.0f} tokens/s, MFU {100 * r.get('mfu', 0):.1f} %"
                  for r in last)
verdict = "PASS" if off <= 0.02 else "FAIL"
print(f"{verdict}  valid loss bf16 {b16:.4f} against float32 {f32:.4f}: {100 * off:.2f} % apart "
      f"(at most 2 %); {rates}")
print("1 passed, 0 failed" if off <= 0.02 else "0 passed, 1 failed")
sys.exit(0 if off <= 0.02 else 1)
PY
