#!/usr/bin/python3 -S
"""Stand-in programs for make gpu-report's multi-GPU items (tests/gpu/test_gpu_report_multi.py
and tests/slurm/test-gpu-report.sh): one script that plays bench/bench_comm or lesson
06, 07, 08 or 09's solution, by the path it was started as (a link in a stand-in build
directory), as one rank of a job started by mpirun or srun. It prints the lines and
writes the --metrics JSON lines the real programs do (the formats tools/gpu-report/
compare.py reads, which its tests also check on the real programs' output), with losses
that depend on the step and the precision but not on how many ranks share the work, as
the real ones do to rounding. While lessons 07 and 08 run, each rank says in
$STANDIN_GPU_DIR/gpuI.PID how many MiB it holds on its GPU (I: its local rank, through
CUDA_VISIBLE_DEVICES), which the stand-in nvidia-smi (standin_smi.py) adds to the GPU's
memory.used.

STANDIN_PLANT (words): 06, 07, 08, 09: a split run's losses 0.1 % off (08: stage 2's
digest another), comm: a wrong all-gather, kill: lesson 06 ends at once when it should
train on (its rank never killed). STANDIN_SLOW=1: bench_comm sleeps a minute first."""

import hashlib
import json
import os
import socket
import sys
import time

ARGS = sys.argv[1:]
PLANT = os.environ.get("STANDIN_PLANT", "").split()
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("SLURM_PROCID") or 0)
WORLD = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("SLURM_STEP_NUM_TASKS")
            or os.environ.get("SLURM_NTASKS") or 1)
LOCAL = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK") or os.environ.get("SLURM_LOCALID") or 0)


def opt(name, default=None):
    flag = "--" + name
    if flag not in ARGS:
        return default
    i = ARGS.index(flag)
    if i + 1 < len(ARGS) and not ARGS[i + 1].startswith("--"):
        return ARGS[i + 1]
    return True


def say(*lines):
    for line in lines:
        print(line, flush=True)


def metrics(rows):
    path = opt("metrics")
    if path and RANK == 0:
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


def hold(mib):
    """Holds mib MiB on this rank's GPU for the stand-in nvidia-smi, long enough for the
    report's sampler (lessons 07 and 08, whose memory it holds against nvidia-smi's)."""
    d = os.environ.get("STANDIN_GPU_DIR")
    if not d:
        return
    cvd = [e for e in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()]
    g = int(os.environ.get("STANDIN_GPUS", "1"))
    gpu = cvd[LOCAL % len(cvd)] if cvd else str(LOCAL % g)
    path = os.path.join(d, f"gpu{gpu}.{os.getpid()}")
    with open(path, "w") as f:
        f.write(f"{mib:.0f}")
    time.sleep(float(os.environ.get("STANDIN_HOLD_S", "0.6")))
    os.remove(path)


def loss(step, split):
    """The same for any number of ranks, unless planted for this program."""
    base = 7.0 - 0.05 * step + (0.001 if opt("precision") == "bf16" else 0.0)
    return base * (1.001 if split and PROGRAM in PLANT else 1.0)


def digest(kind="parameter", salt=""):
    h = hashlib.sha256(f"{kind} {opt('precision')} {salt}".encode()).hexdigest()[:16]
    say(f"rank {RANK} {kind} digest: {h}")


# ---------------------------------------------------------------- the programs

def bench():
    if os.environ.get("STANDIN_SLOW"):
        time.sleep(60)
    unit = {"K": 1 << 10, "M": 1 << 20}

    def size(s):
        return int(s[:-1]) * unit[s[-1]] if s[-1] in unit else int(s)
    lo, hi = size(opt("min-bytes", "8")), size(opt("max-bytes", "256M"))
    which = opt("collective", "all-reduce")
    colls = ["all-reduce", "all-gather", "reduce-scatter", "broadcast", "send-recv"] if which == "all" else [which]
    backend = "nccl" if opt("device") == "cuda" else "mpi"
    if os.environ.get("NCCL_DEBUG") == "INFO":
        host = socket.gethostname()
        if RANK == 0:
            say(f"{host}:{os.getpid()}:{os.getpid()} [0] NCCL INFO NCCL version 2.99.9+cuda99.9")
        say(f"{host}:{os.getpid()}:{os.getpid()} [{LOCAL}] NCCL INFO Pattern 4, crossNic 0, nChannels 2, "
            "bw 40.000000/40.000000, type NVL/PIX, sameChannels 1")
        for c in range(2):
            say(f"{host}:{os.getpid()}:{os.getpid()} [{LOCAL}] NCCL INFO Channel {c:02d}/0 : {RANK}[{LOCAL}] -> "
                f"{(RANK + 1) % WORLD}[{(LOCAL + 1) % WORLD}] via P2P/CUMEM/read")
    say(f"dist: {backend} backend, {WORLD} ranks on 1 node ({WORLD} per node), launched by stand-in")
    rows, wrong_any = [], False
    for coll in colls:
        factor = {"all-reduce": 2 * (WORLD - 1) / WORLD, "all-gather": (WORLD - 1) / WORLD,
                  "reduce-scatter": (WORLD - 1) / WORLD}.get(coll, 1.0)
        b = lo
        while b <= hi:
            n = b // (4 * WORLD) if coll in ("all-gather", "reduce-scatter") else b // 4
            nbytes = n * 4 * WORLD if coll in ("all-gather", "reduce-scatter") else n * 4
            t = 10.0 + nbytes / 50e3
            algbw = nbytes / (t * 1e-6) / 1e9
            wrong = 1 if "comm" in PLANT and coll == "all-gather" and b * 2 > hi else 0
            wrong_any |= bool(wrong)
            say(f"{nbytes:12d} {n:12d} {t:10.1f} {algbw:12.3f} {algbw * factor:12.3f} {'WRONG' if wrong else 'ok':>8}")
            rows.append({"collective": coll, "backend": backend, "dtype": "float32", "ranks": WORLD, "nodes": 1,
                         "bytes": nbytes, "time_us": t, "algbw_GBps": algbw, "busbw_GBps": algbw * factor,
                         "wrong": wrong})
            b *= 2
    metrics(rows)
    return 1 if wrong_any else 0


