"""Where a training step's time goes (issue 38): lesson 04's trace read per step, and an
Nsight Compute (ncu) listing of one step's kernels, as tables. Pure functions on text and
JSON; tools/gpu-report/profile-step.py runs the programs.

A step of lesson 04 has no range of its own (its loop is the participant's): step k runs
from the k-th "load batch" inside "train epoch" to the next one (the last step to the
epoch's end). Its parts are the compute ranges' own times (a range less its children) on
the GPU's stream track where there is one (the library times each range there with CUDA
events), else on the host track (a CPU run). "GPU idle" is the step less its ranges on
the stream: the host's own time, blocking copies, launches the GPU waited for.

ncu lists every kernel it profiled in launch order; one launch of the optimiser's kernel
(adam_kernel) ends each step, so the kernels after one launch of it up to and including
the next are one step's (the bf16 working copy's refresh of the step before included:
each step counts it once)."""

import csv
import io
import re
from decimal import Decimal

HOST = 0
STREAMS = range(1, 9)  # TRACE_TID_STREAM(0 .. 7)
STEP_KERNEL = "adam_kernel"
# What ncu measures of each kernel (--metrics). The throughputs are shares of the
# GPU's peak compute (any pipe: tensor cores included) and memory rates.
NCU_METRICS = {
    "time_ns": "gpu__time_duration.sum",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "fadd": "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "fmul": "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "mem_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
}


class ProfileError(Exception):
    pass


def _ns(us):
    """A trace time (microseconds, a decimal to the ns) in integer nanoseconds."""
    if isinstance(us, bool) or not isinstance(us, (int, float, Decimal)):
        raise ProfileError(f"a time that is not a number: {us!r}")
    ns = Decimal(us) * 1000
    if not ns.is_finite() or abs(ns) > 2 ** 60:
        raise ProfileError(f"a time out of range: {us!r}")
    return int(ns)


