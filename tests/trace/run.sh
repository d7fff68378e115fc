#!/usr/bin/env bash
# Traces of real runs (--trace, lib/core/trace.h) against the format's rules, and the
# shares of a step that tools/trace computes from them:
#   - lessons 01, 02 (CPU), 03, 04 and 05, one process each (train/run_trace.h);
#   - lesson 06 (the solution) on 2 CPU ranks: the CNN with the library's overlapped
#     buckets (all-reduces in flight), and lesson 04's transformer with TODO 6.4's
#     all-reduce; lesson 07 (the solution) as 2 stages, 1F1B;
#   - every rank's file passes tests/trace/validate.py (required fields, phases,
#     metadata, strict nesting per track; one pid per rank), and so does the merged file
#     that tools/trace/trace.py writes;
#   - the ranges a run must have are there: every block's forward and backward, the
#     optimiser step, the collectives (in flight and waited for), data loading, steps;
#   - per rank, compute + exposed communication + data loading + idle (idle measured on
#     its own: what no range covers) add up to the step time within 2%, and lesson 07's
#     steps in the trace are the steps its --metrics times (within 2% and 50 us);
#   - the SVG of a step is well-formed XML with a band per rank;
#   - lesson 10 (the solution) on 2 CPU ranks, its loader slowed (--loader slow) and
#     fixed (--loader mine: the reads on a "data loader" track), passes the same checks;
#   - on every trace recorded here, the library's shares in C (build/tools/trace-shares,
#     lib/core/trace_shares.h) equal tools/trace's, to the nanosecond, in flight and
#     hidden communication too;
#   - a --trace that cannot be written stops the ranks before any step, naming it;
#   - the validator fails traces that break the rules (it can fail: an overlap, a
#     missing field, an unknown phase, a thread without a name, a B never closed, a GPU
#     counter out of range);
#   - a GPU's counters (NVML's "gpu" counter, written on a GPU only) pass the validator,
#     and tools/trace gives their means and maxima per rank (the library's side of them:
#     tests/unit/test_core_gpu_counters.c, against a stand-in NVML).
# Last line: "N passed, M failed[, K skipped]". Skipped without mpirun.
#   tests/trace/run.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary
validate=tests/trace/validate.py tool=tools/trace/trace.py
l06=$build/solutions/06-ddp/train l07=$build/solutions/07-pipeline/train l10=$build/solutions/10-performance/train
cshares=$build/tools/trace-shares
text=/usr/share/common-licenses/GPL-3 # Debian's base-files: on every Debian system

