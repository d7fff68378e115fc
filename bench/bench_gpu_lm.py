"""make bench-gpu-lm (issue 28): lesson 04's transformer at the seed's size, the
library in bf16 against PyTorch's strongest version of the same model on the same GPU.

  bench/bench_gpu_lm.py --build build [--rounds 3] [--json FILE] [--time-limit S]
  bench/bench_gpu_lm.py --build build --smoke     # the whole path on the CPU, tiny sizes

The library: course/04-transformer's program (BUILD/solutions/04-transformer/train)
--device cuda --model seed --precision bf16 --optimizer adamw, one process a round,
--epochs 3 --max-steps S: the first epoch warms up, the best of the other two counts
(its training tokens over its training seconds, as the program's --metrics write them;
the validation pass after each epoch is not timed). PyTorch: bench/pytorch_lm_fast.py,
the same model (post-norm encoder, ReLU, dropout 0.2 everywhere the tutorial has it)
with bf16 autocast, scaled_dot_product_attention (causal, dropout), fused AdamW and
torch.compile, in this process; S steps twice a round, the better counting. Both: AdamW
lr 5e-4, weight decay 0.01, the gradient clipped to norm 0.5 (the lesson's default
clip). Rounds alternate, library then PyTorch, at each of 64 x 128, 128 x 256 (the
issue's targets, first) and 20 x 35 (batch x tokens); the best round of each counts.
Then, once a shape and where time is left, the reference columns: the library in
float32, the library in bf16 with --cuda-graph (each step's forward and backward
replayed from CUDA graphs: launches dominate at 20 x 35), and the PyTorch model without
torch.compile. "library / PyTorch" and the targets take the faster library bf16 column
(the graph column is one run a shape, the other the best of the rounds). --time-limit S: past 60% of S no
further round, reference column or shape starts.

The text: a generated one of V - 2 words (V = 11,500, the vocabulary of the seed runs
behind the issue; "<eos>" and "<unk>" make the rest), the same files for both, so that
the decoder, a third of the arithmetic, is the same size on every machine.

What this PyTorch cannot do (1.13: no torch.compile, no scaled_dot_product_attention,
no fused AdamW) is said in the header, the JSON lines and the table, and the column
it would have filled stays empty. Where the program has no --precision yet (or no
bf16 in it), the library's bf16 column stays empty with that reason, the rest runs,
and the exit status is 3. Exit status 1: a run failed or nothing could be measured."""
import argparse
import datetime
import gc
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = (1024, 4, 1024, 3)    # width, heads, feed-forward, layers: --model seed
SMOKE = (32, 2, 32, 1)
SHAPES = [(20, 35), (64, 128), (128, 256)]
SMOKE_SHAPES = [(2, 8), (3, 16)]
TARGETS = [(64, 128), (128, 256)]  # where the issue wants the library at least as fast
DROPOUT = 0.2                # the seed preset's, as the lesson
# Dense bf16 tensor-core FLOPs per clock and SM: lib/core/gpu_peak.h's table (derived
# there from NVIDIA's datasheets: A100 312 TFLOP/s = 108 SMs x 2048 x 1.41 GHz; H100 SXM
# 989 = 132 x 4096 x 1.83 GHz), so the benchmark's MFU is the program's. Later GPUs are
# not in it: --peak-tflops.
BF16_PER_SM_CLOCK = {(8, 0): 2048, (8, 6): 1024, (8, 9): 1024, (9, 0): 4096}
COLUMNS = [  # key, heading
    ("library_bf16", "library bf16"),
    ("library_bf16_graph", "library bf16 + CUDA graph"),
    ("pytorch_compiled_bf16", "PyTorch bf16 compiled"),
    ("library_fp32", "library fp32 (ref)"),
    ("pytorch_eager_bf16", "PyTorch bf16 eager (ref)"),
]


def say(*words):
    print(*words, flush=True)


# ---------------------------------------------------------------- the text

def steps_for(B, T, smoke):
    """Steps a timed epoch: about 400k tokens, 12 to 100 steps (3 in --smoke)."""
    return 3 if smoke else min(100, max(12, math.ceil(4e5 / (B * T))))


