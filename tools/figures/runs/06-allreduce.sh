#!/usr/bin/env bash
# The measurements behind the figure 06-allreduce: what `make bench-comm` runs
# (bench/run-bench-comm.sh: bench_comm's lib/dist all-reduce and a plain MPI_Allreduce
# taking turns at each size, then lesson 06's ring, the solution's --collectives), RUNS
# times over, and each column's best over the runs: on a shared machine one run's
# sizes scatter by 2x or more, and a disturbed round only ever makes a size slower.
# One JSON line per size on stdout (bench_comm's keys, the ring's where it measured
# the size: ring_busbw_GBps, and ring_library_busbw_GBps, lib/dist's all-reduce timed
# the ring's way), the best-of table on stderr.
#   tools/figures/record.sh 06-allreduce -- tools/figures/runs/06-allreduce.sh [RUNS [BUILD_DIR]]
set -euo pipefail
cd "$(dirname "$0")/../../.."
runs=${1:-3} build=${2:-build}
make --no-print-directory -s BUILD="$build" "$build/bench/bench_comm" "$build/solutions/06-ddp/train" >&2
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
for ((run = 1; run <= runs; run++)); do
    echo "== run $run of $runs (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    bench/run-bench-comm.sh "$build" 2 cpu >&2
    cp "$build/bench/comm-mpi-2.jsonl" "$keep/comm.$run.jsonl"
    cp "$build/bench/comm-ring-2.txt" "$keep/ring.$run.txt"
done
python3 - "$keep" "$runs" <<'PY'
import glob, json, re, sys
keep, runs = sys.argv[1], int(sys.argv[2])
best = {}  # bytes -> {key: best value}
def better(b, key, v):
    row = best.setdefault(b, {})
    row[key] = max(row.get(key, 0.0), v)
for path in glob.glob(keep + "/comm.*.jsonl"):
    for line in open(path):
        r = json.loads(line)
        for key in ("busbw_GBps", "mpi_allreduce_busbw_GBps"):
            if key in r:
                better(r["bytes"], key, r[key])
for path in glob.glob(keep + "/ring.*.txt"):
    for line in open(path):  # bytes, ring GB/s, ring busbw, library busbw, ratio
        m = re.match(r"\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s*$", line)
        if m:
            better(int(m.group(1)), "ring_busbw_GBps", float(m.group(3)))
            better(int(m.group(1)), "ring_library_busbw_GBps", float(m.group(4)))
print("best of %d runs, bus bandwidth GB/s" % runs, file=sys.stderr)
print("%10s %10s %14s %10s %12s %14s %15s" % ("bytes", "lib/dist", "MPI_Allreduce", "ring",
      "lib (ring's)", "ring/lib", "ring/Allreduce"), file=sys.stderr)
for b in sorted(best):
    row = {"backend": "mpi", "ranks": 2, "runs": runs, "bytes": b, **best[b]}
    print(json.dumps(row))
    if "ring_busbw_GBps" in row and "mpi_allreduce_busbw_GBps" in row:
        ring, lib = row["ring_busbw_GBps"], row["ring_library_busbw_GBps"]
        print("%10d %10.3f %14.3f %10.3f %12.3f %13.2fx %14.2fx" % (
            b, row["busbw_GBps"], row["mpi_allreduce_busbw_GBps"], ring, lib,
            ring / lib if lib else 0, ring / row["mpi_allreduce_busbw_GBps"]), file=sys.stderr)
PY
