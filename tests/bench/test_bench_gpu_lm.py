#!/usr/bin/env python3
"""make bench-gpu-lm without a GPU: bench/pytorch_lm_fast.py's model against the
tutorial's TransformerModel (the reference the unit tests use), its FLOP count against
its own layers, then bench/bench_gpu_lm.py end to end on the CPU (--smoke) with the
real lesson 04 program and with stand-in programs (with and without --precision bf16,
a failing one), and its refusals (no GPU, no program). Needs PyTorch (Debian's 1.13
is enough: what it lacks is what the script must say it could not use).
Last line: "N passed, M failed[, K skipped]".
  tests/bench/test_bench_gpu_lm.py [BUILD]"""

import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "framework"))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
DRIVER = os.path.join(ROOT, "bench", "bench_gpu_lm.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))


try:
    import torch
except ImportError:
    torch = None
    print("SKIP  every check: no PyTorch for this Python (sudo make deps adds python3-torch)")
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(0)

import make_transformer_reference as reference  # noqa: E402
import pytorch_lm_fast as fast  # noqa: E402
from checks import check, equal, finish  # noqa: E402


def copy_weights(ref, model):
    """The tutorial's parameters into FastLM's: in_proj is q, k, v stacked, heads side by
    side within each, the layout FastLM's one qkv linear splits."""
    pairs = [(ref.embedding, model.embedding), (ref.linear, model.decoder)]
    for r, m in zip(ref.transformer_encoder.layers, model.layers):
        pairs += [(r.linear1, m.l1), (r.linear2, m.l2), (r.norm1, m.n1), (r.norm2, m.n2),
                  (r.self_attn.out_proj, m.out)]
        with torch.no_grad():
            m.qkv.weight.copy_(r.self_attn.in_proj_weight)
            m.qkv.bias.copy_(r.self_attn.in_proj_bias)
    with torch.no_grad():
        for r, m in pairs:
            for name, p in r.named_parameters():
                getattr(m, name).copy_(p)


@check("pytorch_lm_fast's model is the tutorial's: its loss with the same weights, dropout off, "
       "on every attention path this PyTorch has")
def _():
    V, D, H, F_, L, B, T = 37, 16, 4, 24, 2, 3, 7
    torch.manual_seed(3)
    ref = reference.TransformerModel(V, D, H, F_, L, dropout=0.0).eval()
    with torch.no_grad():  # away from the init, so that a misplaced weight shows
        for p in ref.parameters():
            p.add_(0.05 * torch.randn_like(p))
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    with torch.no_grad():
        logits = ref(tokens.t(), reference.causal_mask(T))  # [T, B, V], sequence first
        want = torch.nn.functional.cross_entropy(logits.transpose(0, 1).reshape(-1, V), targets.reshape(-1))
    paths = [False] + ([True] if hasattr(torch.nn.functional, "scaled_dot_product_attention") else [])
    for sdpa in paths:
        model = fast.FastLM(V, D, H, F_, L, 0.2, sdpa).eval()
        copy_weights(ref, model)
        equal(sum(p.numel() for p in model.parameters()), sum(p.numel() for p in ref.parameters()))
        with torch.no_grad():
            got = model(tokens, targets)
        assert abs(got.item() - want.item()) < 1e-5 * max(1.0, abs(want.item())), \
            f"sdpa={sdpa}: loss {got.item()!r}, the tutorial's {want.item()!r}"


@check("flops_per_token: 6 x the weights of the model's linears + the causal attention's 6 L D (T + 1)")
def _():
    V, D, H, F_, L = 1000, 64, 4, 96, 3
    model = fast.FastLM(V, D, H, F_, L, 0.2, False)
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    for T in (1, 35, 256):
        want = 6 * weights + 6 * L * D * (T + 1)
        assert math.isclose(fast.flops_per_token(D, F_, L, V, T), want, rel_tol=1e-12), (T, want)


def run(build, *args, env=None):
    r = subprocess.run([sys.executable, DRIVER, "--build", build, *args], capture_output=True,
                       text=True, timeout=600, env=env)
    return r, r.stdout + r.stderr


def lines_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def summaries(path):
    return {(s["batch"], s["bptt"]): s for s in lines_of(path) if s.get("summary")}


def knows_bf16(prog):
    text = subprocess.run([prog, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"^\s+--precision\b.*?\(([^)]*)\)", text, re.M)
    return bool(m) and "bf16" in m[1].split("|")


@check("--smoke with lesson 04's program: both shapes measured in fp32 and bf16, the same parameter count "
       "as PyTorch's, what PyTorch lacks said, exit 0")
def _():
    prog = os.path.join(BUILD, "solutions", "04-transformer", "train")
    if not os.access(prog, os.X_OK):
        return f"{prog} is not built"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "smoke.jsonl")
        r, text = run(BUILD, "--smoke", "--json", out)
        assert knows_bf16(prog), f"{prog} --help lists no --precision with bf16"
        equal(r.returncode, 0)
        assert "SMOKE RUN" in text and "WARNING" not in text, text
        for shape in ("2 x 8", "3 x 16"):
            assert re.search(rf"^{shape} ", text, re.M), text
        s = summaries(out)
        equal(sorted(s), [(2, 8), (3, 16)])
        for key, row in s.items():
            assert row["best"].get("library_fp32", 0) > 0, row
            assert row["best"].get("pytorch_eager_bf16", 0) > 0, row
            equal(row["library_fp32_params"], row["pytorch_params"])
            assert row["best"].get("library_bf16", 0) > 0, row
            assert "pytorch_compiled_bf16" in row["not_measured"], row
        head = lines_of(out)[0]
        assert head["header"] and head["mode"] == "smoke", head
        for feature in ("torch.compile", "scaled_dot_product_attention", "fused AdamW"):
            if feature == "torch.compile" or not (
                    hasattr(torch.nn.functional, "scaled_dot_product_attention") if feature.startswith("scaled")
                    else "fused" in fast.inspect.signature(torch.optim.AdamW.__init__).parameters):
                assert feature in head["not_used"], (feature, head["not_used"])
                assert f"not used: {feature}:" in text, text
        with open(out[:-len(".jsonl")] + ".txt") as f:
            assert "batch x tokens" in f.read()


STAND_IN = """#!/bin/sh
# lesson 04's program, stood in for: its --help, a --metrics file and its parameter line
if [ "$1" = --help ]; then
    [ -n "%(choices)s" ] && echo "  --precision CHOICE         compute precision (%(choices)s) [default: fp32]"
    [ -n "%(graph)s" ] && echo "  --cuda-graph               replay each step from CUDA graphs"
    exit 0
fi
echo "$*" >>"$(dirname "$0")/calls"
%(fail)s
m= p=fp32 e=3 g=
while [ $# -gt 0 ]; do
    case $1 in --metrics) m=$2; shift ;; --precision) p=$2; shift ;; --epochs) e=$2; shift ;; --cuda-graph) g=1 ;; esac
    shift
done
rate=1000; [ "$p" = bf16 ] && rate=3000
[ -n "$g" ] && rate=5000
i=1
while [ $i -le "$e" ]; do
    r=$((rate + i)); [ $i = 1 ] && r=99999   # the warm-up epoch, fastest here: it must not count
    echo "{\\"epoch\\": $i, \\"train_loss\\": 5.0, \\"tokens_per_s\\": $r}" >>"$m"
    i=$((i + 1))
done
echo "model: seed, 7 parameters"
"""


def stand_in(tmp, choices, fail="", graph=""):
    build = os.path.join(tmp, "build")
    path = os.path.join(build, "solutions", "04-transformer", "train")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(STAND_IN % {"choices": choices, "fail": fail, "graph": graph})
    os.chmod(path, 0o755)
    return build, os.path.join(os.path.dirname(path), "calls")


@check("a program with --precision fp32|bf16|fp16: bf16 from --precision bf16, fp32 from --precision fp32, "
       "the warm-up epoch not counted, a parameter count unlike PyTorch's warned of, exit 0")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|bf16|fp16")
        out = os.path.join(tmp, "r.jsonl")
        r, text = run(build, "--smoke", "--shapes", "2x8", "--rounds", "2", "--json", out)
        equal(r.returncode, 0)
        best = summaries(out)[(2, 8)]["best"]
        equal((best["library_bf16"], best["library_fp32"]), (3003, 1002))
        with open(calls) as f:
            precisions = [re.search(r"--precision (\S+)", line)[1] for line in f]
        equal(precisions, ["bf16", "bf16", "fp32"])  # two alternating rounds, then the reference
        assert re.search(r"^2 x 8 +3,003 ", text, re.M), text
        assert "WARNING 2 x 8: the library's model has 7 parameters" in text, text


@check("a program whose --precision has no bf16: that column empty with the reason, exit 3; "
       "--require-bf16 stops before any run")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|fp16")
        out = os.path.join(tmp, "r.jsonl")
        r, text = run(build, "--smoke", "--shapes", "2x8", "--rounds", "1", "--json", out)
        equal(r.returncode, 3)
        s = summaries(out)[(2, 8)]
        assert "no bf16" in s["not_measured"]["library_bf16"], s
        equal(s["best"]["library_fp32"], 1002)
        assert "library bf16 not measured" in text and "no bf16" in text, text
        os.remove(calls)
        r, text = run(build, "--smoke", "--require-bf16", "--json", out)
        equal(r.returncode, 3)
        assert "nothing run" in text and not os.path.exists(calls), text


@check("a program that fails: its last line in the table, exit 1")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        build, _ = stand_in(tmp, "fp32|bf16", fail='echo "error: out of memory on the GPU" >&2; exit 1')
        r, text = run(build, "--smoke", "--shapes", "2x8", "--rounds", "1", "--no-reference",
                      "--json", os.path.join(tmp, "r.jsonl"))
        equal(r.returncode, 1)
        assert "exit status 1: error: out of memory on the GPU" in text, text


@check("refusals: no GPU without --smoke, a program not built: exit 1 with the reason")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        r, text = run(tmp, "--smoke")
        equal(r.returncode, 1)
        assert "is not built (make " in text, text
        build, _ = stand_in(tmp, "fp32|bf16")
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "nvidia-smi"), "w") as f:
            f.write("#!/bin/sh\necho 'No devices were found'; exit 6\n")
        os.chmod(os.path.join(bindir, "nvidia-smi"), 0o755)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
        r, text = run(build, env=env)
        equal(r.returncode, 1)
        assert "no GPU here" in text and "--smoke" in text, text