def lesson06():
    if opt("dataset") == "synthetic":  # the killed-rank item: trains until killed
        say(f"rank {RANK} of {WORLD}: local rank {LOCAL} of {WORLD} on its node, cuda",
            "epoch  train loss  test loss  test accuracy   seconds   images/s")
        if "kill" in PLANT:
            return 0
        for e in range(1, 100000):
            time.sleep(0.3)
            if RANK == 0:
                say(f"{e:5d}  {1.0:10.4f}  {0.5:9.4f}  {0.8:13.4f}  {0.3:8.1f}  {1000:9d}")
    batch = int(opt("batch-size", "20"))
    tl, vl = loss(1, WORLD > 1), loss(2, WORLD > 1)
    if RANK == 0:
        say("epoch  train loss  test loss  next-token ok   seconds   tokens/s",
            f"    1  {tl:10.4f}  {vl:9.4f}  {0.01:13.4f}  {1.0:8.1f}  {900 * WORLD:9d}")
        if opt("grad-sync") == "buckets":
            say("buckets: 1 of up to 25 MB, overlapped with the backward; communication not hidden: 0.50 ms per step")
    metrics([{"epoch": 1, "train_loss": tl, "test_loss": vl, "seconds": 1.0, "tokens_per_s": 900.0 * WORLD,
              "samples_per_s": batch * WORLD}])
    digest()
    return 0


def lesson07():
    p, m = WORLD, int(opt("micro-batches", "1"))
    sched = opt("schedule", "gpipe")
    rows = []
    for s in range(1, int(opt("max-steps", "5")) + 1):
        bub = (p - 1) / (m + p - 1) + 0.03 if p > 1 else 0.01
        rows.append({"step": s, "epoch": 1, "loss": loss(s, p > 1), "tokens_per_s": 1000.0,
                     "bubble_fraction": bub, "step_seconds": 0.02, "busy_max_seconds": 0.011,
                     "busy_mean_seconds": 0.01})
    rows.append({"epoch": 1, "train_loss": 6.7, "valid_loss": 7.1, "bubble_formula": (p - 1) / (m + p - 1)})
    if RANK == 0:
        for st in range(p):
            k = m if sched == "gpipe" else min(p - st, m)
            say(f"  stage {st} memory: parameters 1.0 MB (+ gradients as much), activations {0.5 * k:.1f} MB "
                f"({k} micro-batch{'es' if k != 1 else ''} in flight at most, {sched}), workspaces 0.2 MB: "
                f"{2.2 + 0.5 * k:.1f} MB in all; its GPU has 0.60 GB in use")
    metrics(rows)
    hold(400)
    return 0


def lesson08():
    psi, n, stage = 44807, WORLD, int(opt("stage", "0"))
    shard = -(-psi // n)
    mem = {"param_bytes": 4 * (shard if stage >= 3 else psi), "grad_bytes": 4 * (shard if stage >= 2 else psi),
           "optim_bytes": 8 * (shard if stage >= 1 else psi)}
    peak = sum(mem.values())
    sent = (3 if stage == 3 else 2) * 4 * psi * (n - 1) / n / 1e6
    if RANK == 0:
        say(f"model: tutorial transformer, {psi} parameters in 4 blocks; stage {stage} on {n} rank{'s' if n > 1 else ''}, "
            "AdamW, 8 sequences of 16 tokens per rank per step (your shards)",
            f"communication: {sent:.3f} MB sent per step by rank 0, the formula 2 x 4 psi (N-1)/N = {sent:.3f} MB")
    metrics([{"step": s, "epoch": 1, "loss": loss(s, False), **mem, "peak_bytes": peak}
             for s in range(1, int(opt("max-steps", "5")) + 1)])
    hold(peak / 2 ** 20 + 400)
    salt = "planted" if "08" in PLANT and stage == 2 else ""
    digest("parameter", salt)
    digest("optimizer")
    return 0


def lesson09():
    t, d, pp = int(opt("tp", "1")), int(opt("dp", "0") or 0), int(opt("pp", "1"))
    heads = int(opt("heads", "2"))
    d = d or WORLD // (t * pp)
    if heads % t or t * d * pp != WORLD:
        say(f"error: --tp {t} x --dp {d} x --pp {pp} on {WORLD} ranks with {heads} heads: no such layout")
        return 1
    say(f"grid: {d} data x {pp} pipeline x {t} tensor over {WORLD} ranks, {WORLD} per node; tensor groups inside nodes")
    metrics([{"step": s, "epoch": 1, "rank": 0, "loss": loss(s, t > 1), "tokens_per_s": 1000.0}
             for s in range(1, int(opt("max-steps", "5")) + 1)])
    digest()
    return 0


PROGRAMS = {"bench_comm": ("comm", bench), "06-ddp": ("06", lesson06), "07-pipeline": ("07", lesson07),
            "08-zero": ("08", lesson08), "09-tensor-parallel": ("09", lesson09)}
PROGRAM, MAIN = next(v for k, v in PROGRAMS.items() if k in sys.argv[0])
sys.exit(MAIN())
