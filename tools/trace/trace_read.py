"""Reading the course's trace files (lib/core/trace.h), merging the ranks' files into one,
and the share of a step in compute, exposed communication, data loading and idle.

A step is an event of category "step" on a rank's host track (tid 0). Each instant of
it belongs to the innermost range open on the host then: its category says what the
rank was doing (compute; comm: waiting for communication, so exposed; data), and an
instant inside no range but the step itself is idle (bookkeeping between the ranges,
or work nobody named; category "other" counts as idle too). So a range's own time is
its duration less its children's, and a step's parts add up to the step when the
ranges nest. Communication in flight beside the host (the lanes, tid 9 to 24) is not
exposed and does not count; the time the host waits for it does ("wait all-reduce").
How much of it the host hid (comm_split): in flight, the time some lane was busy inside
the steps (their union); hidden, that time less where the host was in a comm range of
its own (waiting). lib/core/trace_shares.c computes the same numbers in C, to the ns.

Counters ("ph": "C") are no part of a step's shares; a rank's "gpu" counters (NVML's,
sampled at steps' ends on a GPU) are summed up on their own (gpu_summary)."""

import json
from decimal import Decimal

HOST = 0
LANES = range(9, 25)  # TRACE_TID_COMM(0 .. 15)
PARTS = ("compute", "comm", "data", "idle")
PART_OF = {"compute": "compute", "comm": "comm", "data": "data", "step": "idle", "other": "idle"}


class TraceError(Exception):
    pass


def load(path):
    """The JSON object of one trace file (times as decimals: exact microseconds)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, parse_float=Decimal)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TraceError(f"{path}: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{path}: not a trace (no traceEvents: is this a --trace file?)")
    return doc


def merge(docs, paths):
    """One trace of every rank's file: their events side by side (each rank is its own
    pid); otherData lists the files' own, in rank order. A pid twice is refused."""
    seen, events, others = {}, [], []
    for doc, path in zip(docs, paths):
        pids = {e.get("pid") for e in doc["traceEvents"]}
        for pid in pids:
            if pid in seen:
                raise TraceError(f"{path}: rank (pid) {pid} is also in {seen[pid]}: files of one job, once each")
            seen[pid] = path
        events += doc["traceEvents"]
        others.append(dict(doc.get("otherData", {}), file=path))
    others.sort(key=lambda o: o.get("rank", 0))
    dropped = sum(o.get("dropped_events", 0) for o in others)
    return {"displayTimeUnit": "ms", "traceEvents": events,
            "otherData": {"ranks": others, "dropped_events": dropped}}


def host_events(doc, pid):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("pid") == pid and e.get("tid") == HOST]


def pids(doc):
    return sorted({e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X"})


def nest(events):
    """[(event, children)] roots of the ranges' tree (they nest: the validator says so)."""
    roots, stack = [], []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1][0]["ts"] + stack[-1][0]["dur"] <= e["ts"]:
            stack.pop()
        node = (e, [])
        (stack[-1][1] if stack else roots).append(node)
        stack.append(node)
    return roots


def _own_time(node, parts):
    e, children = node
    own = e["dur"] - sum(c[0]["dur"] for c in children)
    parts[PART_OF.get(e.get("cat"), "idle")] += own
    for c in children:
        _own_time(c, parts)


def _covered(step, children):
    """How much of the step its ranges cover: the union of their spans inside it."""
    covered, end = Decimal(0), step["ts"]
    stop = step["ts"] + step["dur"]
    for e, _ in sorted(children, key=lambda c: c[0]["ts"]):
        a, b = max(e["ts"], end), min(e["ts"] + e["dur"], stop)
        if b > a:
            covered += b - a
            end = b
    return covered


def step_parts(step_node):
    """{part: microseconds} of one step (a node of nest()): its ranges' own times by
    their category, and idle, the part of the step that no range covers, measured on
    its own: the parts add up to the step only when the ranges nest inside it."""
    step, children = step_node
    parts = {p: Decimal(0) for p in PARTS}
    for c in children:
        _own_time(c, parts)
    parts["idle"] += step["dur"] - _covered(step, children)
    return parts


def steps(doc, pid):
    """The rank's step nodes in time order (steps inside steps are not steps of their own)."""
    found = []

    def walk(nodes):
        for node in nodes:
            if node[0].get("cat") == "step":
                found.append(node)
            else:
                walk(node[1])
    walk(nest(host_events(doc, pid)))
    return found


def _union(spans):
    """Disjoint sorted spans covering the same time as spans [(start, end)]."""
    out = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _intersect(xs, ys):
    """The spans of two disjoint sorted lists that both cover."""
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            out.append([a, b])
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _exposed_spans(node, spans):
    """The host's own time in comm ranges under node: each one's span less its children's."""
    e, children = node
    if e.get("cat") == "comm":
        at, end = e["ts"], e["ts"] + e["dur"]
        for c, _ in children:
            spans.append((at, c["ts"]))
            at = max(at, min(c["ts"] + c["dur"], end))
        spans.append((at, end))
    for c in children:
        _exposed_spans(c, spans)


def comm_split(doc, pid, nodes=None):
    """(in flight, hidden) in microseconds: the lanes' union inside the steps, and that
    less where the host was in a comm range of its own."""
    nodes = steps(doc, pid) if nodes is None else nodes
    exposed = []
    for _, children in nodes:
        for c in children:
            _exposed_spans(c, exposed)
    lanes = _union((e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
                   if e.get("ph") == "X" and e.get("pid") == pid and e.get("tid") in LANES)
    inside = _intersect(lanes, _union((n[0]["ts"], n[0]["ts"] + n[0]["dur"]) for n in nodes))
    in_flight = sum((b - a for a, b in inside), Decimal(0))
    waited = sum((b - a for a, b in _intersect(inside, _union(exposed))), Decimal(0))
    return in_flight, in_flight - waited


def shares(doc):
    """{pid: {"steps": n, "step_us": total, part + "_us": total, "parts_us": their sum,
    "in_flight_us", "hidden_us": comm_split's}}."""
    out = {}
    for pid in pids(doc):
        nodes = steps(doc, pid)
        total = {p: Decimal(0) for p in PARTS}
        for node in nodes:
            for p, v in step_parts(node).items():
                total[p] += v
        row = {"steps": len(nodes), "step_us": sum((n[0]["dur"] for n in nodes), Decimal(0))}
        row.update({p + "_us": v for p, v in total.items()})
        row["parts_us"] = sum(total.values(), Decimal(0))
        row["in_flight_us"], row["hidden_us"] = comm_split(doc, pid, nodes)
        out[pid] = row
    return out


GPU_KEYS = ("utilisation_pct", "memory_activity_pct", "memory_used_bytes", "memory_total_bytes",
            "sm_clock_mhz", "power_mw", "temperature_c")


def gpu_summary(doc):
    """{pid: {"samples": n, KEY + "_mean": ..., KEY + "_max": ...}} of the ranks' "gpu"
    counters, over the samples that hold KEY (NVML leaves out what a GPU does not report);
    ranks without them are left out."""
    by_pid = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "C" and e.get("name") == "gpu" and isinstance(e.get("args"), dict):
            by_pid.setdefault(e.get("pid"), []).append(e["args"])
    out = {}
    for pid, samples in by_pid.items():
        row = {"samples": len(samples)}
        for key in GPU_KEYS:
            values = [Decimal(a[key]) for a in samples if key in a]
            if values:
                row[key + "_mean"] = sum(values) / len(values)
                row[key + "_max"] = max(values)
        out[pid] = row
    return out