def write_text(directory, vocab, shapes, smoke):
    """train.txt, valid.txt, test.txt of vocab - 2 words w0, w1, ...: train starts with
    every word once, then words drawn uniformly, lines of 8 to 20 words, long enough for
    one epoch of steps_for() steps at every shape; valid and test hold 2 batches of 10
    columns at the longest T. The program adds "<eos>" and "<unk>": vocab in all."""
    rng = random.Random(1)
    words = [f"w{i}" for i in range(vocab - 2)]
    need = max(B * (steps_for(B, T, smoke) * T + 1) for B, T in shapes)
    sizes = {"train.txt": need + need // 20 + len(words),
             "valid.txt": 20 * (max(T for _, T in shapes) + 1),
             "test.txt": 20 * (max(T for _, T in shapes) + 1)}
    os.makedirs(directory, exist_ok=True)
    for name, tokens in sizes.items():
        stream = list(words) if name == "train.txt" else []
        while len(stream) < tokens:
            stream.append(words[rng.randrange(len(words))])
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            i = 0
            while i < len(stream):
                n = rng.randint(8, 20)
                f.write(" ".join(stream[i:i + n]) + "\n")
                i += n


def token_stream(directory):
    """The train split's ids as the library makes them (bench/pytorch_transformer.py's
    tokenize: lib/data/text.h's rules) and the vocabulary's size."""
    import pytorch_transformer as pt  # noqa: E402 (imports torch)
    vocab, streams = pt.tokenize(pt.load_splits("text", directory))
    return vocab, streams[0]


# ---------------------------------------------------------------- the GPU

def gpu_info(torch):
    """{name, sms, cc, clock_mhz, peak (FLOP/s or 0), formula} of GPU 0."""
    d = {"name": None, "sms": None, "cc": None, "clock_mhz": None, "peak": 0.0, "formula": None}
    if torch is not None and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        d.update(name=p.name, sms=p.multi_processor_count, cc=(p.major, p.minor))
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            name, clock = [f.strip() for f in r.stdout.splitlines()[0].split(",")]
            d["name"] = d["name"] or name
            d["clock_mhz"] = float(clock) if clock.replace(".", "").isdigit() else None
    rate = BF16_PER_SM_CLOCK.get(d["cc"])
    if rate and d["sms"] and d["clock_mhz"]:
        d["peak"] = d["sms"] * rate * d["clock_mhz"] * 1e6
        d["formula"] = (f"{d['sms']} SMs x {rate} dense bf16 FLOP per clock x {d['clock_mhz']:.0f} MHz "
                        f"(nvidia-smi's clocks.max.sm)")
    return d


# ---------------------------------------------------------------- the library

def program_help(prog):
    """The --precision choices the program lists in its --help (empty: no such option),
    and whether it offers --cuda-graph."""
    r = subprocess.run([prog, "--help"], capture_output=True, text=True)
    m = re.search(r"^\s+--precision\b.*?\(([^)]*)\)", r.stdout, re.M)
    return (m[1].split("|") if m else []), re.search(r"^\s+--cuda-graph\b", r.stdout, re.M) is not None


