"""Gnuplot scripts for the kinds of figure, drawn from metrics rows.

  epochs  loss, accuracy and/or perplexity against the epoch, one panel each
          (the keys that are present: *loss, *acc*, *perplexity* / *ppl)
  bars    one bar per value of a label key (device, impl): CPU vs GPU, C vs PyTorch
  xy      any key against any other: bandwidth vs message size, scaling
          efficiency vs ranks, bubble vs micro-batches, return vs steps
  roofline  a point per layer (attained GFLOP/s against FLOP per byte), log-log,
          under the machine's two roofs (lesson 10's --roofline --metrics rows)

Every figure ends with a footer naming the machine, the date and the command of
the run (the data file's .source)."""

import re
import shutil
import subprocess
import sys
import textwrap

from metrics import FigureError, numeric

# Same layout for both: the PNG is the SVG at twice the size (for handouts, READMEs).
# The scripts give font sizes as multiples of fs (font(10)), the scale of the terminal:
# cairo's own fontscale would misplace the axis labels.
TERMINALS = {
    "svg": ('svg size 800,450 font "DejaVu Sans,14" linewidth 1.5 background "#ffffff"', 1),
    "png": ('pngcairo size 1600,900 font "DejaVu Sans,28" linewidth 3 background "#ffffff"', 2),
}


def font(points):
    """A font size that scales with the terminal (fs is set per terminal)."""
    return f"font sprintf(',%g', {points} * fs)"
FOOTER_WIDTH = 110  # characters per footer line at the figure's width


def gp_string(text):
    """A gnuplot string literal: single quotes, '' for a quote; no escapes inside."""
    return "'" + str(text).replace("'", "''") + "'"


def datablock(name, points):
    """$name << EOD ... EOD: rows of space-separated fields; strings quoted."""
    lines = [f"${name} << EOD"]
    for p in points:
        lines.append(" ".join(f'"{v}"' if isinstance(v, str) else repr(float(v)) for v in p))
    lines.append("EOD")
    return "\n".join(lines)


def footer_lines(source):
    text = source.get("text") or (f"Measured on {source['machine']}, {source['date']}. "
                                  f"Command: {source['command']}")
    if source.get("note"):
        text += f" ({source['note']})"
    return textwrap.wrap(text, FOOTER_WIDTH, break_long_words=True, break_on_hyphens=False)


def title_font(title):
    """A long title gets a smaller font, so that it still fits the figure's width."""
    return font(16 if len(title) <= 75 else 14 if len(title) <= 88 else 12)


def preamble(source, title, extra_notes=()):
    """Settings shared by every kind; returns (script lines, bottom margin as a screen fraction)."""
    lines = ["set termoption noenhanced", "set encoding utf8",
             "set grid ytics lc rgb '#dddddd'", "set border 3", "set tics nomirror",
             "set key top right box opaque"]
    notes = list(extra_notes) + footer_lines(source)
    for i, note in enumerate(reversed(notes)):
        lines.append(f"set label {100 + i} {gp_string(note)} at screen 0.01, screen "
                     f"{0.02 + 0.037 * i:.3f} left {font(10)} tc rgb '#555555'")
    bottom = 0.16 + 0.037 * len(notes)
    lines.append(f"set title {gp_string(title)} {title_font(title)}" if title else "unset title")
    return lines, bottom


def series_keys(rows, test):
    keys = []
    for row in rows:
        for key, value in row.items():
            if key not in keys and numeric(value) and test(key.lower()):
                keys.append(key)
    return keys


def group_key(rows, x_key, wanted=None):
    """The key whose string values split the rows into series (device, run), if any."""
    if wanted:
        if not any(wanted in r for r in rows):
            raise FigureError(f"group={wanted}: no row has that key")
        return wanted
    candidates = []
    for key in rows[0]:
        values = {r.get(key) for r in rows}
        if key != x_key and all(isinstance(v, str) for v in values) and len(values) > 1:
            candidates.append(key)
    return candidates[0] if len(candidates) == 1 else None


