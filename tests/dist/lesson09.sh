#!/usr/bin/env bash
# Lesson 09's solution as users run it, with mpirun, on CPU ranks and a tiny model (the
# grader's: GPL-3's text, 24 wide, 2 heads, 2 layers of 32 hidden units, 8 tokens):
#   - bad layouts are refused at start, each with one message (every rank may print it,
#     the same line but for the rank named at its end) and a non-zero exit, never a
#     hang: --tp not dividing the heads or the feed-forward width, dp x pp x tp not the
#     ranks, ranks started with different --tp, more stages than blocks
#   - a rank stopped in a tensor group ends the job within the timeout, named by its
#     world rank (not its rank in a group), its groups by their world ranks
#   - the three axes together take one process's steps: 2 x 2 x 2 on 8 ranks and
#     3 x 2 x 2 on 12 (2 micro-batches, dropout off: a replica's and a micro-batch's
#     masks are their own), and 1 x 4 x 2 on 8 with dropout on at --micro 1: every
#     step's loss (--metrics) within 1e-5 relative of 1 rank's over 20 steps, every
#     rank's parameter digest the same, the parameters and the bytes of rank 0 what
#     TODO 9.5 counts from the shapes
#   - two hosts on one machine (two network namespaces joined by a veth pair, Open MPI
#     over TCP, as tests/dist/lesson06.sh makes them): a tensor group across the two is
#     warned about at start, with what it sends over the network a step, and still
#     takes one process's steps; replicas across them (--dp 2) are not warned about.
#     Needs root and iproute2, else skipped.
# Last line: "N passed, M failed[, K skipped]".
#   tests/dist/lesson09.sh BUILD_DIR
set -u
build=${1:-build}
bin=$build/solutions/09-tensor-parallel/train
. "$(dirname "$0")/../lib-checks.sh" # pass, fail, skip, show, checks_summary
finish() {
    checks_summary
    exit
}
text=/usr/share/common-licenses/GPL-3 # Debian's base-files
if ! command -v mpirun >/dev/null || [ ! -x "$bin" ] || [ ! -r "$text" ]; then
    skip "lesson 09 with ranks: needs Open MPI's mpirun (sudo make deps), $bin and $text"
    finish
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --mca btl self,vader,tcp)
small=(--threads 1 --dataset text --data "$text" --d-model 24 --heads 2 --d-hid 32 --layers 2
       --bptt 8 --batch-size 12 --valid-batches 1 --lr 0.5 --timeout 20)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# ---- bad layouts: one message, a non-zero exit, within the time limit
refused() { # $1: what; $2: the message expected (grep -E); $3: ranks; the rest: options
    local what=$1 want=$2 n=$3 out status took errors t0
    shift 3
    t0=$(date +%s)
    out=$(timeout 120 "${mpi[@]}" -n "$n" "$@" 2>&1)
    status=$? took=$(($(date +%s) - t0))
    # every rank may print it: one line, but for the rank each names at its end
    errors=$(grep -E '^error: ' <<<"$out" | sed -E 's/ \(rank [0-9]+ of [0-9]+\)$//' | sort -u)
    if [ $status -ne 0 ] && [ $status -ne 124 ] && [ "$(grep -c . <<<"$errors")" = 1 ] &&
        grep -qE -- "$want" <<<"$errors"; then
        pass "$what: refused in $took s, exit $status: ${errors#error: }"
    else
        fail "$what: exit $status after $took s$([ $status = 124 ] && echo ': it hung'), messages:"
        sed 's/^/        /' <<<"${errors:-(no line starting with error:)}"
        grep -v '^ *$' <<<"$out" | tail -6 | sed 's/^/        | /'
    fi
}
refused "--tp 3 with 2 heads on 3 ranks" "--tp 3 does not divide the model's 2 heads" \
    3 "$bin" "${small[@]}" --tp 3 --max-steps 1
refused "--tp 4 with a feed-forward width of 30 on 4 ranks" "--tp 4 does not divide the model's feed-forward width of 30" \
    4 "$bin" "${small[@]}" --heads 4 --d-hid 30 --tp 4 --max-steps 1
