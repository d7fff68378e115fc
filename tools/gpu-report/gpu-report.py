#!/usr/bin/env python3
"""make gpu-report: on a GPU node, every GPU check and benchmark the project owes in one
command, and one report of them: OUT/report.md, OUT/report.json (with every --metrics
file's lines), OUT/report.log (every item's whole output), OUT/metrics/*.jsonl.

  tools/gpu-report/gpu-report.py [--build build] [--out build/gpu-report] [--budget S]
                                 [--emulated | --cpu-ranks N] [--only ID...]

It runs already-built binaries only (make gpu-report-build makes them, here or on
another machine: BUILD=build-gpu ...); it compiles nothing. What cannot run (no GPU, no
nvidia-smi, no compute-sanitizer, a binary not built, one GPU for a multi-GPU item) is
reported as "not run" with the reason, never as passed. --emulated
(GPU_REPORT_EMULATED=1) runs check-gpu on the CUDA emulator instead of a GPU, so that
the report is made end to end without one.

With G >= 2 GPUs (nvidia-smi's, narrowed by CUDA_VISIBLE_DEVICES) the multi-GPU items
run too, one GPU per rank (multi_items.py): under srun inside a Slurm allocation (on all
of its nodes, G a node), under mpirun otherwise. Run from an allocation's login-node
shell (salloc), the report moves itself onto the allocation's first node (srun) first.
--cpu-ranks N runs only the multi-GPU items, on N CPU ranks with tiny models: their
launch and comparisons proven without a GPU (not a GPU run).
Exit status: 1 when an item that ran failed, 0 otherwise (also when nothing could run)."""

import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import items as items_mod  # noqa: E402
import report  # noqa: E402
import smi  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SMI_FIELDS = "name,memory.total,clocks.max.sm,clocks.max.memory,driver_version"
# an item that would start with less left of the budget is not started (the tests'
# stand-ins take seconds: GPU_REPORT_MIN_START_S)
MIN_START_S = float(os.environ.get("GPU_REPORT_MIN_START_S") or 60)


