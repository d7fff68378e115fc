#!/usr/bin/env python3
"""make gpu-report's multi-GPU items: the lessons' programs (and make bench-comm's) on
several GPUs, one per rank, against the same on one, compared on their real output.

  tools/gpu-report/multi.py ITEM --build BUILD --out DIR --ranks N [--nodes K]
                            [--device cuda|cpu] [--size gpu|cpu] [--text 'DATA OPTIONS']

ITEM: nccl, kill-rank, lesson06, lesson07, lesson08, lesson09, lesson09-3d, and
lesson06-bf16 ... lesson09-bf16. N ranks in all, on K nodes (the allocation's; N / K
a node); the ranks start under srun in a Slurm allocation, else under mpirun
(launch.py). --device cpu --size cpu: CPU ranks and tiny models, the report's
--cpu-ranks mode, so that the same runs and comparisons are proven without a GPU.
--text: the options that give the lessons their text, as the report found it.

Each run's output goes to DIR/ITEM/RUN.out (its --metrics to RUN.jsonl) and, NCCL's own
INFO lines left out, to stdout ("  | "); then one line per check, PASS, FAIL or SKIP
with what matched and by how much, and last "N passed, M failed[, K skipped]" (exit 1
when one failed). DIR/ITEM-checks.jsonl: the checks, one JSON line each; DIR/nccl.json
what NCCL said of itself."""

import argparse
import contextlib
import functools
import json
import os
import re
import shlex
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare  # noqa: E402
import launch  # noqa: E402
import smi  # noqa: E402

BF16_LOSSES = 2e-2  # issue 28's bound for bf16; one bf16 step is 2^-8 = 0.4 %

# The models: on GPUs the lessons' own (the tutorial's transformer) for a few steps; on
# CPU ranks the tests' tiny ones. Lesson 09 takes 8 heads so that --tp 2, 4 and 8 divide.
SIZES = {
    "gpu": {"lm": [], "lm09": ["--heads", "8"], "steps": 20, "batch": 16, "micro": 8,
            "bytes": "256M", "threads": 4, "bench": ["--iters", 20, "--rounds", 3]},
    "cpu": {"lm": ["--d-model", "16", "--heads", "2", "--d-hid", "16", "--layers", "2", "--bptt", "16"],
            "lm09": ["--d-model", "32", "--heads", "8", "--d-hid", "32", "--layers", "2", "--bptt", "16"],
            "steps": 10, "batch": 8, "micro": 8, "bytes": "256K", "threads": 1, "bench": ["--iters", 4, "--rounds", 1]},
}
HEADS09 = 8


