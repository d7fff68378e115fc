#!/usr/bin/env bash
# make gpu-report's multi-GPU items under the local Slurm (issue 41): the ranks start with
# srun inside the allocation, as on a cluster's GPU nodes.
#   - make submit gpu-check SITE=local with stand-in programs and a stand-in nvidia-smi of
#     4 GPUs (tests/gpu/standin_*.py; COURSE_DEVICE=cuda: the GPU path, 4 tasks a node):
#     the job completes and every multi-GPU item passed under srun (the 3D layout "not
#     run: 4 GPUs"), the killed rank named in srun's words;
#   - from an salloc shell (off the allocation's node, as on a login node): the report
#     moves onto the node with srun first; stand-ins of 8 GPUs (every item, the 3D layout
#     too) and then of 2 in the same allocation of 8 tasks;
#   - make submit gpu-check SITE=local as it is (a site without GPUs: --cpu-ranks, one
#     CPU rank a task): the real programs on 2 CPU ranks through srun --mpi=pmix, their
#     real output compared.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

multi="nccl kill-rank lesson09 lesson09-3d lesson07 lesson08 lesson06 lesson09-bf16 lesson07-bf16 lesson08-bf16 lesson06-bf16"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-report-slurm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
b=$tmp/build
for l in 06-ddp 07-pipeline 08-zero 09-tensor-parallel; do
    mkdir -p "$b/solutions/$l" && ln -s "$PWD/tests/gpu/standin_train.py" "$b/solutions/$l/train"
done
mkdir -p "$b/bench" "$tmp/bin" "$tmp/gpu"
ln -s "$PWD/tests/gpu/standin_train.py" "$b/bench/bench_comm"
ln -s "$PWD/tests/gpu/standin_smi.py" "$tmp/bin/nvidia-smi"
stand_ins=(env "PATH=$tmp/bin:$PATH" "STANDIN_GPU_DIR=$tmp/gpu" GPU_REPORT_SMI_PERIOD_S=0.03)
submit_stand_ins() { # $1: GPUs; the job sees the stand-ins (sbatch --export=ALL)
    rm -f "$tmp/job"
    (export PATH="$tmp/bin:$PATH" STANDIN_GPU_DIR="$tmp/gpu" GPU_REPORT_SMI_PERIOD_S=0.03 STANDIN_GPUS=$1 \
        COURSE_DEVICE=cuda GPU_REPORT_BUILD="$b" GPU_REPORT_ONLY="$multi" \
        COURSE_SBATCH_OPTIONS="--ntasks-per-node=$1 --cpus-per-task=1"
     submit_job gpu-check && echo "$JOB $JOB_OUT" >"$tmp/job")
    [ -s "$tmp/job" ] && read -r JOB JOB_OUT <"$tmp/job"
}

# verdicts REPORT_JSON WANT...: each WANT "id=status" (the rest must be "passed"); the
# launcher srun; prints what differs
verdicts() {
    python3 - "$@" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
want = dict(w.split("=", 1) for w in sys.argv[2:])
bad = [f"{it['id']}: {it['status']} {it['why']} {' | '.join(it['checks'][-3:] or it['tail'][-3:])}"
       for it in rep["items"] if it["status"] != want.get(it["id"], "passed")]
if rep["gpus"]["launcher"] != "srun":
    bad.append(f"launcher {rep['gpus']['launcher']}, not srun")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# ---- make submit gpu-check with 4 stand-in GPUs
if ! submit_stand_ins 4; then
    fail "make submit gpu-check SITE=local (4 stand-in GPUs) did not submit"
else
    state=$(wait_job "$JOB" 300)
    report=$(sed -nE 's/^report: (.*)\/report\.md .*/\1/p' "$JOB_OUT" 2>/dev/null)
    if [ "$state" != COMPLETED ] || [ -z "$report" ]; then
        fail "gpu-check, 4 stand-in GPUs: job $JOB ended $state (exit $(job_exit "$JOB")), or named no report"
        show_output "$JOB_OUT"
    elif ! bad=$(verdicts "$report/report.json" lesson09-3d="not run"); then
        fail "gpu-check, 4 stand-in GPUs: not every multi-GPU item passed under srun:"
        sed 's/^/        /' <<<"$bad"
    elif ! grep -q 'task 3' "$report/metrics/multi/kill-rank/killed.out"; then
        fail "gpu-check, 4 stand-in GPUs: srun did not name the killed task 3"
        tail -8 "$report/metrics/multi/kill-rank/killed.out" | sed 's/^/        /'
    else
        pass "make submit gpu-check SITE=local, 4 stand-in GPUs: job $JOB completed, every multi-GPU item passed under srun (3D: not run, 4 GPUs), srun named the killed task"
    fi
fi

# ---- from an salloc shell: 8 stand-in GPUs, then 2, in one allocation of 8 tasks
out=$tmp/salloc.out
timeout 400 "${stand_ins[@]}" salloc --partition=local --nodes=1 --ntasks=8 --cpus-per-task=1 --time=10 \
    --job-name=gpu-report-test bash -c '
        STANDIN_GPUS=8 python3 tools/gpu-report/gpu-report.py --build "$1" --out "$2/r8" --only $3 &&
        STANDIN_GPUS=2 python3 tools/gpu-report/gpu-report.py --build "$1" --out "$2/r2" \
            --only nccl kill-rank lesson09 lesson07 lesson08 lesson06' _ "$b" "$tmp" "$multi" >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$tmp/r8/report.json" ] || [ ! -f "$tmp/r2/report.json" ]; then
    fail "gpu-report from an salloc shell: exit $rc, or a report is missing"
    show_output "$out"
elif ! grep -q "from a shell off its nodes: running on its first node" "$out"; then
    fail "gpu-report from an salloc shell: it did not move onto the allocation's node"
    show_output "$out"
elif ! bad=$(verdicts "$tmp/r8/report.json") || ! bad=$(verdicts "$tmp/r2/report.json"); then
    fail "gpu-report from an salloc shell (8, then 2 stand-in GPUs): not every multi-GPU item passed under srun:"
    sed 's/^/        /' <<<"$bad"
else
    pass "gpu-report from an salloc shell: moved onto the node with srun; 8 stand-in GPUs (3D layout too), then 2: every multi-GPU item passed under srun"
fi

# ---- make submit gpu-check as the local site is: the real programs on 2 CPU ranks
if ! GPU_REPORT_ONLY="nccl kill-rank lesson09 lesson07 lesson08" \
    COURSE_SBATCH_OPTIONS="--ntasks-per-node=2 --cpus-per-task=1" submit_job gpu-check; then
    fail "make submit gpu-check SITE=local (CPU ranks) did not submit"
else
    state=$(wait_job "$JOB" 400)
    report=$(sed -nE 's/^report: (.*)\/report\.md .*/\1/p' "$JOB_OUT" 2>/dev/null)
    if [ "$state" != COMPLETED ] || [ -z "$report" ]; then
        fail "gpu-check on CPU ranks: job $JOB ended $state (exit $(job_exit "$JOB")), or named no report"
        show_output "$JOB_OUT"
    elif ! grep -q '"mode": "CPU ranks' "$report/report.json" || ! bad=$(verdicts "$report/report.json"); then
        fail "gpu-check on CPU ranks: not in CPU-ranks mode, or an item did not pass under srun:"
        sed 's/^/        /' <<<"${bad:-}"
    else
        pass "make submit gpu-check SITE=local (no GPUs): the real programs on 2 CPU ranks under srun --mpi=pmix, each item's comparisons passed"
    fi
fi
exit $status