SMI = """#!/bin/sh
case "$1" in
-L) echo "GPU 0: Stand-in GPU (UUID: GPU-0)" ;;
--query-gpu=name,clocks.max.sm) echo "Stand-in GPU, 1980" ;;
--query-gpu=*) echo "Stand-in GPU, 1000, 1980, 2000, 1.2.3" ;;
*) echo "| NVIDIA-SMI 1.2.3   Driver Version: 1.2.3   CUDA Version: 99.9 |" ;;
esac
"""


def stand_in_gpu(tmp):
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "nvidia-smi"), "w") as f:
        f.write(SMI)
    os.chmod(os.path.join(bindir, "nvidia-smi"), 0o755)
    return dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])


@check("a stand-in GPU, PyTorch seeing none: the seed-size path, the library's columns, "
       "PyTorch's said to see no GPU, the issue's targets 'not measured'")
def _():
    if torch.cuda.is_available():
        return "PyTorch sees a real GPU here: the stand-in would not be what runs"
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|bf16|fp16")
        out = os.path.join(tmp, "r.jsonl")
        r, text = run(build, "--rounds", "1", "--json", out, env=stand_in_gpu(tmp))
        equal(r.returncode, 0)
        s = summaries(out)
        equal(sorted(s), [(20, 35), (64, 128), (128, 256)])
        equal({shape: row["steps"] for shape, row in s.items()}, {(20, 35): 100, (64, 128): 49, (128, 256): 13})
        equal(list(s), [(64, 128), (128, 256), (20, 35)])  # the target shapes first
        for row in s.values():
            equal(row["best"], {"library_bf16": 3003, "library_fp32": 1002})
            assert "sees no GPU" in row["not_measured"]["pytorch_compiled_bf16"], row
        with open(calls) as f:
            first = f.readline()
        for words in ("--device cuda", "--model seed", "--batch-size 64", "--bptt 128", "--max-steps 49",
                      "--optimizer adamw", "--precision bf16", "--dropout 0.2"):
            assert words in first, (words, first)
        assert "lesson 04's model (1024 wide, 4 heads, feed-forward 1024, 3 layers" in text, text
        assert "vocabulary 11,500" in text and "on Stand-in GPU" in text, text
        assert "64 x 128: speed not measured; MFU not measured" in text, text


