#!/usr/bin/env python3
"""make gpu-report's profile-step item (issue 38): where lesson 04's bf16 training step
loses its time on a GPU, at the seed's size (1,024 wide, 4 heads, feed-forward 1,024, 3
layers, 11,500 words), 64 x 128 and 128 x 256 tokens.

  tools/gpu-report/profile-step.py --build build --out DIR [--shapes 64x128,128x256]
                                   [--steps 12] [--ncu auto|none|PATH] [--time-limit S]
  tools/gpu-report/profile-step.py --build build --out DIR --smoke   # the CPU, tiny sizes

Per shape: (1) one run with --trace: each range's own GPU time a step on the stream's
track (CUDA events), the step's wall time, the GPU's idle rest; (2) where Nsight Compute
is installed, one run under ncu (--clock-control none, so the clocks boost as without
it): every kernel of one whole step, its launches, time, share of the step, CUDA-core
FLOP/s, DRAM bytes/s and its shares of the GPU's peak compute and memory rates (the
tensor cores' FLOP show in "SM %", not in the CUDA-core column). Writes DIR/profile.md
(the tables, for docs/benchmarks.md "Where the step's time goes") and DIR/profile.jsonl.
The text: bench-gpu-lm's generated one (bench/bench_gpu_lm.py), so that the decoder is
the seed runs' size on every machine. Last line "N passed, M failed[, K skipped]" (the
ncu part skips without ncu, with the reason); exit status 1 when a run failed."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import step_profile as sp  # noqa: E402
from bench_gpu_lm import write_text  # noqa: E402

VOCAB = 11500
NCU_STEPS = 3       # steps run under ncu: the last whole one (the third) is listed
NCU_LAUNCHES = 3000  # kernels ncu profiles at most (a step is a few hundred)


def parse_shapes(text):
    try:
        return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]
    except ValueError:
        sys.exit(f"profile-step: --shapes {text!r}: give BxT,BxT (e.g. 64x128,128x256)")


def program_args(args, B, T, steps, text_dir):
    cmd = [args.prog, "--device", args.device, "--model", "seed", "--dataset", "text", "--data", text_dir,
           "--batch-size", B, "--bptt", T, "--epochs", 1, "--max-steps", steps, "--optimizer", "adamw",
           "--lr", 5e-4, "--weight-decay", 0.01, "--clip", 0.5, "--dropout", 0.2, "--seed", 1,
           "--precision", args.precision]
    if args.smoke:
        cmd += ["--d-model", 32, "--heads", 2, "--d-hid", 32, "--layers", 1, "--threads", 2, "--ops", "library"]
    return [str(c) for c in cmd]


def run(cmd, limit, log):
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=limit)
    except subprocess.TimeoutExpired:
        return None, f"stopped after {limit:.0f} s"
    log.write(r.stdout + r.stderr)
    if r.returncode != 0:
        text = r.stderr.strip() or r.stdout.strip()
        if "ERR_NVGPUCTRPERM" in text:  # ncu: the counters are for administrators only here
            return None, ("ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM: "
                          "the driver's NVreg_RestrictProfilingToAdminUsers; run as root or ask the admins)")
        return None, f"exit status {r.returncode}: " + " / ".join(text.splitlines()[-3:])
    return r, None


def traced(args, B, T, text_dir, work, limit, log):
    trace = os.path.join(work, f"trace-{B}x{T}.json")
    metrics = os.path.join(work, f"metrics-{B}x{T}.jsonl")
    r, err = run(program_args(args, B, T, args.steps, text_dir) + ["--trace", trace, "--metrics", metrics],
                 limit, log)
    if err:
        return None, err
    try:
        with open(trace, encoding="utf-8") as f:
            from decimal import Decimal
            doc = json.load(f, parse_float=Decimal)
        steps, track = sp.steps_from_trace(doc)
    except (OSError, ValueError, sp.ProfileError) as e:
        return None, f"its trace: {e}"
    wall, rows, idle, n = sp.range_table(steps)
    with open(metrics, encoding="utf-8") as f:
        epoch = [json.loads(line) for line in f if line.startswith("{")][-1]
    return {"wall_ns": wall, "ranges": rows, "idle_ns": idle, "steps": n, "track": track,
            "tokens_per_s": epoch.get("tokens_per_s"), "mfu": epoch.get("mfu")}, None


def under_ncu(args, B, T, text_dir, work, limit, log):
    listing = os.path.join(work, f"ncu-{B}x{T}.csv")
    base = [args.ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
            "--kernel-name-base", "function", "--launch-count", str(NCU_LAUNCHES), "--log-file", listing]
    prog = program_args(args, B, T, NCU_STEPS, text_dir)
    start = time.monotonic()
    err = None
    # all the metrics, then (a metric this ncu or GPU lacks stops ncu) the time alone
    for metrics in (list(sp.NCU_METRICS.values()), [sp.NCU_METRICS["time_ns"]]):
        left = limit - (time.monotonic() - start)
        if left < 10:
            break
        _, err = run(base + ["--metrics", ",".join(metrics)] + prog, left, log)
        if not err:
            try:
                with open(listing, encoding="utf-8", errors="replace") as f:
                    kernels, seen = sp.kernels_from_ncu(f.read())
                return {"kernels": sp.kernel_table(kernels), "step": seen,
                        "metrics": "all" if len(metrics) > 1 else "time only"}, None
            except (OSError, sp.ProfileError) as e:
                err = f"its listing: {e}"
    return None, err or "no time left for ncu"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=None, help="BxT,BxT (default 64x128,128x256; --smoke 2x8)")
    ap.add_argument("--steps", type=int, default=12, help="steps of the traced run (the first is left out)")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--ncu", default="auto", help="auto: ncu on PATH or in $CUDA_HOME/bin; none; a path")
    ap.add_argument("--time-limit", type=float, default=240, help="seconds for everything")
    ap.add_argument("--smoke", action="store_true", help="the CPU, a tiny model: the script's own path")
    args = ap.parse_args()
    start = time.monotonic()
    args.prog = os.path.join(args.build, "solutions", "04-transformer", "train")
    if not os.access(args.prog, os.X_OK):
        sys.exit(f"profile-step: {args.prog} is not built (make {args.prog})")
    args.device = "cpu" if args.smoke else "cuda"
    shapes = parse_shapes(args.shapes or ("2x8" if args.smoke else "64x128,128x256"))
    no_ncu = None
    if args.ncu == "auto":
        in_cuda = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ncu")
        args.ncu = shutil.which("ncu") or (in_cuda if os.access(in_cuda, os.X_OK) else None)
        no_ncu = "no ncu (Nsight Compute) on PATH or in $CUDA_HOME/bin"
    elif args.ncu == "none":
        args.ncu, no_ncu = None, "--ncu none"
    elif not os.access(args.ncu, os.X_OK):
        sys.exit(f"profile-step: --ncu {args.ncu}: not an executable")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="profile-step-", dir=args.out)
    text_dir = os.path.join(work, "text")
    write_text(text_dir, 64 if args.smoke else VOCAB, [(B, max(T, 8)) for B, T in shapes], args.smoke)

    passed = failed = skipped = 0
    md, rows = [], []
    with open(os.path.join(args.out, "profile.log"), "w", encoding="utf-8") as log:
        for i, (B, T) in enumerate(shapes):
            shape = f"{B} x {T}"
            # an even share of what is left for each remaining shape, ncu taking most of it
            share = (args.time_limit - (time.monotonic() - start)) / (len(shapes) - i)
            res, err = traced(args, B, T, text_dir, work, max(share / 3, 10), log)
            if err:
                failed += 1
                print(f"FAIL  {shape}: the traced run: {err}", flush=True)
                md += [f"Step {shape}: the traced run failed: {err}", ""]
                continue
            passed += 1
            print(f"PASS  {shape}: {res['wall_ns'] / 1e6:.3f} ms a step, {res['tokens_per_s']:.0f} tokens/s "
                  f"(traced), {'GPU idle' if res['track'] == 'stream' else 'outside the ranges'} "
                  f"{100 * res['idle_ns'] / res['wall_ns']:.1f}% of it", flush=True)
            md += sp.markdown_ranges(shape, res["wall_ns"], res["ranges"], res["idle_ns"], res["steps"],
                                     res["track"]) + [""]
            row = {"shape": [B, T], "step_ms": res["wall_ns"] / 1e6, "tokens_per_s": res["tokens_per_s"],
                   "mfu": res["mfu"], "track": res["track"], "idle_ms": res["idle_ns"] / 1e6,
                   "ranges": [{"name": n, "ms": ns / 1e6} for n, ns in res["ranges"]]}
            if not args.ncu:
                skipped += 1
                print(f"SKIP  {shape}: kernels: {no_ncu}", flush=True)
                md += [f"Kernels {shape}: not listed: {no_ncu}.", ""]
            else:
                left = args.time_limit - (time.monotonic() - start)
                k, err = under_ncu(args, B, T, text_dir, work, left / (len(shapes) - i), log)
                if err:
                    failed += 1
                    print(f"FAIL  {shape}: kernels under ncu: {err}", flush=True)
                    md += [f"Kernels {shape}: ncu failed: {err}", ""]
                else:
                    passed += 1
                    busy = sum(r["time_ns"] for r in k["kernels"])
                    print(f"PASS  {shape}: {sum(r['launches'] for r in k['kernels'])} kernel launches a step, "
                          f"{busy / 1e6:.3f} ms of kernels (metrics: {k['metrics']})", flush=True)
                    md += sp.markdown_kernels(shape, k["kernels"], res["wall_ns"], k["step"]) + [""]
                    row["kernels"] = k["kernels"]
            rows.append(row)
    with open(os.path.join(args.out, "profile.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "profile.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print("\n".join(md))
    shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