class Item:
    def __init__(self, a):
        self.a, self.name, self.n, self.nodes = a, a.item, a.ranks, a.nodes
        self.per_node = self.n // self.nodes
        self.size = SIZES[a.size]
        self.text = shlex.split(a.text)
        self.launcher = launch.Launcher(a.device)
        self.checks = []
        os.makedirs(os.path.join(a.out, a.item), exist_ok=True)

    def on(self, n):
        """"2 GPUs", "1 GPU", or on CPU ranks "2 CPU ranks"."""
        unit = "GPU" if self.a.device == "cuda" else "CPU rank"
        return f"{n} {unit}{'' if n == 1 else 's'}"

    def path(self, run, ext):
        """DIR/ITEM/RUN.ext: a run's output, metrics (and the killed rank's pid files)."""
        return os.path.join(self.a.out, self.name, f"{run}.{ext}")

    def run(self, run, n, argv, nodes=1, timeout=150, sample=False, env=None, on_start=None):
        """Runs argv on n ranks; returns {"rc", "text", "seconds", "metrics", "memory"}."""
        words = self.launcher.words(n, nodes) + [str(w) for w in argv]
        print(f"== {run}: {shlex.join(words)}", flush=True)
        e = self.launcher.env()
        e.update(env or {})
        sampler = smi.MemorySampler() if sample and self.a.device == "cuda" else None
        with sampler or contextlib.nullcontext():
            rc, text, secs = launch.run(words, timeout, e, self.path(run, "out"), on_start)
        shown = [line for line in text.splitlines() if " NCCL INFO " not in line]
        for line in shown[-40:]:
            print(f"  | {line}")
        hidden = len(text.splitlines()) - len(shown)
        print(f"  ({'timed out' if rc is None else f'exit status {rc}'}, {secs:.1f} s"
              + (f"; {hidden} NCCL INFO lines in {self.path(run, 'out')}" if hidden else "") + ")", flush=True)
        return {"rc": rc, "text": text, "seconds": secs, "metrics": self.path(run, "jsonl"),
                "memory": sampler.added_mib() if sampler else None}

    def ran(self, r, what):
        """A failed check and False when a run did not end well."""
        if r["rc"] == 0:
            return True
        rc = r["rc"]
        self.check(False, f"{what}: {'timed out' if rc is None else f'exit status {rc}'} (its last lines are above)")
        return False

    def check(self, ok, text, **data):
        self.checks.append(("PASS" if ok else "FAIL", text, data))

    def skip(self, text):
        self.checks.append(("SKIP", text, {}))

    def finish(self):
        print()
        with open(os.path.join(self.a.out, f"{self.name}-checks.jsonl"), "w", encoding="utf-8") as f:
            for status, text, data in self.checks:
                print(f"{status}  {text}")
                f.write(json.dumps({"item": self.name, "status": status, "check": text, **data}) + "\n")
        c = [s for s, _, _ in self.checks]
        p, fl, sk = c.count("PASS"), c.count("FAIL"), c.count("SKIP")
        if not p and not fl:
            fl = 1
            print("FAIL  no check ran")
        print(f"{p} passed, {fl} failed" + (f", {sk} skipped" if sk else ""))
        return 1 if fl else 0

    # the options of every lesson run
    def common(self, timeout=120):
        """--timeout: how long a rank waits for another before the job ends."""
        return ["--device", self.a.device, "--threads", self.size["threads"], "--timeout", timeout]

    def program(self, lesson):
        return os.path.join(self.a.build, "solutions", lesson, "train")


# ---------------------------------------------------------------- NCCL


