#!/usr/bin/env python3
"""Figures from measured runs (make figures, make plot).

  figures.py render docs/figures/figures.list [--out DIR] [--only NAME ...] [--gpu-report FILE]
      every figure of the list (NAME KIND DATA [key=value ...] a line) as
      DIR/NAME.svg and DIR/NAME.png; DATA is read from data/ beside the list. With a
      GPU report (make gpu-report's report.json), a figure with gpu=ITEM takes that
      item's metrics into DATA first (tools/figures/gpu_data.py)
  figures.py plot FILE.jsonl [FILE.jsonl ...] [--out DIR] [key=value ...]
      runs of your own: loss and accuracy or perplexity per epoch (kind=epochs, the
      default), or kind=xy x=KEY y=KEY, kind=bars label=KEY value=KEY, kind=roofline;
      metrics with a 'step' and no 'epoch' (lesson 05's) default to kind=xy x=step
      y=mean_return, lesson 10's --roofline rows to kind=roofline, node-monitor's
      files (tools/monitor: t, source, util_pct) to two figures, NAME (util_pct against
      t) and NAME-memory (mem_used_bytes), a line per source.
      Several files make one figure with a line per file (the seeds of a job array).

docs/figures/README.md describes the list, the kinds and their options."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_data import take  # noqa: E402
from metrics import KINDS, FigureError, read_jsonl, read_source, read_specs  # noqa: E402
from plots import render  # noqa: E402


def select(rows, opts):
    """where=KEY=VALUE (an option of every kind): only the rows whose KEY is VALUE, e.g.
    where=stages=4 of a measurement that holds several setups."""
    where = opts.pop("where", None)
    if not where:
        return rows
    key, sep, value = where.partition("=")
    if not sep:
        raise FigureError(f"where={where}: use where=KEY=VALUE")
    kept = [r for r in rows if key in r and str(r[key]) == value]
    if not kept:
        values = sorted({str(r[key]) for r in rows if key in r})
        raise FigureError(f"where={where}: no row has {key} = {value} "
                          f"({key}: {', '.join(values) or 'in no row'})")
    return kept


def render_list(list_path, out_dir, only, gpu_report=None):
    specs = read_specs(list_path)
    if only:
        unknown = set(only) - {s["name"] for s in specs}
        if unknown:
            raise FigureError(f"{list_path}: no figure named {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s["name"] in only]
    data_dir = os.path.join(os.path.dirname(list_path), "data")
    os.makedirs(out_dir, exist_ok=True)
    for spec in specs:
        data = os.path.join(data_dir, spec["data"])
        try:
            opts = dict(spec["options"])
            wanted = opts.pop("gpu", None)
            if wanted and gpu_report:
                print(f"figure {spec['name']}: {take(gpu_report, wanted, data)}")
            rows = select(read_jsonl(data), opts)
            source = read_source(data)
            title = opts.pop("title", spec["name"])
            written = render(spec["kind"], rows, opts, source, title,
                             os.path.join(out_dir, spec["name"]))
        except FigureError as e:
            raise FigureError(f"{spec['line']}: figure {spec['name']}: {e}") from None
        print(f"figure {spec['name']}: {' '.join(written)}")


def default_kind(rows):
    """kind=epochs for per-epoch metrics; lesson 05's per-update metrics (a step, no
    epoch) are return against steps; lesson 10's --roofline rows a roofline."""
    keys = {k for r in rows for k in r}
    if {"intensity", "gflops", "peak_gflops", "bandwidth_gbs"} <= keys:
        return "roofline", {}
    if "epoch" in keys or "step" not in keys:
        return "epochs", {}
    if "mean_return" not in keys:
        raise FigureError(f"no 'epoch' key, and no 'mean_return' to plot against 'step' "
                          f"(keys: {', '.join(sorted(keys))}); give kind=xy x=step y=KEY")
    return "xy", {"x": "step", "y": "mean_return"}


def monitor_figures(rows):
    """node-monitor's rows (t, source, no epoch or step): [(name suffix, options)], the
    utilisation and the memory of every source (a node's CPUs, each GPU) against time;
    None for other metrics."""
    keys = {k for r in rows for k in r}
    if not {"t", "source", "util_pct"} <= keys or keys & {"epoch", "step"}:
        return None
    common = {"kind": "xy", "x": "t", "group": "source", "xlabel": "t (s since the monitor started)"}
    return [("", dict(common, y="util_pct", ylabel="utilisation (%)", ymin="0", ymax="105")),
            ("-memory", dict(common, y="mem_used_bytes", ylabel="memory in use", ybytes="yes"))]


