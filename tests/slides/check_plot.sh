#!/usr/bin/env bash
# make plot on participants' metrics (tools/figures/figures.py plot), through the Makefile:
#   - lesson 05's per-update metrics (step, mean_return, ..., no epoch): return against
#     steps by default, no kind= needed;
#   - a per-epoch file: loss and accuracy against the epoch, as before;
#   - several files (a job array's seeds): one figure, a line per file;
#   - PLOT="kind=xy x=step y=entropy" still picks its own keys;
#   - step without mean_return: exit 1, naming the keys there are;
#   - lesson 10's --roofline rows: a roofline (log-log, the roof, a marker per layer) by
#     default, its PNG with the y label and the whole key whatever the tics and names;
#     kind=roofline on rows without the roofs: exit 1, naming the keys.
# Needs gnuplot (skipped, and counted as skipped, without it).
# Last line: "N passed, M failed[, K skipped]".
#   tests/slides/check_plot.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.."
build=${1:-${BUILD:-build}}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary
if ! command -v gnuplot >/dev/null; then
    echo "SKIP  make plot: gnuplot is not installed (sudo apt-get install gnuplot-nox)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
tmp=$(mktemp -d /tmp/plot_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/plots

ppo_file() { # $1: file, $2: seed: 6 updates of lesson 05's --metrics, no epoch key
    python3 - "$1" "$2" <<'EOF'
import json, sys
path, seed = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for u in range(1, 7):
        f.write(json.dumps({"step": 512 * u, "mean_return": 20.0 + 15 * u + seed, "episode_length": 20.0 + 15 * u,
                            "policy_loss": -0.01, "value_loss": 30.0 / u, "entropy": 0.69 - 0.02 * u,
                            "approx_kl": 0.001, "clip_fraction": 0.01, "explained_variance": 0.1 * u,
                            "steps_per_s": 11000.0, "wall_s": 0.05 * u}) + "\n")
EOF
}
# plot NAME [make arguments...]: runs make plot into $out; output in $tmp/NAME.log, status in $rc
plot() { local name=$1; shift
    make --no-print-directory -s BUILD="$build" PLOT_OUT="$out" plot "$@" >"$tmp/$name.log" 2>&1; rc=$?; }
drawn() { # the SVG and PNG of $1 exist, are not empty, and the SVG has each of the words after it
    local base=$out/$1 word
    shift
    [ -s "$base.svg" ] && [ -s "$base.png" ] && [ "$(head -c 4 "$base.png" | od -An -c | tr -d ' ')" = '211PNG' ] || return 1
    for word in "$@"; do grep -q -- "$word" "$base.svg" || { echo "        $base.svg has no '$word'"; return 1; }; done
}

ppo_file "$tmp/ppo-seed1.jsonl" 1
ppo_file "$tmp/ppo-seed2.jsonl" 2
plot ppo METRICS="$tmp/ppo-seed1.jsonl"
if [ $rc -eq 0 ] && drawn ppo-seed1 '>step<' '>mean_return<'; then
    pass "make plot on lesson 05's metrics (step, no epoch): mean_return against step, SVG and PNG"
else
    fail "make plot on lesson 05's metrics: exit $rc, or no SVG/PNG of mean_return against step"
    show "$tmp/ppo.log"
fi

python3 - "$tmp/cnn.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for e in (1, 2, 3):
        f.write(json.dumps({"epoch": e, "train_loss": 2.0 / e, "test_loss": 2.1 / e,
                            "test_accuracy": 0.3 * e, "seconds": 1.0, "samples_per_s": 500.0}) + "\n")
EOF
plot cnn METRICS="$tmp/cnn.jsonl"
if [ $rc -eq 0 ] && drawn cnn '>epoch<' '>loss<' 'accuracy'; then
    pass "make plot on per-epoch metrics: loss and accuracy against the epoch"
else
    fail "make plot on per-epoch metrics: exit $rc, or no SVG/PNG of loss and accuracy per epoch"
    show "$tmp/cnn.log"
fi

plot seeds METRICS="$tmp/ppo-seed1.jsonl $tmp/ppo-seed2.jsonl"
if [ $rc -eq 0 ] && drawn ppo-seed1-and-1-more '>ppo-seed1<' '>ppo-seed2<' '>mean_return<'; then
    pass "make plot METRICS=\"seed1 seed2\" (a job array's files): one figure, a line per file"
else
    fail "make plot on two files: exit $rc, or no figure ppo-seed1-and-1-more with both runs named"
    show "$tmp/seeds.log"
fi

plot entropy METRICS="$tmp/ppo-seed1.jsonl" PLOT="kind=xy x=step y=entropy title=mine"
if [ $rc -eq 0 ] && drawn ppo-seed1 '>entropy<' '>mine<'; then
    pass "make plot PLOT=\"kind=xy x=step y=entropy title=mine\": the options are taken"
else
    fail "make plot with PLOT=\"kind=xy x=step y=entropy title=mine\": exit $rc, or not drawn so"
    show "$tmp/entropy.log"
fi

printf '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n' >"$tmp/odd.jsonl"
plot odd METRICS="$tmp/odd.jsonl"
if [ $rc -ne 0 ] && grep -q "no 'epoch' key, and no 'mean_return'.*keys: loss, step" "$tmp/odd.log"; then
    pass "make plot on steps without mean_return: fails, naming the keys there are"
else
    fail "make plot on steps without mean_return: exit $rc (expected non-zero and the keys named)"
    show "$tmp/odd.log"
fi

python3 - "$tmp/roofline.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for name, ai, gflops in (("embedding", 0.12, 2.0), ("linear: decoder", 77.0, 60.0), ("layer norm", 1.0, 12.0)):
        f.write(json.dumps({"layer": name, "intensity": ai, "gflops": gflops, "peak_gflops": 140.0,
                            "bandwidth_gbs": 20.0, "device": "cpu", "threads": 2}) + "\n")
EOF
plot roofline METRICS="$tmp/roofline.jsonl"
if [ $rc -eq 0 ] && drawn roofline 'arithmetic intensity' 'ridge 7 FLOP/B' '>linear: decoder<' '>140 GFLOP/s, 20.0 GB/s<'; then
    pass "make plot on lesson 10's --roofline rows: a roofline by default (ridge at 140 / 20 = 7 FLOP/B, a marker per layer)"
else
    fail "make plot on --roofline rows: exit $rc, or no roofline with its ridge and layers"
    show "$tmp/roofline.log"
fi

# The PNG's layout (pngcairo's fonts are wider than gnuplot's estimate): a layer at 0.01
# GFLOP/s (tics to 0.001, which pushed the y label off a fixed margin) and lesson 04's
# longest layer name (its key box ran past the right edge).
python3 - "$tmp/roofwide.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for name, ai, gflops in (("embedding", 0.12, 0.01), ("linear: in-projection (q, k, v)", 61.7, 190.0),
                             ("softmax + cross-entropy", 0.62, 2.8)):
        f.write(json.dumps({"layer": name, "intensity": ai, "gflops": gflops, "peak_gflops": 104.0,
                            "bandwidth_gbs": 17.2, "device": "cpu", "threads": 2}) + "\n")
