#!/usr/bin/env python3
"""Where a step's time goes, from the --trace files of a run (one per rank, lib/core/trace.h).

  trace.py FILE... [--merged OUT.json] [--svg OUT.svg] [--step N] [--json]

Reads every rank's file (run.rank0.json run.rank1.json ..., or a merged one), prints
per rank the steps traced, the mean step and its share in compute, exposed
communication (the host waiting for it), data loading and idle, and that the parts add
up to the step; where a rank's trace holds its GPU's counters (NVML's "gpu" counter),
their utilisation, memory, clock, power and temperature over the run; --merged writes
all ranks as one trace (open it in https://ui.perfetto.dev or chrome://tracing: a
process per rank); --svg draws step N (default: the second, the first after the
warm-up, or the only one) of every rank; --json prints the numbers as JSON instead
(microseconds; the GPU's as gpu_samples, gpu_KEY_mean and gpu_KEY_max). `make trace
TRACE="..."` runs it with --merged and --svg under build/plots/.

Python's standard library only."""

import argparse
import errno
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_read import PARTS, TraceError, gpu_summary, load, merge, shares  # noqa: E402
from trace_svg import render, step_count  # noqa: E402

NAMES = {"compute": "compute", "comm": "exposed communication", "data": "data loading", "idle": "idle"}


def open_output(path):
    """path opened for writing as lib/core/fs.c's fs_create opens an output: never through
    a symbolic link (one planted at the output's name would have this overwrite whatever
    it points to), a directory refused, a FIFO written only where a reader is there (never
    waited on); its directory made when missing."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise TraceError(f"{path} is a symbolic link: not written through (it would overwrite what "
                             "it points to); remove it or write elsewhere") from None
        if err.errno == errno.EISDIR:
            raise TraceError(f"{path} is a directory: give a file name") from None
        if err.errno == errno.ENXIO:
            raise TraceError(f"{path} is a FIFO with no reader: not waited on") from None
        raise TraceError(f"cannot write {path}: {err.strerror}") from None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "w", encoding="utf-8")


def report(doc):
    lines = []
    for pid, row in sorted(shares(doc).items()):
        n, step = row["steps"], row["step_us"]
        if n == 0:
            lines.append(f"rank {pid}: no steps traced (ranges of category step)")
            continue
        if step == 0:
            lines.append(f"rank {pid}: {n} steps of 0 ms: no shares to give")
            continue
        parts = ", ".join(f"{NAMES[p]} {100 * row[p + '_us'] / step:.1f}% ({row[p + '_us'] / n / 1000:.2f} ms)"
                          for p in PARTS)
        lines.append(f"rank {pid}: {n} steps of {step / n / 1000:.2f} ms: {parts}; the parts add up to "
                     f"{100 * row['parts_us'] / step:.2f}% of the step")
        if row["in_flight_us"] > 0:
            flight, hidden = row["in_flight_us"], row["hidden_us"]
            lines.append(f"rank {pid} communication: {flight / n / 1000:.2f} ms in flight a step, "
                         f"{hidden / n / 1000:.2f} hidden ({100 * hidden / flight:.0f}%), "
                         f"{row['comm_us'] / n / 1000:.2f} exposed")
    for pid, g in sorted(gpu_summary(doc).items()):
        parts = [f"{g['samples']} samples"]
        if "utilisation_pct_mean" in g:
            parts.append(f"utilisation {g['utilisation_pct_mean']:.0f}% on average (at most "
                         f"{g['utilisation_pct_max']:.0f}%)")
        if "memory_used_bytes_max" in g:
            total = f" of {g['memory_total_bytes_max'] / 2**30:.1f}" if "memory_total_bytes_max" in g else ""
            parts.append(f"memory used up to {g['memory_used_bytes_max'] / 2**30:.2f}{total} GiB")
        if "sm_clock_mhz_mean" in g:
            parts.append(f"SM clock {g['sm_clock_mhz_mean']:.0f} MHz on average")
        if "power_mw_mean" in g:
            parts.append(f"power {g['power_mw_mean'] / 1000:.0f} W on average")
        if "temperature_c_max" in g:
            parts.append(f"temperature up to {g['temperature_c_max']:.0f} C")
        lines.append(f"rank {pid} GPU (NVML): " + ", ".join(parts))
    dropped = doc.get("otherData", {}).get("dropped_events", 0)
    if dropped:
        lines.append(f"warning: {dropped} events were dropped beyond the trace's cap: the shares miss them")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="the ranks' trace files (or one merged file)")
    parser.add_argument("--merged", help="write every rank's events into this one trace")
    parser.add_argument("--svg", help="draw a step of every rank into this SVG")
    parser.add_argument("--step", type=int, help="the step to draw, from 1 (default: the second)")
    parser.add_argument("--json", action="store_true", help="the shares as JSON (microseconds)")
    args = parser.parse_args()
    try:
        docs = [load(p) for p in args.files]
        doc = docs[0] if len(docs) == 1 else merge(docs, args.files)
        if args.json:
            gpu = gpu_summary(doc)
            print(json.dumps({str(pid): {**{k: float(v) for k, v in row.items()},
                                         **{"gpu_" + k: float(v) for k, v in gpu.get(pid, {}).items()}}
                              for pid, row in shares(doc).items()}))
        else:
            print(report(doc))
        if args.merged:
            with open_output(args.merged) as f:
                json.dump(doc, f, default=float)
            print(f"merged: {args.merged}")
        if args.svg:
            count = step_count(doc)
            index = (args.step - 1) if args.step else (1 if count > 1 else 0)
            if count == 0 and not args.step:
                # lessons 01 and 04: the training loop is the participant's, so no step ranges
                print(f"not drawn: {args.svg}: no step ranges in this trace (a loop of your own has "
                      "none until you add them: lesson 10, TODO 10.1); the merged file opens in Perfetto")
                return
            if count == 0 or not 0 <= index < count:
                raise TraceError(f"no step {index + 1} on every rank (each has at least {count})")
            ranks = len({e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X"})
            title = f"Step {index + 1} of {ranks} rank{'s' if ranks != 1 else ''}: where the time goes"
            with open_output(args.svg) as f:
                f.write(render(doc, index, title, footer=" ".join(os.path.basename(p) for p in args.files)))
            print(f"drawn: {args.svg} (step {index + 1})")
    except (OSError, TraceError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