def plot_file(paths, out_dir, words):
    """One figure of one metrics file or, for several (the seeds of a job array), one
    figure with a line per file: out_dir/NAME.svg and .png, NAME the first file's."""
    opts = {}
    for word in words:
        key, sep, value = word.partition("=")
        opts[key] = value if sep else "yes"
    kind = opts.pop("kind", None)
    if kind is not None and kind not in KINDS:
        raise FigureError(f"kind={kind}: use one of {', '.join(KINDS)}")
    rows, names = [], []
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        if name in names:
            raise FigureError(f"{path}: two files named {name}: give each run its own name")
        names.append(name)
        for row in read_jsonl(path):
            if len(paths) > 1:
                row = dict(row, run=name)
            rows.append(row)
    monitor = monitor_figures(rows) if kind is None else None
    if len(paths) > 1 and not monitor:  # a monitor's lines are its sources, whatever the file
        opts.setdefault("group", "run")
    rows = select(rows, opts)
    where = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
    if monitor:
        plot_monitor(monitor, rows, opts, paths, names, out_dir, where)
        return
    if kind is None:
        try:
            kind, defaults = default_kind(rows)
        except FigureError as e:
            raise FigureError(f"{where}: {e}") from None
        opts = {**defaults, **opts}
    source = read_source(paths[0], required=False)
    if len(paths) > 1:
        first = source.get("text") or (f"Measured on {source['machine']}, {source['date']}; "
                                       f"command: {source['command']}")
        source = {"text": f"{len(paths)} runs ({', '.join(names)}). The first: {first}"}
    title = opts.pop("title", os.path.basename(paths[0]) if len(paths) == 1
                     else f"{len(paths)} runs: {names[0]} .. {names[-1]}")
    out_name = names[0] if len(paths) == 1 else f"{names[0]}-and-{len(paths) - 1}-more"
    os.makedirs(out_dir, exist_ok=True)
    try:
        written = render(kind, rows, opts, source, title, os.path.join(out_dir, out_name))
    except FigureError as e:
        raise FigureError(f"{where}: {e}") from None
    for w in written:
        print(f"wrote {w}")


def plot_monitor(figures, rows, opts, paths, names, out_dir, where):
    """The monitor's figures (monitor_figures) of its files; options given win."""
    source = read_source(paths[0], required=False)
    if len(paths) > 1:
        source = {"text": f"{len(paths)} files ({', '.join(names)}). The first: {source.get('text', '')}"}
    base = names[0] if len(paths) == 1 else f"{names[0]}-and-{len(paths) - 1}-more"
    os.makedirs(out_dir, exist_ok=True)
    for suffix, defaults in figures:
        merged = {**defaults, **opts}
        kind = merged.pop("kind")
        title = merged.pop("title", base) + (" (memory)" if suffix else " (utilisation)")
        try:
            written = render(kind, rows, merged, source, title, os.path.join(out_dir, base + suffix))
        except FigureError as e:
            raise FigureError(f"{where}: {e}") from None
        for w in written:
            print(f"wrote {w}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="every figure of a figure list")
    r.add_argument("list")
    r.add_argument("--out", help="output directory (default: the list's directory)")
    r.add_argument("--only", nargs="+", default=[], metavar="NAME")
    r.add_argument("--gpu-report", metavar="FILE", help="make gpu-report's report.json")
    p = sub.add_parser("plot", help="metrics files of your own (several: one line each)")
    p.add_argument("words", nargs="+", metavar="FILE.jsonl ... [key=value ...]")
    p.add_argument("--out", default="build/plots")
    args = parser.parse_args()
    try:
        if args.command == "render":
            render_list(args.list, args.out or os.path.dirname(args.list) or ".", args.only,
                        args.gpu_report)
        else:
            # key=value words are options; the rest (and any file that exists) are files
            files = [w for w in args.words if "=" not in w or os.path.exists(w)]
            words = [w for w in args.words if w not in files]
            if not files:
                raise FigureError("no metrics file given (make plot METRICS=run.jsonl)")
            plot_file(files, args.out, words)
    except FigureError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
