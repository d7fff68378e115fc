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

load() holds a file to the rules lib/core/trace_load.c reads it by (check()), so that
both take and refuse the same files: a NaN, a string or null for a time, a negative
duration, times beyond 2^60 ns, JSON nested deeper than 32 are refused with one line.

Counters ("ph": "C") are no part of a step's shares; a rank's "gpu" counters (NVML's,
sampled at steps' ends on a GPU) are summed up on their own (gpu_summary)."""

import json
import os
import stat
from decimal import Decimal

HOST = 0
LANES = range(9, 25)  # TRACE_TID_COMM(0 .. 15)
PARTS = ("compute", "comm", "data", "idle")
PART_OF = {"compute": "compute", "comm": "comm", "data": "data", "step": "idle", "other": "idle"}
CATEGORIES = ("step", "compute", "comm", "data", "other")

# The limits of lib/core/trace_load.c, so that both readers take and refuse the same files:
FILE_MAX = 1 << 30    # bytes of a file
DEPTH_MAX = 32        # JSON nesting below an event's (or otherData's) keys
ID_MAX = 1 << 30      # pid, tid
TIME_MAX = 1 << 60    # ns: a start's distance from the origin, and the durations' sum (36 years)
MERGED = "course trace merged 1"  # otherData's format of the files merge() writes


class TraceError(Exception):
    pass


class _Exponent(Decimal):
    """A JSON number written with an exponent: not the library's (trace_load.c refuses it
    where it reads a time, an id or a count; elsewhere it is a number like any other)."""


def _float(text):
    return _Exponent(text) if "e" in text or "E" in text else Decimal(text)


def _constant(name):
    raise ValueError(f"{name} is not JSON (the library never writes it)")


def _read_regular(path):
    """The bytes of a regular file of at most FILE_MAX (a FIFO or a device is refused at
    once, never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise TraceError(f"cannot open {path}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise TraceError(f"{path} is a directory, not a trace file")
        if not stat.S_ISREG(info.st_mode):
            raise TraceError(f"{path} is not a regular file (a FIFO or a device?): not a trace file")
        if info.st_size > FILE_MAX:
            raise TraceError(f"{path} is {info.st_size} bytes, more than the {FILE_MAX} a trace may be")
        return f.read(FILE_MAX + 1)


def _depth(value):
    """How deep trace_load.c's reader goes into value: 1 for a number, a string or an empty
    container, one more for each level of a container that holds something (iterative:
    a file nested 200,000 deep is measured, not recursed into)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        deepest = max(deepest, d)
        if d > DEPTH_MAX:
            break
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        todo.extend((c, d + 1) for c in children)
    return deepest


def _integer(v):
    """v as an int where it is a JSON integer (12, or 12.0 as the library's reader takes it)."""
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)) or isinstance(v, _Exponent):
        return None
    if isinstance(v, Decimal) and v != v.to_integral_value():
        return None
    return int(v)


