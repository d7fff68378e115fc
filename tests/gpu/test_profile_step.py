#!/usr/bin/env python3
"""make gpu-report's profile-step item (issue 38), tested without a GPU: a step's ranges
read from a made-up trace (own times on the stream, the GPU's idle rest), hostile traces
refused, one step's kernels cut from a made-up ncu listing, the kernel table, and the
whole script on the CPU (--smoke: lesson 04's real trace) with a stand-in ncu: the full
metrics, a stand-in that refuses them (the time alone then), and one that fails.
  tests/gpu/test_profile_step.py BUILD"""

import json
import os
import subprocess
import sys
import tempfile
from decimal import Decimal

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "framework"))
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu-report"))

import step_profile as sp  # noqa: E402
from checks import check, equal, finish  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
SCRIPT = os.path.join(ROOT, "tools", "gpu-report", "profile-step.py")


def X(name, ts, dur, tid=0):
    return {"ph": "X", "name": name, "ts": Decimal(ts), "dur": Decimal(dur), "pid": 0, "tid": tid}


def trace(stream=True):
    """Two steps of 100 us inside an epoch: on the stream, a layer (40 us) holding an
    attention range (10 us) and a loss (20 us) in each; an evaluation after the epoch."""
    ev = [X("train epoch", 0, 200)]
    for k in range(2):
        t = 100 * k
        ev += [X("load batch", t, 1), X("layer 0 forward", t + 5, 50), X("loss", t + 60, 30)]
        if stream:
            ev += [X("layer 0 forward", t + 10, 40, 1), X("attention", t + 12, 10, 1), X("loss", t + 60, 20, 1)]
    ev += [X("evaluate", 210, 50)] + ([X("layer 0 forward", 215, 40, 1)] if stream else [])
    return {"traceEvents": ev}


@check("steps from a trace: steps between 'load batch' ranges, own times on the stream, the evaluation left out")
def _():
    steps, track = sp.steps_from_trace(trace())
    equal(track, "stream")
    equal(len(steps), 2)
    equal(steps[1], {"wall_ns": 100000, "parts": {"layer 0 forward": 30000, "attention": 10000, "loss": 20000}})
    wall, rows, idle, n = sp.range_table(steps)
    equal((wall, rows[0], idle, n), (100000, ("layer 0 forward", 30000), 40000, 1))


@check("steps from a trace without a stream track: the host's compute ranges, less their children")
def _():
    steps, track = sp.steps_from_trace(trace(stream=False))
    equal(track, "host")
    equal(steps[0]["parts"], {"load batch": 1000, "layer 0 forward": 50000, "loss": 30000})


@check("hostile traces refused with a ProfileError: no epoch, no steps, NaN, strings, negative, huge")
def _():
    bad = [({"traceEvents": [X("load batch", 0, 1)]}, "no 'train epoch'"),
           ({"traceEvents": [X("train epoch", 0, 10)]}, "no 'load batch'"),
           ({"traceEvents": [X("train epoch", Decimal("NaN"), 10)]}, "out of range"),
           ({"traceEvents": [dict(X("train epoch", 0, 10), ts="12")]}, "not a number"),
           ({"traceEvents": [dict(X("train epoch", 0, 10), ts=None)]}, "not a number"),
           ({"traceEvents": [X("train epoch", 0, -5)]}, "negative"),
           ({"traceEvents": [X("train epoch", Decimal("1e300"), 10)]}, "out of range")]
    for doc, words in bad:
        try:
            sp.steps_from_trace(doc)
        except sp.ProfileError as e:
            assert words in str(e), f"{e!r} does not say {words!r}"
        else:
            raise AssertionError(f"accepted: {doc}")


def ncu_csv(kernels):
    """ncu --csv --page raw --print-units base: a header, a units row, a row a kernel."""
    cols = ["ID", "Process ID", "Kernel Name"] + list(sp.NCU_METRICS.values())
    lines = ["==PROF== Connected to process 1", ",".join(f'"{c}"' for c in cols),
             ",".join('""' if c in ("ID", "Process ID", "Kernel Name") else '"ns"' for c in cols)]
    for i, (name, t) in enumerate(kernels):
        vals = [str(i), "1", name, f"{t:,}", "1000", "1000", "500", "0", "0", "12.5", "50"]
        lines.append(",".join(f'"{v}"' for v in vals))
    return "\n".join(lines) + "\n"


