"""One step of every rank of a trace as an SVG, drawn by hand (no libraries), as lesson
07's pipeline timeline is (tools/figures/timeline.py): a band per rank with its host
track (nested ranges one level under the other), its communication in flight and its
GPU streams, boxes coloured by category on a common time axis, the step's shares under
each band, a legend. A host range outside every step (an all-reduce between steps, the
evaluation) is drawn in a colour of its own: the shares leave it out. A box too narrow
for its name carries as much of it as fits, and under the band the ranges too short to
carry any are listed by name."""

from xml.sax.saxutils import escape

from trace_read import HOST, LANES, PARTS, nest, pids, step_parts, steps

COLOURS = {"compute": "#4a7ab5", "comm": "#d9534f", "data": "#2e9e5b", "step": "#e6e6e6",
           "other": "#9b59b6", "flight": "#f0ad4e", "outside": "#b0b0b0"}
LABELS = {"compute": "compute", "comm": "communication the host waits for (exposed)",
          "data": "data loading", "step": "step (idle where nothing else is)", "other": "other",
          "flight": "communication in flight (non-blocking)",
          "outside": "outside the steps (in no share)"}
PART_NAMES = {"compute": "compute", "comm": "exposed communication", "data": "data loading", "idle": "idle"}
LEVELS = 4  # host-track depths drawn; deeper ranges share the last row


CHAR_W = 5.5  # px a character of the 9 px labels takes, about


def _depths(nodes):
    """[(event, row, in a step)] of a host track's tree, parents first (without recursion:
    ranges may nest deeper than Python recurses); deeper ranges share the last row."""
    out, todo = [], [(node, 0, False) for node in reversed(nodes)]
    while todo:
        (e, children), depth, in_step = todo.pop()
        in_step = in_step or e.get("cat") == "step"
        out.append((e, min(depth, LEVELS - 1), in_step))
        todo.extend((c, depth + 1, in_step) for c in reversed(children))
    return out


def _label(name, width):
    """As much of name as fits in width px ("" when not even two characters do)."""
    fits = int((width - 4) / CHAR_W)
    if fits >= len(name):
        return name
    return name[:fits - 1] + "\u2026" if fits >= 3 else ""


def _short(missed):
    """The names of ranges drawn too short for a label: 'name' (x count, total ms), ..."""
    parts = []
    for name, (count, total) in sorted(missed.items(), key=lambda kv: -kv[1][1]):
        parts.append(f"{name}{f' x{count}' if count > 1 else ''} {_fmt_ms(total)}")
    shown = parts[:6]
    more = f", and {len(parts) - 6} more" if len(parts) > 6 else ""
    return "too short to label: " + ", ".join(shown) + more

def _rows(doc, pid, t0, t1):
    """[(label, [(event, colour key)])] of one rank inside [t0, t1]."""
    inside = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("pid") == pid
              and e["ts"] < t1 and e["ts"] + e["dur"] > t0]
    placed = _depths(nest([e for e in inside if e.get("tid") == HOST]))
    rows = [("host" if d == 0 else "", [(e, e.get("cat", "other") if in_step else "outside")
                                        for e, dd, in_step in placed if dd == d])
            for d in range(LEVELS)]
    rows = [r for k, r in enumerate(rows) if k == 0 or r[1]]  # the levels in use
    names = {e["tid"]: e.get("args", {}).get("name", "") for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == pid}
    for tid in sorted({e["tid"] for e in inside if e.get("tid") != HOST}):
        lane = tid in LANES
        if lane:
            label = f"in flight {tid - 9}"
        elif tid < LANES[0]:
            label = f"GPU stream {tid - 1}"
        else:  # a track of its own, named by the trace (lesson 10's "data loader")
            label = names.get(tid) or f"track {tid}"
        rows.append((label, [(e, "flight" if lane else e.get("cat", "other")) for e in inside if e["tid"] == tid]))
    return rows


def _fmt_ms(us):
    return f"{float(us) / 1000:.2f} ms"