tmp=$(mktemp -d /tmp/trace_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

# The C shares (trace-shares) against Python's (trace_read.py), to the ns, of FILE...
c_equals_python() {
    local label=$1 c py
    shift
    if [ ! -x "$cshares" ]; then
        skip "$label: the C shares = Python's: $cshares is not built"
        return
    fi
    if c=$("$cshares" "$@" 2>&1) && py=$(python3 - "$@" <<'PY'
import sys
sys.path.insert(0, "tools/trace")
from trace_read import load, shares
for path in sys.argv[1:]:
    for pid, r in shares(load(path)).items():
        ns = {k: int(r[k + "_us"] * 1000) for k in ("step", "compute", "comm", "data", "idle", "in_flight", "hidden")}
        print(f"pid {pid} steps {r['steps']} step_ns {ns['step']} compute_ns {ns['compute']} comm_ns {ns['comm']} "
              f"data_ns {ns['data']} idle_ns {ns['idle']} in_flight_ns {ns['in_flight']} hidden_ns {ns['hidden']}")
PY
    ) && [ "$c" = "$py" ]; then
        pass "$label: the library's shares in C = tools/trace's, to the ns ($(wc -l <<<"$c") file(s))"
    else
        fail "$label: the C shares differ from tools/trace's"
        printf 'C:\n%s\nPython:\n%s\n' "$c" "$py" | sed 's/^/        /'
    fi
}

# ---------------------------------------------------------------- hostile trace files
# Files no run writes, made here: the C reader (trace-shares) and tools/trace (trace.py,
# trace_read.py) must both refuse each with one line and exit 1, never a traceback; ranges
# nested 200,000 deep are a trace like any other (both read it, and agree to the ns).
rank_file() { # EVENTS...: a rank's file as the library lays it out
    local IFS=,
    echo "{\"traceEvents\": [$*], \"otherData\": {\"format\": \"course trace 1\", \"rank\": 0, \"world_size\": 1, \"dropped_events\": 0}}"
}
ev() { echo "{\"name\": \"$1\", \"cat\": \"$2\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": $3, \"dur\": $4}"; }
hostile() { # NAME JSON WHAT: both readers refuse the file, naming WHAT
    local file=$tmp/hostile-$1.json c py crc pyrc
    printf '%s' "$2" >"$file"
    c=$("$cshares" "$file" 2>&1); crc=$?
    py=$(python3 "$tool" "$file" 2>&1); pyrc=$?
    if [ $crc = 1 ] && [ $pyrc = 1 ] && [ "$(wc -l <<<"$c")" = 1 ] && [ "$(wc -l <<<"$py")" = 1 ] &&
        grep -q "^error: " <<<"$c" && grep -q "^error: .*$3" <<<"$py" && ! grep -q Traceback <<<"$py"; then
        pass "a trace with $1: refused by both readers in one line ($(cut -c1-90 <<<"${py#error: }"))"
    else
        fail "a trace with $1: the C reader exit $crc, tools/trace exit $pyrc (both should refuse it in one line, naming '$3')"
        printf 'C:      %s\nPython: %s\n' "$c" "$(head -c 600 <<<"$py")" | sed 's/^/        /'
    fi
}
if [ -x "$cshares" ]; then
    step=$(ev step step 0 100)
    hostile "a NaN start" "$(rank_file "$step" "$(ev forward compute NaN 10)")" "NaN is not JSON"
    hostile "a null start" "$(rank_file "$step" "$(ev forward compute null 10)")" "ts null: a number expected"
    hostile "a string start" "$(rank_file "$step" "$(ev forward compute '"12"' 10)")" 'ts "12": a number expected'
    hostile "an Infinity duration" "$(rank_file "$step" "$(ev forward compute 1 Infinity)")" "Infinity is not JSON"
    hostile "a negative duration" "$(rank_file "$step" "$(ev forward compute 10 -5)")" "lasts less than nothing"
    hostile "a start at 1e300" "$(rank_file "$step" "$(ev forward compute 1e300 10)")" "an exponent"
    hostile "a start of 301 digits" "$(rank_file "$step" "$(ev forward compute "1$(printf '0%.0s' {1..300})" 10)")" "too large"
    hostile "a start 2^61 ns out" "$(rank_file "$step" "$(ev forward compute 2305843009213694 10)")" "beyond 2^60 ns"
    hostile "durations adding up past 2^60 ns" "$(rank_file "$(ev step step 0 1000000000000000)" "$(ev forward compute 0 1000000000000000)")" "adding up to more"
    hostile "a tenth of a nanosecond" "$(rank_file "$step" "$(ev forward compute 1.0001 10)")" "more than 3 decimals"
    hostile "a pid that is a string" "$(rank_file "${step/\"pid\": 0/\"pid\": \"0\"}")" 'pid "0" is not an integer'
    hostile "an unknown category" "$(rank_file "$step" "$(ev forward kernel 0 10)")" "the category 'kernel'"
    hostile "two ranks in a rank's file" "$(rank_file "$step" "${step/\"pid\": 0/\"pid\": 1}")" "events of ranks 0 and 1"
    hostile "no format" "{\"traceEvents\": [$step], \"otherData\": {}}" 'no "format"'
    deep=$(printf '[%.0s' {1..200000})$(printf ']%.0s' {1..200000})
    hostile "JSON nested 200,000 deep" "{\"traceEvents\": [], \"otherData\": {\"format\": \"course trace 1\", \"x\": $deep}}" "nested more than 32 deep"
    hostile "JSON nested 33 deep in an event" "$(rank_file "{\"name\": \"a\", \"x\": $(printf '[%.0s' {1..33})1$(printf ']%.0s' {1..33})}")" "nested more than 32 deep"
    # ranges nested 200,000 deep (a step, then each range inside the one before): both
    # read it and agree; tools/trace reports and draws it (no recursion to run out of)
    python3 - "$tmp/nested.json" <<'PY'
import sys
n = 200000
events = ['{"name": "step", "cat": "step", "ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": %d.000}' % (2 * n + 10)]
events += ['{"name": "r%d", "cat": "%s", "ph": "X", "pid": 0, "tid": 0, "ts": %d, "dur": %d}'
           % (k, ("compute", "comm", "data", "other")[k % 4], k + 1, 2 * (n - k)) for k in range(n)]
open(sys.argv[1], "w").write('{"traceEvents": [%s], "otherData": {"format": "course trace 1"}}' % ",\n".join(events))
PY
    c_equals_python "ranges nested 200,000 deep" "$tmp/nested.json"
    if out=$(python3 "$tool" "$tmp/nested.json" --step 1 --svg "$tmp/nested.svg" 2>&1) && grep -q "^rank 0: 1 steps" <<<"$out" &&
        grep -q "drawn: " <<<"$out" && python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$tmp/nested.svg"; then
        pass "ranges nested 200,000 deep: tools/trace reports the step and draws it ($(head -1 <<<"$out" | cut -c1-80))"
    else
        fail "ranges nested 200,000 deep: tools/trace should report and draw the step"
        tail -5 <<<"$out" | sed 's/^/        /'
    fi
    if out=$("$cshares" --help 2>&1) && grep -q "^usage: .*trace-shares run.rank0.json" <<<"$out" &&
        out2=$("$cshares" --frobnicate 2>&1); [ $? = 2 ] && grep -q "unknown option --frobnicate" <<<"$out2"; then
        pass "trace-shares --help: its usage, exit 0; an unknown option refused, exit 2"
    else
        fail "trace-shares --help should print its usage (exit 0): $out / $out2"
    fi
else
    skip "hostile trace files: $cshares is not built"
fi

# tools/trace's outputs (--merged, --svg, and make trace's build/plots/NAME.json) are never
# written through a link planted at their names: refused by name, what the link points
# to untouched; written beside it, they are.
printf '%s' "$(rank_file "$(ev step step 0 100)" "$(ev forward compute 10 50)")" >"$tmp/ok.rank0.json"
mkdir -p "$tmp/plots" "$tmp/links"
echo "not to be overwritten" >"$tmp/victim"
for out_opt in --merged --svg; do
    ln -sf "$tmp/victim" "$tmp/links/out$out_opt"
    out=$(python3 "$tool" "$tmp/ok.rank0.json" "$out_opt" "$tmp/links/out$out_opt" 2>&1)
    rc=$?
    if [ $rc = 1 ] && grep -q "links/out$out_opt is a symbolic link: not written through" <<<"$out" &&
        [ "$(cat "$tmp/victim")" = "not to be overwritten" ] && ! grep -q Traceback <<<"$out"; then
        pass "trace.py $out_opt to a planted symbolic link: refused by name, exit 1, its target untouched"
    else
        fail "trace.py $out_opt to a planted symbolic link: exit $rc, the target now: $(head -c 80 "$tmp/victim")"
        sed 's/^/        /' <<<"$out"
        echo "not to be overwritten" >"$tmp/victim"
    fi
done
ln -sf "$tmp/victim" "$tmp/plots/ok.json"
out=$(make -s --no-print-directory trace TRACE="$tmp/ok.rank0.json" PLOT_OUT="$tmp/plots" 2>&1)
rc=$?
if [ $rc != 0 ] && grep -q "plots/ok.json is a symbolic link" <<<"$out" && [ "$(cat "$tmp/victim")" = "not to be overwritten" ]; then
    pass "make trace with a link planted at PLOT_OUT/NAME.json: refused, its target untouched"
else
    fail "make trace with a link planted at PLOT_OUT/NAME.json: exit $rc, the target now: $(head -c 80 "$tmp/victim")"
    sed 's/^/        /' <<<"$out"
fi
rm -f "$tmp/plots/ok.json"
if out=$(make -s --no-print-directory trace TRACE="$tmp/ok.rank0.json" PLOT_OUT="$tmp/plots" 2>&1) &&
    [ -f "$tmp/plots/ok.json" ] && [ ! -L "$tmp/plots/ok.json" ] && [ -f "$tmp/plots/ok.svg" ]; then
    pass "make trace without the link: PLOT_OUT/ok.json and ok.svg written"
else
    fail "make trace without the link should write PLOT_OUT/ok.json and ok.svg: $out"
fi

# The SVG draws a host range outside every step (rank 0's all-reduce between its steps,
# inside the drawn window because rank 1's step 2 starts earlier) in a colour of its own,
# not the exposed communication's (the shares leave it out); a range too short for a
# label is named under its band.
r0="$(ev step step 0 100),$(ev "all-reduce between steps" comm 100 30),$(ev step step 130 100),$(ev forward compute 130 60),$(ev tiny compute 200 0.2)"
r1="$(ev step step 0 100),$(ev step step 110 100),$(ev forward compute 110 60)"
printf '%s' "$(rank_file "$r0")" >"$tmp/svg.rank0.json"
printf '%s' "$(rank_file "${r1//\"pid\": 0/\"pid\": 1}")" >"$tmp/svg.rank1.json"
if python3 "$tool" "$tmp/svg.rank0.json" "$tmp/svg.rank1.json" --step 2 --svg "$tmp/svg.svg" >"$tmp/svg.out" 2>&1 &&
    python3 - "$tmp/svg.svg" <<'PY'; then
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
fills = {(r.find(ns + "title").text or "").split(":")[0]: r.get("fill") for r in root.iter(ns + "rect") if r.find(ns + "title") is not None}
texts = [t.text or "" for t in root.iter(ns + "text")]
outside, exposed = "#b0b0b0", "#d9534f"
ok = fills.get("all-reduce between steps") == outside and any(t.startswith("too short to label: tiny") for t in texts)
ok = ok and any("outside the steps (in no share)" in t for t in texts)
print(f"        the all-reduce between steps drawn {fills.get('all-reduce between steps')} (outside: {outside}, "
      f"exposed: {exposed}); {[t for t in texts if t.startswith('too short')]}")
sys.exit(0 if ok else 1)
PY
    pass "the SVG: a host range between steps in the colour of no share (not exposed), a short range named under its band"
else
    fail "the SVG should draw a range between steps apart from exposed communication and name a range too short to label"
    sed 's/^/        /' "$tmp/svg.out"
fi

# ---------------------------------------------------------------- one process: lessons 01-05
# The same rules for the programs of one process (train/run_trace.h), and the ranges each
# must hold; where the library runs the steps (02 on the CPU, 03, 05), the shares of a
# step add up too. Lessons 01 and 04's loops are yours (TODOs 1.6, 4.7): their traces have
# the blocks, the epochs and the evaluation, no steps (04's in bf16: the 16-bit path traced).
small=(--dataset synthetic --train-limit 300 --test-limit 100 --epochs 1 --threads 1)
declare -A single=(
    [01]="$build/solutions/01-cpu-cnn/train ${small[*]}"
    [02]="$build/solutions/02-gpu-cnn/train ${small[*]} --device cpu"
    [03]="$build/solutions/03-checkpointing/train ${small[*]} --checkpoint-dir $tmp/ckpt03"
    [04]="$build/solutions/04-transformer/train --dataset text --data $text --d-model 32 --heads 2 --d-hid 32 --bptt 8 --layers 1 --epochs 1 --max-steps 6 --threads 1 --precision bf16 --ops library"
    [05]="$build/solutions/05-ppo/train --env cartpole --steps 2048"
)
declare -A single_want=(
    [01]="train epoch|evaluate|conv1 forward|fc2 backward|memory"
    [02]="CPU run|step|load batch|conv1 forward|fc2 backward|adam step|evaluate"
    [03]="step|load batch|conv2 forward|fc1 backward|adam step|save checkpoint|evaluate"
    [04]="train epoch|evaluate|load batch|embedding forward|layer 0 backward|decoder backward|sgd step|clip gradients|memory"
    [05]="update|collect rollout|values and GAE|PPO update"
)
for run in 01 02 03 04 05; do
    # shellcheck disable=SC2086  # the run's command line
    set -- ${single[$run]}
    if [ ! -x "$1" ]; then
        skip "lesson $run with --trace: $1 is not built"
        continue
    fi
    if ! timeout 300 "$@" --trace "$tmp/$run.json" >"$tmp/$run.out" 2>&1 ||
        ! grep -qF "trace: $tmp/$run.json" "$tmp/$run.out"; then
        fail "lesson $run with --trace: the run failed or did not name its trace"
        tail -5 "$tmp/$run.out" | sed 's/^/        /'
        continue
    fi
    missing=
    IFS='|' read -ra names <<<"${single_want[$run]}"
    for name in "${names[@]}"; do
        grep -qF "\"name\": \"$name\"" "$tmp/$run.json" || missing="$missing '$name'"
    done
    if out=$(python3 "$validate" "$tmp/$run.json" 2>&1) && [ -z "$missing" ]; then
        pass "lesson $run with --trace: the file follows the format's rules and holds ${single_want[$run]//|/, }"
    else
        fail "lesson $run with --trace: ${missing:+no range named$missing; }$out"
        continue
    fi
    c_equals_python "lesson $run" "$tmp/$run.json"
    if [ "$run" = 01 ] || [ "$run" = 04 ]; then
        # no steps: make trace still merges, and says why it draws nothing
        if out=$(python3 "$tool" "$tmp/$run.json" --merged "$tmp/$run.merged.json" --svg "$tmp/$run.svg" 2>&1) &&
            [ -s "$tmp/$run.merged.json" ] && [ ! -e "$tmp/$run.svg" ] && grep -q "not drawn: .*no step ranges" <<<"$out"; then
            pass "lesson $run: no step ranges (the loop is the participant's): merged, the SVG left out with the reason"
        else
            fail "lesson $run: a trace without steps should be merged and its SVG left out with a reason, exit 0"
            sed 's/^/        /' <<<"$out"
        fi
        continue
    fi
    if python3 "$tool" "$tmp/$run.json" --json >"$tmp/$run.shares" && python3 - "$tmp/$run.shares" <<'PY'; then
import json, sys
(r,) = json.load(open(sys.argv[1])).values()
parts = r["compute_us"] + r["comm_us"] + r["data_us"] + r["idle_us"]
off = abs(parts - r["step_us"]) / r["step_us"] if r["step_us"] > 0 else 1
print(f"        {r['steps']:.0f} steps: compute {r['compute_us'] / 1000:.2f}, data {r['data_us'] / 1000:.2f}, "
      f"idle {r['idle_us'] / 1000:.2f} of {r['step_us'] / 1000:.2f} ms ({100 * off:.3f}% off)")
sys.exit(0 if r["steps"] > 0 and r["compute_us"] > 0 and off <= 0.02 else 1)
PY
        pass "lesson $run: compute + data + idle = the step time (within 2%)"
    else
        fail "lesson $run: the shares of a step do not add up to it (or no steps, no compute)"
    fi
done

# ---------------------------------------------------------------- ranks: lessons 06 and 07
if ! command -v mpirun >/dev/null || [ ! -x "$l06" ] || [ ! -x "$l07" ] || [ ! -x "$l10" ]; then
    skip "traces of lessons 06, 07 and 10: need Open MPI's mpirun (sudo make deps) and $l06, $l07, $l10"
    echo "$passed passed, $failed failed, $skipped skipped"
    exit $((failed > 0))
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --mca btl self,vader,tcp -n 2)

lm=(--text text --data "$text" --d-model 32 --heads 2 --d-hid 32 --bptt 8)
declare -A runs=(
    [06-cnn]="$l06 --dataset synthetic --train-limit 800 --test-limit 100 --epochs 1 --grad-sync buckets --bucket-mb 0.2"
    [06-transformer]="$l06 --model transformer ${lm[*]} --layers 2 --batch-size 8 --max-steps 6 --epochs 1"
    [10-slow]="$l10 --dataset text --data $text --d-model 32 --heads 2 --d-hid 32 --bptt 16 --batch-size 8 --max-steps 8 --loader slow --read-latency-us 300"
    [10-mine]="$l10 --dataset text --data $text --d-model 32 --heads 2 --d-hid 32 --bptt 16 --batch-size 8 --max-steps 8 --loader mine --read-latency-us 300"
    [07-1f1b]="$l07 --dataset text --data $text --d-model 32 --heads 2 --d-hid 32 --bptt 8 --layers 4 --batch-size 16 --micro-batches 4 --max-steps 6 --epochs 1 --schedule 1f1b --metrics $tmp/07-1f1b.jsonl"
)
# the names each run's trace must hold (on some rank)
declare -A want=(
    [06-cnn]="step|load batch|loss|conv1 forward|conv2 backward|fc2 backward|adam step|all-reduce|wait all-reduce|memory"
    [06-transformer]="step|load batch|loss|embedding forward|layer 1 backward|decoder backward|adam step|clip gradients|all-reduce"
    [10-slow]="step|load batch|forward|backward|optimizer|layer 1 backward|adam step|wait all-reduce"
    [10-mine]="step|load batch|wait batch|read batch|data loader|forward|backward|optimizer|wait all-reduce"
    [07-1f1b]="step|load batch|loss|embedding forward|decoder backward|sgd step|send|receive|all-gather (scalars)|barrier"
)
for run in 06-cnn 06-transformer 07-1f1b 10-slow 10-mine; do
    # shellcheck disable=SC2086  # the run's command line
    if ! timeout 300 "${mpi[@]}" ${runs[$run]} --trace "$tmp/$run.json" >"$tmp/$run.out" 2>&1; then
        fail "$run with --trace: the run failed"
        tail -5 "$tmp/$run.out" | sed 's/^/        /'
        continue
    fi
    files=("$tmp/$run.rank0.json" "$tmp/$run.rank1.json")
    if out=$(python3 "$validate" --same-job "${files[@]}" 2>&1); then
        pass "$run: each rank's trace follows the format's rules (nesting per track, one pid per rank)"
    else
        fail "$run: a rank's trace breaks the format's rules"
        printf '%s\n' "$out" | sed 's/^/        /'
        continue
    fi
    missing=
    IFS='|' read -ra names <<<"${want[$run]}"
    for name in "${names[@]}"; do
        grep -qF "\"name\": \"$name\"" "${files[@]}" || missing="$missing '$name'"
    done
    if [ -z "$missing" ]; then pass "$run: blocks, optimiser, collectives, data loading and steps are ranges"
    else fail "$run: no range named$missing"; fi
    c_equals_python "$run" "${files[@]}"
    if python3 "$tool" "${files[@]}" --merged "$tmp/$run.merged.json" --svg "$tmp/$run.svg" >"$tmp/$run.report" 2>&1 &&
        python3 "$validate" "$tmp/$run.merged.json" >/dev/null; then
        pass "$run: tools/trace merges the ranks into one trace that follows the rules"
    else
        fail "$run: tools/trace could not merge the ranks into a valid trace"
        sed 's/^/        /' "$tmp/$run.report"
    fi
    if python3 "$tool" "${files[@]}" --json >"$tmp/$run.shares" && python3 - "$tmp/$run.shares" <<'PY'; then
import json, sys
rows = json.load(open(sys.argv[1]))
ok = len(rows) == 2
for rank, r in sorted(rows.items()):
    parts = r["compute_us"] + r["comm_us"] + r["data_us"] + r["idle_us"]
    off = abs(parts - r["step_us"]) / r["step_us"] if r["step_us"] > 0 else 1
    print(f"        rank {rank}: {r['steps']:.0f} steps, {r['step_us'] / 1000:.2f} ms; compute "
          f"{r['compute_us'] / 1000:.2f}, exposed comm {r['comm_us'] / 1000:.2f}, data "
          f"{r['data_us'] / 1000:.2f}, idle {r['idle_us'] / 1000:.2f} ms: {100 * off:.3f}% off")
    ok = ok and r["steps"] > 0 and off <= 0.02 and r["compute_us"] > 0 and r["comm_us"] > 0
sys.exit(0 if ok else 1)
PY
        pass "$run: per rank, compute + exposed communication + data + idle = the step time (within 2%)"
    else
        fail "$run: the shares of a step do not add up to it (or a rank has no compute or communication)"
    fi
    # the fixed loader's reads on their own track, named as the trace names it
    loader=no named= lacking=
    [ "$run" = 10-mine ] && loader=yes named=', the "data loader" track named' lacking=' or its "data loader" track'
    if python3 - "$tmp/$run.svg" "$loader" <<'PY'; then
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
ok = "rank 0" in texts and "rank 1" in texts
sys.exit(0 if ok and (sys.argv[2] == "no" or "data loader" in texts) else 1)
PY
        pass "$run: the SVG of a step is well-formed, a band per rank$named"
    else
        fail "$run: the SVG $tmp/$run.svg is not well-formed, or lacks a rank$lacking"
    fi
done

# Lesson 07's steps in the trace against the program's own clock (--metrics: tokens over
# tokens_per_s, rank 0's step from before its batch is loaded to after its SGD step).
if [ -f "$tmp/07-1f1b.rank0.json" ] && python3 - "$tmp/07-1f1b.rank0.json" "$tmp/07-1f1b.jsonl" <<'PY'; then
import json, sys
trace = json.load(open(sys.argv[1]))
traced = sorted((e["ts"], e["dur"]) for e in trace["traceEvents"] if e.get("cat") == "step")
timed = [16 * 8 / r["tokens_per_s"] * 1e6 for r in map(json.loads, open(sys.argv[2])) if "step" in r]
ok = len(traced) == len(timed) == 6
for (_, dur), t in zip(traced, timed):
    print(f"        traced {dur:.1f} us, timed {t:.1f} us")
    ok = ok and abs(dur - t) <= 0.02 * t + 50
sys.exit(0 if ok else 1)
PY
    pass "07-1f1b: the trace's steps take what the program's own clock says (--metrics, within 2% + 50 us)"
else
    fail "07-1f1b: the trace's steps differ from the program's own step times"
fi

# A trace that cannot be written stops every rank at the start, by name, not after training.
out=$(timeout 120 "${mpi[@]}" $l07 --dataset text --data "$text" --d-model 32 --heads 2 --d-hid 32 --bptt 8 \
    --layers 4 --batch-size 16 --micro-batches 4 --max-steps 2 --epochs 1 --trace "$tmp/no/such/dir/t.json" 2>&1)
status=$?
if [ $status -ne 0 ] && [ $status -ne 124 ] && grep -q "cannot write the trace: .*$tmp/no/such/dir/t.rank0.json" <<<"$out" &&
    ! grep -q "end of epoch" <<<"$out"; then
    pass "--trace into a missing directory: exit $status before any step, naming the file"
else
    fail "--trace into a missing directory: exit $status; output:"
    tail -5 <<<"$out" | sed 's/^/        /'
fi

# The validator can fail: traces that break one rule each.
bad() { # NAME JSON WANT: the validator must fail the trace, naming WANT
    printf '%s' "$2" >"$tmp/bad-$1.json"
    local out
    if out=$(python3 "$validate" "$tmp/bad-$1.json" 2>&1); then
        fail "validator: passed a trace with $1"
    elif grep -qF "$3" <<<"$out"; then
        pass "validator: fails a trace with $1 ($3)"
    else
        fail "validator: failed a trace with $1 without naming it: $out"
    fi
}
meta='{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}},
      {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "host"}}'
tail='], "otherData": {"format": "course trace 1", "dropped_events": 0}}'
x() { echo "{\"name\": \"$1\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": $2, \"dur\": $3}"; }
bad "an overlap" "{\"traceEvents\": [$meta, $(x a 0 10), $(x b 5 10)$tail" "'b' [5, 15] overlaps 'a'"
bad "a child ending late by a nanosecond" "{\"traceEvents\": [$meta, $(x a 0 10.000), $(x b 5.000 5.001)$tail" "overlaps 'a'"
bad "no dur" "{\"traceEvents\": [$meta, {\"name\": \"a\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 1}$tail" "dur None"
bad "an unknown phase" "{\"traceEvents\": [$meta, $(x a 0 1), {\"name\": \"q\", \"ph\": \"Q\", \"pid\": 0, \"tid\": 0, \"ts\": 1}$tail" "ph 'Q'"
bad "a thread without a name" "{\"traceEvents\": [$meta, $(x a 0 1), {\"name\": \"c\", \"cat\": \"comm\", \"ph\": \"X\", \"pid\": 0, \"tid\": 9, \"ts\": 0, \"dur\": 1}$tail" "track (0, 9) has no thread_name"
bad "a B never closed" "{\"traceEvents\": [$meta, $(x a 0 1), {\"name\": \"b\", \"ph\": \"B\", \"pid\": 0, \"tid\": 0, \"ts\": 2}$tail" "'b' (B) never ends"
bad "the array form" "[$(x a 0 1)]" "not the JSON object form"
gpu() { # TS ARGS: a "gpu" counter as lib/core/trace_write.c writes it
    echo "{\"name\": \"gpu\", \"ph\": \"C\", \"pid\": 0, \"tid\": 0, \"ts\": $1, \"args\": {$2}}"
}
bad "a gpu counter above 100 %" "{\"traceEvents\": [$meta, $(x a 0 1), $(gpu 1 '"utilisation_pct": 120')$tail" "utilisation_pct 120 is not an integer in [0, 100]"
bad "a gpu counter's unknown key" "{\"traceEvents\": [$meta, $(x a 0 1), $(gpu 1 '"sm_clock_mhz": 1410, "fan_pct": 30')$tail" "unknown key 'fan_pct'"
bad "more GPU memory used than there is" "{\"traceEvents\": [$meta, $(x a 0 1), $(gpu 1 '"memory_used_bytes": 9, "memory_total_bytes": 8')$tail" "memory_used_bytes 9 above memory_total_bytes 8"
good="{\"traceEvents\": [$meta, $(x a 0 10), $(x b 0 10), $(x c 10 0), {\"name\": \"d\", \"ph\": \"B\", \"pid\": 0, \"tid\": 0, \"ts\": 2}, {\"ph\": \"E\", \"pid\": 0, \"tid\": 0, \"ts\": 3}$tail"
printf '%s' "$good" >"$tmp/good.json"
if python3 "$validate" "$tmp/good.json" >/dev/null; then pass "validator: passes ranges that share their ends, and B/E pairs"
else fail "validator: failed a valid trace: $(python3 "$validate" "$tmp/good.json")"; fi

# A GPU's counters (NVML's "gpu" counter, lib/core/trace.h; the library writes them on a GPU
# only, so here as it writes them: 3 samples, one leaving out what NVML did not give):
# the validator passes them, and tools/trace sums them up per rank, in words and in JSON.
gib=$((1 << 30))
s() { echo "{\"name\": \"step\", \"cat\": \"step\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": $1, \"dur\": 50000.000}"; }
g() { gpu "$1" "\"utilisation_pct\": $2, \"memory_activity_pct\": 4, \"memory_used_bytes\": $(($3 * gib)), \"memory_total_bytes\": $((80 * gib)), \"sm_clock_mhz\": $4$5"; }
printf '%s' "{\"traceEvents\": [$meta, $(s 0), $(s 100000), $(s 200000), $(g 50000.001 10 1 1010 ', "power_mw": 300000, "temperature_c": 41'), $(g 150000.002 20 2 1020 ''), $(g 250000.003 60 6 1410 ', "power_mw": 500000, "temperature_c": 45')$tail" >"$tmp/gpu.json"
if python3 "$validate" "$tmp/gpu.json" >/dev/null && python3 "$tool" "$tmp/gpu.json" --json >"$tmp/gpu.shares" &&
    python3 "$tool" "$tmp/gpu.json" >"$tmp/gpu.report" && python3 - "$tmp/gpu.shares" "$tmp/gpu.report" <<'PY'; then
import json, sys
r = json.load(open(sys.argv[1]))["0"]
report = open(sys.argv[2]).read()
# the means and maxima of the samples above, by hand
want = {"gpu_samples": 3, "gpu_utilisation_pct_mean": 30, "gpu_utilisation_pct_max": 60,
        "gpu_memory_used_bytes_max": 6 * 2**30, "gpu_sm_clock_mhz_mean": (1010 + 1020 + 1410) / 3,
        "gpu_power_mw_mean": 400000, "gpu_temperature_c_max": 45, "steps": 3}
bad = {k: (r.get(k), v) for k, v in want.items() if r.get(k) is None or abs(r[k] - v) > 1e-9 * max(1, abs(v))}
line = ("rank 0 GPU (NVML): 3 samples, utilisation 30% on average (at most 60%), memory used up to "
        "6.00 of 80.0 GiB, SM clock 1147 MHz on average, power 400 W on average, temperature up to 45 C")
print(f"        {'got (JSON), want: ' + str(bad) if bad else 'JSON as computed by hand'}; "
      f"{'the line' if line in report else 'no line: ' + line + ' in ' + report}")
sys.exit(0 if not bad and line in report else 1)
PY
    pass "gpu counters: the validator passes them; tools/trace gives their means and maxima per rank"
else
    fail "gpu counters: not passed by the validator, or tools/trace summed them up wrong"
fi

checks_summary