def series(rows, x_key, y_key, group, scale=1.0):
    """[(group value or None, [(x, y)])], points sorted by x."""
    out = {}
    for row in rows:
        if numeric(row.get(x_key)) and numeric(row.get(y_key)):
            out.setdefault(row.get(group) if group else None, []).append(
                (row[x_key], row[y_key] * scale))
    return [(g, sorted(p)) for g, p in out.items()]


def x_axis(rows, x_key, log=False):
    """Whole-number x values close together (epochs, ranks) get a tic each, not steps
    512 apart; a little room at both ends."""
    xs = sorted({r[x_key] for r in rows if numeric(r.get(x_key))})
    if not xs or log:
        return []
    lines = []
    if len(xs) <= 20 and all(float(x).is_integer() for x in xs) and xs[-1] - xs[0] <= 20:
        lines.append("set xtics 1")
    pad = 0.5 if len(xs) <= 1 else 0.02 * (xs[-1] - xs[0])
    lines.append(f"set xrange [{xs[0] - pad}:{xs[-1] + pad}]")
    return lines


def epochs_script(rows, opts, source, title):
    x_key = opts.get("x", "epoch")
    if not any(x_key in r for r in rows):
        keys = ", ".join(sorted({k for r in rows for k in r}))
        raise FigureError(f"no '{x_key}' key in the metrics (keys: {keys}); per-epoch metrics "
                          "need one, or give x=KEY")
    group = group_key(rows, x_key, opts.get("group"))
    panels = [
        ("loss", series_keys(rows, lambda k: k.endswith("loss")), 1.0, "top right"),
        ("accuracy (%)", series_keys(rows, lambda k: "acc" in k), 100.0, "bottom right"),
        ("perplexity", series_keys(rows, lambda k: "perplexity" in k or k.endswith("ppl")), 1.0,
         "top right"),
    ]
    panels = [p for p in panels if p[1]]
    if not panels:
        keys = ", ".join(sorted({k for r in rows for k in r}))
        raise FigureError(f"no loss, accuracy or perplexity keys to plot (keys: {keys})")
    lines, bottom = preamble(source, None)
    lines.append(f"set multiplot layout 1,{len(panels)} title {gp_string(title)} {title_font(title)} "
                 f"margins 0.11,0.97,{bottom:.3f},0.86 spacing 0.11,0.1")
    lines += x_axis(rows, x_key)
    lines.append(f"set xlabel {gp_string(x_key)}")
    blocks, n = [], 0
    for ylabel, keys, scale, key_place in panels:
        lines.append(f"set ylabel {gp_string(ylabel)}")
        lines.append(f"set key {key_place}")
        plots = []
        for k_index, key in enumerate(keys):
            for g_index, (g, points) in enumerate(series(rows, x_key, key, group, scale)):
                n += 1
                blocks.append(datablock(f"s{n}", points))
                name = key + (f" ({g})" if g is not None else "")
                plots.append(f"$s{n} using 1:2 with linespoints lt {k_index + 1} dt {g_index + 1} "
                             f"pt 7 ps 0.6 title {gp_string(name)}")
                if scale != 1.0 and points:  # accuracy: print the last value
                    last_x, last_y = points[-1]
                    lines.append(f"set label {n} '{last_y:.1f}%' at first {last_x}, first {last_y} "
                                 f"right offset -0.5,0.9 {font(12)}")
        lines.append("plot " + ", \\\n     ".join(plots))
        lines.append("unset label")  # the footer and values once, not in every panel
    lines.append("unset multiplot")
    return blocks, lines


