#!/usr/bin/env bash
# The node monitor (build/tools/node-monitor, tools/monitor/node_monitor.c) as a job
# script runs it (slurm/lib/job.sh's job_monitor_start), against the stand-in NVML of
# tests/trace/fake_nvml.c (2 GPUs; its header says what each query answers):
#   - 3.5 s, then SIGTERM: exit 0, a line per source a second (the node's CPUs, GPU 0,
#     GPU 1), every line whole JSON with the keys make plot reads; the CPU line's values
#     against this machine (CPUs online, MemTotal), shares within 0-100;
#   - GPU 0's utilisation and memory are the stand-in's scripted answers, in order; GPU 1
#     does not support utilisation or power: those keys are absent, not 0;
#   - no NVML (--nvml of a missing file): one line says why, CPU lines only; --duration
#     ends it by itself; SIGINT and SIGUSR1 stop it as SIGTERM does; bad options: exit 1;
#   - make plot of its file: utilisation and memory figures, a line per source (gnuplot;
#     skipped without it).
# Last line: "N passed, M failed[, K skipped]".
#   tests/programs/monitor.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary
total() {
    checks_summary
}

bin=$build/tools/node-monitor fake=$build/tests/fake-nvml/libnvidia-ml.so.1
for f in "$bin" "$fake"; do
    [ -e "$f" ] || { fail "$f is not built (make BUILD=$build $f)"; total; exit 1; }
