#!/usr/bin/env python3
"""A pipeline step's timeline as an SVG (lesson 07's --timeline FILE).

  timeline.py TIMELINE.jsonl [--step N] [--out FILE.svg] [--title TEXT] [--source FILE]

The file holds a JSON line per event, as lib/parallel/pipeline.c writes them:
  {"step": 2, "rank": 1, "kind": "forward", "micro": 3, "start": 0.0123, "end": 0.0201}
kind: forward, backward, send (a non-blocking send posted), wait (in a receive).
One row per rank (rank 0 at the top), a box per event on a common time axis (the
step's clock starts after a barrier), the micro-batch's number inside the forwards and
backwards that are wide enough for it, a legend, and under the axis the share of the
step each rank spent computing. --step picks the step (default: the second recorded,
the first after the warm-up, or the only one). --source FILE (a .source beside the
data, as tools/figures/record.sh writes) adds its machine, date and command as a
footer; by default DATA.source is used where it exists.

Python's standard library only: the SVG is written by hand."""

import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

COLOURS = {  # fill, text
    "forward": ("#4a7ab5", "#ffffff"),
    "backward": ("#e08a2c", "#ffffff"),
    "send": ("#2e9e5b", "#ffffff"),
    "wait": ("#d9d9d9", "#555555"),
}
KINDS = ("forward", "backward", "send", "wait")


class TimelineError(Exception):
    pass


def read_events(path):
    events = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError as err:
                raise TimelineError(f"{path}:{n}: not JSON ({err})") from None
            missing = [k for k in ("step", "rank", "kind", "micro", "start", "end") if k not in e]
            if missing:
                raise TimelineError(f"{path}:{n}: no {', '.join(missing)} (is this a --timeline file?)")
            if e["kind"] not in KINDS:
                raise TimelineError(f"{path}:{n}: kind {e['kind']!r}: expected one of {', '.join(KINDS)}")
            events.append(e)
    if not events:
        raise TimelineError(f"{path}: no events")
    return events


def read_source(path):
    """machine, date, command (and note) of a .source file, as one footer text."""
    fields = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
    parts = []
    if fields.get("machine"):
        parts.append(f"Measured on {fields['machine']}, {fields.get('date', '?')}.")
    if fields.get("command"):
        parts.append(f"Command: {fields['command']}")
    if fields.get("note"):
        parts.append(f"({fields['note']})")
    return " ".join(parts)


def wrap(text, width):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def schedule_name(events, step):
    """GPipe when every rank runs all its forwards before its first backward, else 1F1B
    (read from the order of the events, which the file does not name)."""
    for r in {e["rank"] for e in events if e["step"] == step}:
        order = [e["kind"] for e in sorted((e for e in events if e["step"] == step and e["rank"] == r),
                                           key=lambda e: e["start"]) if e["kind"] in ("forward", "backward")]
        if "backward" in order and "forward" in order[order.index("backward"):]:
            return "1F1B (a forward, a backward)"
    return "GPipe (all forwards, then all backwards)"


def nice_step(span, ticks=8):
    """A round tick spacing (1, 2, 5 x 10^k seconds) giving about `ticks` ticks."""
    raw = span / ticks
    k = 1.0
    while k * 10 <= raw:
        k *= 10
    while k > raw:
        k /= 10
    for f in (1, 2, 5, 10):
        if k * f >= raw:
            return k * f
    return k * 10