def output_of(words, timeout=30):
    """stdout of a command, or None when it cannot run or fails."""
    try:
        r = subprocess.run(words, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def gpu_device():
    """(device dict, None) for the GPUs nvidia-smi lists, or ({}, why there is none)."""
    if not shutil.which("nvidia-smi"):
        return {}, "no nvidia-smi on this machine (no NVIDIA driver)"
    listing = output_of(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"])
    gpus = [[f.strip() for f in line.split(",")] for line in (listing or "").splitlines() if line.strip()]
    if not gpus:
        return {}, "nvidia-smi lists no GPU"
    name, mem, sm_clock, mem_clock, driver = gpus[0]
    header = output_of(["nvidia-smi"]) or ""
    cuda = re.search(r"CUDA Version: *([0-9.]+)", header)
    d = {"name": name, "memory_mib": mem, "sm_clock_max_mhz": sm_clock,
         "memory_clock_max_mhz": mem_clock, "driver": driver, "count": len(gpus),
         "cuda_driver": cuda[1] if cuda else None, "sm_count": None}
    return d, None


def describe(d, ctx):
    if not d:
        return
    sms = f"{d['sm_count']} SMs" if d["sm_count"] else "SM count not read (lesson 00 did not run)"
    g = ctx["multi"]["per_node"]
    more = (f"; {d['count']} GPUs listed, {g} of them visible: the one-GPU items use the first, the "
            f"multi-GPU items one a rank" if d["count"] > 1 or g > 1 else "")
    d["description"] = (f"{d['name']}, {d['memory_mib']} MiB, {sms}, clocks up to "
                        f"{d['sm_clock_max_mhz']} MHz (SM) and {d['memory_clock_max_mhz']} MHz (memory){more}")
    nvcc = output_of([os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"), "--version"])
    release = re.search(r"release ([0-9.]+)", nvcc or "")
    d["cuda"] = (f"the driver's {d['cuda_driver'] or '?'}; toolkit here "
                 f"{release[1] if release else 'none (no nvcc)'}; the binaries load {ctx['cudart'] or 'no libcudart'}")


def sm_count_from(items):
    """Lessons 00 and 02 print 'GPU 0: ..., N multiprocessors'."""
    for it in items:
        for line in it.get("tail", []) + it.get("head", []):
            m = re.search(r"^GPU 0: .*?(\d+) multiprocessors", line)
            if m:
                return int(m[1])
    return None


def library(binary, name):
    """(path, missing) of a shared library a binary loads, from ldd."""
    text = output_of(["ldd", binary]) if os.path.exists(binary) else None
    for line in (text or "").splitlines():
        if name in line:
            missing = "not found" in line
            path = line.split("=>")[-1].split("(")[0].strip()
            return (None if missing else path), missing
    return None, False


def nccl_dir(python):
    """Where NCCL is when the binaries cannot find it: the GPU image's Python package."""
    for py in filter(None, [python, "python3"]):
        path = output_of([py, "-c", "import nvidia.nccl as m; print(list(m.__path__)[0])"])
        if path and os.path.isdir(os.path.join(path.strip(), "lib")):
            return os.path.join(path.strip(), "lib")
    found = glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib")
    return found[0] if found else None


def find_sanitizer():
    on_path = shutil.which("compute-sanitizer")
    in_cuda = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "compute-sanitizer")
    return on_path or (in_cuda if os.access(in_cuda, os.X_OK) else None)


def find_data(work):
    """The lessons' data: Fashion-MNIST for lesson 02, the fortunes text for the
    transformers; where they are missing a stand-in, said in the report."""
    given = os.environ.get("GPU_REPORT_DATA", "")
    image_note = text_note = None
    fm = [os.path.join(d, "fashion-mnist") for d in (given, "datasets/data", "/usr/share/datasets") if d]
    fm = [d for d in fm if glob.glob(os.path.join(d, "train-images-idx3-ubyte*"))]
    if fm:
        image = ["--dataset", "fashion-mnist", "--data", fm[0]]
    else:
        image = ["--dataset", "synthetic"]
        image_note = ("no Fashion-MNIST here: lesson 02 trained on the synthetic set "
                      "(GPU_REPORT_DATA=DIR with DIR/fashion-mnist/ brings it)")
    fo = [d for d in (os.path.join(given, "fortunes") if given else "", "/usr/share/games/fortunes")
          if d and os.path.isdir(d)]
    if fo:
        where = ["fortunes", "--data", fo[0]]
    else:
        text = os.path.join(work, "text.txt")
        with open(text, "w", encoding="utf-8") as out:
            for md in sorted(glob.glob("docs/*.md") + glob.glob("course/*/README.md")):
                with open(md, encoding="utf-8") as f:
                    out.write(f.read())
        where = ["text", "--data", text]
        text_note = ("no fortunes text here: the transformers read the course's Markdown "
                     "(GPU_REPORT_DATA=DIR with DIR/fortunes/ brings it)")
    return image, image_note, {"dataset": ["--dataset", *where], "text": ["--text", *where]}, text_note


def tasks_per_node(env):
    """The fewest tasks a node of the Slurm allocation has, or None where it says nothing
    (SLURM_TASKS_PER_NODE: "4(x2)" or "4,2")."""
    # GPU_REPORT_TASKS_PER_NODE: the job's, where the report moved into a step of 1 task
    text = (env.get("GPU_REPORT_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE")
            or env.get("SLURM_TASKS_PER_NODE") or "")
    counts = [int(m) for m in re.findall(r"(\d+)(?:\(x\d+\))?", text)]
    return min(counts) if counts else None


def where(cpu_ranks, env=None):
    """How the multi-GPU items run here: {"per_node" (GPUs a node they use: G), "nodes",
    "launcher" (srun, mpirun or None), "why" (no launcher), "notes"}."""
    env = os.environ if env is None else env
    notes = []
    if cpu_ranks:
        per_node = cpu_ranks
    else:
        per_node, rows = smi.count()
        listed = len(smi.listing("index"))
        cvd = env.get("CUDA_VISIBLE_DEVICES")
        if cvd is not None and per_node < len([e for e in cvd.split(",") if e.strip()]) == listed:
            per_node = listed  # nvidia-smi in the job's cgroup numbers the job's GPUs itself
        if cvd is not None and listed and per_node < listed:
            notes.append(f"CUDA_VISIBLE_DEVICES={cvd}: {per_node} of the {listed} GPUs nvidia-smi lists")
    nodes, launcher, why = 1, None, None
    if env.get("SLURM_JOB_ID"):
        nodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 1)
        tasks = tasks_per_node(env)
        if tasks and tasks < per_node:
            notes.append(f"the allocation has {tasks} tasks a node: the multi-GPU items use {tasks} of a "
                         f"node's {per_node} GPUs")
            per_node = tasks
        launcher = "srun" if shutil.which("srun") else None
        why = None if launcher else "no srun on this node, inside Slurm job " + env["SLURM_JOB_ID"]
    elif shutil.which("mpirun"):
        launcher = "mpirun"
    else:
        why = ("no launcher for ranks: neither a Slurm allocation (salloc, sbatch slurm/gpu-check.sbatch) "
               "nor Open MPI's mpirun (sudo make deps)")
    return {"per_node": per_node, "nodes": nodes, "launcher": launcher, "why": why, "notes": notes}


def run_item(it, env, log):
    """Runs an item's command with its limit; fills in its status, counts and last lines."""
    log.write(f"\n######## {it['id']}: {it['command']}\n")
    log.flush()
    start = time.monotonic()
    p = subprocess.Popen(["bash", "-c", it["command"]], cwd=ROOT, env={**env, **it["env"]},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)
    timed_out = False
    try:
        text, _ = p.communicate(timeout=it["timeout_s"])
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                text, _ = p.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
    it["seconds"] = round(time.monotonic() - start, 1)
    log.write(text)
    log.write(f"######## {it['id']}: exit status {p.returncode}, {it['seconds']} s\n")
    log.flush()
    it["head"] = text.splitlines()[:5]
    return report.judge(it, text, p.returncode, timed_out)


def read_metrics(it):
    """The item's --metrics files' lines; a path with "*" stands for the files it matches
    (the multi-GPU items' runs), each under its own name."""
    rows = {}
    for name, path in it.pop("metric_paths").items():
        paths = sorted(glob.glob(path)) if "*" in path else [path]
        for p in paths:
            if os.path.exists(p):
                key = name if p == path else os.path.join(os.path.dirname(name), os.path.basename(p))
                with open(p, encoding="utf-8") as f:
                    rows[key] = [json.loads(line) for line in f if line.strip().startswith("{")]
    it["metrics"] = rows


def commit(build):
    c = output_of(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    if c:
        dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD"]).returncode != 0
        c = c.strip() + (" with local changes" if dirty else "")
    else:
        c = "unknown (no git here)"
    stamp = os.path.join(build, "gpu-report-commit")
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            c += f"; binaries built from {f.read().strip()}"
    return c


def host():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.platform()}"


def multi_text(ctx, cpu_ranks):
    """The multi-GPU items' text: the lessons' (ctx), or on CPU ranks a short one
    (Debian's GPL-3 where it is, else the course's Markdown) with a small vocabulary."""
    gpl = "/usr/share/common-licenses/GPL-3"
    if cpu_ranks and os.path.exists(gpl):
        return ["--dataset", "text", "--data", gpl], ["--text", "text", "--data", gpl]
    return ctx["text_args"]["dataset"], ctx["text_args"]["text"]


def setup(build, out, emulated, cpu_ranks=0):
    """What the items need from this machine: (device, why there is no GPU, the items'
    environment, notes for the report, the items' context)."""
    device, no_gpu = gpu_device()
    if cpu_ranks:
        device, no_gpu = {}, "CPU-ranks mode (--cpu-ranks): only the multi-GPU items, on CPU ranks"
    check_gpu = os.path.join(build, "tests", "check_gpu")
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count()))
    notes = []
    if device and not emulated and library(check_gpu, "libnccl")[1]:
        lib = nccl_dir(os.environ.get("PYTHON"))
        if lib:
            env["LD_LIBRARY_PATH"] = lib + os.pathsep + env.get("LD_LIBRARY_PATH", "")
            notes.append(f"NCCL from {lib} (the binaries' rpath has none)")
    image_args, image_note, text_args, text_note = find_data(tempfile.mkdtemp(prefix="gpu-report-"))
    notes += [n for n in (image_note, text_note) if n]
    ctx = {"build": build, "metrics": os.path.join(out, "metrics"), "threads": os.cpu_count(),
           "image_args": image_args, "image_stand_in": image_note,
           "text_args": text_args, "text_stand_in": text_note, "sanitizer": find_sanitizer(),
           # bench-gpu's PyTorch side: the python3 on PATH is the one with PyTorch on GPU images
           "python": os.environ.get("PYTHON") or shutil.which("python3"),
           "cudart": library(check_gpu, "libcudart")[0]}
    w = where(cpu_ranks)
    notes += w["notes"]
    text, text06 = multi_text(ctx, cpu_ranks)
    ctx["multi"] = dict(w, ranks=w["per_node"] * w["nodes"], device="cpu" if cpu_ranks else "cuda",
                        text=text, text06=text06)
    if w["launcher"]:
        env.update(GPU_REPORT_LAUNCHER=w["launcher"], GPU_REPORT_NODES=str(w["nodes"]))
    if cpu_ranks:
        env["OMP_NUM_THREADS"] = "1"
    return device, no_gpu, env, notes, ctx


