#!/usr/bin/env python3
"""make gpu-report's multi-GPU items (issue 41), tested without a GPU:
  - the comparisons (tools/gpu-report/compare.py), the GPU count and topology from
    nvidia-smi (smi.py) and the launcher's words (launch.py) on known input;
  - the whole report with stand-in programs (standin_train.py) and a stand-in
    nvidia-smi (standin_smi.py) for 2, 4 and 8 GPUs under mpirun: every multi-GPU item
    passes (the 3D layout at 8 only, "not run" below), the report names the GPUs, their
    NVLink and NCCL's version and path; planted mistakes (0.1 % in a split run's losses
    of lessons 06, 07 and 09, a ZeRO stage's digest, a wrong all-gather, a lesson 06
    that ends before its rank is killed) each fail their item and only theirs;
  - one GPU: the one-GPU items run, the multi-GPU ones "not run: 1 GPU"; a budget spent
    ("cut short", then "not run" with the reason); CUDA_VISIBLE_DEVICES narrowing 4 GPUs
    to 1;
  - the real programs on 2 CPU ranks under mpirun (--cpu-ranks 2): the same runs and
    comparisons pass on the lessons' real output, so the tolerances are met there.
The srun path under the local Slurm: tests/slurm/test-gpu-report.sh.
Last line: "N passed, M failed[, K skipped]".
  tests/gpu/test_gpu_report_multi.py [BUILD]"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "framework"))
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu-report"))

import compare  # noqa: E402
import launch  # noqa: E402
import smi  # noqa: E402
from checks import check, equal, finish  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
MULTI = ["nccl", "kill-rank", "lesson09", "lesson09-3d", "lesson07", "lesson08", "lesson06",
         "lesson09-bf16", "lesson07-bf16", "lesson08-bf16", "lesson06-bf16"]
HERE = os.path.dirname(os.path.abspath(__file__))


@check("compare: the same losses to 1e-5 (bit for bit said), a longer run or a NaN never the same")
def _():
    ok, seen = compare.same_losses([7.0, 6.5], [7.0, 6.5])
    assert ok and "bit for bit" in seen, seen
    assert compare.same_losses([7.0, 6.5], [7.00001, 6.5])[0]  # 1.4e-6 relative: within 1e-5
    equal(compare.same_losses([7.0, 6.5], [7.0001, 6.5])[0], False)  # 1.4e-5: not
    equal(compare.same_losses([7.0, 6.5], [7.00001, 6.5], 1e-6)[0], False)
    equal(compare.same_losses([7.0], [7.0, 6.0])[0], False)
    equal(compare.same_losses([], [])[0], False)
    equal(compare.same_losses([7.0], [float("nan")])[0], False)


@check("compare: digests from every rank, glued lines too; one missing or one different is no digest")
def _():
    # (a digest is 16 hex digits, whatever is glued after it: "epoch" begins with one)
    text = "rank 0 parameter digest: 0123456789abcdefepoch  loss\nsteps donerank 1 parameter digest: 0123456789abcdef\n"
    equal(compare.one_digest(text, 2), ({"parameter": "0123456789abcdef"}, None))
    assert compare.one_digest(text, 3)[0] is None
    other = text.replace("1 parameter digest: 0123456789abcdef", "1 parameter digest: 0123456789abcdee")
    d, why = compare.one_digest(other, 2)
    assert d is None and "differ" in why, why


@check("compare: ZeRO's formula with shards rounded up; the padding allowed and no more")
def _():
    f = compare.zero_formula(3, 44807, 2, 8)
    equal(f, {"params": 89616, "grads": 89616, "optim": 179232})
    equal(compare.zero_formula(0, 10, 4, 4), {"params": 40, "grads": 40, "optim": 40})
    equal(compare.zero_formula(2, 10, 4, 8), {"params": 40, "grads": 12, "optim": 24})
    got = {"params": 179232, "grads": 179232, "optim": 179232}
    assert compare.zero_against_formula(got, compare.zero_formula(1, 44807, 2, 8), 2, 8)[0]
    got["optim"] += 16  # two AdamW elements more than a shard holds
    assert not compare.zero_against_formula(got, compare.zero_formula(1, 44807, 2, 8), 2, 8)[0]


@check("compare: lesson 07's bubble (median after step 1, the stages' uneven bound) and stage lines")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.jsonl")
        with open(path, "w") as f:
            for s, b in enumerate([0.9, 0.2, 0.3, 0.25], 1):
                f.write(json.dumps({"step": s, "loss": 1.0, "bubble_fraction": b,
                                    "busy_max_seconds": 0.01, "busy_mean_seconds": 0.01}) + "\n")
        b = compare.bubble(path, 2, 8)
        equal((b["measured"], round(b["formula"], 4), b["steps"]), (0.25, 0.1111, 3))
        assert abs(b["uneven"] - (1 - 0.01 / ((2 * 0.01 + 7 * 0.01) / 8))) < 1e-12, b
    line = ("  stage 1 memory: parameters 0.1 MB (+ gradients as much), activations 0.2 MB (1 micro-batch in "
            "flight at most, 1f1b), workspaces 0.2 MB: 0.5 MB in all; its GPU has 1.25 GB in use\n")
    equal(compare.stage_memory(line), {1: {"activations_mb": 0.2, "in_flight": 1, "total_mb": 0.5,
                                           "gpu_in_use_gb": 1.25}})


@check("compare: NCCL's own report: version, transports (a glued line cut off), graphs' link types")
def _():
    equal(compare.nccl_report("h [0] NCCL INFO NCCL version 2.21.5+cuda12.47216:7216 [1] x")["version"], "2.21.5")
    log = ("h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
           "h:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1\n"
           "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
           "h:2:2 [1] NCCL INFO Channel 00/0 : 1[1b000] -> 0[1a000] via P2P/CUMEM/readh:3:3 [2] NCCL INFO x\n"
           "h:1:1 [0] NCCL INFO Channel 00/1 : 0[0] -> 2[2] [send] via NET/IB/0/GDRDMA\n")
    rep = compare.nccl_report(log)
    equal(rep, {"version": "2.21.5+cuda12.4", "transports": {"P2P/CUMEM": 2, "NET/IB": 1}, "link_types": ["NVL/PIX"]})
    assert "NVLink (NVL/PIX)" in compare.nccl_path(rep), compare.nccl_path(rep)
    equal(compare.nccl_path(compare.nccl_report("no report\n")), None)
    equal([round(compare.bus_factor(c, 4), 3) for c in ("all-reduce", "all-gather", "send-recv")], [1.5, 0.75, 1.0])


@check("smi: CUDA_VISIBLE_DEVICES by index, by UUID prefix, empty, with a bad entry; the topology matrix")
def _():
    rows = [["0", "GPU-aaaa"], ["1", "GPU-bbbb"], ["2", "GPU-cccc"]]
    equal(smi.visible(rows, None), rows)
    equal(smi.visible(rows, "2,0"), [rows[2], rows[0]])
    equal(smi.visible(rows, "GPU-bb"), [rows[1]])
    equal(smi.visible(rows, ""), [])
    equal(smi.visible(rows, "1,7,2"), [rows[1]])  # CUDA stops at the first that names no GPU


@check("launch: srun on 2 nodes (NCCL's meeting point, a fresh port), CPU ranks through PMIx; mpirun")
def _():
    env = {"SLURM_JOB_ID": "7", "GPU_REPORT_LAUNCHER": "srun", "GPU_REPORT_NODES": "2", "SLURM_CPUS_PER_TASK": "4",
           "SLURM_JOB_NODELIST": "", "GPU_REPORT_SRUN_OPTIONS": "--container-image=a\\ b"}
    words = launch.Launcher("cuda", env).words(8, 2)
    equal(words, ["srun", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--kill-on-bad-exit=1", "--overlap",
                  "--cpus-per-task=4", "--container-image=a b"])
    assert "--mpi=pmix" in launch.Launcher("cpu", env).words(2)
    e = launch.Launcher("cuda", env).env()
    assert e["MASTER_ADDR"] and 20000 <= int(e["MASTER_PORT"]) < 45000, e
    equal(launch.Launcher("cuda", {}).words(2)[:3], ["mpirun", "-n", "2"])


def stand_in_build(tmp, gpus):
    """A build directory of stand-in programs, a stand-in nvidia-smi with `gpus` GPUs
    first on PATH; returns the environment to run the report in."""
    b = os.path.join(tmp, "build")
    for lesson in ("06-ddp", "07-pipeline", "08-zero", "09-tensor-parallel"):
        os.makedirs(os.path.join(b, "solutions", lesson))
        os.symlink(os.path.join(HERE, "standin_train.py"), os.path.join(b, "solutions", lesson, "train"))
    os.makedirs(os.path.join(b, "bench"))
    os.symlink(os.path.join(HERE, "standin_train.py"), os.path.join(b, "bench", "bench_comm"))
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "gpu"))
    os.symlink(os.path.join(HERE, "standin_smi.py"), os.path.join(tmp, "bin", "nvidia-smi"))
    env = dict(os.environ, PATH=os.path.join(tmp, "bin") + os.pathsep + os.environ["PATH"],
               STANDIN_GPUS=str(gpus), STANDIN_GPU_DIR=os.path.join(tmp, "gpu"), GPU_REPORT_SMI_PERIOD_S="0.03")
    for v in ("GPU_REPORT_DATA", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", "STANDIN_PLANT", "GPU_REPORT_LAUNCHER"):
        env.pop(v, None)
    return b, env


def gpu_report(tmp, env, *args):
    out = os.path.join(tmp, "report")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu-report", "gpu-report.py"),
                        "--out", out, *args], env=env, capture_output=True, text=True, timeout=600)
    try:
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
    except OSError:
        raise AssertionError(f"no report (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r, rep, md


def statuses(rep):
    return {it["id"]: (it["status"], it["why"]) for it in rep["items"]}


def same(rep, want):
    """The items' (status, why) are want's; else what the others said, check by check."""
    got = statuses(rep)
    if got != want:
        bad = [it for it in rep["items"] if (it["status"], it["why"]) != want.get(it["id"])]
        raise AssertionError("\n".join(f"{it['id']}: {it['status']} {it['why']}\n  " + "\n  ".join(
            it["checks"] or it["tail"]) for it in bad))


def stand_ins(gpus):
    def run():
        if not shutil.which("mpirun"):
            return "no mpirun (sudo make deps)"
        with tempfile.TemporaryDirectory() as tmp:
            b, env = stand_in_build(tmp, gpus)
            r, rep, md = gpu_report(tmp, env, "--build", b, "--only", *MULTI)
            got = statuses(rep)
            want = {i: ("passed", "") for i in MULTI}
            if gpus < 8:
                want["lesson09-3d"] = ("not run", f"{gpus} GPUs (it needs 8)")
            same(rep, want)
            equal(r.returncode, 0)
            g = rep["gpus"]
            equal((g["count"], g["launcher"], g["nccl"]["version"][:6]), (gpus, "mpirun", "2.99.9"))
            assert f"| interconnect | NVLink (NV18) between every pair of the {gpus} GPUs |" in md, md[:2500]
            assert f"| GPUs | {gpus} GPUs a node x 1 node: Stand-in H100 |" in md, md[:2500]
            assert "channels via P2P/CUMEM" in md and "NVLink (NVL/PIX)" in md, md[:2500]
            l9 = next(it for it in rep["items"] if it["id"] == "lesson09")
            assert any(f"--tp {gpus} --dp 1 on {gpus} GPUs" in c for c in l9["checks"]) or gpus == 2, l9["checks"]
            l7 = next(it for it in rep["items"] if it["id"] == "lesson07")
            mem = [c for c in l7["checks"] if ", memory: " in c]
            assert len(mem) == 2 and all(c.startswith("PASS") and "nvidia-smi saw GPU 1 add" in c for c in mem), mem
    return run


for _g in (2, 4, 8):
    check(f"stand-ins, {_g} GPUs under mpirun: every multi-GPU item passes; the report names GPUs, NVLink, NCCL")(
        stand_ins(_g))


@check("stand-ins, 2 GPUs: planted mistakes each fail their item (06, 07, 09 losses; 08 digest; comm; kill); "
       "the 0.1 % in lesson 07's bf16 losses is within bf16's 2 %")
def _():
    if not shutil.which("mpirun"):
        return "no mpirun (sudo make deps)"
    with tempfile.TemporaryDirectory() as tmp:
        b, env = stand_in_build(tmp, 2)
        env["STANDIN_PLANT"] = "06 07 08 09 comm kill"
        only = ["nccl", "kill-rank", "lesson09", "lesson07", "lesson08", "lesson06", "lesson07-bf16"]
        r, rep, md = gpu_report(tmp, env, "--build", b, "--only", *only)
        equal(r.returncode, 1)
        got = {i: s for i, (s, _) in statuses(rep).items()}
        equal(got, dict({i: "failed" for i in only}, **{"lesson07-bf16": "passed"}))
        checks = {it["id"]: [c for c in it["checks"] if c.startswith("FAIL")] for it in rep["items"]}
        assert any("largest difference 0.001 relative (at most 1e-05)" in c for c in checks["lesson07"]), checks["lesson07"]
        assert any("differ from stage 0's" in c and "stage 2" in c for c in checks["lesson08"]), checks["lesson08"]
        assert any("all-gather" in c and "WRONG" in c for c in checks["nccl"]), checks["nccl"]
        assert any("ended before the kill" in c for c in checks["kill-rank"]), checks["kill-rank"]
        assert checks["lesson06"] and checks["lesson09"], checks


@check("one GPU: the one-GPU items run as before; every multi-GPU item 'not run: 1 GPU'")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        b, env = stand_in_build(tmp, 1)
        os.makedirs(os.path.join(b, "tests"))
        with open(os.path.join(b, "tests", "check_gpu"), "w") as f:
            f.write("#!/bin/sh\necho 'PASS  a'\necho '1 passed, 0 failed'\n")
        os.chmod(os.path.join(b, "tests", "check_gpu"), 0o755)
        r, rep, md = gpu_report(tmp, env, "--build", b, "--only", "check-gpu", *MULTI)
        got = statuses(rep)
        equal(got.pop("check-gpu"), ("passed", ""))
        equal(got, {i: ("not run", "1 GPU") for i in MULTI})
        equal((r.returncode, rep["budget_s"]), (0, 600))
        assert "| lesson07 | not run | - | - | - | 1 GPU |" in md


@check("verdicts: a budget spent cuts an item short and leaves the rest 'not run' with the reason; "
       "CUDA_VISIBLE_DEVICES=2 of 4 GPUs is 1 GPU; a program not built is 'not run', never passed")
def _():
    if not shutil.which("mpirun"):
        return "no mpirun (sudo make deps)"
    with tempfile.TemporaryDirectory() as tmp:
        b, env = stand_in_build(tmp, 4)
        r, rep, md = gpu_report(tmp, dict(env, STANDIN_SLOW="1", GPU_REPORT_MIN_START_S="2"), "--build", b,
                                "--budget", "6", "--only", "nccl", "lesson09", "lesson07")
        got = statuses(rep)
        equal(got["nccl"][0], "cut short")
        assert got["nccl"][1].startswith("stopped at the report's budget"), got
        for i in ("lesson09", "lesson07"):
            assert got[i][0] == "not run" and "budget of 6 s was spent" in got[i][1], got
        equal(r.returncode, 0)
        r, rep, md = gpu_report(tmp, dict(env, CUDA_VISIBLE_DEVICES="2"), "--build", b, "--only", "lesson07")
        equal(statuses(rep), {"lesson07": ("not run", "1 GPU")})
        assert "CUDA_VISIBLE_DEVICES=2: 1 of the 4 GPUs" in md, md[:2000]
        os.remove(os.path.join(b, "solutions", "08-zero", "train"))
        r, rep, md = gpu_report(tmp, env, "--build", b, "--only", "lesson08")
        status, why = statuses(rep)["lesson08"]
        assert status == "not run" and why.startswith("not built: ") and "08-zero/train" in why, why


@check("the real programs on 2 CPU ranks (--cpu-ranks 2, mpirun): every multi-GPU item's runs and comparisons pass")
def _():
    if not shutil.which("mpirun"):
        return "no mpirun (sudo make deps)"
    need = [os.path.join(BUILD, p) for p in ("bench/bench_comm", "solutions/06-ddp/train", "solutions/07-pipeline/train",
                                             "solutions/08-zero/train", "solutions/09-tensor-parallel/train")]
    if not all(os.access(p, os.X_OK) for p in need):
        return f"not built: {', '.join(p for p in need if not os.access(p, os.X_OK))}"
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        for v in ("SLURM_JOB_ID", "GPU_REPORT_LAUNCHER", "CUDA_VISIBLE_DEVICES"):
            env.pop(v, None)
        r, rep, md = gpu_report(tmp, env, "--build", BUILD, "--cpu-ranks", "2", "--only", *MULTI)
        want = {i: ("passed", "") for i in MULTI}
        want["lesson09-3d"] = ("not run", "2 CPU ranks (it needs 8)")
        same(rep, want)
        assert rep["mode"].startswith("CPU ranks"), rep["mode"]
        l6 = next(it for it in rep["items"] if it["id"] == "lesson06")
        assert all("largest difference" in c for c in l6["checks"]), l6["checks"]


finish()
