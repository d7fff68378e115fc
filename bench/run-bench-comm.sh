#!/usr/bin/env bash
# make bench-comm: lib/dist's all-reduce bandwidth against message size on RANKS ranks
# of this machine (mpirun), then lesson 06's ring all-reduce (its solution, --collectives)
# against the library's, size by size, as a ratio. The table's JSON lines go to
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
    echo "== lesson 06's ring all-reduce (solution) against the library's MPI_Allreduce"
    mpirun -n "$ranks" --oversubscribe --bind-to none "$build/solutions/06-ddp/train" \
        --threads 1 --collectives
fi
