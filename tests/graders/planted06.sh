#!/usr/bin/env bash
# Lesson 06's TODOs against the mistakes participants make: each is planted in a
# temporary copy of the solution, the grader is linked against it, and the TODO's check
# must FAIL with the hint that names the mistake. The rings that deadlock must also be
# ended by the library early, with its line naming the rank that did not send ("... can
# never finish: rank 1 did not send to rank 0"), not at the timeout. Only the planted
# TODO's own check runs (CHECK_ONLY); the stubs failing every check are
# tests/check-stubs.sh's. The machinery: planted_lib.sh. Needs `make all` first. Last
# line: "N passed, M failed".
#   tests/graders/planted06.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 06-ddp tests/graders/grade06.c

# plant_also NAME FILE TODO HINT ALSO "old|||new"...: plant's test, and the job's output
# must say ALSO too (the library's line)
plant_also() {
    local name=$1 f=$2 todo=$3 hint=$4 also=$5 out block
    shift 5
    patched "$f" "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    out=$(grade "$f")
    block=$(failed_block "$todo" "$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block" && grep -qF -- "$also" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\", the library says \"$also\"" 1
        grep -m1 -F -- "$hint" <<<"$block" | cut -c1-150
        grep -m1 -F -- "$also" <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\", the library saying \"$also\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}

# TODO 6.2 (train.c): the broadcast of rank 0's weights
PLANTED_CHECKS="every rank starts from rank 0's weights"
plant "no broadcast" train.c 6.2 "its parameters are not rank 0's after lesson_broadcast_weights (they did not change)" \
    "dist_broadcast(run->dist, &run->model.params.values, 0);|||(void)run;"

# TODO 6.3 (train.c): the distributed sampler
PLANTED_CHECKS="distributed sampler"
plant "no set_epoch" train.c 6.3 "as if the epoch were never set" \
    "sampler_set_epoch(&run->sampler, epoch);|||(void)epoch;"

# TODO 6.4 (train.c): the average
PLANTED_CHECKS="gradients: the average"
plant "the sum, not the average" train.c 6.4 "that is the sum, divide it by the world size" \
    "for (int64_t i = 0; i < g->size; i++) g->data[i] *= inv;|||(void)inv;"

# TODO 6.6 (save.c): save0
PLANTED_CHECKS="print0 and save0"
plant "every rank saves" save.c 6.6 "a rank other than 0 writes nothing" \
    "if (run->dist->rank == 0) { /* save0|||if (1) { /* save0"

# TODO 6.7 (ring.c): rings that deadlock, ended by the library as such
PLANTED_CHECKS="ring all-reduce"
plant_also "the ring receives from r + 1 (hangs on 3 ranks only)" ring.c 6.7 \
    "it sends to rank 1 and receives from rank 1" "can never finish: rank 1 did not send to rank 0" \
    "prev = (r + W - 1) % W;|||prev = (r + 1) % W;"
plant_also "every rank receives, then sends" ring.c 6.7 \
    "hint: a rank waited for a message that never came" "can never finish: rank 1 did not send to rank 0" \
    "dist_sendrecv(d, sn ? &out : NULL, next, rn ? &in : NULL, prev);|||if (rn) dist_recv(d, &in, prev);
        if (sn) dist_send(d, &out, next);"

planted_end
