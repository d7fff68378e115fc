"""What make gpu-report runs: every GPU check and benchmark the project owes (docs/gpu.md,
"What has run on a GPU" and "Still owed"), in the order they run, cheapest and most
needed first, so that a budget cut short takes the slowest (the sanitizers) last; the
exceptions, profile-step and bench-gpu-lm, run first because issue 38 asks for the step's
profile and its speed before anything else when GPU time is short.

Each item: id, title, the bash command (run from the repository root), its limit in
seconds, and how long it took or is expected to take (estimate). The lent GPU machines
give 15 minutes, their start (1-2 minutes) included: the items' usual times add up to
about 10 minutes, 4 of them the sanitizers', plus bench-gpu-lm's estimated 3-4 and
lesson 04's bf16 pair's 1, and the report's budget (600 s by
default) stops what would not fit: with bench-gpu-lm's full run, the sanitizers.
Times on a GPU are from the H100 and H200 runs of 2026-11-26 where docs/gpu.md has them;
the rest are estimates from the CPU (2 cores) and the CUDA emulator, marked as such.

An item needs: "gpu" (a GPU that nvidia-smi lists), "gpus" (min_gpus of them, one per
rank, and a launcher: multi_items.py), "sanitizer" (compute-sanitizer),
"container" (Apptainer and an image), "emulated" (only in GPU_REPORT_EMULATED=1 mode);
files: paths it runs, which must exist (the build's binaries); metrics: the --metrics
files it writes, kept in report.json."""

import os
import shlex

import multi_items

# racecheck (shared-memory hazards) on the kernels that share memory or reduce in a
# tree: the attention's softmax rows, layer norm, the vocabulary's cross-entropy and the
# gradient norm. Over all of check_gpu it did not finish in 120 s on an H100. The fused
# (flash) attention's kernels share memory too, but its check runs T up to 1,024: an item
# of its own, last, so that it cannot crowd the others out of the budget.
RACECHECK_CHECKS = "causal attention,layer norm,over a vocabulary,clipping"
RACECHECK_FLASH = "fused (flash) attention"


def q(words):
    return " ".join(shlex.quote(str(w)) for w in words)