def nccl(it):
    s = it.size
    r = it.run("bench", it.n, [os.path.join(it.a.build, "bench", "bench_comm"), "--device", it.a.device,
                               "--collective", "all", "--min-bytes", "1K", "--max-bytes", s["bytes"], "--check",
                               *s["bench"], "--ranks", it.n, "--metrics", it.path("bench", "jsonl")],
               nodes=it.nodes, timeout=600,
               env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,ENV"} if it.a.device == "cuda" else {})
    ok = it.ran(r, f"make bench-comm's program on {it.n} ranks")
    want = _sizes(1024, s["bytes"])
    for coll in ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "send-recv"):
        rows = compare.bandwidth_rows(r["metrics"], coll)
        if not rows:
            it.check(False, f"{coll} on {it.n} ranks: no bandwidth line ({'the run failed' if not ok else 'none written'})")
            continue
        wrong = sum(x.get("wrong", 0) for x in rows)
        # nccl-tests' definitions: bus bandwidth = bytes / time x the collective's factor
        f = compare.bus_factor(coll, it.n)
        off = max(abs(x["busbw_GBps"] - x["bytes"] / (x["time_us"] * 1e-6) / 1e9 * f) / max(x["busbw_GBps"], 1e-12)
                  for x in rows)
        small, big = rows[0], rows[-1]
        # NCCL on GPUs: 1 KB is all latency, 256 MB all bandwidth (CPU ranks on a busy
        # machine need not show it)
        grows = big["busbw_GBps"] > small["busbw_GBps"] or it.a.device != "cuda"
        passed = len(rows) >= len(want) and not wrong and "wrong" in big and off < 1e-3 and grows
        it.check(passed, f"{coll} on {it.n} ranks ({big['backend']}): {len(rows)} sizes {_mb(small['bytes'])} to "
                         f"{_mb(big['bytes'])}, {'every result as expected' if not wrong else f'{wrong} entries WRONG'}; "
                         f"bus bandwidth {small['busbw_GBps']:.3g} GB/s at {_mb(small['bytes'])}, "
                         f"{big['busbw_GBps']:.4g} GB/s at {_mb(big['bytes'])} (algbw x {f:.3g}, nccl-tests' "
                         f"definition{'' if off < 1e-3 else f'; the printed busbw is {off:.1%} off it'})"
                         + ("" if grows else "; it does not grow from the smallest size to the largest")
                         + ("" if len(rows) >= len(want) else f"; {len(want)} sizes asked"),
                 collective=coll, busbw_GBps={str(x["bytes"]): x["busbw_GBps"] for x in rows}, wrong=wrong)
    if it.a.device != "cuda":
        it.skip("the path NCCL chose: CPU ranks (MPI backend), no NCCL")
        return
    rep = compare.nccl_report(r["text"])
    path = compare.nccl_path(rep)
    with open(os.path.join(it.a.out, "nccl.json"), "w", encoding="utf-8") as f:
        json.dump({**rep, "path": path}, f)
    it.check(bool(path and rep["version"]), f"NCCL {rep['version'] or '(no version line)'}: "
             + (path or "its report (NCCL_DEBUG=INFO) names no channel's transport nor a graph's link type"),
             nccl=rep)


