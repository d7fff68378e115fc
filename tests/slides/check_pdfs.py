#!/usr/bin/env python3
"""Checks the PDFs of make slides-pdf: each deck's PDF exists and has at least as many
pages as the deck has '##' slides (a PDF printed before reveal.js's print layout is one
blank page). Pages are counted as the PDF's /Type /Page objects, not its /Pages nodes.

  tests/slides/check_pdfs.py PDF_DIR [slides/NN-name.md ...]

One line per deck (PASS/FAIL), then "N passed, M failed"."""

import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")


def h2_slides(md):
    """The '##' headings of a deck, outside fenced code."""
    count, fenced = 0, False
    with open(md, encoding="utf-8") as f:
        for line in f:
            if re.match(r"(```|~~~)", line):
                fenced = not fenced
            elif not fenced and line.startswith("## "):
                count += 1
    return count


def pdf_pages(path):
    with open(path, "rb") as f:
        return len(PAGE.findall(f.read()))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    pdf_dir = sys.argv[1]
    decks = sys.argv[2:] or sorted(glob.glob(os.path.join(ROOT, "slides", "[0-9][0-9]-*.md")))
    passed = failed = 0
    for md in decks:
        name = os.path.splitext(os.path.basename(md))[0]
        pdf = os.path.join(pdf_dir, name + ".pdf")
        want = h2_slides(md)
        if not os.path.isfile(pdf):
            ok, why = False, f"no {pdf}"
        else:
            pages = pdf_pages(pdf)
            ok = pages >= want
            why = f"{pages} pages for {want} '##' slides"
        if ok:
            print(f"PASS  {name}.pdf: {why}")
        elif os.path.isfile(pdf):
            print(f"FAIL  {name}.pdf: {why} (blank or cut short: printed before reveal.js's print layout?)")
        else:
            print(f"FAIL  {name}.pdf: {why} (make slides-pdf did not write it)")
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
