#!/usr/bin/env bash
# Renders one deck to a reveal.js page that loads everything from lib/ beside it
# (make slides copies reveal.js, KaTeX and course.css there) and its figures from
# figures/ beside it (copies of docs/figures/). What make slides runs per deck.
#
#   tools/slides/render-deck.sh slides/NN-name.md build/slides/NN-name.html
#
# A figure the deck shows must be docs/figures/NAME.svg or .png, written in the deck
# as ![caption](figures/NAME.svg): a missing one stops the render with its line.
set -euo pipefail
deck=${1:?usage: render-deck.sh DECK.md OUT.html}
out=${2:?usage: render-deck.sh DECK.md OUT.html}

missing=0
while IFS=: read -r line path; do
    case "$path" in
    figures/*) [ -f "docs/$path" ] && continue
        echo "$deck:$line: figure $path not found: docs/$path does not exist (make figures draws the figures of docs/figures/figures.list)" >&2 ;;
    *) echo "$deck:$line: image $path: figures must come from docs/figures/, written as figures/NAME.svg" >&2 ;;
    esac
    missing=1
done < <(grep -noE '!\[[^]]*\]\([^) ]+' "$deck" | sed -E 's/^([0-9]+):.*\(/\1:/')
[ $missing = 0 ] || exit 1

mkdir -p "$(dirname "$out")"
echo "pandoc $deck -> $out"
# --slide-level=2: '#' opens a section (a title slide), '##' a slide, whatever
# the deck's first heading is. hash: each slide has its own address (#/3/2).
pandoc --from markdown --to revealjs --standalone --slide-level=2 \
    --katex=lib/katex/ --css=lib/course.css \
    -V revealjs-url=lib/reveal.js -V theme=white -V hash=true -V "slideNumber='c/t'" \
    -V transition=fade -V controlsTutorial=false \
    "$deck" -o "$out.tmp"
mv "$out.tmp" "$out"
