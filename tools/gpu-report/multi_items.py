"""make gpu-report's multi-GPU items (issue 41): what docs/gpu.md owes on 2 or more GPUs,
one GPU per rank, cheapest first; each runs tools/gpu-report/multi.py, which starts the
ranks (srun in a Slurm allocation, mpirun otherwise) and compares the lessons' real
output. They need G >= 2 GPUs ("gpus" and min_gpus; the 3D layout 8), else they are
"not run: 1 GPU". None has run on GPUs yet: the estimates are guesses from the CPU
ranks' runs (--cpu-ranks 2 on the project's 2-core VM, 2026-12) and NCCL's start-up.

ctx["multi"]: ranks (in all), nodes, per_node, device (cuda, or cpu in the report's
--cpu-ranks mode), text (the lesson 07-09 data options) and text06 (lesson 06's)."""

import shlex


def q(words):
    return " ".join(shlex.quote(str(w)) for w in words)


SPECS = [
    # id, min GPUs, limit (s), title, estimate, files under the build
    ("nccl", 2, 240,
     "NCCL itself: lib/dist's all-reduce, all-gather, reduce-scatter, broadcast and send/recv on every GPU, "
     "1 KB to 256 MB, results checked, bus bandwidth by nccl-tests' definition; the path NCCL chose, from its "
     "own report (NCCL_DEBUG=INFO)",
     "estimate 30-90 s (95 sizes, NCCL's start-up); 3 s on 2 CPU ranks to 256 KB", ["bench/bench_comm"]),
    ("kill-rank", 2, 150,
     "a rank killed mid-run: lesson 06 on every GPU, the last rank of this node killed (SIGKILL) once it "
     "trains; the job must end within its --timeout (20 s) and 40 s, naming the rank",
     "estimate 30-60 s; 6 s on 2 CPU ranks", ["solutions/06-ddp/train"]),
    ("lesson09", 2, 180,
     "lesson 09 at --tp 2 and at --tp G (8 heads; the tensor group inside a node) against --tp 1: the same "
     "per-step losses (1e-5), one digest on every rank",
     "estimate 30-60 s; 4 s on 2 CPU ranks", ["solutions/09-tensor-parallel/train"]),
    ("lesson09-3d", 8, 120,
     "lesson 09's 3D layout, --dp 2 --pp 2 --tp 2 on 8 GPUs (tensor groups inside nodes), dropout 0, "
     "against 1 GPU: the same per-step losses (1e-5)",
     "estimate 30 s; 12 s on 8 CPU ranks", ["solutions/09-tensor-parallel/train"]),
    ("lesson07", 2, 180,
     "lesson 07 on 2 GPUs against 1 (the same per-step losses, 1e-5), GPipe and 1F1B, 8 micro-batches; the "
     "bubble against (p - 1) / (m + p - 1); each stage's memory against nvidia-smi's",
     "estimate 40 s; 8 s on 2 CPU ranks", ["solutions/07-pipeline/train"]),
    ("lesson08", 2, 240,
     "lesson 08, ZeRO stages 0-3 on every GPU: the same parameter and optimizer digests; memory per rank "
     "against ZeRO's formula, bytes sent against lesson 08's, nvidia-smi's at least as much",
     "estimate 60 s (4 runs); 7 s on 2 CPU ranks", ["solutions/08-zero/train"]),
    ("lesson06", 2, 240,
     "lesson 06 (the transformer) on every GPU against 1 GPU with the same global batch: the same train and "
     "test loss (1e-5), one digest; scaling efficiency; bucketed (--grad-sync buckets) and blocking",
     "estimate 60 s (3 runs); 5 s on 2 CPU ranks", ["solutions/06-ddp/train"]),
    ("lesson09-bf16", 2, 150,
     "lesson 09 in bf16 at --tp G against --tp 1 in bf16: the same per-step losses within 2 % (issue 28's "
     "bound; one bf16 step is 0.4 %, 0.39 % measured on CPU ranks)",
     "estimate 30 s; 4 s on 2 CPU ranks", ["solutions/09-tensor-parallel/train"]),
    ("lesson07-bf16", 2, 120,
     "lesson 07 in bf16 on 2 GPUs (1F1B) against 1 GPU in bf16: the same per-step losses (within 2 %; on CPU "
     "ranks bit for bit)",
     "estimate 30 s; 4 s on 2 CPU ranks", ["solutions/07-pipeline/train"]),
    ("lesson08-bf16", 2, 240,
     "lesson 08 in bf16, ZeRO stages 0-3 on every GPU: the same digests",
     "estimate 60 s; 8 s on 2 CPU ranks", ["solutions/08-zero/train"]),
    ("lesson06-bf16", 2, 180,
     "lesson 06 in bf16 on every GPU (buckets) against 1 GPU in bf16, the same global batch: train and test "
     "loss within 2 %",
     "estimate 40 s; 3 s on 2 CPU ranks", ["solutions/06-ddp/train"]),
]


def items(ctx):
    mc, b, m = ctx["multi"], ctx["build"], ctx["metrics"]
    out = []
    for ident, least, limit, title, estimate, files in SPECS:
        text = mc["text06"] if ident.startswith("lesson06") else mc["text"] if ident.startswith("lesson0") else []
        words = ["tools/gpu-report/multi.py", ident, "--build", b, "--out", f"{m}/multi", "--ranks", mc["ranks"],
                 "--nodes", mc["nodes"], "--device", mc["device"]]
        if text:
            words += ["--text", q(text)]
        out.append(dict(id=ident, needs={"gpus"}, min_gpus=least, timeout_s=limit, title=title,
                        estimate=estimate, files=[f"{b}/{f}" for f in files], command=q(words),
                        # the checks' lines, and every run's --metrics (a pattern)
                        metrics={f"{ident}-checks.jsonl": f"{m}/multi/{ident}-checks.jsonl",
                                 f"{ident}/*.jsonl": f"{m}/multi/{ident}/*.jsonl"},
                        min_passed=1, stand_in=ctx["text_stand_in"] if text and mc["device"] == "cuda" else None))
    return out