def run_all(todo, budget, env, log, why_not_here):
    """Runs the items in order within the budget; returns the seconds they took."""
    start = time.monotonic()
    for n, it in enumerate(todo, 1):
        it["metric_paths"] = it.pop("metrics")
        why = why_not_here(it)
        left = budget - (time.monotonic() - start)
        if not why and left < min(MIN_START_S, it["timeout_s"]):
            why = f"the report's budget of {budget} s was spent ({left:.0f} s left)"
        if why:
            report.not_run(it, why)
        else:
            it["budget_cut"] = left < it["timeout_s"]
            it["timeout_s"] = int(min(it["timeout_s"], left))
            run_item(it, env, log)
        read_metrics(it)
        print(f"  [{n:2}/{len(todo)}] {it['id']:<20} {it['status']}"
              + (f" ({it['seconds']} s)" if it["seconds"] is not None else "")
              + (f": {it['why']}" if it["why"] else ""), flush=True)
    return round(time.monotonic() - start, 1)


def in_step(argv):
    """Run from an allocation's shell on a login node (salloc: SLURM_JOB_ID without
    SLURMD_NODENAME), the report moves onto the allocation's first node, where its GPUs
    are: the exit status of that step, or None where it already runs on a node."""
    if not os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURMD_NODENAME") \
            or os.environ.get("GPU_REPORT_IN_STEP") or not shutil.which("srun"):
        return None
    words = ["srun", "--nodes=1", "--ntasks=1", "--overlap", sys.executable, os.path.abspath(__file__), *argv]
    print(f"gpu-report: in Slurm job {os.environ['SLURM_JOB_ID']} from a shell off its nodes: running on its "
          f"first node ({' '.join(words[:4])} ...)", flush=True)
    tasks = os.environ.get("SLURM_NTASKS_PER_NODE") or os.environ.get("SLURM_TASKS_PER_NODE") or ""
    return subprocess.run(words, env=dict(os.environ, GPU_REPORT_IN_STEP="1",
                                          GPU_REPORT_TASKS_PER_NODE=tasks)).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None, help="the report's directory (default BUILD/gpu-report)")
    ap.add_argument("--budget", type=int, default=None,
                    help="seconds for all items together (default 600; 1500 with 2 GPUs or more; emulated: 1800)")
    mode_args = ap.add_mutually_exclusive_group()
    mode_args.add_argument("--emulated", action="store_true")
    mode_args.add_argument("--cpu-ranks", type=int, default=0, metavar="N",
                           help="the multi-GPU items only, on N CPU ranks (not a GPU run)")
    ap.add_argument("--only", nargs="+", metavar="ID", help="run only these items")
    args = ap.parse_args()
    if args.cpu_ranks and args.cpu_ranks < 2:
        ap.error(f"--cpu-ranks {args.cpu_ranks}: 2 ranks or more")
    moved = in_step(sys.argv[1:])
    if moved is not None:
        return moved
    os.chdir(ROOT)
    build = os.path.relpath(os.path.abspath(args.build), ROOT)
    out = args.out or os.path.join(build, "gpu-report")
    os.makedirs(os.path.join(out, "metrics", "multi"), exist_ok=True)
    for old in glob.glob(os.path.join(out, "metrics", "*.jsonl")):
        os.remove(old)
    shutil.rmtree(os.path.join(out, "metrics", "multi"), ignore_errors=True)
    os.makedirs(os.path.join(out, "metrics", "multi"))

    device, no_gpu, env, notes, ctx = setup(build, out, args.emulated, args.cpu_ranks)
    mc = ctx["multi"]
    several = mc["per_node"] >= 2 and not no_gpu or args.cpu_ranks
    budget = args.budget or (1800 if args.emulated else 1500 if several else 600)
    mode = ("emulated: check-gpu on the CUDA emulator, no GPU run" if args.emulated
            else f"CPU ranks: the multi-GPU items on {args.cpu_ranks} CPU ranks and tiny models, no GPU run"
            if args.cpu_ranks else f"no GPU: {no_gpu}" if no_gpu else "GPU")
    todo = [it for it in items_mod.items(ctx) if args.emulated or "emulated" not in it["needs"]]
    if args.only:
        unknown = set(args.only) - {it["id"] for it in todo}
        if unknown:
            sys.exit(f"gpu-report: no item {', '.join(sorted(unknown))} "
                     f"(items: {', '.join(it['id'] for it in todo)})")
        todo = [it for it in todo if it["id"] in args.only]

    date = datetime.datetime.now(datetime.timezone.utc)
    print(f"gpu-report: {mode}; {len(todo)} items, budget {budget} s; writing {out}/report.md", flush=True)
    if several:
        print(f"gpu-report: the multi-GPU items on {mc['ranks']} ranks ({mc['per_node']} a node, {mc['nodes']} "
              f"node{'s' if mc['nodes'] > 1 else ''}), {mc['launcher'] or 'no launcher: ' + mc['why']}", flush=True)
    with open(os.path.join(out, "report.log"), "w", encoding="utf-8") as log:
        seconds = run_all(todo, budget, env, log,
                          lambda it: why_not(it, args.emulated, no_gpu, ctx["sanitizer"], mc, args.cpu_ranks))
    if device:
        device["sm_count"] = sm_count_from(todo)
    describe(device, ctx)
    for it in todo:
        it.pop("head", None)
        it["needs"] = sorted(it["needs"])
    rep = {"report": 1, "date": date.strftime("%Y-%m-%d %H:%M"), "mode": mode, "device": device,
           "host": host(), "commit": commit(build), "build": build, "budget_s": budget,
           "seconds": seconds, "notes": notes, "gpus": gpus_of(mc, args.cpu_ranks, device, out),
           "items": todo, "summary": report.summary(todo)}
    report.write(rep, os.path.join(out, "report.md"), os.path.join(out, "report.json"))
    s = rep["summary"]
    print(f"gpu-report: {s['passed']} passed, {s['failed'] + s['timed out']} failed, "
          f"{s['cut short']} cut short, {s['not run']} not run: {out}/report.md and report.json")
    return 1 if s["failed"] or s["timed out"] else 0