def _ns(v):
    """Microseconds with at most three decimals as integer nanoseconds, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)) or isinstance(v, _Exponent):
        return None
    ns = Decimal(v) * 1000
    return int(ns) if ns == ns.to_integral_value() else None


def _why_not_time(v):
    if isinstance(v, _Exponent):
        return f"{v}: an exponent (not the library's numbers)"
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        return f"{json.dumps(v)[:40]}: a number expected"
    return f"{v}: more than 3 decimals (the library writes microseconds to the nanosecond)"


def _check_event(e, k, where, state):
    """trace_load.c's rules for event k (raises TraceError naming it); state carries the
    durations' sum and the file's pid across events."""
    at = f"{where}: event {k}"
    if not isinstance(e, dict):
        raise TraceError(f"{at}: not an object")
    for key, value in e.items():
        if key == "args" and isinstance(value, dict):
            for akey, avalue in value.items():
                if _depth(avalue) > DEPTH_MAX:
                    raise TraceError(f"{at}: args.{akey} nested more than {DEPTH_MAX} deep")
            if "bytes" in value and _integer(value["bytes"]) is None:
                raise TraceError(f"{at}: args.bytes {json.dumps(value['bytes'], default=str)[:40]}: an integer expected")
        elif _depth(value) > DEPTH_MAX:
            raise TraceError(f"{at}: \"{key}\" nested more than {DEPTH_MAX} deep")
    for key in ("name", "cat", "ph"):
        if key in e and not isinstance(e[key], str):
            raise TraceError(f"{at}: \"{key}\" is not a string")
    for key in ("pid", "tid"):
        if key in e:
            v = _integer(e[key])
            if v is None or not 0 <= v <= ID_MAX:
                raise TraceError(f"{at}: {key} {json.dumps(e[key], default=str)[:40]} is not an integer "
                                 f"in [0, {ID_MAX}]")
    for key in ("ts", "dur"):
        if key in e:
            ns = _ns(e[key])
            if ns is None:
                raise TraceError(f"{at}: {key} {_why_not_time(e[key])}")
            if abs(ns) >= 1 << 63:
                raise TraceError(f"{at}: {key} {e[key]}: a number too large")
    if e.get("ph") != "X":
        return
    for key in ("name", "cat", "pid", "tid", "ts", "dur"):
        if key not in e:
            raise TraceError(f"{at}: a complete event without \"{key}\"")
    name = e["name"]
    if e["cat"] not in CATEGORIES:
        raise TraceError(f"{at}: '{name}' has the category '{e['cat']}': the library's are "
                         "step, compute, comm, data, other")
    ts, dur = _ns(e["ts"]), _ns(e["dur"])
    if dur < 0:
        raise TraceError(f"{at}: '{name}' lasts less than nothing (dur {e['dur']})")
    if abs(ts) > TIME_MAX or dur > TIME_MAX - state["dur_sum"]:
        raise TraceError(f"{at}: '{name}': times beyond 2^60 ns (36 years) from the origin, or "
                         "durations adding up to more: not a run's trace")
    state["dur_sum"] += dur
    pid = _integer(e["pid"])
    if state["one_pid"] and state["pid"] is not None and pid != state["pid"]:
        raise TraceError(f"{at}: events of ranks {state['pid']} and {pid} in one rank's file")
    state["pid"] = pid


def check(doc, where):
    """The rules lib/core/trace_load.c reads a file by (its C twin refuses what this refuses,
    tests/trace/run.sh holds them to it): a JSON object with traceEvents, a list of
    objects; otherData's "format" "course trace 1" (a rank's file: one pid) or MERGED (a
    file merge() wrote: a rank per pid); in every event name, cat and ph strings, pid and
    tid integers in [0, 2^30], ts and dur microseconds with at most three decimals and no
    exponent; a complete event ("ph": "X") has all six, a category of the library's, a
    duration of at least 0, a start within 2^60 ns of the origin, and the durations add
    up to at most 2^60 ns; nothing nested deeper than DEPTH_MAX."""
    if not isinstance(doc, dict):
        raise TraceError(f"{where}: the JSON array form, or not a trace: the library writes the object "
                         "form ({\"traceEvents\": [...]})")
    if not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{where}: no traceEvents: is this a --trace file?")
    other = doc.get("otherData", {})
    if not isinstance(other, dict):
        raise TraceError(f"{where}: otherData is not an object")
    for key, value in doc.items():
        if key not in ("traceEvents", "otherData") and _depth(value) > DEPTH_MAX:
            raise TraceError(f"{where}: \"{key}\" nested more than {DEPTH_MAX} deep")
    for key, value in other.items():
        if _depth(value) > DEPTH_MAX:
            raise TraceError(f"{where}: otherData.{key} nested more than {DEPTH_MAX} deep")
    for key in ("world_size", "dropped_events"):
        if key in other and _integer(other[key]) is None:
            raise TraceError(f"{where}: otherData.{key} {json.dumps(other[key], default=str)[:40]}: "
                             "an integer expected")
    if other.get("format") not in ("course trace 1", MERGED):
        raise TraceError(f"{where}: otherData has no \"format\": \"course trace 1\": not one rank's "
                         "file as the library writes it, nor a merged file of tools/trace")
    state = {"dur_sum": 0, "pid": None, "one_pid": other["format"] == "course trace 1"}
    for k, e in enumerate(doc["traceEvents"]):
        _check_event(e, k, where, state)


def load(path):
    """The JSON object of one trace file (times as decimals: exact microseconds), held to
    check()'s rules."""
    raw = _read_regular(path)
    try:
        doc = json.loads(raw.decode("utf-8"), parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise TraceError(f"{path}: nested more than {DEPTH_MAX} deep") from None
    except (UnicodeDecodeError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        raise TraceError(f"{path}: {err}") from None
    check(doc, path)
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
            "otherData": {"format": MERGED, "ranks": others, "dropped_events": dropped}}


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


def _walk(nodes):
    """Every node under nodes, parents before their children (without recursion: ranges
    may nest as deep as a file likes)."""
    todo = list(reversed(nodes))
    while todo:
        node = todo.pop()
        yield node
        todo.extend(reversed(node[1]))


def _own_time(node, parts):
    for e, children in _walk([node]):
        own = e["dur"] - sum(c[0]["dur"] for c in children)
        parts[PART_OF.get(e.get("cat"), "idle")] += own


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
    found, todo = [], list(reversed(nest(host_events(doc, pid))))
    while todo:
        node = todo.pop()
        if node[0].get("cat") == "step":
            found.append(node)
        else:
            todo.extend(reversed(node[1]))
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
    for e, children in _walk([node]):
        if e.get("cat") == "comm":
            at, end = e["ts"], e["ts"] + e["dur"]
            for c, _ in children:
                spans.append((at, c["ts"]))
                at = max(at, min(c["ts"] + c["dur"], end))
            spans.append((at, end))


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