@check("a stand-in GPU and a program with --cuda-graph: its column from one --cuda-graph run a shape, "
       "the faster library column in the targets")
def _():
    if torch.cuda.is_available():
        return "PyTorch sees a real GPU here: the stand-in would not be what runs"
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|bf16", graph="yes")
        out = os.path.join(tmp, "r.jsonl")
        r, text = run(build, "--rounds", "1", "--shapes", "64x128", "--json", out, env=stand_in_gpu(tmp))
        equal(r.returncode, 0)
        equal(summaries(out)[(64, 128)]["best"],
              {"library_bf16": 3003, "library_fp32": 1002, "library_bf16_graph": 5002})
        with open(calls) as f:
            graphed = [line for line in f if "--cuda-graph" in line]
        equal(len(graphed), 1)
        assert "--precision bf16" in graphed[0], graphed


@check("--time-limit spent: the first target shape's first round only, the rest said not run")
def _():
    if torch.cuda.is_available():
        return "PyTorch sees a real GPU here: the stand-in would not be what runs"
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|bf16")
        out = os.path.join(tmp, "r.jsonl")
        r, text = run(build, "--time-limit", "0.001", "--json", out, env=stand_in_gpu(tmp))
        equal(r.returncode, 0)
        s = summaries(out)
        equal(list(s), [(64, 128)])
        equal(s[(64, 128)]["best"], {"library_bf16": 3003})
        equal(s[(64, 128)]["not_measured"]["library_fp32"], "not run: --time-limit")
        with open(calls) as f:
            equal(len(f.readlines()), 1)
        for line in ("64 x 128: 1 of 3 rounds (--time-limit)", "128 x 256: not run (--time-limit)",
                     "20 x 35: not run (--time-limit)"):
            assert line in text, (line, text)


@check("make gpu-report's bench-gpu-lm item on a stand-in GPU, the program without bf16: "
       "failed at once with exit status 3 and the reason")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        build, calls = stand_in(tmp, "fp32|fp16")
        rep_dir = os.path.join(tmp, "report")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu-report", "gpu-report.py"),
                            "--build", build, "--out", rep_dir, "--only", "bench-gpu-lm"],
                           env=dict(stand_in_gpu(tmp), PYTHON=sys.executable),
                           capture_output=True, text=True, timeout=300)
        equal(r.returncode, 1)
        with open(os.path.join(rep_dir, "report.json")) as f:
            item = json.load(f)["items"][0]
        equal((item["id"], item["status"], item["exit_status"]), ("bench-gpu-lm", "failed", 3))
        assert any("no bf16" in line and "nothing run" in line for line in item["tail"]), item["tail"]
        assert item["seconds"] < 60 and not os.path.exists(calls), item


finish()