done
tmp=$(mktemp -d /tmp/monitor_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
host=$(hostname -s)

# ---------------------------------------------------------------- 3.5 s, SIGTERM
LD_LIBRARY_PATH="$(dirname "$fake")" "$bin" --out-dir "$tmp/out" --tag test 2>"$tmp/term.err" &
pid=$!
sleep 3.5
kill -TERM $pid
wait $pid
rc=$?
file=$tmp/out/monitor-test-$host.jsonl
if [ $rc -eq 0 ] && grep -q "stopped by SIGTERM after 3 samples" "$tmp/term.err"; then
    pass "SIGTERM after 3.5 s: exit 0, 3 samples taken ($(head -1 "$tmp/term.err" | sed 's/^node-monitor: //'))"
else
    fail "SIGTERM after 3.5 s: exit $rc (expected 0 and 'stopped by SIGTERM after 3 samples')"
    show "$tmp/term.err"
fi

# every check below from the file, by python (JSON); each prints PASS or FAIL lines
python3 - "$file" "$host" "$(nproc)" >"$tmp/check.out" 2>&1 <<'EOF'
import json, sys
path, host, nproc = sys.argv[1], sys.argv[2], int(sys.argv[3])
GIB = 1 << 30
def say(ok, text, why=""):
    print(("PASS  " if ok else "FAIL  ") + text + ("" if ok else f": {why}"))
try:
    raw = open(path).read()
    rows = [json.loads(line) for line in raw.splitlines()]
    say(raw.endswith("\n") and len(rows) > 0, f"{path.split('/')[-1]}: {len(rows)} lines, each a whole JSON object",
        "no lines, or the last one unfinished")
except Exception as e:  # noqa: BLE001
    say(False, "the monitor file is JSON lines", repr(e))
    sys.exit(0)
by = {}
for r in rows:
    by.setdefault(r.get("source"), []).append(r)
want = [f"{host} cpu", f"{host} gpu0", f"{host} gpu1"]
counts = {s: len(by.get(s, [])) for s in want}
say(set(by) == set(want) and set(counts.values()) == {3},
    "3 lines each for the node's CPUs, GPU 0 and GPU 1 (one per source per second)",
    f"sources {sorted(map(str, by))}, counts {counts}")
base = {"t", "time", "host", "source"}
cpu_keys = base | {"util_pct", "user_pct", "system_pct", "iowait_pct", "cpus", "load1",
                   "mem_used_bytes", "mem_total_bytes"}
cpu = by.get(f"{host} cpu", [])
mem_total = next(int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
bad = [r for r in cpu if set(r) != cpu_keys or r["host"] != host or not 0 <= r["util_pct"] <= 100
       or not 0 <= r["user_pct"] <= r["util_pct"] + 1e-6 or r["cpus"] != nproc
       or r["mem_total_bytes"] != mem_total or not 0 < r["mem_used_bytes"] < mem_total]
say(cpu and not bad, f"CPU lines: keys {', '.join(sorted(cpu_keys - base))}; {nproc} CPUs, MemTotal, shares in 0-100",
    f"{bad[:1]}")
ts = [r["t"] for r in cpu]
gaps = [b - a for a, b in zip(ts, ts[1:])]
say(len(ts) == 3 and 0.9 <= ts[0] <= 1.5 and all(0.9 <= g <= 1.5 for g in gaps)
    and all(r["time"].endswith("Z") and r["time"][10] == "T" for r in cpu),
    f"t about 1 s apart from the start ({', '.join(f'{t:.3f}' for t in ts)}), time in UTC",
    f"t {ts}, time {[r['time'] for r in cpu]}")
g0, g1 = by.get(f"{host} gpu0", []), by.get(f"{host} gpu1", [])
# the stand-in's n-th answers: utilisation 10 n %, memory n GiB counted over both GPUs
# (GPU 0 is asked first each second), clock 1000 + 10 n, power 100000 + n mW, 40 + n C
want0 = [{"gpu": 0, "util_pct": 10 * n, "mem_activity_pct": n, "mem_used_bytes": (2 * n - 1) * GIB,
          "mem_total_bytes": 80 * GIB, "sm_clock_mhz": 1000 + 10 * (2 * n - 1),
          "power_w": (100000 + n) / 1000, "temperature_c": 40 + 2 * n - 1} for n in (1, 2, 3)]
got0 = [{k: v for k, v in r.items() if k not in base} for r in g0]
say(got0 == want0, "GPU 0: utilisation 10, 20, 30 %, memory and clock as NVML (the stand-in) answered",
    f"got {got0}")
keys1 = [set(r) - base for r in g1]
say(g1 and all(k == {"gpu", "mem_used_bytes", "mem_total_bytes", "sm_clock_mhz", "temperature_c"} for k in keys1)
    and all(r["mem_total_bytes"] == 40 * GIB for r in g1),
    "GPU 1 (no utilisation, no power, as under MIG): those keys left out, not written as 0",
    f"keys {keys1}")
EOF
cat "$tmp/check.out"
passed=$((passed + $(grep -c '^PASS' "$tmp/check.out"))) failed=$((failed + $(grep -c '^FAIL' "$tmp/check.out")))

# ---------------------------------------------------------------- no NVML, --duration, SIGINT
timeout 20 "$bin" --out-dir "$tmp/nonvml" --tag cpu --interval 0.5 --duration 1.5 \
    --nvml /nonexistent/libnvidia-ml.so.1 >"$tmp/nonvml.out" 2>&1
rc=$?
f2=$tmp/nonvml/monitor-cpu-$host.jsonl
n=$(grep -c . "$f2" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$n" = 3 ] && [ "$(grep -c " cpu\"" "$f2")" = 3 ] &&
    grep -q "no GPU counters: NVML (/nonexistent/libnvidia-ml.so.1, from the NVIDIA driver) cannot be loaded" "$tmp/nonvml.out" &&
    grep -q "done after 3 samples" "$tmp/nonvml.out"; then
    pass "no NVML: one line says why, CPU lines only; --interval 0.5 --duration 1.5 ends by itself after 3"
else
    fail "no NVML, --duration 1.5: exit $rc, ${n:-no} lines (expected 0, 3 CPU lines, the reason and 'done after 3 samples')"
    show "$tmp/nonvml.out"
fi
for sig in INT USR1; do  # Ctrl-C; what srun passes on (job_monitor_stop under Slurm)
    "$bin" --out-dir "$tmp/$sig" --tag $sig --interval 0.2 --nvml /nonexistent/x.so 2>"$tmp/$sig.err" &
    pid=$!
    sleep 0.7
    kill -$sig $pid
    wait $pid
    rc=$?
    if [ $rc -eq 0 ] && grep -q "stopped by SIG$sig" "$tmp/$sig.err" &&
        python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/$sig/monitor-$sig-$host.jsonl" 2>/dev/null; then
        pass "SIG$sig stops it as SIGTERM does: exit 0, whole lines"
    else
        fail "SIG$sig: exit $rc, or not 'stopped by SIG$sig', or a broken line"
        show "$tmp/$sig.err"
    fi
done
"$bin" --out-dir "$tmp/bad" --interval 0 >"$tmp/bad1" 2>&1; r1=$?
"$bin" --interval 1 >"$tmp/bad2" 2>&1; r2=$?
if [ $r1 -eq 1 ] && grep -q -- "--interval 0: give 0.1 to 3600 seconds" "$tmp/bad1" &&
    [ $r2 -eq 1 ] && grep -q -- "give --out-dir DIR" "$tmp/bad2"; then
    pass "bad options (--interval 0, no --out-dir): exit 1 with a message"
else
    fail "bad options: exits $r1 and $r2 (expected 1 and 1 with messages)"
    show "$tmp/bad1" 3; show "$tmp/bad2" 3
fi

# ---------------------------------------------------------------- make plot
if ! command -v gnuplot >/dev/null; then
    skip "make plot of the monitor file: gnuplot is not installed (sudo apt-get install gnuplot-nox)"
else
    make --no-print-directory -s BUILD="$build" PLOT_OUT="$tmp/plots" plot METRICS="$file" >"$tmp/plot.log" 2>&1
    rc=$?
    name=monitor-test-$host ok=1
    for fig in "$name" "$name-memory"; do
        [ -s "$tmp/plots/$fig.svg" ] && [ -s "$tmp/plots/$fig.png" ] || ok=0
    done
    svg=$tmp/plots/$name.svg msvg=$tmp/plots/$name-memory.svg
    if [ $rc -eq 0 ] && [ $ok = 1 ] && grep -q "utilisation (%)" "$svg" && grep -q ">$host gpu0<" "$svg" &&
        grep -q ">$host cpu<" "$svg" && grep -q "memory in use" "$msvg" && grep -q "GiB" "$msvg"; then
        pass "make plot METRICS=<monitor file>: utilisation and memory against t, a line per source (SVG, PNG)"
    else
        fail "make plot of the monitor file: exit $rc, or not two figures with a line per source"
        show "$tmp/plot.log"
    fi
fi
total