def items(ctx):
    """The items for a context: build (the build directory), metrics (a directory for
    --metrics files), threads, image_args and text_args (the data the lessons read) with
    image_stand_in and text_stand_in (why, where a stand-in replaces the real data, or
    None), sanitizer (compute-sanitizer's path or None), python (for bench-gpu's PyTorch side),
    multi (the multi-GPU items' ranks, nodes and data: multi_items.py)."""
    b, m, t = ctx["build"], ctx["metrics"], ctx["threads"]
    img, txt = ctx["image_args"], ctx["text_args"]
    sol = f"{b}/solutions"
    san = ctx["sanitizer"] or "compute-sanitizer"
    lm = os.environ.get("GPU_REPORT_IMAGE", "")
    out = [
        dict(id="check-gpu-emulated", needs={"emulated"}, timeout_s=1500,
             title="check-gpu's checks on the CPU emulator of lib/cuda/*.cu (not a GPU run)",
             estimate="56 s on the project's 2-core CPU VM, 2026-11-26, the emulator's .cu objects built "
                      "in it; the first build of its library takes minutes more",
             command=f"tests/gpu/emulator/run.sh {b}/emulator", min_passed=1),
        # issue 38: where the bf16 step's time goes, then its speed, before anything else
        dict(id="profile-step", needs={"gpu"}, timeout_s=240, files=[f"{sol}/04-transformer/train"],
             title="lesson 04's bf16 step at the seed size, 64x128 and 128x256: each range's GPU time a step "
                   "(--trace), and one step's kernels under Nsight Compute where installed (issue 38)",
             estimate="never ran on a GPU; estimate 20 s for the traced runs, 1-2 minutes a shape under ncu "
                      "(3 steps, every kernel replayed for its counters)",
             command=f"tools/gpu-report/profile-step.py --build {b} --out {m}/profile --time-limit 220",
             metrics={"profile.jsonl": f"{m}/profile/profile.jsonl"}, min_passed=2),
        dict(id="bench-gpu-lm", needs={"gpu"}, timeout_s=300, files=[f"{sol}/04-transformer/train"],
             title="make bench-gpu-lm: lesson 04's seed-size transformer, the library in bf16 against "
                   "compiled PyTorch bf16 at 20x35, 64x128, 128x256 (issue 28)",
             estimate="H100 2026-11-26: 173 s for the 2 larger shapes (the 20 x 35 row cut by --time-limit); estimate 150-250 s: torch.compile compiles each of the 3 shapes "
                      "(20-40 s each, cold cache), 3 rounds of 2-5 s, the reference columns 20 s; "
                      "with no --precision bf16 in the program it stops at once (exit status 3)",
             command=f"bench/run-bench-gpu-lm.sh {b} --require-bf16 --time-limit 270 "
                     f"--json {m}/bench-gpu-lm.jsonl",
             env={"PYTHON": ctx["python"]} if ctx["python"] else {},
             metrics={"bench-gpu-lm.jsonl": f"{m}/bench-gpu-lm.jsonl"}),
        dict(id="check-gpu", needs={"gpu"}, timeout_s=180, files=[f"{b}/tests/check_gpu"],
             title="make check-gpu: every CUDA operation against its CPU twin, training on both devices",
             estimate="H100 2026-11-26: 31 s (51 checks)",
             command=f"{b}/tests/check_gpu", min_passed=1, no_skips=True),
        dict(id="test-dist", needs={"gpu"}, timeout_s=60, files=[f"{b}/tests/test_dist"],
             title="lib/dist's unit tests, their GPU branch included (NCCL, the single backend on GPU tensors)",
             estimate="estimate 10 s (10 checks ran on an H100)",
             command=f"{b}/tests/test_dist", min_passed=1),
        dict(id="lesson00-grade", needs={"gpu"}, timeout_s=60, files=[f"{sol}/00-hello-gpu/grade"],
             title="make check-lesson 0 SOLUTION=1: lesson 00's grader on the solution",
             estimate="estimate 10 s (4 checks)", command=f"{sol}/00-hello-gpu/grade",
             min_passed=1, no_skips=True),
        dict(id="lesson02-grade", needs={"gpu"}, timeout_s=90, files=[f"{sol}/02-gpu-cnn/grade"],
             title="make check-lesson 2 SOLUTION=1: lesson 02's grader on the solution",
             estimate="estimate 20 s (7 checks)", command=f"{sol}/02-gpu-cnn/grade",
             min_passed=1, no_skips=True),
        dict(id="stubs-00-02", needs={"gpu"}, timeout_s=90,
             files=[f"{b}/lessons/00-hello-gpu/grade", f"{b}/lessons/02-gpu-cnn/grade"],
             title="the stubs of lessons 00 and 02: every TODO check fails, the GPU ones too",
             estimate="estimate 20 s (0 of 4 and 0 of 7 pass, as they must)",
             # tests/check-stubs.sh grades BUILD/lessons/*/grade: a build of these two only
             command=f'd={m}/stubs && rm -rf "$d" && for l in 00-hello-gpu 02-gpu-cnn; do '
                     f'mkdir -p "$d/lessons/$l" && ln -s "$PWD/{b}/lessons/$l/grade" "$d/lessons/$l/"; '
                     f'done && tests/check-stubs.sh "$d"',
             min_passed=2, no_skips=True),
        dict(id="lesson00-run", needs={"gpu"}, timeout_s=60, files=[f"{sol}/00-hello-gpu/train"],
             title="make run-lesson 0 SOLUTION=1: the GPU listed, copy bandwidths, vector add",
             estimate="estimate 10 s", command=f"{sol}/00-hello-gpu/train --device cuda"),
        dict(id="lesson02-run", needs={"gpu"}, timeout_s=120, files=[f"{sol}/02-gpu-cnn/train"],
             title="lesson 02: one epoch of the CNN on the GPU and on the CPU's threads (--compare)",
             estimate="H200 2026-11-26: 25 s on 16 CPU threads, 0.7 s on the GPU, plus loading",
             command=q([f"{sol}/02-gpu-cnn/train", "--device", "cuda", "--compare", "--epochs", 1,
                        "--threads", t, *img, "--metrics", f"{m}/lesson02.jsonl"]),
             metrics={"lesson02.jsonl": f"{m}/lesson02.jsonl"}, stand_in=ctx["image_stand_in"]),
        dict(id="lesson04-run", needs={"gpu"}, timeout_s=90, files=[f"{sol}/04-transformer/train"],
             title="lesson 04: the tutorial's transformer, 200 steps and the validation on the GPU",
             estimate="H100 2026-11-26: 400 steps at about 190,000 tokens/s; estimate 20 s with loading",
             command=q([f"{sol}/04-transformer/train", "--device", "cuda", "--epochs", 1,
                        "--max-steps", 200, *txt["dataset"], "--metrics", f"{m}/lesson04.jsonl"]),
             metrics={"lesson04.jsonl": f"{m}/lesson04.jsonl"}, stand_in=ctx["text_stand_in"]),
        dict(id="lesson04-bf16", needs={"gpu"}, timeout_s=150, files=[f"{sol}/04-transformer/train"],
             title="lesson 04 in float32 and in bf16 on the GPU, 3 seeds each: bf16's mean valid loss within "
                   "float32's range over the seeds, +-2 %; the first bf16 run traced (issue 28)",
             estimate="H100 2026-11-26: one epoch 2 s on the Markdown, 5 s on the fortunes text; 6 runs. One "
                      "run of each was compared until then: float32 alone moved 10 % with the seed at lr 5",
             command=q(["tools/gpu-report/precision-pair.sh", f"{sol}/04-transformer/train", f"{m}/lesson04",
                        "--device", "cuda", "--epochs", 1, *txt["dataset"]]),
             metrics={"lesson04-fp32.jsonl": f"{m}/lesson04-fp32.jsonl",
                      "lesson04-bf16.jsonl": f"{m}/lesson04-bf16.jsonl"}, min_passed=1,
             stand_in=ctx["text_stand_in"]),
        dict(id="lesson06-run", needs={"gpu"}, timeout_s=90, files=[f"{sol}/06-ddp/train"],
             title="lesson 06: data parallel on one GPU over NCCL (one rank: every call runs, no data moves)",
             estimate="H100 2026-11-26: 30 steps at 225,442 tokens/s; estimate 20 s with loading",
             command=q([f"{sol}/06-ddp/train", "--device", "cuda", "--dist", "nccl", "--model",
                        "transformer", *txt["text"], "--max-steps", 30,
                        "--metrics", f"{m}/lesson06.jsonl"]),
             metrics={"lesson06.jsonl": f"{m}/lesson06.jsonl"}, stand_in=ctx["text_stand_in"]),
        dict(id="lesson07-run", needs={"gpu"}, timeout_s=90, files=[f"{sol}/07-pipeline/train"],
             title="lesson 07: a one-stage pipeline on one GPU over NCCL, 4 micro-batches",
             estimate="H100 2026-11-26: 69,812 tokens/s; estimate 20 s with loading",
             command=q([f"{sol}/07-pipeline/train", "--device", "cuda", "--dist", "nccl", "--epochs", 1,
                        "--max-steps", 20, "--micro-batches", 4, *txt["dataset"],
                        "--metrics", f"{m}/lesson07.jsonl"]),
             metrics={"lesson07.jsonl": f"{m}/lesson07.jsonl"}, stand_in=ctx["text_stand_in"]),
        dict(id="lesson08-zero", needs={"gpu"}, timeout_s=120, files=[f"{sol}/08-zero/train"],
             title="lesson 08 on one GPU over NCCL: ZeRO stage 3 and plain data parallel end with the same digests",
             estimate="H100 2026-11-26: 3.5 s",
             command=q(["tools/gpu-report/zero-digests.sh", f"{sol}/08-zero/train", f"{m}/lesson08",
                        "--device", "cuda", "--dist", "nccl", "--max-steps", 20, *txt["dataset"]]),
             metrics={"lesson08-stage0.jsonl": f"{m}/lesson08-stage0.jsonl",
                      "lesson08-stage3.jsonl": f"{m}/lesson08-stage3.jsonl"}, min_passed=1,
             stand_in=ctx["text_stand_in"]),
        dict(id="lesson09-run", needs={"gpu"}, timeout_s=90, files=[f"{sol}/09-tensor-parallel/train"],
             title="lesson 09: tensor parallel at --tp 1 on one GPU over NCCL",
             estimate="H100 2026-11-26: 7 s",
             command=q([f"{sol}/09-tensor-parallel/train", "--device", "cuda", "--dist", "nccl",
                        "--tp", 1, "--max-steps", 20, *txt["dataset"],
                        "--metrics", f"{m}/lesson09.jsonl"]),
             metrics={"lesson09.jsonl": f"{m}/lesson09.jsonl"}, stand_in=ctx["text_stand_in"]),
        # on 2 or more GPUs: what no GPU run has shown yet (multi_items.py), before the
        # one-GPU measurements below
        *multi_items.items(ctx),
        dict(id="lesson10-gpu", needs={"gpu"}, timeout_s=120, files=[f"{sol}/10-performance/train"],
             title="lesson 10 on the GPU: the roofline (the GPU's peak and bandwidth, lesson 04's layers "
                   "placed) and float32 against bf16 (issue 29)",
             estimate="never ran on a GPU; estimate 30 s",
             command=(q([f"{sol}/10-performance/train", "--roofline", "--device", "cuda",
                         "--metrics", f"{m}/lesson10-roofline.jsonl"]) + " && " +
                      q([f"{sol}/10-performance/train", "--compare-precision", "--device", "cuda"])),
             metrics={"lesson10-roofline.jsonl": f"{m}/lesson10-roofline.jsonl"}),
        dict(id="lesson11-nv", needs={"gpu", "container"}, timeout_s=120,
             title="lesson 11: check_gpu and lesson 02 inside the CUDA image (apptainer exec --nv)",
             estimate="never ran; estimate 60 s",
             command=(f"apptainer exec --nv {shlex.quote(lm)} /opt/course/build/tests/check_gpu && "
                      f"apptainer exec --nv {shlex.quote(lm)} /opt/course/build/solutions/02-gpu-cnn/train "
                      f"--device cuda --dataset synthetic --epochs 1"), min_passed=1),
        dict(id="bench-gpu", needs={"gpu"}, timeout_s=180, files=[f"{b}/bench/bench_gpu"],
             title="make bench-gpu: the CNN's training images/s, C against PyTorch on this GPU; GEMMs against cuBLAS",
             estimate="estimate 60 s (3 rounds of each, PyTorch's start included)",
             command=f"BENCH_GPU_JSON={m}/bench-gpu.jsonl bench/run-bench-gpu.sh {b}/bench/bench_gpu",
             env={"PYTHON": ctx["python"]} if ctx["python"] else {},
             metrics={"bench-gpu.jsonl": f"{m}/bench-gpu.jsonl"}),
        dict(id="memcheck", needs={"gpu", "sanitizer"}, timeout_s=300, files=[f"{b}/tests/check_gpu"],
             title="compute-sanitizer memcheck on check_gpu: no out-of-bounds or misaligned access",
             estimate="H100 2026-11-26: it finished (29 passed, no memory error); time not recorded, estimate 3 minutes",
             note="API errors are not reported (--report-api-errors no): the library checks every "
                  "CUDA call's status itself, and NCCL's set-up returns cudaErrorNoKernelImageForDevice "
                  "to itself on purpose (8 such reports on the H100).",
             command=f"COURSE_CUDA_SYNC=1 {san} --tool memcheck --target-processes all "
                     f"--report-api-errors no --error-exitcode 1 {b}/tests/check_gpu",
             min_passed=1, no_skips=True, needs_sanitizer_summary=True),
        dict(id="racecheck", needs={"gpu", "sanitizer"}, timeout_s=150, files=[f"{b}/tests/check_gpu"],
             title="compute-sanitizer racecheck on the attention's and the reductions' checks",
             estimate="H100 2026-11-26: 25 s (6 checks, 0 hazards)",
             command=f"CHECK_ONLY='{RACECHECK_CHECKS}' {san} --tool racecheck --target-processes all "
                     f"--error-exitcode 1 {b}/tests/check_gpu",
             min_passed=1, no_skips=True, needs_sanitizer_summary=True),
        dict(id="racecheck-flash", needs={"gpu", "sanitizer"}, timeout_s=150, files=[f"{b}/tests/check_gpu"],
             title="compute-sanitizer racecheck on the fused (flash) attention's check",
             estimate="H100 2026-11-26: cut short by the budget after 122 s; its kernels stream tiles through shared memory: estimate 3 minutes or more",
             command=f"CHECK_ONLY='{RACECHECK_FLASH}' {san} --tool racecheck --target-processes all "
                     f"--error-exitcode 1 {b}/tests/check_gpu",
             min_passed=1, no_skips=True, needs_sanitizer_summary=True),
    ]
    for it in out:
        it.setdefault("files", [])
        it.setdefault("metrics", {})
        it.setdefault("env", {})
        it.setdefault("note", "")
        it.setdefault("stand_in", None)
    return out
