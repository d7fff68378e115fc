#!/usr/bin/env bash
# make bench-pipeline: lesson 07's pipeline on this machine's CPU ranks.
#   1. The bubble measured (each rank's idle share of a step, averaged over the ranks:
#      the program's bubble_fraction) against (p - 1) / (m + p - 1), for p = 2, 3, 4
#      stages and m = 1, 2, 4, 8, 16, 32 micro-batches, GPipe and 1F1B. The model is
#      made for the formula's assumptions: every stage LAYERS_PER_STAGE (2) encoder
#      layers (--split), a text of 13 words written here (a vocabulary of 15 with the
#      specials), so that the decoder (2 x D x V FLOPs a token, about 1 % of a layer's)
#      and the embedding cost next to nothing against a layer. Every micro-batch is
#      MB_SEQS (4) sequences of BPTT (32) tokens whatever m is (the batch is m x MB_SEQS):
#      the formula assumes that a micro-batch's compute dominates its messages, and a
#      fixed batch cut into more pieces would end in micro-batches of one sequence whose
#      GEMMs and hand-offs cost more per token.
#   2. The activation memory of each stage at the peak (the program's "stage s memory"
#      lines: micro-batches in flight at most x one micro-batch's activations), GPipe
#      against 1F1B, for every p and m of the sweep.
#   3. Throughput: the same model of 2 stages' layers on 2 ranks (pipelined, m =
#      THROUGHPUT_M, both schedules) against 1 rank (the unsplit model, --micro-batches
#      1 and THROUGHPUT_M), the same batch (THROUGHPUT_M x MB_SEQS sequences), 1 thread
#      per rank; and 1 rank of 2 threads
#      (the same 2 cores, used by the GEMMs instead of by stages).
# Each run trains STEPS (5) steps of one epoch; a run's number is the median over its
# steps after the first (warm-up). The runs take turns within each round (a disturbance
# hits one round of each setting, not all rounds of one); of ROUNDS rounds, each setting
# keeps the round with the shortest median step (the least disturbed), and every round's
# bubble is kept in the JSON lines.
# Ranks are one thread each. Where p is more than the cores (p = 3 and 4 on a 2-core
# machine), the ranks share the cores: a rank's compute time then includes the time
# slices the others took, and a waiting rank (which polls, yielding) takes slices too;
# the bubble measured there is not the schedule's alone. The script says so beside them.
# JSON lines go to BUILD_DIR/bench/pipeline-{bubble,memory,throughput}.jsonl
# (docs/figures/data/07-bubble.jsonl and 07-memory.jsonl are these files).
#   bench/run-bench-pipeline.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=$1 rounds=${2:-3}
bin=$build/solutions/07-pipeline/train
command -v mpirun >/dev/null || { echo "error: make bench-pipeline needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; }
[ -x "$bin" ] || { echo "error: $bin is not built (make $bin)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
stages_list=${STAGES:-2 3 4} micro_list=${MICRO:-1 2 4 8 16 32}
steps=${STEPS:-5} lps=${LAYERS_PER_STAGE:-2} tm=${THROUGHPUT_M:-8}
d_model=${D_MODEL:-128} heads=${HEADS:-4} d_hid=${D_HID:-512} bptt=${BPTT:-32} mb=${MB_SEQS:-4}
cores=$(getconf _NPROCESSORS_ONLN)
dir=$build/bench/pipeline
mkdir -p "$dir"
rm -f "$dir"/*.jsonl "$dir"/*.txt

# 13 words, 8,000 lines of 12 at random (a fixed seed): enough for STEPS steps of the
# largest batch (32 x 4 sequences of 32 tokens) and one batch of valid and test text.
text=$dir/words.txt
awk 'BEGIN { srand(7); n = split("the a of to and in is it that was for on as", w, " ");
             for (l = 0; l < 8000; l++) { s = ""; for (i = 0; i < 12; i++) s = s w[int(rand() * n) + 1] " "; print s } }' >"$text"
model=(--dataset text --data "$text" --d-model "$d_model" --heads "$heads" --d-hid "$d_hid"
       --bptt "$bptt" --dropout 0 --lr 0.5 --epochs 1 --max-steps "$steps" --threads 1)

# split P: stage s > 0 starts at block 1 + s x lps (block 0 is the embedding, with stage 0)
split() { local s out=""; for ((s = 1; s < $1; s++)); do out+="${out:+,}$((1 + s * lps))"; done; echo "$out"; }

# run NAME RANKS THREADS ARGS...: one training run, its metrics in $dir/NAME-rROUND.jsonl
run() {
    local name=$1 n=$2 threads=$3 bind=core out
    shift 3
    [ "$n" -le "$cores" ] || bind=none
    out=$(mpirun -n "$n" --oversubscribe --bind-to "$bind" "$bin" "${model[@]}" --threads "$threads" \
        --metrics "$dir/$name-r$r.jsonl" "$@" 2>&1) ||
        { echo "error: the run failed ($name, round $r):" >&2; tail -5 <<<"$out" >&2; exit 1; }
    printf '%s\n' "$out" >"$dir/$name-r$r.txt"
}

echo "== lesson 07's pipeline: bubble, activation memory, throughput; $lps layers per stage, d_model $d_model,"
echo "   d_hid $d_hid, $heads heads, a text of 13 words, micro-batches of $mb x $bptt tokens, 1 thread per rank,"
echo "   median of steps 2-$steps, least disturbed of $rounds rounds"
echo "   ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores, $(date -u +%F), load $(cut -d' ' -f1-3 /proc/loadavg))"
for ((r = 1; r <= rounds; r++)); do
    for p in $stages_list; do
        for m in $micro_list; do
            for s in gpipe 1f1b; do
                run "p$p-$s-m$m" "$p" 1 --layers $((p * lps)) --split "$(split "$p")" \
                    --schedule "$s" --micro-batches "$m" --batch-size $((m * mb))
            done
        done
    done
    layers=$((2 * lps))
    tb=(--batch-size $((tm * mb)))
    run "tp-1rank-m1" 1 1 --layers $layers --micro-batches 1 "${tb[@]}"
    run "tp-1rank-m$tm" 1 1 --layers $layers --micro-batches "$tm" "${tb[@]}"
    run "tp-1rank-2threads-m1" 1 2 --layers $layers --micro-batches 1 "${tb[@]}"
    for s in gpipe 1f1b; do
        run "tp-2ranks-$s-m$tm" 2 1 --layers $layers --split "$(split 2)" --schedule "$s" --micro-batches "$tm" "${tb[@]}"
    done
    echo "   round $r of $rounds done (load $(cut -d' ' -f1 /proc/loadavg))"
done

python3 - "$dir" "$rounds" "$cores" "$stages_list" "$micro_list" "$tm" "$build/bench" <<'PY'
import json, re, statistics, sys
d, rounds, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stages, micros, tm, out = [int(x) for x in sys.argv[4].split()], [int(x) for x in sys.argv[5].split()], int(sys.argv[6]), sys.argv[7]

def steps(name, r):
    rows = [json.loads(l) for l in open(f"{d}/{name}-r{r}.jsonl")]
    return [x for x in rows if "step" in x][1:]  # after the first (warm-up)

def uneven(x, p, m):
    """The bubble the schedule leaves when the stages take the times they took: with
    t_s = busy_s / m a micro-batch's time on stage s, a step lasts sum(t_s) (the first
    micro-batch through every stage) + (m - 1) max(t_s) (the rest at the slowest
    stage's pace); (p - 1) / (m + p - 1) when all t_s are equal."""
    mean, most = x["busy_mean_seconds"], x["busy_max_seconds"]
    step = p * mean / m + (m - 1) * most / m
    return 1 - mean / step if step > 0 else 0

def best(name):
    """(the least disturbed round's medians, every round's median bubble)"""
    runs = []
    for r in range(1, rounds + 1):
        s = steps(name, r)
        run = {k: statistics.median(x[k] for x in s)
               for k in ("bubble_fraction", "step_seconds", "tokens_per_s")}
        p, m = [int(v) for v in re.match(r"p(\d+)-\w+-m(\d+)", name).groups()] if name.startswith("p") else (1, 1)
        run["bubble_uneven"] = statistics.median(uneven(x, p, m) for x in s)
        runs.append(run)
    return min(runs, key=lambda x: x["step_seconds"]), [x["bubble_fraction"] for x in runs]

def formula(p, m):
    return (p - 1) / (m + p - 1)

bubble_rows, memory_rows = [], []
print("\nbubble: measured (median of steps after the first) against (p-1)/(m+p-1), and against the")
print("bubble the schedule leaves with the stages' own measured times (\"uneven\": equal to the formula")
print("when the stages take the same time)")
print("| p | m | formula | GPipe | / formula | uneven | 1F1B | / formula | uneven | step s (GPipe, 1F1B) |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for p in stages:
    for m in micros:
        f = formula(p, m)
        row = {"stages": p, "pipeline": f"p={p}", "micro_batches": m, "bubble_formula": round(f, 4)}
        cells = []
        for s in ("gpipe", "1f1b"):
            b, all_rounds = best(f"p{p}-{s}-m{m}")
            row[f"bubble_{s}"] = round(b["bubble_fraction"], 4)
            row[f"step_seconds_{s}"] = round(b["step_seconds"], 4)
            row[f"bubble_{s}_rounds"] = [round(x, 4) for x in all_rounds]
            row[f"bubble_uneven_{s}"] = round(b["bubble_uneven"], 4)
            cells += [f"{b['bubble_fraction']:.3f}", f"{b['bubble_fraction'] / f:.2f}", f"{b['bubble_uneven']:.3f}"]
            # the memory lines of that run (every round prints the same)
            text = open(f"{d}/p{p}-{s}-m{m}-r1.txt").read()
            for st, mb, slots in re.findall(r"stage (\d+) memory: .* activations ([\d.]+) MB \((\d+) micro", text):
                memory_rows.append((p, m, int(st), s, float(mb), int(slots)))
        row["oversubscribed"] = p > cores
        bubble_rows.append(row)
        print(f"| {p} | {m} | {f:.3f} | " + " | ".join(cells) + " | "
              f"{row['step_seconds_gpipe']:.3f}, {row['step_seconds_1f1b']:.3f} |")
if any(p > cores for p in stages):
    print(f"(p > {cores}: more ranks than cores; their busy time includes time slices of the others)")

print("\nactivation memory per stage at the peak, MB (micro-batches in flight), GPipe / 1F1B")
mem = {}
for p, m, st, s, mb, slots in memory_rows:
    mem.setdefault((p, m, st), {})[s] = (mb, slots)
print("| p | m | " + " | ".join(f"stage {i}" for i in range(max(stages))) + " |")
print("|---:|---:|" + "---:|" * max(stages))
mem_json = []
for p in stages:
    for m in micros:
        cells = []
        for st in range(max(stages)):
            if (p, m, st) not in mem:
                cells.append("")
                continue
            g, o = mem[(p, m, st)]["gpipe"], mem[(p, m, st)]["1f1b"]
            cells.append(f"{g[0]:.1f} ({g[1]}) / {o[0]:.1f} ({o[1]})")
            mem_json.append({"stages": p, "stage": st, "series": f"p={p} stage {st}", "micro_batches": m,
                             "activations_mb_gpipe": g[0], "in_flight_gpipe": g[1],
                             "activations_mb_1f1b": o[0], "in_flight_1f1b": o[1]})
        print(f"| {p} | {m} | " + " | ".join(cells) + " |")

print(f"\nthroughput: the model of 2 stages' layers, batch of {tm} micro-batches, tokens/s (median of steps after the first)")
tp = [("tp-1rank-m1", "1 rank, 1 thread, --micro-batches 1 (unsplit)", 1),
      (f"tp-1rank-m{tm}", f"1 rank, 1 thread, --micro-batches {tm} (unsplit, accumulated)", 1),
      ("tp-1rank-2threads-m1", "1 rank, 2 threads, --micro-batches 1 (unsplit)", 1),
      (f"tp-2ranks-gpipe-m{tm}", f"2 ranks (stages), GPipe, --micro-batches {tm}", 2),
      (f"tp-2ranks-1f1b-m{tm}", f"2 ranks (stages), 1F1B, --micro-batches {tm}", 2)]
base = best("tp-1rank-m1")[0]["tokens_per_s"]
tp_json = []
print("| setup | tokens/s | against 1 rank, m = 1 | bubble |")
print("|---|---:|---:|---:|")
for name, label, ranks in tp:
    b, _ = best(name)
    print(f"| {label} | {b['tokens_per_s']:.0f} | {b['tokens_per_s'] / base:.2f}x | "
          f"{b['bubble_fraction']:.3f} |")
    tp_json.append({"setup": label, "ranks": ranks, "tokens_per_s": round(b["tokens_per_s"], 1),
                    "ratio": round(b["tokens_per_s"] / base, 4), "bubble_fraction": round(b["bubble_fraction"], 4)})

for name, rows in (("bubble", bubble_rows), ("memory", mem_json), ("throughput", tp_json)):
    with open(f"{out}/pipeline-{name}.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
print(f"\n(JSON lines: {out}/pipeline-bubble.jsonl, pipeline-memory.jsonl, pipeline-throughput.jsonl)")
PY