def bars_script(rows, opts, source, title):
    label_key, value_key = opts.get("label"), opts.get("value")
    if not label_key or not value_key:
        raise FigureError("bars need label=KEY and value=KEY (e.g. label=device value=samples_per_s)")
    reduce = opts.get("reduce", "mean")
    reducers = {"mean": lambda v: sum(v) / len(v), "max": max, "min": min, "last": lambda v: v[-1]}
    if reduce not in reducers:
        raise FigureError(f"reduce={reduce}: use one of {', '.join(reducers)}")
    values, first_row = {}, {}
    for row in rows:
        if label_key in row and numeric(row.get(value_key)):
            label = str(row[label_key])
            values.setdefault(label, []).append(row[value_key])
            first_row.setdefault(label, row)
    if not values:
        raise FigureError(f"no row has both '{label_key}' and a number for '{value_key}'")
    expect = [e for e in opts.get("expect", "").split(",") if e] or list(values)
    names = dict(item.split("=", 1) for item in opts.get("names", "").split(";") if "=" in item)
    bars = []
    for label in expect + [v for v in values if v not in expect]:
        shown = names.get(label, label)
        if label in values:
            shown = shown.format_map({k: v for k, v in first_row[label].items()})
            bars.append((shown, reducers[reduce](values[label]), label))
        else:
            bars.append((shown, None, label))
    base = None
    if opts.get("ratio"):
        base = next((v for _, v, l in bars if l == opts["ratio"] and v), None)
    missing = [l for _, v, l in bars if v is None]
    notes = [f"not measured yet: {', '.join(missing)} (no run recorded in the data)"] if missing else []
    lines, bottom = preamble(source, title, notes)
    top = max(v for _, v, _ in bars if v is not None)
    lines += [f"set bmargin at screen {bottom:.3f}", "set tmargin at screen 0.88",
              "set lmargin at screen 0.11", "set rmargin at screen 0.97",
              "set style fill solid 0.85 border -1", "set boxwidth 0.6", "unset key",
              f"set yrange [0:{top * 1.18}]", f"set xrange [-0.6:{len(bars) - 0.4}]",
              f"set ylabel {gp_string(opts.get('ylabel', value_key))}", "set xtics scale 0"]
    points = []
    for i, (shown, value, _) in enumerate(bars):
        if value is None:
            lines.append(f"set label {i + 1} 'not measured yet' at first {i}, first {top * 0.06} "
                         f"center {font(13)} tc rgb '#aa3333'")
            points.append((i, 0.0, shown, ""))
            continue
        text = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
        if base and opts.get("ratio") != bars[i][2]:
            ratio = value / base
            text += f" ({ratio:.0f}x)" if ratio >= 10 else f" ({ratio:.2f}x)"
        points.append((i, value, shown, text))
    block = datablock("bars", points)
    lines.append("plot $bars using 1:2:xtic(3) with boxes lc rgb '#4a7ab5', "
                 f"'' using 1:2:4 with labels offset 0,0.8 {font(13)}")
    return [block], lines


