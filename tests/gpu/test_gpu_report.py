#!/usr/bin/env python3
"""make gpu-report's report, tested without a GPU: the parsing of PASS/FAIL and result
lines and of compute-sanitizer's summaries, each item's verdict, the whole program with no
GPU (every item "not run", exit 0) and with a stand-in nvidia-smi and stand-in binaries
(a failed check fails the report), and make figures taking a figure's data from a report.
Last line: "N passed, M failed".
  tests/gpu/test_gpu_report.py"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "framework"))
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu-report"))
sys.path.insert(0, os.path.join(ROOT, "tools", "figures"))

import gpu_data  # noqa: E402
import report  # noqa: E402
from checks import check, equal, finish  # noqa: E402


@check("counts: the last result line, skipped or not; PASS/FAIL/SKIP lines without one; None without either")
def _():
    equal(report.counts("PASS  a\nFAIL  b\n1 passed, 1 failed\n"),
          {"passed": 1, "failed": 1, "skipped": 0, "from": "result line"})
    # tests/run-suites.sh: each program's line, then the total last
    equal(report.counts("3 passed, 0 failed\n2 passed, 1 failed, 4 skipped\n5 passed, 1 failed, 4 skipped\n")["skipped"], 4)
    equal(report.counts("== x ==\nPASS  a (0.1 s)\nSKIP  b (0.0 s)\nPASS  c\nFAIL  d\n        why\n"),
          {"passed": 2, "failed": 1, "skipped": 1, "from": "PASS/FAIL/SKIP lines (no result line)"})
    equal(report.counts("copies of 256 MB: 2930 GB/s\n"), None)
    equal(report.counts("PASSED  not a verdict\nPASS: nor this\n"), None)


@check("sanitizer summaries: errors added over the processes; racecheck's errors; None without any")
def _():
    text = ("========= COMPUTE-SANITIZER\nPASS  a\n========= ERROR SUMMARY: 0 errors\n"
            "========= ERROR SUMMARY: 2 errors\n========= ERROR SUMMARY: 1 error\n")
    equal(report.sanitizer_summary(text), {"errors": 3, "processes": 3})
    race = "========= RACECHECK SUMMARY: 5 hazards displayed (1 error, 4 warnings)\n"
    equal(report.sanitizer_summary(race), {"errors": 1, "processes": 1})
    equal(report.sanitizer_summary("1 passed, 0 failed\n"), None)


def item(**kw):
    return dict({"id": "x", "timeout_s": 60}, **kw)


@check("verdicts: passed; a failed check, an exit status, a timeout, sanitizer errors, nothing selected, a skip where none may skip fail")
def _():
    equal(report.judge(item(), "PASS  a\n1 passed, 0 failed\n", 0, False)["status"], "passed")
    equal(report.judge(item(), "runs, prints no checks\n", 0, False)["status"], "passed")
    it = report.judge(item(), "PASS  a\nFAIL  b\n1 passed, 1 failed\n", 0, False)
    equal((it["status"], it["why"]), ("failed", "1 failed"))
    equal(report.judge(item(), "1 passed, 0 failed\n", 2, False)["why"], "exit status 2")
    equal(report.judge(item(), "PASS  a\n", -9, True)["status"], "timed out")
    equal(report.judge(item(budget_cut=True), "PASS  a\n", -9, True)["status"], "cut short")
    equal(report.judge(item(), "1 passed, 0 failed\n========= ERROR SUMMARY: 4 errors\n", 0, False)["why"],
          "4 sanitizer errors")
    equal(report.judge(item(min_passed=1), "0 passed, 0 failed\n", 0, False)["status"], "failed")
    equal(report.judge(item(no_skips=True), "3 passed, 0 failed, 1 skipped\n", 0, False)["status"], "failed")
    equal(report.judge(item(), "3 passed, 0 failed, 1 skipped\n", 0, False)["status"], "passed")
    equal(report.judge(item(needs_sanitizer_summary=True), "1 passed, 0 failed\n", 0, False)["status"], "failed")
    tail = report.judge(item(), "".join(f"line {i}\n" for i in range(40)), 0, False)["tail"]
    equal((len(tail), tail[-1]), (report.TAIL_LINES, "line 39"))


def fake_bin(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)


def gpu_report(tmp, smi, *args):
    """Runs tools/gpu-report/gpu-report.py with a stand-in nvidia-smi first on PATH."""
    bindir = os.path.join(tmp, "bin")
    fake_bin(os.path.join(bindir, "nvidia-smi"), smi)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    env.pop("GPU_REPORT_DATA", None)
    out = os.path.join(tmp, "report")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu-report", "gpu-report.py"),
                        "--out", out, *args], env=env, capture_output=True, text=True, timeout=300)
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    return r, rep, md


@check("no GPU (nvidia-smi lists none): every item 'not run' with the reason, nothing passes, exit 0")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        r, rep, md = gpu_report(tmp, 'echo "No devices were found"; exit 6', "--build", tmp)
        equal(r.returncode, 0)
        assert rep["items"], "no items"
        equal({it["status"] for it in rep["items"]}, {"not run"})
        equal({it["why"] for it in rep["items"]}, {"nvidia-smi lists no GPU"})
        equal(rep["summary"]["passed"], 0)
        assert rep["mode"].startswith("no GPU"), rep["mode"]
        assert "| check-gpu | not run | - | - | - | nvidia-smi lists no GPU |" in md, md[:2000]
        assert any(it["id"] == "memcheck" for it in rep["items"])


SMI = """case "$1" in
--query-gpu=*) echo "Stand-in GPU, 1000, 1500, 2000, 1.2.3" ;;
*) echo "| NVIDIA-SMI 1.2.3   Driver Version: 1.2.3   CUDA Version: 99.9 |" ;;
esac"""


@check("a stand-in GPU and binaries: counts, exit statuses, the SM count and device; a failed check fails the report")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        b = os.path.join(tmp, "build")
        fake_bin(f"{b}/tests/check_gpu", 'echo "PASS  a"; echo "PASS  b"; echo "2 passed, 0 failed"')
        fake_bin(f"{b}/solutions/00-hello-gpu/grade", 'echo "PASS  a"; echo "FAIL  b"; echo "1 passed, 1 failed"; exit 1')
        fake_bin(f"{b}/solutions/00-hello-gpu/train",
                 'echo "GPU 0: Stand-in GPU, 1.0 GiB, compute capability 9.0, 132 multiprocessors"')
        only = ["--only", "check-gpu", "lesson00-grade", "lesson00-run", "lesson02-grade"]
        r, rep, md = gpu_report(tmp, SMI, "--build", b, *only)
        equal(r.returncode, 1)
        got = {it["id"]: (it["status"], it["exit_status"], it["counts"] and it["counts"]["passed"])
               for it in rep["items"]}
        equal(got, {"check-gpu": ("passed", 0, 2), "lesson00-grade": ("failed", 1, 1),
                    "lesson00-run": ("passed", 0, None), "lesson02-grade": ("not run", None, None)})
        why = next(it["why"] for it in rep["items"] if it["id"] == "lesson02-grade")
        assert why.startswith("not built: ") and "02-gpu-cnn/grade" in why, why
        d = rep["device"]
        equal((d["name"], d["sm_count"], d["driver"], d["cuda_driver"]), ("Stand-in GPU", 132, "1.2.3", "99.9"))
        assert "Stand-in GPU, 1000 MiB, 132 SMs" in md, md[:1500]
        assert "| lesson00-grade | failed | 1 |" in md


REPORT = {"report": 1, "date": "2026-12-01 10:00", "mode": "GPU", "host": "a host", "commit": "abc",
          "device": {"name": "Stand-in GPU", "description": "Stand-in GPU, 1000 MiB", "driver": "1.2.3"},
          "items": [{"id": "lesson02-run", "status": "passed", "why": "", "command": "train --device cuda",
                     "stand_in": None, "metrics": {"lesson02.jsonl": [
                         {"device": "cpu", "samples_per_s": 10.0}, {"device": "cuda", "samples_per_s": 400.0}]}}]}


def take(tmp, rep, old_date):
    path = os.path.join(tmp, "report.json")
    with open(path, "w") as f:
        json.dump(rep, f)
    data = os.path.join(tmp, "02.jsonl")
    with open(data, "w") as f:
        f.write('{"device": "cpu", "samples_per_s": 1.0}\n')
    with open(os.path.join(tmp, "02.source"), "w") as f:
        f.write(f"machine: old\ndate: {old_date}\ncommand: old\n")
    said = gpu_data.take(path, "lesson02-run", data)
    with open(data) as f:
        rows = [json.loads(line) for line in f]
    with open(os.path.join(tmp, "02.source")) as f:
        return said, rows, f.read()


@check("make figures: a passed GPU item's metrics and a .source from the report replace older data")
def _():
    with tempfile.TemporaryDirectory() as tmp:
        said, rows, source = take(tmp, REPORT, "2026-11-22")
        equal(rows, REPORT["items"][0]["metrics"]["lesson02.jsonl"])
        assert "date: 2026-12-01" in source and "machine: Stand-in GPU, 1000 MiB" in source, source
        assert "train --device cuda" in source and "commit: abc" in source, source
        assert said.startswith("data from the GPU report"), said


@check("make figures keeps the data for a failed item, stand-in data, an emulated report or an older report")
def _():
    failed = json.loads(json.dumps(REPORT))
    failed["items"][0].update(status="failed", why="exit status 1")
    stand_in = json.loads(json.dumps(REPORT))
    stand_in["items"][0]["stand_in"] = "the synthetic set"
    emulated = dict(REPORT, mode="emulated: no GPU run")
    for rep, old_date, why in [(failed, "2026-11-22", "failed"), (stand_in, "2026-11-22", "stand-in"),
                               (emulated, "2026-11-22", "not a GPU run"), (REPORT, "2026-12-02", "is from 2026-12-02")]:
        with tempfile.TemporaryDirectory() as tmp:
            said, rows, source = take(tmp, rep, old_date)
            equal(rows, [{"device": "cpu", "samples_per_s": 1.0}])
            assert "date: " + old_date in source, source
            assert said.startswith("data kept") and why in said, said


finish()
