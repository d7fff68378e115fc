#!/usr/bin/env bash
# make bench-comm: lib/dist's all-reduce bandwidth against message size on RANKS ranks
# of this machine (mpirun), with a plain blocking MPI_Allreduce beside it (CPU ranks);
# then lesson 06's ring all-reduce (its solution, --collectives) against the library's
# (dist_all_reduce: MPI_Allreduce, watched), size by size, and last the ring against MPI_Allreduce from
# the first table, as ratios. The table's JSON lines go to
# build/bench/comm-BACKEND-RANKS.jsonl for `make figures`.
#   bench/run-bench-comm.sh BUILD_DIR RANKS DEVICE(cpu|cuda)
set -euo pipefail
build=$1 ranks=$2 device=$3
command -v mpirun >/dev/null || { echo "error: make bench-comm needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
backend=$([ "$device" = cuda ] && echo nccl || echo mpi)
metrics=$build/bench/comm-$backend-$ranks.jsonl
rm -f "$metrics"
echo "== all-reduce, $ranks ranks, $backend backend ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F))"
mpirun -n "$ranks" --oversubscribe --bind-to none "$build/bench/bench_comm" --device "$device" \
    --ranks "$ranks" --metrics "$metrics"
echo "(JSON lines: $metrics)"
if [ "$device" = cpu ]; then
    echo
    echo "== lesson 06's ring all-reduce (solution) against the library's (dist_all_reduce: MPI_Allreduce, watched)"
    ring=$build/bench/comm-ring-$ranks.txt
    mpirun -n "$ranks" --oversubscribe --bind-to none "$build/solutions/06-ddp/train" \
        --threads 1 --collectives | tee "$ring"
    echo
    echo "== the ring (above) against Open MPI's blocking MPI_Allreduce (first table), bus bandwidth"
    python3 - "$metrics" "$ring" <<'PY'
import json, re, sys
mpi = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "mpi_allreduce_busbw_GBps" in r:
        mpi[r["bytes"]] = (r["mpi_allreduce_busbw_GBps"], r["busbw_GBps"])
print("%12s  %12s  %14s  %14s  %14s" % ("bytes", "ring busbw", "lib/dist", "MPI_Allreduce",
                                         "ring/Allreduce"))
for line in open(sys.argv[2]):
    m = re.match(r"\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s*$", line)
    if m and int(m.group(1)) in mpi:
        b, ring = int(m.group(1)), float(m.group(3))
        blocking, lib = mpi[b]
        print("%12d  %12.3f  %14.3f  %14.3f  %13.2fx" % (b, ring, lib, blocking, ring / blocking))
PY
fi