def gpus_of(mc, cpu_ranks, device, out):
    """What the report says of the GPUs the multi-GPU items used: how many, how they are
    connected, the launcher, NCCL's version and path (from the nccl item, when it ran)."""
    if cpu_ranks:
        return {"count": cpu_ranks, "nodes": 1, "description": f"{cpu_ranks} CPU ranks (no GPU)",
                "interconnect": "shared memory (Open MPI)", "launcher": mc["launcher"], "nccl": None}
    _, rows = smi.count()
    names = sorted({r[2] for r in rows if len(r) > 2})
    nccl = None
    try:
        with open(os.path.join(out, "metrics", "multi", "nccl.json"), encoding="utf-8") as f:
            nccl = json.load(f)
    except (OSError, ValueError):
        pass
    per = mc["per_node"]
    return {"count": per * mc["nodes"], "per_node": per, "nodes": mc["nodes"],
            "description": f"{per} GPU{'s' if per != 1 else ''} a node x {mc['nodes']} node{'s' if mc['nodes'] != 1 else ''}"
                           + (f": {', '.join(names)}" if names else ""),
            "interconnect": smi.topology(rows) if per > 1 else None,
            "launcher": mc["launcher"] or mc["why"], "nccl": nccl, "driver": device.get("driver")}


def why_not(it, emulated, no_gpu, sanitizer, mc=None, cpu_ranks=0):
    """Why an item cannot run here, or None."""
    if emulated and "emulated" not in it["needs"]:
        return "emulated mode (GPU_REPORT_EMULATED=1): no GPU run"
    if "gpus" in it["needs"]:
        have = mc["ranks"]
        if no_gpu and not cpu_ranks:
            return no_gpu
        if have < it["min_gpus"]:
            unit = "CPU rank" if cpu_ranks else "GPU"
            return f"{have} {unit}{'s' if have != 1 else ''}" + ("" if have < 2 else f" (it needs {it['min_gpus']})")
        if not mc["launcher"]:
            return mc["why"]
    if "gpu" in it["needs"] and no_gpu:
        return no_gpu
    if "sanitizer" in it["needs"] and not sanitizer:
        return "no compute-sanitizer here (neither on PATH nor in $CUDA_HOME/bin)"
    if "container" in it["needs"]:
        image = os.environ.get("GPU_REPORT_IMAGE")
        if not shutil.which("apptainer"):
            return "no apptainer here (lesson 11's image runs where Apptainer is)"
        if not image or not os.path.exists(image):
            return "no image: give GPU_REPORT_IMAGE=dl-course-cuda.sif, built from tools/image/cuda.def"
    missing = [f for f in it["files"] if not os.path.exists(f)]
    if missing:
        return f"not built: {', '.join(missing)} (make gpu-report-build)"
    return None


if __name__ == "__main__":
    sys.exit(main())