def _sizes(lo, hi):
    top = int(hi[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[hi[-1]]
    out = []
    while lo <= top:
        out.append(lo)
        lo *= 2
    return out


def _mb(b):
    return f"{b / (1 << 20):g} MB" if b >= 1 << 20 else f"{b / 1024:g} KB" if b >= 1024 else f"{b} B"


# ---------------------------------------------------------------- lesson 06


def lesson06(it, precision="fp32"):
    s, n = it.size, it.n
    prog = it.program("06-ddp")
    tol = compare.SAME_LOSSES if precision == "fp32" else BF16_LOSSES
    base = [prog, "--model", "transformer", *it.text, *s["lm"], "--dropout", 0, "--max-steps", s["steps"],
            "--epochs", 1, "--precision", precision, *it.common()]
    tag = "" if precision == "fp32" else " in bf16"
    ref = it.run("one", 1, base + ["--batch-size", s["batch"] * n, "--metrics", it.path("one", "jsonl")])
    modes = [("blocking", "mine")] if precision == "fp32" else []
    modes.append(("buckets", "buckets"))
    if not it.ran(ref, f"lesson 06{tag} on {it.on(1)}, batch {s['batch'] * n}"):
        return
    one = compare.rows(ref["metrics"])[-1:]
    for name, sync in modes:
        r = it.run(name, n, base + ["--batch-size", s["batch"], "--grad-sync", sync,
                                    "--metrics", it.path(name, "jsonl")], nodes=it.nodes)
        what = f"lesson 06{tag} on {it.on(n)} x batch {s['batch']}, {name} ({'--grad-sync ' + sync})"
        if not it.ran(r, what):
            continue
        got = compare.rows(r["metrics"])[-1:]
        digest, why = compare.one_digest(r["text"], n)
        keys = ("train_loss", "test_loss")
        ok, seen = compare.same_losses([one[0][k] for k in keys] if one else [],
                                       [got[0][k] for k in keys] if got else [], tol)
        eff = compare.efficiency(got[0].get("tokens_per_s") if got else None,
                                 one[0].get("tokens_per_s") if one else None, n)
        hidden = compare.exposed_ms(r["text"])
        it.check(ok and digest is not None,
                 f"{what} against {it.on(1)} x batch {s['batch'] * n}: train and test loss, {seen}"
                 + (f"; {why}" if why else "; the ranks end with one parameter digest")
                 + (f"; scaling efficiency {eff:.0%} ({got[0]['tokens_per_s']:.0f} against "
                    f"{one[0]['tokens_per_s']:.0f} tokens/s)" if eff else "")
                 + (f"; communication not hidden {hidden:g} ms a step" if hidden is not None else ""),
                 efficiency=eff, exposed_ms=hidden)


# ---------------------------------------------------------------- lesson 07


def lesson07(it, precision="fp32"):
    s, p, m = it.size, 2, it.size["micro"]
    tol = compare.SAME_LOSSES if precision == "fp32" else BF16_LOSSES
    tag = "" if precision == "fp32" else " in bf16"
    base = [it.program("07-pipeline"), *it.text, *s["lm"], "--layers", 4, "--dropout", 0,
            "--batch-size", 2 * m, "--micro-batches", m, "--max-steps", s["steps"], "--epochs", 1,
            "--precision", precision, *it.common()]
    ref = it.run("one", 1, base + ["--metrics", it.path("one", "jsonl")])
    if not it.ran(ref, f"lesson 07{tag} on {it.on(1)} (one stage)"):
        return
    one = compare.step_losses(ref["metrics"])
    schedules = ("gpipe", "1f1b") if precision == "fp32" else ("1f1b",)
    memory = {}
    for sched in schedules:
        r = it.run(sched, p, base + ["--schedule", sched, "--metrics", it.path(sched, "jsonl")], sample=True)
        what = f"lesson 07{tag} on {it.on(2)}, {sched}, {m} micro-batches"
        if not it.ran(r, what):
            continue
        ok, seen = compare.same_losses(one, compare.step_losses(r["metrics"]), tol)
        it.check(ok, f"{what} against {it.on(1)}: per-step losses, {seen}")
        if precision != "fp32":
            continue
        b = compare.bubble(r["metrics"], p, m)
        if b is None:
            it.check(False, f"{what}: no per-step bubble_fraction in its --metrics")
        else:
            uneven = f"; the stages' own compute times allow {b['uneven']:.3f}" if b["uneven"] is not None else ""
            it.check(b["formula"] - 0.02 <= b["measured"] < 1,
                     f"{what}: bubble {b['measured']:.3f} (median of {b['steps']} steps) against (p - 1) / "
                     f"(m + p - 1) = {b['formula']:.3f}, {b['measured'] / b['formula']:.2f}x{uneven} "
                     f"(not below the formula, less 0.02)", bubble=b)
        memory[sched] = compare.stage_memory(r["text"])
        _stage_memory(it, what, memory[sched], r["memory"])
    if precision == "fp32" and len(memory) == 2 and all(0 in v for v in memory.values()):
        g, f = memory["gpipe"][0], memory["1f1b"][0]
        it.check(f["in_flight"] < g["in_flight"] and f["activations_mb"] < g["activations_mb"],
                 f"lesson 07, stage 0's activations: 1F1B {f['activations_mb']:.1f} MB ({f['in_flight']} micro-batches "
                 f"in flight) against GPipe's {g['activations_mb']:.1f} MB ({g['in_flight']}): fewer")


def _stage_memory(it, what, stages, added):
    """Each stage's own count of its memory against what nvidia-smi saw its GPU add."""
    if len(stages) != 2:
        it.check(False, f"{what}: {len(stages)} 'stage s memory' lines, 2 expected")
        return
    if it.a.device != "cuda":
        it.skip(f"{what}: the stages' memory against nvidia-smi's: CPU ranks")
        return
    gpus = smi.visible(smi.listing("index,uuid"), os.environ.get("CUDA_VISIBLE_DEVICES"))
    parts, ok = [], True
    for st, mem in sorted(stages.items()):
        idx = gpus[st % len(gpus)][0] if gpus else None
        seen = (added or {}).get(idx)
        if seen is None:
            ok = False
            parts.append(f"stage {st}: nvidia-smi did not list GPU {idx}")
            continue
        seen_mb = seen * 1.048576  # MiB to MB
        ok = ok and seen_mb >= mem["total_mb"]
        parts.append(f"stage {st} counts {mem['total_mb']:.1f} MB, nvidia-smi saw GPU {idx} add {seen_mb:.0f} MB "
                     f"(the rest: CUDA's context, cuBLAS's and NCCL's buffers)"
                     + (f"; it said its GPU had {mem['gpu_in_use_gb']:.2f} GB in use" if mem["gpu_in_use_gb"] else ""))
    it.check(ok, f"{what}, memory: " + "; ".join(parts) + " (what a stage counts must be on its GPU)")


# ---------------------------------------------------------------- lesson 08


def lesson08(it, precision="fp32"):
    s, n = it.size, it.n
    tag = "" if precision == "fp32" else " in bf16"
    base = [it.program("08-zero"), *it.text, *s["lm"], "--batch-size", s["batch"] * n, "--max-steps", s["steps"],
            "--epochs", 1, "--precision", precision, *it.common()]
    first = None
    for stage in range(4):
        r = it.run(f"stage{stage}", n, base + ["--stage", stage, "--metrics", it.path(f"stage{stage}", "jsonl")],
                   nodes=it.nodes, sample=True)
        what = f"lesson 08{tag}, ZeRO stage {stage} on {it.on(n)}"
        if not it.ran(r, what):
            continue
        d, why = compare.one_digest(r["text"], n, ("parameter", "optimizer"))
        if d is None:
            it.check(False, f"{what}: {why}")
            continue
        if first is None:
            first = (stage, d)
            it.check(True, f"{what}: every rank ends with parameter digest {d['parameter']} and optimizer digest "
                           f"{d['optimizer']}")
        else:
            it.check(d == first[1], f"{what}: digests {d['parameter']} / {d['optimizer']} "
                                    f"{'equal' if d == first[1] else 'differ from'} stage {first[0]}'s")
        if precision == "fp32":
            _zero_memory(it, what, stage, r)


def _zero_memory(it, what, stage, r):
    model, got = compare.zero_model(r["text"]), compare.zero_memory(r["metrics"])
    if not model or not got:
        it.check(False, f"{what}: no 'model: ... parameters' line or no memory in its --metrics")
        return
    psi, ob = model
    ok, seen = compare.zero_against_formula(got, compare.zero_formula(stage, psi, it.n, ob), it.n, ob)
    sent = compare.zero_bytes_sent(r["text"])
    if sent:
        ok = ok and abs(sent[0] - sent[1]) <= 0.01 * max(sent[1], 1e-9) + 0.001
        seen += f"; {sent[0]:.3f} MB sent a step by rank 0, the formula {sent[1]:.3f} MB"
    if it.a.device == "cuda" and r["memory"]:
        most = max(r["memory"].values()) * 1.048576
        ok = ok and most * 1e6 >= got["peak"]
        seen += (f"; nvidia-smi saw a GPU add {most:.0f} MB at most, the buffers and windows being "
                 f"{got['peak'] / 1e6:.1f} MB")
    it.check(ok, f"{what}, memory per rank: {seen}", memory=got, psi=psi)


# ---------------------------------------------------------------- lesson 09


def lesson09(it, precision="fp32"):
    s = it.size
    tol = compare.SAME_LOSSES if precision == "fp32" else BF16_LOSSES
    tag = "" if precision == "fp32" else " in bf16"
    base = [it.program("09-tensor-parallel"), *it.text, *s["lm09"], "--batch-size", s["batch"] * 2,
            "--max-steps", s["steps"], "--epochs", 1, "--precision", precision, *it.common()]
    ref = it.run("tp1", 1, base + ["--tp", 1, "--metrics", it.path("tp1", "jsonl")])
    if not it.ran(ref, f"lesson 09{tag} at --tp 1 on {it.on(1)}"):
        return
    one = compare.step_losses(ref["metrics"])
    layouts = [("tp2", 2, 1, ["--tp", 2])]
    g = it.per_node
    if g > 2 and HEADS09 % g == 0:
        layouts.append((f"tp{g}", it.n, it.nodes, ["--tp", g, "--dp", it.nodes]))
    elif g > 2:
        it.skip(f"lesson 09{tag} at --tp {g}: {HEADS09} heads do not split over {it.on(g)}")
    elif it.nodes > 1:
        layouts.append((f"tp2-dp{it.nodes}", it.n, it.nodes, ["--tp", 2, "--dp", it.nodes]))
    if precision != "fp32":
        layouts = layouts[-1:]
    for name, n, nodes, opts in layouts:
        r = it.run(name, n, base + opts + ["--metrics", it.path(name, "jsonl")], nodes=nodes)
        what = f"lesson 09{tag} {' '.join(map(str, opts))} on {it.on(n)}" + (f" of {nodes} nodes" if nodes > 1 else "")
        if not it.ran(r, what):
            continue
        ok, seen = compare.same_losses(one, compare.step_losses(r["metrics"]), tol)
        d, why = compare.one_digest(r["text"], n)
        it.check(ok and d is not None, f"{what} against --tp 1 on {it.on(1)}: rank 0's per-step losses, {seen}"
                 + (f"; {why}" if why else "; every rank ends with one parameter digest"))


def lesson09_3d(it):
    s = it.size
    nodes = 1 if it.per_node >= 8 else it.nodes
    if it.n < 8 or 8 % nodes:
        it.skip(f"the 3D layout needs 8 ranks, one per GPU ({it.on(it.n)} here)")
        return
    base = [it.program("09-tensor-parallel"), *it.text, *s["lm09"], "--batch-size", s["batch"] * 2,
            "--max-steps", s["steps"], "--epochs", 1, "--dropout", 0, *it.common()]
    ref = it.run("one", 1, base + ["--metrics", it.path("one", "jsonl")])
    if not it.ran(ref, "lesson 09 on 1 GPU, dropout 0"):
        return
    r = it.run("3d", 8, base + ["--dp", 2, "--pp", 2, "--tp", 2, "--metrics", it.path("3d", "jsonl")], nodes=nodes)
    what = f"lesson 09 --dp 2 --pp 2 --tp 2 on {it.on(8)}{f' of {nodes} nodes' if nodes > 1 else ''}, dropout 0"
    if it.ran(r, what):
        ok, seen = compare.same_losses(compare.step_losses(ref["metrics"]), compare.step_losses(r["metrics"]))
        d, why = compare.one_digest(r["text"], 8)
        inside = "tensor groups inside nodes" in r["text"]
        it.check(ok and d is not None and inside, f"{what} against {it.on(1)}: rank 0's per-step losses, {seen}"
                 + (f"; {why}" if why else "; every rank ends with one parameter digest")
                 + ("; tensor groups inside nodes" if inside else "; its grid line does not say 'tensor groups inside nodes'"))


# ---------------------------------------------------------------- a killed rank


def kill_rank(it):
    """Lesson 06 on every GPU; once it trains, the last rank of this node is killed
    (SIGKILL: its process, as a GPU's process dies); the job must end within its
    --timeout (20 s) and a margin, not with exit status 0, naming that rank."""
    victim, timeout, margin = it.per_node - 1, 20, 40
    piddir = it.path("pids", "d")
    os.makedirs(piddir, exist_ok=True)
    for old in os.listdir(piddir):
        os.remove(os.path.join(piddir, old))
    # each rank writes its pid (that of the program: exec) and host, then becomes it
    wrapper = ["bash", "-c", 'r=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${RANK:-x}}}; '
               f'echo "$$ $(hostname -s)" >{shlex.quote(piddir)}/rank$r; exec "$@"', "rank"]
    argv = wrapper + [it.program("06-ddp"), "--dataset", "synthetic", "--train-limit", 2000 * it.n,
                      "--test-limit", 200, "--epochs", 10000, "--batch-size", 50, *it.common(timeout)]
    said = {}

    def hunt(p, out_path):
        def go():
            start = time.monotonic()
            pidfile = os.path.join(piddir, f"rank{victim}")
            while time.monotonic() - start < 120 and p.poll() is None:
                text = _read(out_path)
                if os.path.exists(pidfile) and re.search(r"^ +1 +[0-9.]+ ", text, re.M):
                    break  # rank 0 printed its first epoch: every rank trains
                time.sleep(0.2)
            if p.poll() is not None:
                said["why"] = "the job ended before the kill"
                return
            pid, host = (_read(pidfile).split() + ["", ""])[:2]
            if host != socket.gethostname().split(".")[0]:
                said["why"] = f"rank {victim} runs on {host or '?'}, not on this node"
                return
            said["offset"] = len(_read(out_path))
            try:
                os.kill(int(pid), 9)
            except (ValueError, ProcessLookupError) as e:
                said["why"] = f"could not kill rank {victim} (pid '{pid}'): {e}"
                return
            said["killed"] = time.monotonic()
        t = threading.Thread(target=go, daemon=True)
        t.start()
        said["thread"] = t

    r = it.run("killed", it.n, argv, nodes=it.nodes, timeout=240, on_start=hunt)
    ended = time.monotonic()
    said["thread"].join(timeout=5)
    if "killed" not in said:
        it.check(False, f"lesson 06 on {it.on(it.n)}, rank {victim} to be killed: {said.get('why', 'it was not killed')}")
        return
    took = ended - said["killed"]
    after = r["text"][said["offset"]:]
    named = re.search(rf"\b(?:process )?rank {victim}\b|\btask {victim}\b", after)
    ok = r["rc"] not in (0, None) and took <= timeout + margin and named
    it.check(bool(ok), f"lesson 06 on {it.on(it.n)}, rank {victim}'s process killed (SIGKILL) while it trained: "
             + ("the job did not end within the item's limit" if r["rc"] is None else
                f"the job ended {took:.0f} s later (at most {timeout} s of --timeout + {margin}) with exit status "
                f"{r['rc']}, " + (f"naming it: '{_line_of(after, named)}'" if named else
                                  f"no line after the kill names rank {victim}")), seconds=took)


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _line_of(text, m):
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start:end if end >= 0 else None].strip()[:160]


ITEMS = {"nccl": nccl, "kill-rank": kill_rank, "lesson06": lesson06, "lesson07": lesson07,
         "lesson08": lesson08, "lesson09": lesson09, "lesson09-3d": lesson09_3d}
for _name in ("lesson06", "lesson07", "lesson08", "lesson09"):
    ITEMS[_name + "-bf16"] = functools.partial(ITEMS[_name], precision="bf16")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("item", choices=sorted(ITEMS))
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--size", choices=sorted(SIZES), default=None)
    ap.add_argument("--text", default="")
    a = ap.parse_args()
    a.size = a.size or ("gpu" if a.device == "cuda" else "cpu")
    if a.ranks < 2 or a.nodes < 1 or a.ranks % a.nodes:
        sys.exit(f"multi.py: --ranks {a.ranks} on --nodes {a.nodes}: 2 ranks or more, as many on each node")
    it = Item(a)
    print(f"{a.item}: {a.ranks} ranks on {a.nodes} node(s), {it.launcher.describe()}, --device {a.device}", flush=True)
    ITEMS[a.item](it)
    return it.finish()


if __name__ == "__main__":
    sys.exit(main())