def render(events, step, title, footer):
    evs = [e for e in events if e["step"] == step]
    ranks = sorted({e["rank"] for e in evs})
    end = max(e["end"] for e in evs)
    if not end > 0:
        raise TimelineError(f"step {step}: the events end at {end}")
    unit, scale = ("ms", 1e3) if end < 10 else ("s", 1.0)

    width, left, right = 1000, 90, 20
    top, row_h, gap = 78, 46, 12
    plot_w = width - left - right
    axis_y = top + len(ranks) * (row_h + gap)
    legend_y = axis_y + 52
    footer_lines = wrap(footer, 150) if footer else []
    height = legend_y + 40 + 15 * len(footer_lines) + 8

    def x(t):
        return left + plot_w * t / end

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2}" y="28" font-size="18" text-anchor="middle">{escape(title)}</text>']
    busy = {}
    for r in ranks:
        busy[r] = sum(e["end"] - e["start"] for e in evs
                      if e["rank"] == r and e["kind"] in ("forward", "backward"))
    out.append(f'<text x="{width / 2}" y="50" font-size="12" text-anchor="middle" fill="#555555">'
               f'step {step}: {end * scale:.1f} {unit}; computing (forward + backward) '
               + ", ".join(f"rank {r} {100 * busy[r] / end:.0f}%" for r in ranks)
               + f'; idle on average {100 * (1 - sum(busy.values()) / (len(ranks) * end)):.0f}%</text>')

    # time axis: grid lines behind the boxes
    tick = nice_step(end * scale)
    t = 0.0
    while t <= end * scale * 1.0001:
        xx = x(t / scale)
        out.append(f'<line x1="{xx:.1f}" y1="{top - 6}" x2="{xx:.1f}" y2="{axis_y}" '
                   f'stroke="#eeeeee"/>')
        out.append(f'<line x1="{xx:.1f}" y1="{axis_y}" x2="{xx:.1f}" y2="{axis_y + 5}" stroke="#333333"/>')
        label = f"{t:.0f}" if tick >= 1 else f"{t:.{max(0, -int(f'{tick:e}'.split('e')[1]))}f}"
        out.append(f'<text x="{xx:.1f}" y="{axis_y + 19}" font-size="12" text-anchor="middle">{label}</text>')
        t += tick
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="#333333"/>')
    out.append(f'<text x="{left + plot_w / 2}" y="{axis_y + 38}" font-size="13" text-anchor="middle">'
               f'time since the step began ({unit})</text>')

    for i, r in enumerate(ranks):
        y0 = top + i * (row_h + gap)
        out.append(f'<text x="{left - 10}" y="{y0 + row_h / 2 + 5}" font-size="14" '
                   f'text-anchor="end">rank {r}</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{row_h}" fill="#fafafa" '
                   f'stroke="#dddddd"/>')
        # waits first, then compute, then sends on top (a send is a few microseconds)
        for kind in ("wait", "forward", "backward", "send"):
            fill, ink = COLOURS[kind]
            for e in evs:
                if e["rank"] != r or e["kind"] != kind:
                    continue
                x0, x1 = x(e["start"]), x(e["end"])
                if kind == "send":  # a thin mark where it was posted
                    out.append(f'<rect x="{x0 - 1:.1f}" y="{y0 + row_h - 10}" width="2.5" height="10" '
                               f'fill="{fill}"><title>send of micro-batch {e["micro"]}, '
                               f'{(e["end"] - e["start"]) * 1e6:.0f} us</title></rect>')
                    continue
                inset = 6 if kind == "wait" else 2
                w = max(x1 - x0, 0.5)
                out.append(f'<rect x="{x0:.2f}" y="{y0 + inset}" width="{w:.2f}" '
                           f'height="{row_h - 2 * inset}" fill="{fill}" stroke="#ffffff" stroke-width="0.5">'
                           f'<title>{kind} of micro-batch {e["micro"]}: {e["start"] * scale:.2f}-'
                           f'{e["end"] * scale:.2f} {unit}</title></rect>')
                label = str(e["micro"])
                if kind != "wait" and w >= 7 * len(label) + 2:
                    out.append(f'<text x="{(x0 + x1) / 2:.2f}" y="{y0 + row_h / 2 + 5}" font-size="13" '
                               f'text-anchor="middle" fill="{ink}">{label}</text>')

    # legend
    lx = left
    names = {"forward": "forward (micro-batch)", "backward": "backward (micro-batch)",
             "send": "send posted (non-blocking)", "wait": "waiting in a receive"}
    for kind in KINDS:
        fill, _ = COLOURS[kind]
        out.append(f'<rect x="{lx}" y="{legend_y}" width="18" height="14" fill="{fill}"/>')
        out.append(f'<text x="{lx + 24}" y="{legend_y + 12}" font-size="13">{names[kind]}</text>')
        lx += 24 + 8 * len(names[kind]) + 24
    for i, line in enumerate(footer_lines):
        out.append(f'<text x="8" y="{legend_y + 40 + 15 * i}" font-size="11" fill="#555555">'
                   f'{escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline")
    parser.add_argument("--step", type=int, help="the step to draw (default: the second recorded)")
    parser.add_argument("--out", help="the SVG (default: the timeline's name with .svg)")
    parser.add_argument("--title", help="the figure's title")
    parser.add_argument("--source", help="a .source file for the footer (default: DATA.source where it exists)")
    args = parser.parse_args()
    try:
        events = read_events(args.timeline)
        steps = sorted({e["step"] for e in events})
        step = args.step if args.step is not None else (steps[1] if len(steps) > 1 else steps[0])
        if step not in steps:
            raise TimelineError(f"{args.timeline}: no step {step} (steps: {', '.join(map(str, steps))})")
        source = args.source or os.path.splitext(args.timeline)[0] + ".source"
        footer = read_source(source) if os.path.exists(source) else ""
        ranks = len({e["rank"] for e in events if e["step"] == step})
        micro = len({e["micro"] for e in events if e["step"] == step})
        title = args.title or (f"A pipeline step: {ranks} ranks, {micro} micro-batches, "
                               f"{schedule_name(events, step)}")
        out = args.out or os.path.splitext(args.timeline)[0] + ".svg"
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            f.write(render(events, step, title, footer))
        print(f"timeline {args.timeline} (step {step}): {out}")
    except (OSError, TimelineError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
