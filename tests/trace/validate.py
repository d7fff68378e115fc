#!/usr/bin/env python3
"""Checks trace files against the rules of Chrome's Trace Event Format (the JSON object
form), as chrome://tracing and Perfetto read it, and the course's own on top.

  validate.py FILE... [--same-job]

The format (Trace Event Format, the Google document, "JSON Object Format" and the
event types):
  - the file is a JSON object with "traceEvents", a list of events; "displayTimeUnit",
    when present, is "ms" or "ns"; "otherData", when present, an object;
  - every event is an object with "ph" (the phase: one of the letters the format
    defines), "pid" and "tid" (integers; a process-wide event may leave tid out);
    every event but metadata has a "name" string;
  - complete events ("X") have "ts" and "dur" (numbers, microseconds, dur >= 0);
    duration events "B" and "E" have "ts" and pair up per thread, E closing the last B;
  - counters ("C") have "ts" and "args", an object of numbers;
  - metadata ("M") is named process_name, process_labels, process_sort_index,
    thread_name or thread_sort_index, with "args" {"name": string} for the names and
    {"sort_index": integer} for the sort indices;
  - "cat", when present, is a string; "args", when present, an object;
  - on one thread (pid, tid) the duration events nest: an event that starts inside
    another ends inside it too (Perfetto drops events that overlap).
The course's own rules (core/trace.h):
  - every process has a process_name and every thread with events a thread_name;
  - "X" events carry "cat", one of step, compute, comm, data, other;
  - "otherData" holds "dropped_events", an integer >= 0;
  - a "gpu" counter (a GPU's, from NVML) holds only the keys core/trace.h names, each an
    integer >= 0: utilisation_pct and memory_activity_pct at most 100, memory_used_bytes
    at most memory_total_bytes;
  - with --same-job: the files are the ranks of one job: each holds one pid, its rank,
    and no two files the same one.
Times are read as decimals, not floats, so that "ends inside" is exact.

One line per file, PASS or FAIL with every problem found (at most 10 shown); exit
status 0 only when every file passes. Python's standard library only."""

import json
import sys
from decimal import Decimal

PHASES = set("BEXiICbnePsTtfFMNODpR") | {"(", ")"}
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}
CATEGORIES = {"step", "compute", "comm", "data", "other"}
GPU_KEYS = {"utilisation_pct", "memory_activity_pct", "memory_used_bytes", "memory_total_bytes",
            "sm_clock_mhz", "power_mw", "temperature_c"}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool)


def check_event(i, e, problems):
    """The fields one event must have; returns False when it cannot be used further."""
    where = f"event {i}"
    if not isinstance(e, dict):
        problems.append(f"{where}: not an object")
        return False
    ph = e.get("ph")
    if not isinstance(ph, str) or ph not in PHASES:
        problems.append(f"{where}: ph {ph!r} is not a phase of the format")
        return False
    if not is_int(e.get("pid")):
        problems.append(f"{where} ({ph}): no integer pid")
        return False
    if "tid" in e and not is_int(e["tid"]):
        problems.append(f"{where} ({ph}): tid {e['tid']!r} is not an integer")
        return False
    if not isinstance(e.get("name"), str) and ph != "E":  # an E event closes the B before it
        problems.append(f"{where} ({ph}): no name")
        return False
    where = f"event {i} ({ph} {e.get('name')!r})"
    if "cat" in e and not isinstance(e["cat"], str):
        problems.append(f"{where}: cat is not a string")
    if "args" in e and not isinstance(e["args"], dict):
        problems.append(f"{where}: args is not an object")
        return False
    if ph != "M" and not is_num(e.get("ts")):
        problems.append(f"{where}: no numeric ts")
        return False
    if ph != "M" and "tid" not in e:
        problems.append(f"{where}: no tid")
        return False
    if ph == "X":
        if not is_num(e.get("dur")) or e["dur"] < 0:
            problems.append(f"{where}: dur {e.get('dur')!r} is not a number >= 0")
            return False
        if e.get("cat") not in CATEGORIES:
            problems.append(f"{where}: cat {e.get('cat')!r}, not one of {', '.join(sorted(CATEGORIES))}")
    elif ph == "C":
        args = e.get("args")
        if not args or not all(is_num(v) for v in args.values()):
            problems.append(f"{where}: a counter needs args of numbers")
        elif e["name"] == "gpu":
            check_gpu_counter(where, args, problems)
    elif ph == "M":
        args = e.get("args", {})
        if e["name"] not in METADATA:
            problems.append(f"{where}: unknown metadata")
        elif e["name"].endswith("_sort_index") and not is_int(args.get("sort_index")):
            problems.append(f"{where}: no integer sort_index")
        elif e["name"].endswith("_name") and not isinstance(args.get("name"), str):
            problems.append(f"{where}: no name string in args")
        elif e["name"].startswith("thread") and "tid" not in e:
            problems.append(f"{where}: thread metadata without a tid")
    return True