@check("kernels from ncu: the last whole step between two launches of adam_kernel, the table by name")
def _():
    step = [("gemm", 1000), ("layernorm", 200), ("gemm", 3000), ("adam_kernel", 500)]
    text = ncu_csv([("init", 5)] + step + [("refresh", 7)] + step + [("eval", 9)])
    kernels, seen = sp.kernels_from_ncu(text)
    equal(seen, 2)
    equal([k["name"] for k in kernels], ["refresh"] + [n for n, _ in step])
    table = sp.kernel_table(kernels)
    equal([(r["name"], r["launches"], r["time_ns"]) for r in table][:2], [("gemm", 2, 4000.0), ("adam_kernel", 1, 500.0)])
    equal(table[0]["flop"], 2 * (2 * 500.0))   # 2 FMA FLOP x 500 a launch, 2 launches
    equal(table[0]["bytes"], 2 * 2000.0)
    equal(table[0]["sm_pct"], 12.5)
    md = "\n".join(sp.markdown_kernels("64 x 128", table, 10000, seen))
    assert "| `gemm` | 2 | 0.004 | 40.0% |" in md, md


@check("kernels from ncu: fewer than two steps, no table, no time column are refused with the reason")
def _():
    for text, words in ((ncu_csv([("gemm", 1), ("adam_kernel", 1)]), "1 launches of adam_kernel"),
                        ("==ERROR== no kernels were profiled\n", "no CSV table"),
                        ('"ID","Kernel Name"\n"0","adam_kernel"\n', "no gpu__time_duration.sum")):
        try:
            sp.kernels_from_ncu(text)
        except sp.ProfileError as e:
            assert words in str(e), f"{e!r} does not say {words!r}"
        else:
            raise AssertionError("accepted")


STAND_IN_NCU = r'''#!/usr/bin/env python3
# A stand-in ncu: runs the program after its options, then writes a listing of made-up
# kernels, one adam_kernel a step, to --log-file. MODE: ok, no-metrics (refuses any
# metric but the time, as an ncu without them does), fail.
import os, subprocess, sys
a = sys.argv[1:]
opts, i = {}, 0
while a[i].startswith("--"):
    if a[i] == "--csv":
        i += 1; continue
    opts[a[i]] = a[i + 1]; i += 2
mode = os.environ["STAND_IN_MODE"]
if mode == "fail" or (mode == "no-metrics" and "," in opts["--metrics"]):
    sys.exit("==ERROR== Failed to profile kernel (stand-in, mode %s)" % mode)
r = subprocess.run(a[i:], capture_output=True)
if r.returncode: sys.exit(r.returncode)
metrics = opts["--metrics"].split(",")
with open(opts["--log-file"], "w") as f:
    f.write(",".join('"%s"' % c for c in ["ID", "Kernel Name"] + metrics) + "\n")
    n = 0
    for step in range(4):
        for name, t in (("sm90_gemm", 3000), ("layernorm_kernel", 400), ("adam_kernel", 600)):
            f.write(",".join('"%s"' % v for v in [n, name, t] + ["100"] * (len(metrics) - 1)) + "\n"); n += 1
'''


def run_script(mode, work):
    ncu = os.path.join(work, "ncu")
    with open(ncu, "w") as f:
        f.write(STAND_IN_NCU)
    os.chmod(ncu, 0o755)
    out = os.path.join(work, f"out-{mode}")
    r = subprocess.run([sys.executable, SCRIPT, "--build", BUILD, "--out", out, "--smoke", "--ncu", ncu,
                        "--steps", "6"], capture_output=True, text=True, env=dict(os.environ, STAND_IN_MODE=mode), timeout=120)
    return r, out


def needs_build():
    if not os.access(os.path.join(BUILD, "solutions", "04-transformer", "train"), os.X_OK):
        return f"{BUILD}/solutions/04-transformer/train is not built"
    return None


@check("the script on the CPU (--smoke) with a stand-in ncu: a traced step, one step's kernels, profile.md and .jsonl")
def _():
    if needs_build():
        return needs_build()
    with tempfile.TemporaryDirectory() as work:
        r, out = run_script("ok", work)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.rstrip().endswith("2 passed, 0 failed"), r.stdout
        md = open(os.path.join(out, "profile.md")).read()
        assert "| layer 0 forward |" in md and "outside the ranges" in md, md
        assert "| `sm90_gemm` | 1 | 0.003 |" in md, md
        row = json.loads(open(os.path.join(out, "profile.jsonl")).readline())
        equal([k["name"] for k in row["kernels"]], ["sm90_gemm", "adam_kernel", "layernorm_kernel"])
        equal(sorted(os.listdir(out)), ["profile.jsonl", "profile.log", "profile.md"])  # its work removed


@check("the script with an ncu that refuses the metrics (the time alone, said) and with one that fails (exit 1)")
def _():
    if needs_build():
        return needs_build()
    with tempfile.TemporaryDirectory() as work:
        r, _ = run_script("no-metrics", work)
        assert r.returncode == 0 and "metrics: time only" in r.stdout, r.stdout + r.stderr
        r, _ = run_script("fail", work)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "FAIL  2 x 8: kernels under ncu: exit status 1: ==ERROR== Failed to profile" in r.stdout, r.stdout
        assert r.stdout.rstrip().endswith("1 passed, 1 failed"), r.stdout


finish()
