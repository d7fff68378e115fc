#!/usr/bin/env bash
# make plot on participants' metrics (tools/figures/figures.py plot), through the Makefile:
#   - lesson 05's per-update metrics (step, mean_return, ..., no epoch): return against
#     steps by default, no kind= needed;
#   - a per-epoch file: loss and accuracy against the epoch, as before;
#   - several files (a job array's seeds): one figure, a line per file;
#   - PLOT="kind=xy x=step y=entropy" still picks its own keys;
#   - step without mean_return: exit 1, naming the keys there are;
#   - lesson 10's --roofline rows: a roofline (log-log, the roof, a marker per layer) by
#     default; kind=roofline on rows without the roofs: exit 1, naming the keys.
# Needs gnuplot (skipped, and counted as skipped, without it).
# Last line: "N passed, M failed[, K skipped]".
#   tests/slides/check_plot.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.."
build=${1:-${BUILD:-build}}
passed=0 failed=0
pass() { echo "PASS  $*"; passed=$((passed + 1)); }
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
show() { sed 's/^/        /' "$1" | tail -8; }
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

printf '{"layer": "x", "intensity": 1.0, "gflops": 2.0}\n' >"$tmp/noroof.jsonl"
plot noroof METRICS="$tmp/noroof.jsonl" PLOT="kind=roofline"
if [ $rc -ne 0 ] && grep -q "no row has a number for 'peak_gflops' or 'bandwidth_gbs'" "$tmp/noroof.log"; then
    pass "make plot PLOT=kind=roofline without the roofs: fails, naming the keys"
else
    fail "make plot PLOT=kind=roofline without peak_gflops and bandwidth_gbs: exit $rc (expected non-zero and the keys named)"
    show "$tmp/noroof.log"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