def render(doc, index, title, footer=""):
    """The index-th step (0-based) of every rank; raises IndexError when a rank has fewer."""
    ranks = pids(doc)
    chosen = {pid: steps(doc, pid)[index] for pid in ranks}
    t0 = min(n[0]["ts"] for n in chosen.values())
    t1 = max(n[0]["ts"] + n[0]["dur"] for n in chosen.values())
    span = float(t1 - t0) or 1.0
    width, left, right, row_h = 1000, 110, 20, 14
    plot_w = width - left - right
    x = lambda t: left + plot_w * float(t - t0) / span  # noqa: E731
    out, y = [], 70
    for pid in ranks:
        rows = _rows(doc, pid, t0, t1)
        out.append(f'<text x="8" y="{y + 12}" font-size="14" font-weight="bold">rank {pid}</text>')
        missed = {}  # name: (count, total us) of the boxes too narrow for any label
        for label, boxes in rows:
            out.append(f'<text x="{left - 6}" y="{y + 11}" font-size="10" text-anchor="end" fill="#555555">{escape(label)}</text>')
            for e, key in boxes:
                x0, x1 = max(x(e["ts"]), left), min(x(e["ts"] + e["dur"]), left + plot_w)
                out.append(f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0, 0.4):.2f}" height="{row_h - 2}" '
                           f'fill="{COLOURS.get(key, COLOURS["other"])}"><title>{escape(e["name"])}: '
                           f'{_fmt_ms(e["dur"])}</title></rect>')
                text = _label(e["name"], x1 - x0)
                if text:
                    out.append(f'<text x="{(x0 + x1) / 2:.2f}" y="{y + 10}" font-size="9" text-anchor="middle" '
                               f'fill="{"#555555" if key in ("step", "outside") else "#ffffff"}">{escape(text)}</text>')
                elif t0 <= e["ts"] and e["ts"] + e["dur"] <= t1:  # not a neighbouring step's sliver
                    count, total = missed.get(e["name"], (0, 0))
                    missed[e["name"]] = (count + 1, total + e["dur"])
            y += row_h
        if missed:
            out.append(f'<text x="{left}" y="{y + 11}" font-size="10" fill="#555555">{escape(_short(missed))}</text>')
            y += 14
        step = chosen[pid][0]
        parts = step_parts(chosen[pid])
        text = ", ".join(f"{PART_NAMES[p]} {100 * float(parts[p]) / float(step['dur'] or 1):.0f}%" for p in PARTS)
        out.append(f'<text x="{left}" y="{y + 13}" font-size="11" fill="#333333">this step '
                   f'{_fmt_ms(step["dur"])}: {text}</text>')
        y += 30
    axis_y = y
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="#333333"/>')
    for k in range(6):
        t = span * k / 5
        out.append(f'<text x="{left + plot_w * k / 5:.1f}" y="{axis_y + 16}" font-size="11" '
                   f'text-anchor="middle">{t / 1000:.1f}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{axis_y + 32}" font-size="12" text-anchor="middle">'
               f'ms since the first rank began step {index + 1}</text>')
    ly = axis_y + 50
    lx = left
    for key in ("compute", "comm", "flight", "data", "step", "outside"):
        out.append(f'<rect x="{lx}" y="{ly}" width="14" height="12" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + 10}" font-size="11">{escape(LABELS[key])}</text>')
        lx += 30 + 6 * len(LABELS[key])
        if lx > width - 200:
            lx, ly = left, ly + 18
    height = ly + 30 + (16 if footer else 0)
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
            f'<text x="{width / 2}" y="28" font-size="17" text-anchor="middle">{escape(title)}</text>',
            f'<text x="{width / 2}" y="48" font-size="11" text-anchor="middle" fill="#555555">'
            f'each instant counted once: in the innermost range open on the host</text>']
    tail = [f'<text x="8" y="{height - 8}" font-size="10" fill="#555555">{escape(footer)}</text>'] if footer else []
    return "\n".join(head + out + tail + ["</svg>"]) + "\n"


def step_count(doc):
    return min(len(steps(doc, pid)) for pid in pids(doc)) if pids(doc) else 0