refused "--dp 3 --tp 2 on 4 ranks" "data 3 x pipeline 1 x tensor 2 is 6 ranks, but the job has 4" \
    4 "$bin" "${small[@]}" --dp 3 --tp 2 --max-steps 1
refused "--tp 2 on 3 ranks (dp what remains)" "2 does not divide 3" \
    3 "$bin" "${small[@]}" --tp 2 --max-steps 1
refused "ranks started with --tp 2 and --tp 1" "different options: --tp is 2 on rank 0 but 1 on rank 1" \
    2 sh -c 'exec "$0" "$@" --tp $((2 - OMPI_COMM_WORLD_RANK))' "$bin" "${small[@]}" --max-steps 1
refused "--pp 5 on 5 ranks: the model has 4 blocks" "--pp 5: the model has 4 blocks" \
    5 "$bin" "${small[@]}" --pp 5 --micro 1 --max-steps 1

# ---- a rank stopped (SIGSTOP) in a tensor group of 2 on 4 ranks: the job ends, and the
# ranks that wait for it name it by its world rank (2), never by its rank in a group (0 in
# the tensor group {2, 3}, 1 in the data group {0, 2}); the groups by their world ranks
t0=$(date +%s)
out=$(timeout 120 "${mpi[@]}" -n 4 sh -c '[ "$OMPI_COMM_WORLD_RANK" = 2 ] && { sleep 3; kill -STOP $$; } &
    exec "$0" "$@"' "$bin" "${small[@]}" --tp 2 --timeout 5 --epochs 100000 --max-steps 100000000 2>&1)
status=$? took=$(($(date +%s) - t0))
told=$(grep -E '^error: rank [0-9]+: .* did not finish within 5 s' <<<"$out")
if [ $status -ne 0 ] && [ $status -ne 124 ] && [ -n "$told" ] && ! grep -qE 'rank [013] does not answer' <<<"$told" &&
    grep -qE 'of the group of world ranks (2, 3|0, 2)\) did not finish within 5 s \(--timeout\): rank 2 does not answer \(stopped' <<<"$told"; then
    pass "world rank 2 stopped in a tensor group of 2 on 4 ranks: the job ended in $took s (exit $status), naming rank 2 and its groups by world ranks"
else
    fail "world rank 2 stopped (--tp 2, 4 ranks): exit $status after $took s; the messages (want 'rank 2 does not answer', its group by world ranks, no other rank silent):"
    sed 's/^/        /' <<<"${told:-(none)}"
    grep -v '^ *$' <<<"$out" | tail -4 | sed 's/^/        | /'
fi

# ---- the three axes together against one process
losses() { grep -oE '"loss": [-0-9.e+]+' "$1" 2>/dev/null | cut -d' ' -f2; }
run() { # $1: name; $2: ranks; the rest: options. Output in $scratch/NAME.out, metrics NAME.jsonl
    local name=$1 n=$2
    shift 2
    timeout 300 "${mpi[@]}" -n "$n" "$bin" "${small[@]}" --max-steps 20 \
        --metrics "$scratch/$name.jsonl" "$@" >"$scratch/$name.out" 2>&1
}
# rank 0's 20 losses within 1e-5 relative of the reference's; prints the largest difference
close() { # $1: reference jsonl, $2: the run's
    paste <(losses "$1") <(losses "$2") | awk '
        NF == 2 { n++; d = $1 - $2; if (d < 0) d = -d; r = d / ($1 < 0 ? -$1 : $1); if (r > worst) worst = r }
        END { printf "%.2g", worst; exit !(n == 20 && worst <= 1e-5) }'
}
same_digests() { # $1: output, $2: ranks: a digest line from every rank, all the same
    local lines
    lines=$(grep -E '^rank [0-9]+ parameter digest: [0-9a-f]{16}$' "$1")
    [ "$(grep -c . <<<"$lines")" = "$2" ] &&
        [ "$(cut -d' ' -f2 <<<"$lines" | sort -u | wc -l)" = "$2" ] &&
        [ "$(sed 's/.*: //' <<<"$lines" | sort -u | wc -l)" = 1 ]
}
counted() { # $1: output: the parameters and rank 0's bytes are what the shapes give (9.5)
    grep -qE '^ +[0-9]+ +\([0-9]+,[0-9]+,[0-9]+\) ' "$1" && ! grep -q 'not what the shapes give' "$1" &&
        [ "$(sed -nE 's/.*, ([0-9.]+) MB sent there \(your formula 9\.5: ([0-9.]+) MB\).*/\1 \2/p' "$1" |
             awk '{ print ($1 == $2 && $1 > 0) }')" = 1 ]
}
check_layout() { # $1: title; $2: reference name; $3: name; $4: ranks
    local worst
    if ! worst=$(close "$scratch/$2.jsonl" "$scratch/$3.jsonl"); then
        fail "$1: step losses off by up to $worst relative from 1 rank's (1e-5 allowed), or not 20 of them"
        paste <(losses "$scratch/$2.jsonl") <(losses "$scratch/$3.jsonl") | head -5 | sed 's/^/        /'
        grep -v '^ *$' "$scratch/$3.out" | tail -6 | sed 's/^/        | /'
    elif ! same_digests "$scratch/$3.out" "$4"; then
        fail "$1: not one equal parameter digest line from each of the $4 ranks"
        grep 'digest' "$scratch/$3.out" | sed 's/^/        /'
    elif ! counted "$scratch/$3.out"; then
        fail "$1: the parameters or bytes per step of rank 0 are not the counts from the shapes"
        grep -E 'not what|MB sent there' "$scratch/$3.out" | sed 's/^/        /'
    else
        pass "$1: 20 steps within $worst relative of 1 rank's, the same digest on all $4 ranks, parameters and bytes as counted"
    fi
}
run one0 1 --dropout 0
run grid8 8 --dp 2 --pp 2 --tp 2 --dropout 0
check_layout "2 x 2 x 2 on 8 ranks, 2 micro-batches, dropout off" one0 grid8 8
run grid12 12 --dp 3 --pp 2 --tp 2 --dropout 0
check_layout "3 x 2 x 2 on 12 ranks, 2 micro-batches, dropout off" one0 grid12 12
run one 1
run pipe8 8 --pp 4 --tp 2 --micro 1
check_layout "1 x 4 x 2 on 8 ranks, one micro-batch, dropout on" one pipe8 8

# ---- two hosts: a tensor group that spans them is warned about, with its cost
. "$(dirname "$0")/two_hosts.sh"
trap 'two_hosts_down; rm -rf "$scratch"' EXIT
if ! two_hosts_up "$scratch"; then
    skip "lesson 09 on two hosts: $TWO_HOSTS_WHY"
else
    hosts() { # $1: name; the rest: options; one rank on each host
        local name=$1
        shift
        two_hosts_mpirun "$bin" "${small[@]}" --max-steps 20 --metrics "$scratch/$name.jsonl" "$@" \
            >"$scratch/$name.out" 2>&1
    }
    hosts span --tp 2
    hosts replicas --dp 2 --dropout 0
    if ! grep -q "2 ranks on 2 nodes" "$scratch/span.out"; then
        fail "lesson 09 on two hosts: the job did not see 2 nodes"
        tail -8 "$scratch/span.out" | sed 's/^/        | /'
    elif ! grep -q "tensor groups of 2 ranks span nodes" "$scratch/span.out" ||
        ! grep -qE "sends [0-9.]+ MB a step in its tensor group.s all-reduces, over the network" "$scratch/span.out"; then
        fail "lesson 09 on two hosts: --tp 2 across them is not warned about with its cost"
        head -8 "$scratch/span.out" | sed 's/^/        | /'
    elif ! worst=$(close "$scratch/one.jsonl" "$scratch/span.jsonl"); then
        fail "lesson 09 on two hosts: --tp 2 across them is off by $worst from 1 rank's steps"
    elif grep -q "span nodes" "$scratch/replicas.out" || ! grep -q "parameter digest" "$scratch/replicas.out"; then
        fail "lesson 09 on two hosts: --dp 2 across them warned about a tensor group, or did not finish"
        tail -8 "$scratch/replicas.out" | sed 's/^/        | /'
    else
        pass "lesson 09 on two hosts: --tp 2 across them warned ($(grep -oE "sends [0-9.]+ MB a step" "$scratch/span.out")) and within $worst of 1 rank's steps; --dp 2 across them not warned"
    fi
fi
finish