def xy_script(rows, opts, source, title):
    x_key, y_keys = opts.get("x"), [k for k in opts.get("y", "").split(",") if k]
    if not x_key or not y_keys:
        raise FigureError("xy needs x=KEY and y=KEY[,KEY...] (e.g. x=bytes y=gbs)")
    for key in [x_key] + y_keys:
        if not any(numeric(r.get(key)) for r in rows):
            raise FigureError(f"no row has a number for '{key}'")
    group = group_key(rows, x_key, opts.get("group"))
    lines, bottom = preamble(source, title)
    lines += [f"set bmargin at screen {bottom:.3f}", "set tmargin at screen 0.88",
              "set lmargin at screen 0.11", "set rmargin at screen 0.97",
              f"set xlabel {gp_string(opts.get('xlabel', x_key))}",
              f"set ylabel {gp_string(opts.get('ylabel', ', '.join(y_keys)))}"]
    lines += x_axis(rows, x_key, log="logx" in opts)
    if "logx" in opts:  # powers of 2 with binary prefixes: 8, 1k, 32M rather than 3.35544e+07
        lines += ["set logscale x 2", 'set format x "%.0b%B"']
    if "logy" in opts:
        lines.append("set logscale y")
    if "ybytes" in opts:  # bytes with binary prefixes: 7.5 GiB rather than 8.05306e+09
        lines += ['set format y "%.1b %BB"', "set lmargin at screen 0.15"]  # wider tic labels
    if opts.get("key"):  # where the legend goes, in gnuplot's words ("top left")
        lines.append(f"set key {opts['key']} box opaque")
    if opts.get("ymax") or opts.get("ymin"):  # ymax: room above the data for the legend
        lo, hi = (float(opts[k]) if opts.get(k) else "*" for k in ("ymin", "ymax"))
        lines.append(f"set yrange [{lo}:{hi}]")
    names = dict(item.split("=", 1) for item in opts.get("names", "").split(";") if "=" in item)
    blocks, plots, n = [], [], 0
    for k_index, key in enumerate(y_keys):
        for g_index, (g, points) in enumerate(series(rows, x_key, key, group)):
            n += 1
            blocks.append(datablock(f"s{n}", points))
            shown = names.get(key, key)
            name = (shown if len(y_keys) > 1 or g is None else "") + (f" {g}" if g is not None else "")
            # Later groups get open, larger markers: where two runs agree, both show.
            marker = "pt 7 ps 0.6" if g_index == 0 else f"pt {(6, 4, 8, 10)[(g_index - 1) % 4]} ps 2.5"
            plots.append(f"$s{n} using 1:2 with linespoints lt {k_index + 1} dt {g_index + 1} "
                         f"{marker} title {gp_string(name.strip())}")
    lines.append("plot " + ", \\\n     ".join(plots))
    return blocks, lines


