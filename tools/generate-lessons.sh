#!/usr/bin/env bash
# Generates lessons/ (what participants edit: TODO stubs) and solutions/ (complete)
# from the single source in course/. In course/, each TODO's answer sits in an
# `#ifdef SOLUTION ... #else <stub> #endif` block; unifdef keeps one side or the
# other. README.md goes to lessons/ (the exercise sheet). A lesson's job script
# (course/NN-name/*.sbatch, TODOs in #ifdef blocks too) goes to both, and its
# complete version also to slurm/NN-name.sbatch, the script instructors submit.
#
#   tools/generate-lessons.sh           regenerate lessons/ and solutions/
#   tools/generate-lessons.sh --check   fail if the committed copies differ
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v unifdef >/dev/null; then
    echo "error: unifdef is not installed (sudo apt-get install unifdef, or sudo make deps)" >&2
    exit 1
fi

generate() { # $1: output root, in which lessons/ and solutions/ are written
    local out=$1 src name f base
    for src in course/[0-9][0-9]-*/; do
        name=$(basename "$src")
        mkdir -p "$out/lessons/$name" "$out/solutions/$name"
        for f in "$src"*; do
            base=$(basename "$f")
            case "$base" in
            *.c | *.h | *.cu)
                # -x2: exit 0 whether or not lines were removed, 2 on a real error
                unifdef -x2 -USOLUTION -o "$out/lessons/$name/$base" "$f"
                unifdef -x2 -DSOLUTION -o "$out/solutions/$name/$base" "$f"
                ;;
            *.conf | *.sh)
                # shell, not C: the TODOs sit in #ifdef blocks all the same
                unifdef -t -x2 -USOLUTION -o "$out/lessons/$name/$base" "$f"
                unifdef -t -x2 -DSOLUTION -o "$out/solutions/$name/$base" "$f"
                ;;
            *.sbatch)
                # -t: plain text, not C (an apostrophe in a shell comment is no char literal)
                unifdef -t -x2 -USOLUTION -o "$out/lessons/$name/$base" "$f"
                unifdef -t -x2 -DSOLUTION -o "$out/solutions/$name/$base" "$f"
                mkdir -p "$out/slurm"
                cp "$out/solutions/$name/$base" "$out/slurm/$name.sbatch"
                ;;
            README.md) cp "$f" "$out/lessons/$name/$base" ;;
            *) cp "$f" "$out/lessons/$name/$base"; cp "$f" "$out/solutions/$name/$base" ;;
            esac
        done
        cat >"$out/solutions/$name/README.md" <<MD
# Solution of lesson $name

The complete version of [lessons/$name](../../lessons/$name/README.md), generated
from \`course/$name/\` by \`make lessons\`: edit there, not here.

    make check-lesson ${name%%-*} SOLUTION=1      # grade it
    make run-lesson ${name%%-*} SOLUTION=1        # run it
MD
    done
}

if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    status=0
    for kind in lessons solutions; do
        if ! diff -r "$tmp/$kind" "$kind" >"$tmp/$kind.diff" 2>&1; then
            echo "$kind/ is out of sync with course/ (run: make lessons):"
            head -40 "$tmp/$kind.diff"
            status=1
        fi
    done
    for f in "$tmp"/slurm/*.sbatch; do
        [ -e "$f" ] || continue
        if ! cmp -s "$f" "slurm/$(basename "$f")"; then
            echo "slurm/$(basename "$f") is out of sync with course/ (run: make lessons)"
            status=1
        fi
    done
    [ $status -eq 0 ] && echo "lessons/ and solutions/ match course/"
    exit $status
fi

rm -rf lessons solutions
generate .
echo "generated lessons/ and solutions/ from course/"