def library_round(ctx, precision, B, T, steps, epochs, graph=False):
    """One process of the program: {tokens_per_s, train_loss, params, program_mfu} or
    {error}. tokens_per_s: the best epoch after the first. graph: with --cuda-graph."""
    if graph and not ctx["graph"]:
        return {"error": "the program has no --cuda-graph"}
    if graph and ctx["device"] != "cuda":
        return {"error": "--cuda-graph needs a GPU"}
    if ctx["precisions"] and precision not in ctx["precisions"]:
        return {"error": f"its --precision offers {'|'.join(ctx['precisions'])}, no {precision}"}
    if not ctx["precisions"] and precision != "fp32":  # without the option it runs float32
        return {"error": ctx["no_precision"]}
    D, H, F_, L = ctx["size"]
    metrics = os.path.join(ctx["work"], f"library-{precision}{'-graph' if graph else ''}-{B}x{T}.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [ctx["prog"], "--device", ctx["device"], "--model", "seed", "--dataset", "text",
           "--data", ctx["text"], "--batch-size", B, "--bptt", T, "--epochs", epochs,
           "--max-steps", steps, "--optimizer", "adamw", "--lr", 5e-4, "--weight-decay", 0.01,
           "--clip", 0.5, "--dropout", DROPOUT, "--seed", 1, "--metrics", metrics]
    if ctx["smoke"]:
        cmd += ["--d-model", D, "--heads", H, "--d-hid", F_, "--layers", L, "--threads", 2,
                "--ops", "library"]
    if ctx["precisions"]:
        cmd += ["--precision", precision]
    if graph:
        cmd += ["--cuda-graph"]
    cmd = [str(c) for c in cmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        return {"error": f"exit status {r.returncode}: " + " / ".join(last), "command": " ".join(cmd)}
    rows = []
    if os.path.exists(metrics):
        with open(metrics, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.startswith("{")]
    if not rows:
        return {"error": "exit status 0 but no --metrics lines", "command": " ".join(cmd)}
    timed = rows[1:] or rows
    best = max(timed, key=lambda row: row["tokens_per_s"])
    params = re.search(r"^model: \S+, (\d+) parameters", r.stdout, re.M)
    return {"tokens_per_s": best["tokens_per_s"], "train_loss": rows[-1]["train_loss"],
            "program_mfu": best.get("mfu"), "params": int(params[1]) if params else None}


# ---------------------------------------------------------------- PyTorch

def pytorch_trainer(ctx, B, T, compiled):
    """A Trainer at this shape, warmed up: (trainer, warm-up seconds) or (None, why)."""
    import pytorch_lm_fast as fast  # noqa: E402
    try:
        t = fast.Trainer(ctx["stream"], ctx["vocab"], ctx["size"], B, T, ctx["device"], compiled,
                         DROPOUT, compile_mode=ctx["compile_mode"])
        return t, t.warm_up(3)
    except Exception as e:  # torch.compile fails at its first call; say so, go on
        return None, f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


def free(ctx):
    torch = ctx["torch"]
    gc.collect()
    if ctx["device"] == "cuda":
        torch.cuda.empty_cache()  # the program runs next on the same GPU
    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()


# ---------------------------------------------------------------- the rounds

def record(ctx, **row):
    row = {"bench": "gpu-lm", "mode": "smoke" if ctx["smoke"] else "gpu", **row}
    ctx["json"].write(json.dumps(row) + "\n")
    ctx["json"].flush()
    return row


def run_shape(ctx, B, T):
    """Alternating rounds at one shape, then the reference columns; returns the best of
    each column ({key: tokens/s}) and why a column is empty ({key: reason})."""
    steps = ctx["steps"] or steps_for(B, T, ctx["smoke"])
    best, why, extra = {}, {}, {}

    def keep(key, rnd, res):
        record(ctx, column=key, batch=B, bptt=T, round=rnd, steps=steps, **res)
        if "error" in res:
            why.setdefault(key, res["error"])
            return
        best[key] = max(best.get(key, 0.0), res["tokens_per_s"])
        for k in ("params", "program_mfu"):
            if res.get(k) is not None:
                extra[f"{key}_{k}"] = res[k]

    trainer = None
    if ctx["torch"] is None:
        why["pytorch_compiled_bf16"] = why["pytorch_eager_bf16"] = ctx["no_torch"]
    else:
        trainer, warm = pytorch_trainer(ctx, B, T, ctx["compile"])
        if trainer is None and ctx["compile"]:  # not again at the next shapes; eager instead
            ctx["not_used"]["torch.compile"] = f"its first steps failed at {B} x {T}: {warm}"
            ctx["compile"] = False
            free(ctx)
            trainer, warm = pytorch_trainer(ctx, B, T, False)
        compiled = ctx["compile"]
        key = "pytorch_compiled_bf16" if compiled else "pytorch_eager_bf16"
        if trainer is None:
            why[key] = f"the first steps failed: {warm}"
        else:
            extra["pytorch_params"] = sum(p.numel() for p in trainer.params)
            record(ctx, column=key, batch=B, bptt=T, warm_up_s=round(warm, 2),
                   note="3 steps; torch.compile compiles in the first" if compiled else "3 steps")
            for k, v in trainer.features.items():  # e.g. fused AdamW refused on this device
                if v:
                    ctx["not_used"].setdefault(k, v)
        if not compiled:
            why["pytorch_compiled_bf16"] = ctx["not_used"].get("torch.compile", "not asked for")
    for rnd in range(1, ctx["rounds"] + 1):
        if rnd > 1 and ctx["late"]():
            ctx["notes"].append(f"{B} x {T}: {rnd - 1} of {ctx['rounds']} rounds (--time-limit)")
            break
        keep("library_bf16", rnd, library_round(ctx, "bf16", B, T, steps, 3))
        if trainer is not None:
            key = "pytorch_compiled_bf16" if ctx["compile"] else "pytorch_eager_bf16"
            runs = [trainer.timed(steps) for _ in range(2)]
            rate, loss = max(runs)
            keep(key, rnd, {"tokens_per_s": rate, "train_loss": loss})
    trainer = None
    if ctx["torch"] is not None:
        free(ctx)
    if not ctx["references"] or ctx["late"]():
        reason = "not run: --no-reference" if not ctx["references"] else "not run: --time-limit"
        for key in ("library_fp32", "library_bf16_graph", "pytorch_eager_bf16"):
            if key not in best:
                why.setdefault(key, reason)
        return best, why, extra, steps
    keep("library_fp32", 1, library_round(ctx, "fp32", B, T, steps, 2))
    keep("library_bf16_graph", 1, library_round(ctx, "bf16", B, T, steps, 2, graph=True))
    if ctx["torch"] is not None and ctx["compile"] and "pytorch_eager_bf16" not in why:
        trainer, warm = pytorch_trainer(ctx, B, T, False)
        if trainer is None:
            why["pytorch_eager_bf16"] = warm
        else:
            rate, loss = trainer.timed(steps)
            keep("pytorch_eager_bf16", 1, {"tokens_per_s": rate, "train_loss": loss})
        trainer = None
        free(ctx)
    return best, why, extra, steps


# ---------------------------------------------------------------- the table

def fmt(v):
    return f"{v:,.0f}" if v else "-"


def best_library(best):
    """The library's bf16 tokens/s: with or without --cuda-graph, whichever was faster."""
    return max(best.get("library_bf16", 0), best.get("library_bf16_graph", 0)) or None


def table(ctx, results):
    D, H, F_, L = ctx["size"]
    g = ctx["gpu"]
    lines = []
    if ctx["smoke"]:
        lines.append("SMOKE RUN on the CPU at tiny sizes: it checks the script's path, its numbers are not a benchmark.")
    lines.append(f"lesson 04's model ({D} wide, {H} heads, feed-forward {F_}, {L} layer{'s' if L > 1 else ''}, "
                 f"dropout {DROPOUT}), "
                 f"vocabulary {ctx['vocab']:,}, AdamW, clip 0.5, on {ctx['device_name']};")
    lines.append(f"training tokens/s, best of {ctx['rounds']} alternating rounds (library, then PyTorch); "
                 f"{ctx['date']}")
    lines.append(f"PyTorch: {ctx['torch_line']}")
    for feature, reason in ctx["not_used"].items():
        lines.append(f"  not used: {feature}: {reason}")
    lines.append(f"library: {ctx['program_line']}")
    if g["peak"]:
        lines.append(f"dense bf16 peak {g['peak'] / 1e12:,.1f} TFLOP/s = {g['formula']}")
    elif not ctx["smoke"]:
        lines.append("dense bf16 peak: unknown for this GPU (--peak-tflops X gives it): no MFU")
    lines.append("")
    head = ["batch x tokens"] + [h for _, h in COLUMNS] + ["library / PyTorch", "MFU library", "MFU PyTorch"]
    rows = [head]
    for (B, T), (best, why, extra, steps) in results.items():
        ref = "pytorch_compiled_bf16" if "pytorch_compiled_bf16" in best else None
        lib = best_library(best)
        ratio = f"{lib / best[ref]:.2f}x" if lib and ref else "-"
        mfu = [f"{100 * ctx['flops'](T) * v / g['peak']:.1f}%" if v and g["peak"] else "-"
               for v in (lib, best.get("pytorch_compiled_bf16"))]
        rows.append([f"{B} x {T}"] + [fmt(best.get(k)) for k, _ in COLUMNS] + [ratio] + mfu)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    lines.append("")
    seen = set()
    for (B, T), (best, why, extra, steps) in results.items():
        for key, reason in why.items():
            if (key, reason) not in seen:
                seen.add((key, reason))
                lines.append(f"- {dict(COLUMNS)[key]} not measured (from {B} x {T} on): {reason}")
    for (B, T), (best, why, extra, steps) in results.items():
        lp, pp = extra.get("library_bf16_params") or extra.get("library_fp32_params"), extra.get("pytorch_params")
        if lp and pp and lp != pp:
            lines.append(f"- WARNING {B} x {T}: the library's model has {lp:,} parameters, PyTorch's {pp:,}")
    lines += [f"- {n}" for n in ctx["notes"]]
    if not ctx["smoke"]:
        lines.append("issue 28's targets: library bf16 >= compiled PyTorch at 64 x 128 and 128 x 256; "
                     "MFU >= 40% of the dense bf16 peak:")
        for (B, T), (best, why, extra, steps) in results.items():
            if (B, T) not in TARGETS:
                continue
            lib, pt = best_library(best), best.get("pytorch_compiled_bf16")
            speed = (("met" if lib >= pt else "not met") + f" ({lib / pt:.2f}x)") if lib and pt else "not measured"
            mfu = ctx["flops"](T) * lib / g["peak"] if lib and g["peak"] else None
            mfu_s = (("met" if mfu >= 0.4 else "not met") + f" ({100 * mfu:.1f}%)") if mfu else "not measured"
            lines.append(f"  {B} x {T}: speed {speed}; MFU {mfu_s}")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def options():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--smoke", action="store_true", help="the CPU, tiny sizes: the script's path, no benchmark")
    ap.add_argument("--rounds", type=int, default=0, help="alternating rounds (default 3; --smoke 2)")
    ap.add_argument("--steps", type=int, default=0, help="steps a timed epoch (default: about 400k tokens)")
    ap.add_argument("--vocab", type=int, default=0, help="words (default 11500; --smoke 200)")
    ap.add_argument("--shapes", default="", help="BxT,... (default 20x35,64x128,128x256)")
    ap.add_argument("--compile", choices=["auto", "yes", "no"], default="auto",
                    help="torch.compile (auto: on a GPU, not in --smoke: inductor's CPU build takes minutes)")
    ap.add_argument("--compile-mode", default=None, help="torch.compile's mode (default: its default)")
    ap.add_argument("--no-reference", action="store_true", help="without the library fp32 and PyTorch eager columns")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds: past 60%% of them no reference column and no further round starts (0: none)")
    ap.add_argument("--require-bf16", action="store_true",
                    help="exit 3 at once where the program has no --precision bf16 (make gpu-report)")
    ap.add_argument("--peak-tflops", type=float, default=0, help="the dense bf16 peak, where not known")
    ap.add_argument("--json", default="", help="the JSON lines (default BUILD/bench/bench-gpu-lm[-smoke].jsonl)")
    return ap.parse_args()


def setup_torch(ctx, args):
    """PyTorch, where PYTHON has it (and, on a GPU, where it sees the GPU)."""
    try:
        import torch
    except ImportError:
        torch = None
        ctx["no_torch"] = f"no PyTorch for {sys.executable} (PYTHON=... names another)"
    if torch is not None and not ctx["smoke"] and not torch.cuda.is_available():
        ctx["no_torch"] = f"PyTorch {torch.__version__} for {sys.executable} sees no GPU"
        torch = None
    ctx["torch"] = torch
    if torch is None:
        ctx["torch_line"] = f"none: {ctx['no_torch']}"
        return
    if ctx["smoke"]:
        torch.set_num_threads(2)
    import pytorch_lm_fast as fast  # noqa: E402
    ctx["not_used"] = {k: v for k, v in fast.features(ctx["device"], ctx["compile"]).items() if v}
    if not ctx["compile"] and args.compile == "auto":
        ctx["not_used"]["torch.compile"] = "not tried in --smoke (--compile yes tries it)"
    ctx["compile"] = "torch.compile" not in ctx["not_used"]  # wanted and there
    ctx["torch_line"] = (f"{torch.__version__}, bf16 autocast, scaled_dot_product_attention, fused AdamW, "
                         f"torch.compile{' mode ' + args.compile_mode if args.compile_mode else ''} "
                         "where this PyTorch has them")


def measure(ctx, args, shapes, out, start):
    """The text, the rounds, the JSON lines and the table; returns the exit status."""
    smoke, torch = ctx["smoke"], ctx["torch"]
    say(f"bench-gpu-lm: writing the text ({'smoke' if smoke else 'seed size'})...")
    vocab = args.vocab or (200 if smoke else 11500)
    ctx["text"] = os.path.join(ctx["work"], "text")
    write_text(ctx["text"], vocab, shapes, smoke)
    if torch is not None:
        ctx["vocab"], ctx["stream"] = token_stream(ctx["text"])
    else:
        ctx["vocab"] = vocab
    g = gpu_info(torch) if not smoke else {"name": None, "peak": 0.0, "formula": None}
    if args.peak_tflops > 0:
        g["peak"], g["formula"] = args.peak_tflops * 1e12, "--peak-tflops"
    ctx["gpu"] = g
    ctx["device_name"] = "the CPU (--smoke)" if smoke else (g["name"] or "an unnamed GPU")
    D, H, F_, L = ctx["size"]
    from pytorch_lm_fast import flops_per_token  # noqa: E402
    ctx["flops"] = lambda T: flops_per_token(D, F_, L, ctx["vocab"], T)

    with open(out, "w", encoding="utf-8") as ctx["json"]:
        record(ctx, header=True, date=ctx["date"], device=ctx["device_name"], size=list(ctx["size"]),
               vocab=ctx["vocab"], dropout=DROPOUT, rounds=ctx["rounds"], shapes=[list(s) for s in shapes],
               torch=torch.__version__ if torch else None, not_used=ctx["not_used"],
               program=ctx["prog"], program_precisions=ctx["precisions"],
               peak_tflops=g["peak"] / 1e12 if g["peak"] else None, peak_formula=g["formula"])
        results = {}
        # the target shapes first, so that a time limit takes the 20 x 35 row
        for B, T in sorted(shapes, key=lambda s: s not in TARGETS):
            if results and ctx["late"]():
                ctx["notes"].append(f"{B} x {T}: not run (--time-limit)")
                results[(B, T)] = ({}, {k: "not run: --time-limit" for k, _ in COLUMNS}, {}, 0)
                continue
            say(f"bench-gpu-lm: {B} x {T} ({time.monotonic() - start:.0f} s)")
            results[(B, T)] = run_shape(ctx, B, T)
            best, why, extra, steps = results[(B, T)]
            mfu = {k: ctx["flops"](T) * v / g["peak"] for k, v in best.items() if g["peak"] and "bf16" in k}
            record(ctx, summary=True, batch=B, bptt=T, steps=steps, best=best, not_measured=why,
                   flops_per_token=ctx["flops"](T), mfu=mfu, **extra)
        text = table(ctx, {shape: results[shape] for shape in shapes})
    say("")
    say(text)
    stem = re.sub(r"\.jsonl$", "", out)
    with open(stem + ".txt", "w", encoding="utf-8") as f:
        f.write(text + "\n")
    say(f"\n(JSON lines: {out}; this table: {stem}.txt; {time.monotonic() - start:.0f} s)")
    failed = [r for best, why, *_ in results.values() for r in why.values()
              if r.startswith("exit status") or r.startswith("the first steps failed")]
    if failed or not any(best for best, *_ in results.values()):
        return 1
    if not any("library_bf16" in best for best, *_ in results.values()):
        say(f"bench-gpu-lm: the library's bf16 was not measured: {ctx['no_precision']} (exit status 3)")
        return 3
    return 0


def main():
    args = options()
    start = time.monotonic()
    smoke = args.smoke
    prog = os.path.join(args.build, "solutions", "04-transformer", "train")
    if not os.access(prog, os.X_OK):
        sys.exit(f"bench-gpu-lm: {prog} is not built (make {prog})")
    if not smoke and subprocess.run(["sh", "-c", "nvidia-smi -L"], capture_output=True).returncode != 0:
        sys.exit("bench-gpu-lm: no GPU here (nvidia-smi lists none): nothing to measure; "
                 "--smoke (make bench-gpu-lm SMOKE=1) runs the script's path on the CPU at tiny sizes")
    precisions, graph = program_help(prog)
    no_precision = (f"{prog} has no --precision option yet (issue 28): only its float32 runs"
                    if not precisions else f"{prog} --precision offers {'|'.join(precisions)}, no bf16")
    if args.require_bf16 and "bf16" not in precisions:
        say(f"bench-gpu-lm: nothing run: {no_precision} (--require-bf16; exit status 3)")
        return 3
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes
              else SMOKE_SHAPES if smoke else SHAPES)
    out = args.json or os.path.join(args.build, "bench", f"bench-gpu-lm{'-smoke' if smoke else ''}.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    sys.path.insert(0, HERE)
    ctx = {"prog": prog, "smoke": smoke, "device": "cpu" if smoke else "cuda",
           "size": SMOKE if smoke else SEED, "rounds": args.rounds or (2 if smoke else 3),
           "steps": args.steps, "references": not args.no_reference, "notes": [], "not_used": {},
           "precisions": precisions, "graph": graph, "no_precision": no_precision, "compile_mode": args.compile_mode,
           "compile": args.compile == "yes" or (args.compile == "auto" and not smoke),
           "late": lambda: args.time_limit > 0 and time.monotonic() - start > 0.6 * args.time_limit,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "program_line": (f"{prog}, --precision {'|'.join(precisions)}" if precisions
                            else f"{prog}: NO --precision option (float32 only)")}
    setup_torch(ctx, args)
    ctx["work"] = tempfile.mkdtemp(prefix="bench-gpu-lm-")
    try:
        return measure(ctx, args, shapes, out, start)
    finally:
        shutil.rmtree(ctx["work"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