def check_gpu_counter(where, args, problems):
    """The course's "gpu" counter: known keys, integers >= 0, shares and memory in range."""
    for key in sorted(set(args) - GPU_KEYS):
        problems.append(f"{where}: unknown key {key!r} (a gpu counter holds {', '.join(sorted(GPU_KEYS))})")
    for key, v in sorted(args.items()):
        if not is_int(v) or v < 0 or (key.endswith("_pct") and v > 100):
            problems.append(f"{where}: {key} {v} is not an integer in [0, {100 if key.endswith('_pct') else 'inf'}]")
    used, total = args.get("memory_used_bytes"), args.get("memory_total_bytes")
    if is_int(used) and is_int(total) and used > total:
        problems.append(f"{where}: memory_used_bytes {used} above memory_total_bytes {total}")


def check_nesting(track, spans, problems):
    """spans: (start, end, name) of one thread; each must nest in those it starts in."""
    open_ = []  # (end, name), outermost first
    for start, end, name in sorted(spans, key=lambda s: (s[0], -s[1])):
        while open_ and open_[-1][0] <= start:
            open_.pop()
        if open_ and end > open_[-1][0]:
            problems.append(f"track {track}: {name!r} [{start}, {end}] overlaps {open_[-1][1]!r} "
                            f"(ends {open_[-1][0]}) without nesting in it")
            return
        open_.append((end, name))


def duration_spans(events, problems):
    """X events and B/E pairs as spans per (pid, tid)."""
    spans, begun = {}, {}
    for e in events:
        track = (e["pid"], e.get("tid"))
        if e["ph"] == "X":
            spans.setdefault(track, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e["ph"] == "B":
            begun.setdefault(track, []).append(e)
        elif e["ph"] == "E":
            if not begun.get(track):
                problems.append(f"track {track}: an E event at {e['ts']} with no B open")
                continue
            b = begun[track].pop()
            if e["ts"] < b["ts"]:
                problems.append(f"track {track}: {b['name']!r} ends before it begins")
            spans.setdefault(track, []).append((b["ts"], e["ts"], b["name"]))
    for track, left in begun.items():
        for b in left:
            problems.append(f"track {track}: {b['name']!r} (B) never ends")
    return spans


def validate(path):
    problems = []
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, parse_float=Decimal)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return [f"not a JSON file: {err}"], set()
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not the JSON object form: no traceEvents list"], set()
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problems.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is neither ms nor ns")
    other = doc.get("otherData")
    if not isinstance(other, dict) or not is_int(other.get("dropped_events")) or other["dropped_events"] < 0:
        problems.append("otherData lacks dropped_events (an integer >= 0)")
    events = [e for i, e in enumerate(doc["traceEvents"]) if check_event(i, e, problems)]
    named_processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for pid in sorted({e["pid"] for e in events} - named_processes):
        problems.append(f"pid {pid} has no process_name")
    for track in sorted({(e["pid"], e["tid"]) for e in events if e["ph"] in "XBE"} - named_threads):
        problems.append(f"track {track} has no thread_name")
    for track, spans in sorted(duration_spans(events, problems).items()):
        check_nesting(track, spans, problems)
    if not any(e["ph"] in "XB" for e in events):
        problems.append("no duration events at all")
    return problems, {e["pid"] for e in events}


def main():
    args = [a for a in sys.argv[1:] if a != "--same-job"]
    same_job = len(args) != len(sys.argv) - 1
    if not args:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    failed = 0
    seen = {}
    for path in args:
        problems, pids = validate(path)
        if same_job and not problems:
            if len(pids) != 1:
                problems.append(f"{len(pids)} pids in one rank's file")
            elif next(iter(pids)) in seen:
                problems.append(f"pid {next(iter(pids))} again (also in {seen[next(iter(pids))]})")
            else:
                seen[next(iter(pids))] = path
        if problems:
            failed += 1
            print(f"FAIL  {path}: " + "; ".join(problems[:10])
                  + (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""))
        else:
            print(f"PASS  {path}: the format's rules, strict nesting per track")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
