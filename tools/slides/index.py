#!/usr/bin/env python3
"""Writes build/slides/index.html, the page an instructor opens first: every lesson
(course/NN-*/), its deck (slides/NN-*.md, rendered beside the page), its PDF where
make slides-pdf made one, and its figures (docs/figures/figures.list entries whose
name starts with the lesson number); then the course-wide figures.

  tools/slides/index.py [--out build/slides/index.html]

Run from the repository root (make slides does)."""

import argparse
import glob
import html
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "figures"))
from metrics import FigureError, read_source, read_specs  # noqa: E402

FIGURES_LIST = "docs/figures/figures.list"

STYLE = """
body { font-family: "DejaVu Sans", sans-serif; margin: 2em auto; max-width: 70em; color: #222;
       padding: 0 1em; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
table.lessons { border-collapse: collapse; width: 100%; }
table.lessons td, table.lessons th { border-top: 1px solid #ccc; padding: 0.6em; vertical-align: top;
       text-align: left; }
.num { font-weight: bold; font-size: 1.2em; }
.muted { color: #777; }
figure { display: inline-block; margin: 0 1em 1em 0; width: 22em; vertical-align: top; }
figure img { width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; }
kbd { border: 1px solid #aaa; border-radius: 3px; padding: 0 0.3em; font-size: 0.9em; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def esc(text):
    return html.escape(str(text), quote=True)


def first_heading(path, prefix="# "):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(prefix):
                    return line[len(prefix):].strip()
    except OSError:
        pass
    return None


def deck_info(path):
    """(title, slides as reveal.js counts them, '##' slides, speaker-note blocks) of a deck."""
    title, sections, slides, notes, fenced, in_yaml = None, 0, 0, 0, False, False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if number == 1 and line.strip() == "---":
                in_yaml = True
                continue
            if in_yaml:
                if line.strip() in ("---", "..."):
                    in_yaml = False
                elif line.startswith("title:"):
                    title = line.split(":", 1)[1].strip().strip('"')
                continue
            if re.match(r"^(```|~~~)", line):
                fenced = not fenced
            elif not fenced and line.startswith("# "):
                sections += 1
            elif not fenced and line.startswith("## "):
                slides += 1
            elif not fenced and re.match(r"^:::+\s*\{?\.?notes\}?\s*$", line):
                notes += 1
    return title or os.path.basename(path), (1 if title else 0) + sections + slides, slides, notes


def figure_html(spec):
    name = spec["name"]
    title = spec["options"].get("title", name)
    try:
        source = read_source(os.path.join(os.path.dirname(FIGURES_LIST), "data", spec["data"]))
        measured = f"{source['machine']}, {source['date']}"
    except FigureError as e:
        measured = f"source not recorded ({e})"
    if not os.path.exists(f"docs/figures/{name}.svg"):
        return (f'<figure><figcaption><b>{esc(title)}</b><br><span class="muted">not drawn yet: '
                f'make figures</span></figcaption></figure>')
    return (f'<figure><a href="figures/{esc(name)}.svg"><img src="figures/{esc(name)}.svg" '
            f'alt="{esc(title)}"></a><figcaption><b>{esc(title)}</b><br>'
            f'<span class="muted">{esc(measured)}</span><br>'
            f'<a href="figures/{esc(name)}.svg">SVG</a> · <a href="figures/{esc(name)}.png">PNG</a>'
            f'</figcaption></figure>')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/slides/index.html")
    args = parser.parse_args()
    out_dir = os.path.dirname(args.out) or "."

    lessons = {}  # "01" -> {"dir": ..., "title": ..., "decks": [...]}
    for d in sorted(glob.glob("course/[0-9][0-9]-*/")):
        name = os.path.basename(d.rstrip("/"))
        lessons[name[:2]] = {"dir": name, "title": first_heading(os.path.join(d, "README.md")) or name,
                             "decks": []}
    for deck in sorted(glob.glob("slides/[0-9][0-9]-*.md")):
        number = os.path.basename(deck)[:2]
        lessons.setdefault(number, {"dir": None, "title": f"Lesson {number}", "decks": []})
        lessons[number]["decks"].append(deck)
    try:
        specs = read_specs(FIGURES_LIST) if os.path.exists(FIGURES_LIST) else []
    except FigureError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)

    rows = []
    for number, lesson in sorted(lessons.items()):
        decks = []
        for deck in lesson["decks"]:
            base = os.path.splitext(os.path.basename(deck))[0]
            title, total, slides, notes = deck_info(deck)
            pdf = "".join(f' · <a href="pdf/{esc(base + suffix)}.pdf">{label}</a>'
                          for suffix, label in (("", "PDF"), ("-notes", "PDF with notes"))
                          if os.path.exists(os.path.join(out_dir, "pdf", base + suffix + ".pdf")))
            decks.append(f'<a href="{esc(base)}.html"><b>{esc(title)}</b></a>{pdf}<br>'
                         f'<span class="muted">{total} slides, speaker notes on {notes} of its {slides} '
                         f'content slides; '
                         f'source <code>{esc(deck)}</code></span>')
        if not decks:
            decks.append('<span class="muted">no deck yet</span>')
        figures = [figure_html(s) for s in specs if s["name"].startswith(number + "-")]
        sheet = (f'<br><span class="muted">exercise sheet: <code>lessons/{esc(lesson["dir"])}'
                 f'/README.md</code></span>' if lesson["dir"] else "")
        rows.append(f'<tr><td class="num">{esc(number)}</td><td>{esc(lesson["title"])}{sheet}</td>'
                    f'<td>{"<br>".join(decks)}</td><td>{"".join(figures) or "<span class=muted>none</span>"}'
                    f'</td></tr>')
    other = [figure_html(s) for s in specs if not re.match(r"^\d\d-", s["name"])]

    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Slides: deep learning on GPU clusters, in C</title>
<style>{STYLE}</style></head>
<body>
<h1>Deep learning on GPU clusters, in C: slides and figures</h1>
<p>Every page here works without a network: reveal.js, KaTeX and the figures lie beside
this file. Copy the whole folder to move it; open it as a file or serve it.</p>
<p>Presenting: <kbd>→</kbd>/<kbd>Space</kbd> next, <kbd>←</kbd> back, <kbd>S</kbd> speaker
view with the notes and a clock (a second window), <kbd>O</kbd> overview, <kbd>F</kbd>
full screen, <kbd>B</kbd> black screen. Handouts: <code>make slides-pdf</code>
(<code>NOTES=1</code> adds the notes).</p>
<table class="lessons">
<tr><th>#</th><th>lesson</th><th>deck</th><th>figures (from measured runs)</th></tr>
{chr(10).join(rows)}
</table>
<h2>Course-wide figures</h2>
<p>{"".join(other) or '<span class="muted">none</span>'}</p>
<p class="muted">Written by <code>make slides</code> on {esc(time.strftime("%Y-%m-%d %H:%M"))}.
Figures: <code>make figures</code> redraws them from <code>docs/figures/data/</code>
(<code>docs/figures/README.md</code>); <code>make plot METRICS=run.jsonl</code> plots a run of your own.</p>
</body></html>
"""
    os.makedirs(out_dir, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(page)


if __name__ == "__main__":
    main()