def _own_times(events):
    """{name: own ns} of ranges on one track (nested strictly: a range less its children)."""
    own, stack = {}, []  # stack: [end, name] of the open ranges
    for start, end, name in sorted(events, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:
            parent = stack[-1][1]
            own[parent] = own.get(parent, 0) - (end - start)
        own[name] = own.get(name, 0) + (end - start)
        stack.append([end, name])
    return own


def steps_from_trace(doc):
    """The training steps of a lesson 04 trace: [{"wall_ns", "parts": {name: ns}}], and
    the track the parts were read on ("stream" or "host")."""
    spans = {}  # (tid) -> [(start, end, name)]
    for e in doc.get("traceEvents", []):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        start = _ns(e.get("ts"))
        dur = _ns(e.get("dur"))
        if dur < 0:
            raise ProfileError(f"a range with a negative duration: {e.get('name')!r}")
        spans.setdefault(e.get("tid"), []).append((start, start + dur, str(e.get("name"))))
    host = spans.get(HOST, [])
    epochs = [s for s in host if s[2] == "train epoch"]
    if not epochs:
        raise ProfileError("no 'train epoch' range on the host track: is this lesson 04's --trace?")
    stream = [s for tid in STREAMS for s in spans.get(tid, [])]
    track, ranges = ("stream", stream) if stream else ("host", [s for s in host if s[2] not in ("train epoch", "evaluate")])
    steps = []
    for e_start, e_end, _ in epochs:
        starts = sorted(s[0] for s in host if s[2] == "load batch" and e_start <= s[0] < e_end)
        for k, begin in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else e_end
            inside = [r for r in ranges if begin <= r[0] < end]
            steps.append({"wall_ns": end - begin, "parts": _own_times(inside)})
    if not steps:
        raise ProfileError("no 'load batch' range inside 'train epoch': no training step to read")
    return steps, track


def range_table(steps, skip=1):
    """Mean ns per step of each part over the steps after the first `skip` (warm-up):
    (wall_ns, [(name, ns)] largest first, idle_ns)."""
    kept = steps[skip:] or steps
    n = len(kept)
    wall = sum(s["wall_ns"] for s in kept) / n
    total = {}
    for s in kept:
        for name, ns in s["parts"].items():
            total[name] = total.get(name, 0) + ns / n
    rows = sorted(total.items(), key=lambda kv: -kv[1])
    return wall, rows, wall - sum(ns for _, ns in rows), n


def _number(text):
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def kernels_from_ncu(text, step_kernel=STEP_KERNEL):
    """ncu's --csv --page raw listing (--print-units base): the kernels of the last whole
    step, [{"name", **NCU_METRICS keys}] in launch order, and the number of steps seen."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if head is None:
        raise ProfileError("no CSV table in ncu's output (no line starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[head:]))))
    columns = rows[0]
    try:
        col_id, col_name = columns.index("ID"), columns.index("Kernel Name")
    except ValueError:
        raise ProfileError("ncu's table has no ID or Kernel Name column") from None
    if NCU_METRICS["time_ns"] not in columns:
        raise ProfileError(f"ncu's table has no {NCU_METRICS['time_ns']} column")
    where = {key: columns.index(m) for key, m in NCU_METRICS.items() if m in columns}
    launches = []
    for r in rows[1:]:
        if len(r) != len(columns) or not r[col_id].strip().isdigit():
            continue  # the units row, or a line cut short
        k = {"name": r[col_name]}
        k.update({key: _number(r[i]) for key, i in where.items()})
        launches.append(k)
    ends = [i for i, k in enumerate(launches) if re.fullmatch(rf"{step_kernel}(\W.*)?", k["name"])]
    if len(ends) < 2:
        raise ProfileError(f"{len(ends)} launches of {step_kernel} among the {len(launches)} kernels "
                           "profiled: a whole step needs two (more --launch-count, or more steps)")
    return launches[ends[-2] + 1:ends[-1] + 1], len(ends)


def kernel_table(kernels):
    """The step's kernels by name: [{"name", "launches", "time_ns", "flop", "bytes",
    "sm_pct", "mem_pct"}], largest time first (the percentages: time-weighted means)."""
    by = {}
    for k in kernels:
        t = k.get("time_ns") or 0.0
        row = by.setdefault(k["name"], {"name": k["name"], "launches": 0, "time_ns": 0.0, "flop": None,
                                        "bytes": None, "sm_pct": None, "mem_pct": None, "_w": {}})
        row["launches"] += 1
        row["time_ns"] += t
        if k.get("ffma") is not None:
            row["flop"] = (row["flop"] or 0) + 2 * k["ffma"] + (k.get("fadd") or 0) + (k.get("fmul") or 0)
        if k.get("dram_read") is not None:
            row["bytes"] = (row["bytes"] or 0) + k["dram_read"] + (k.get("dram_write") or 0)
        for p in ("sm_pct", "mem_pct"):
            if k.get(p) is not None:
                w = row["_w"].setdefault(p, [0.0, 0.0])
                w[0] += k[p] * t
                w[1] += t
    out = []
    for row in by.values():
        for p, (s, t) in row.pop("_w").items():
            row[p] = s / t if t else None
        out.append(row)
    return sorted(out, key=lambda r: -r["time_ns"])


def _rate(amount, ns, unit):
    if amount is None or not ns:
        return ""
    per_s = amount / (ns * 1e-9)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if per_s >= scale:
            return f"{per_s / scale:.1f} {prefix}{unit}/s"
    return f"{per_s:.0f} {unit}/s"


def markdown_ranges(shape, wall, rows, idle, n, track):
    where = "the GPU's stream (CUDA events)" if track == "stream" else "the host (no GPU track)"
    out = [f"Step {shape}: {wall / 1e6:.3f} ms a step (mean of {n} steps after the first), "
           f"ranges' own time on {where}:", "",
           "| range | ms a step | share of the step |", "| --- | ---: | ---: |"]
    for name, ns in rows:
        out.append(f"| {name} | {ns / 1e6:.3f} | {100 * ns / wall:.1f}% |")
    label = "GPU idle (no range on the stream)" if track == "stream" else "outside the ranges"
    out.append(f"| {label} | {idle / 1e6:.3f} | {100 * idle / wall:.1f}% |")
    return out


def markdown_kernels(shape, table, wall_ns, steps_seen):
    busy = sum(r["time_ns"] for r in table)
    out = [f"Kernels of one step {shape} under ncu (step {steps_seen} of the run; "
           f"{sum(r['launches'] for r in table)} launches, {busy / 1e6:.3f} ms of kernels"
           + (f" against a step of {wall_ns / 1e6:.3f} ms without ncu" if wall_ns else "") + "):", "",
           "| kernel | launches | ms | share of the step | CUDA-core FLOP/s | DRAM bytes/s | SM % | memory % |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in table:
        share = 100 * r["time_ns"] / (wall_ns or busy)
        pct = lambda v: "" if v is None else f"{v:.0f}"  # noqa: E731
        out.append(f"| `{r['name'][:60]}` | {r['launches']} | {r['time_ns'] / 1e6:.3f} | {share:.1f}% | "
                   f"{_rate(r['flop'], r['time_ns'], 'FLOP')} | {_rate(r['bytes'], r['time_ns'], 'B')} | "
                   f"{pct(r['sm_pct'])} | {pct(r['mem_pct'])} |")
    return out
