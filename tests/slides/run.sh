#!/usr/bin/env bash
# The slides' tests (make check-slides; a line of make test):
#   1. every deck against its lesson (TODOs, speaker notes, figures) and every figure
#      against its data: tests/slides/check_decks.py, needs only python3
#   1b. make plot on participants' metrics (lesson 05's per update, per epoch, several
#      files): tests/slides/check_plot.sh, needs gnuplot (skipped without it)
#   2. make slides, then every deck in headless Chromium with the network off:
#      tests/slides/browser-test.mjs. Skipped, and counted as skipped, where
#      Chromium, pandoc, Node.js or slides/node_modules (make slides-deps) is missing.
#   3. make slides-pdf, then each deck's PDF has at least as many pages as the deck has
#      '##' slides: tests/slides/check_pdfs.py. Skipped where 2 is.
# The last line is "N passed, M failed[, K skipped]"; exit status 0 only if none failed.
set -u
cd "$(dirname "$0")/../.."
python=${PYTHON:-/usr/bin/python3}
build=${BUILD:-build}
passed=0 failed=0 skipped=0

count() { # adds the counts of the last result line of $1
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$1" | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL  $2 ended without a result line"
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + $(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")))
    failed=$((failed + $(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")))
}

out=$("$python" tests/slides/check_decks.py 2>&1)
printf '%s\n' "$out"
count "$out" "tests/slides/check_decks.py"

out=$(tests/slides/check_plot.sh "$build" 2>&1)
printf '%s\n' "$out"
count "$out" "tests/slides/check_plot.sh"
grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' <<<"$out" && skipped=$((skipped + 1))

chromium=${CHROMIUM:-$(command -v chromium chromium-browser 2>/dev/null | head -1)}
missing=()
[ -n "$chromium" ] || missing+=("Chromium (sudo apt-get install chromium)")
command -v pandoc >/dev/null || missing+=("pandoc (sudo apt-get install pandoc)")
command -v node >/dev/null || missing+=("Node.js 18+")
[ -d slides/node_modules/playwright-core ] && [ -d slides/node_modules/reveal.js ] ||
    missing+=("slides/node_modules (make slides-deps)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "SKIP  the decks in headless Chromium: missing $(IFS=,; echo "${missing[*]}" | sed 's/,/, /g')"
    skipped=$((skipped + 1))
else
    # Where this user may make a network namespace (root), the render and the browser
    # run inside one that has only loopback: no network at all, not just none used.
    offline=()
    if unshare --net true 2>/dev/null && command -v ip >/dev/null; then
        offline=(unshare --net sh -c 'ip link set lo up && exec "$0" "$@"')
        echo "(rendering and browsing in a network namespace with loopback only)"
    fi
    if out=$("${offline[@]}" make --no-print-directory -s BUILD="$build" slides 2>&1); then
        out=$("${offline[@]}" node tests/slides/browser-test.mjs --chromium "$chromium" \
              --slides "$build/slides" --shots "$build/slides-test" 2>&1)
        printf '%s\n' "$out"
        count "$out" "tests/slides/browser-test.mjs"
        # The PDFs, printed afresh (an old PDF must not pass for a new one).
        rm -rf "$build/slides/pdf"
        if ! pdfout=$("${offline[@]}" make --no-print-directory -s BUILD="$build" slides-pdf 2>&1); then
            printf '%s\n' "$pdfout"
            echo "FAIL  make slides-pdf failed"
            failed=$((failed + 1))
        fi
        out=$("$python" tests/slides/check_pdfs.py "$build/slides/pdf" 2>&1)
        printf '%s\n' "$out"
        count "$out" "tests/slides/check_pdfs.py"
    else
        printf '%s\n' "$out"
        echo "FAIL  make slides failed: no deck could be opened in the browser"
        failed=$((failed + 1))
    fi
fi

if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
