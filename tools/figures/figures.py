#!/usr/bin/env python3
"""Figures from measured runs (make figures, make plot).

  figures.py render docs/figures/figures.list [--out DIR] [--only NAME ...]
      every figure of the list (NAME KIND DATA [key=value ...] a line) as
      DIR/NAME.svg and DIR/NAME.png; DATA is read from data/ beside the list
  figures.py plot FILE.jsonl [--out DIR] [key=value ...]
      one run of your own: loss and accuracy or perplexity per epoch (kind=epochs,
      the default), or kind=xy x=KEY y=KEY, kind=bars label=KEY value=KEY

docs/figures/README.md describes the list, the kinds and their options."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from metrics import KINDS, FigureError, read_jsonl, read_source, read_specs  # noqa: E402
from plots import render  # noqa: E402


def render_list(list_path, out_dir, only):
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
            rows = read_jsonl(data)
            source = read_source(data)
            opts = dict(spec["options"])
            title = opts.pop("title", spec["name"])
            written = render(spec["kind"], rows, opts, source, title,
                             os.path.join(out_dir, spec["name"]))
        except FigureError as e:
            raise FigureError(f"{spec['line']}: figure {spec['name']}: {e}") from None
        print(f"figure {spec['name']}: {' '.join(written)}")


def plot_file(path, out_dir, words):
    opts = {}
    for word in words:
        key, sep, value = word.partition("=")
        opts[key] = value if sep else "yes"
    kind = opts.pop("kind", "epochs")
    if kind not in KINDS:
        raise FigureError(f"kind={kind}: use one of {', '.join(KINDS)}")
    rows = read_jsonl(path)
    source = read_source(path, required=False)
    name = os.path.splitext(os.path.basename(path))[0]
    title = opts.pop("title", os.path.basename(path))
    os.makedirs(out_dir, exist_ok=True)
    try:
        written = render(kind, rows, opts, source, title, os.path.join(out_dir, name))
    except FigureError as e:
        raise FigureError(f"{path}: {e}") from None
    for w in written:
        print(f"wrote {w}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="every figure of a figure list")
    r.add_argument("list")
    r.add_argument("--out", help="output directory (default: the list's directory)")
    r.add_argument("--only", nargs="+", default=[], metavar="NAME")
    p = sub.add_parser("plot", help="one metrics file of your own")
    p.add_argument("metrics")
    p.add_argument("--out", default="build/plots")
    p.add_argument("options", nargs="*", metavar="key=value")
    args = parser.parse_args()
    try:
        if args.command == "render":
            render_list(args.list, args.out or os.path.dirname(args.list) or ".", args.only)
        else:
            plot_file(args.metrics, args.out, args.options)
    except FigureError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