EOF
plot roofwide METRICS="$tmp/roofwide.jsonl"
if [ $rc -eq 0 ] && drawn roofwide && edges=$(python3 - "$out/roofwide.png" 2>&1 <<'EOF'
import struct, sys, zlib

def rows_of(path):
    """The PNG's rows as lists of gray values (8-bit RGB or RGBA, not interlaced)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat = 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and not interlace, "an 8-bit RGB(A) PNG"
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append([sum(line[x * bpp:x * bpp + 3]) // 3 for x in range(w)])
        prev = line
    return out

rows = rows_of(sys.argv[1])
h, w = len(rows), len(rows[0])
band = rows[int(0.15 * h):int(0.65 * h)]  # the plot's height, above the footer
dark = [sum(r[x] < 128 for r in band) for x in range(w)]
axis = next(x for x in range(w) if dark[x] > 0.9 * len(band))  # the y axis: dark top to bottom
runs, start = [], None  # columns of ink left of the axis: the y label, then the tics' labels
for x in range(axis - 2):
    if dark[x] and start is None: start = x
    if not dark[x] and start is not None: runs.append((start, x)); start = None
problems = []
if dark[0] or dark[1]: problems.append("something is cut at the left edge")
# the label stands apart from the tics' labels (their glyphs leave gaps of a few pixels)
if len(runs) < 2 or runs[0][1] + 15 > runs[1][0]:
    problems.append(f"no y label left of the tics' labels (ink in columns {runs})")
if any(dark[x] for x in range(w - 3, w)): problems.append("something (the key's box?) is cut at the right edge")
print("; ".join(problems) or "ok")
sys.exit(1 if problems else 0)
EOF
); then
    pass "make plot on --roofline rows with tics down to 0.001 and a long layer name: the PNG shows the y label and the whole key"
else
    fail "make plot on --roofline rows with tics down to 0.001 and a long layer name: exit $rc; ${edges:-no PNG}"
    show "$tmp/roofwide.log"
fi

printf '{"layer": "x", "intensity": 1.0, "gflops": 2.0}\n' >"$tmp/noroof.jsonl"
plot noroof METRICS="$tmp/noroof.jsonl" PLOT="kind=roofline"
if [ $rc -ne 0 ] && grep -q "no row has a number for 'peak_gflops' or 'bandwidth_gbs'" "$tmp/noroof.log"; then
    pass "make plot PLOT=kind=roofline without the roofs: fails, naming the keys"
else
    fail "make plot PLOT=kind=roofline without peak_gflops and bandwidth_gbs: exit $rc (expected non-zero and the keys named)"
    show "$tmp/noroof.log"
fi

checks_summary