def roofline_script(rows, opts, source, title):
    """Log-log: min(peak, bandwidth x intensity) as a line per machine (group), a point
    per layer, a marker shape per layer name (listed beside the plot), a colour per
    machine. The roofs are the rows' own (peak=KEY, bw=KEY)."""
    x_key, y_key = opts.get("x", "intensity"), opts.get("y", "gflops")
    label_key = opts.get("label", "layer")
    peak_key, bw_key = opts.get("peak", "peak_gflops"), opts.get("bw", "bandwidth_gbs")
    points = [r for r in rows if numeric(r.get(x_key)) and numeric(r.get(y_key))
              and r[x_key] > 0 and r[y_key] > 0]
    if not points:
        raise FigureError(f"no row has positive numbers for '{x_key}' and '{y_key}' "
                          "(lesson 10's train --roofline --metrics FILE writes them)")
    missing = [k for k in (peak_key, bw_key) if not any(numeric(r.get(k)) for r in points)]
    if missing:
        raise FigureError(f"no row has a number for {' or '.join(repr(k) for k in missing)}: "
                          "the roofs come from the rows (peak=KEY bw=KEY name other keys)")
    group = opts.get("group") or ("device" if len({r.get("device") for r in points}) > 1 else None)
    if group and not any(group in r for r in points):
        raise FigureError(f"group={group}: no row has that key")
    machines = {}  # group value -> (peak, bandwidth): the highest its rows report
    for r in points:
        if numeric(r.get(peak_key)) and numeric(r.get(bw_key)):
            g = r.get(group) if group else None
            peak, bw = machines.get(g, (0.0, 0.0))
            machines[g] = (max(peak, r[peak_key]), max(bw, r[bw_key]))
    xs = [r[x_key] for r in points] + [p / b for p, b in machines.values()]
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    ys = [r[y_key] for r in points] + [b * x_lo for _, b in machines.values()]
    y_lo, y_hi = min(ys) / 3, max(p for p, _ in machines.values()) * 3
    lines, bottom = preamble(source, title)
    # The left and right margins are gnuplot's own: it sizes them for the y tics' labels
    # and the y label (fixed ones lost the label behind wide tics such as 0.001) and for
    # the key outside the plot (its longest layer name: a fixed one cut the box off).
    lines += [f"set bmargin at screen {bottom:.3f}", "set tmargin at screen 0.88",
              "set logscale xy 10", f"set xrange [{x_lo}:{x_hi}]", f"set yrange [{y_lo}:{y_hi}]",
              "set grid xtics ytics lc rgb '#dddddd'",
              f"set xlabel {gp_string(opts.get('xlabel', 'arithmetic intensity (FLOP per byte)'))}",
              f"set ylabel {gp_string(opts.get('ylabel', 'attained GFLOP/s'))}",
              "key_font = sprintf(',%g', 10 * fs)",  # (set key takes a variable, not an expression)
              "set key outside right top vertical Left reverse box opaque samplen 1 font key_font"]
    names = []  # layer names in order of appearance: a marker shape each
    for r in points:
        if str(r.get(label_key, "")) not in names:
            names.append(str(r.get(label_key, "")))
    shapes = (7, 5, 9, 11, 13, 15, 1, 2, 3, 4, 6, 8, 10, 12, 14)
    blocks, plots = [], []
    for n, (g, (peak, bw)) in enumerate(sorted(machines.items(), key=lambda i: str(i[0])), 1):
        ridge = peak / bw
        blocks.append(datablock(f"roof{n}", [(x_lo, bw * x_lo), (ridge, peak), (x_hi, peak)]))
        name = (f"{g}: " if g is not None else "") + f"{peak:,.0f} GFLOP/s, {bw:,.1f} GB/s"
        plots.append(f"$roof{n} using 1:2 with lines lt {n} lw 2 title {gp_string(name)}")
        lines.append(f"set label {200 + n} {gp_string(f'ridge {ridge:.3g} FLOP/B')} at first {ridge}, "
                     f"first {peak} center offset 0,0.9 {font(10)} tc lt {n}")
        for k, layer in enumerate(names):
            mine = [(r[x_key], r[y_key]) for r in points
                    if str(r.get(label_key, "")) == layer and (not group or r.get(group) == g)]
            if not mine:
                continue
            blocks.append(datablock(f"p{n}_{k}", mine))
            shown = gp_string(layer or "(no name)") if n == 1 else "notitle"
            plots.append(f"$p{n}_{k} using 1:2 with points lt {n} pt {shapes[k % len(shapes)]} ps 2 "
                         + (f"title {shown}" if n == 1 else shown))
    lines.append("plot " + ", \\\n     ".join(plots))
    return blocks, lines


SCRIPTS = {"epochs": epochs_script, "bars": bars_script, "xy": xy_script, "roofline": roofline_script}


def render(kind, rows, opts, source, title, out_base, formats=("svg", "png")):
    """Writes out_base.svg and out_base.png; returns the paths written."""
    if shutil.which("gnuplot") is None:
        raise FigureError("gnuplot is not installed (Debian: sudo apt-get install gnuplot-nox, "
                          "or sudo make deps)")
    blocks, body = SCRIPTS[kind](rows, opts, source, title)
    written = []
    for fmt in formats:
        path = f"{out_base}.{fmt}"
        terminal, scale = TERMINALS[fmt]
        script = "\n".join([f"set terminal {terminal}", f"fs = {scale}", f"set output {gp_string(path)}"]
                           + blocks + body + ["set output"]) + "\n"
        run = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if run.returncode != 0:
            raise FigureError(f"gnuplot failed on {path}:\n{run.stderr.strip()}")
        # A run of one epoch has a flat range, which gnuplot widens itself: no news.
        for line in run.stderr.splitlines():
            if line.strip() and not re.match(r"Warning: empty [xy]2? range", line):
                print(f"gnuplot, on {path}: {line}", file=sys.stderr)
        written.append(path)
    return written
