#!/usr/bin/env bash
# Lesson 09's TODOs (9.1-9.5) against the mistakes participants make, issue 39's among
# them: each is planted in a temporary copy of the solution, the grader is linked against
# it, and the TODO's check must FAIL with the hint that names the mistake (and a crash
# in f must not be blamed on 9.4's dlogits). Only the planted TODO's own check runs
# (CHECK_ONLY), never the program's; the stubs failing every check are
# tests/check-stubs.sh's. The machinery: planted_lib.sh. Needs `make all` first. Last
# line: "N passed, M failed".
#   tests/graders/planted09.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 09-tensor-parallel tests/graders/grade09.c

# TODO 9.1 (shard.c): a rank's rows; the q|k|v rows of its heads
PLANTED_CHECKS="which rows a rank holds"
plant "start = r" shard.c 9.1 "rank r starts at r x count" \
    "return (TpRange){r * (n / t), n / t};|||return (TpRange){r, n / t};"
plant "the library's tp_shard" shard.c 9.1 "calls the library's tp_shard" \
    "return (TpRange){r * (n / t), n / t};|||return tp_shard(n, t, r);"
PLANTED_CHECKS="q|k|v rows"
plant "rows dealt round-robin" shard.c 9.1 "rows dealt round-robin" \
    "rows[part * per + i] = part * D + r * per + i;|||rows[part * per + i] = part * D + i * t + r;"
plant "keys right after the queries" shard.c 9.1 "this rank's keys start at row D + r x D/t" \
    "rows[part * per + i] = part * D + r * per + i;|||rows[part * per + i] = r * per + part * per + i;"
plant "a contiguous third" shard.c 9.1 "a contiguous third of in_proj_weight" \
    "rows[part * per + i] = part * D + r * per + i;|||rows[part * per + i] = r * 3 * per + part * per + i;"

# TODO 9.2 (conjugate.c): f and g (the NULL: 0 the compiler cannot see, as a participant's
# pointer left NULL on one path; a NULL it can see may become a trap, SIGILL)
PLANTED_CHECKS="f: identity"
plant_not "a NULL pointer in f" conjugate.c 9.2 "a pointer that may be NULL used without a check" "dlogits" \
    "if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_SUM);|||Tensor *sum = (Tensor *)(size_t)(x->size < 0);
    if (pass == BLOCK_BACKWARD) sum->data[0] = x->data[0];"
plant "the average for the sum" conjugate.c 9.2 "DIST_SUM, not DIST_AVG" \
    "if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_SUM);|||if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_AVG);"
plant "f's passes swapped" conjugate.c 9.2 "it is the identity there" \
    "if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_SUM);|||if (pass == BLOCK_FORWARD) dist_all_reduce(tp->group, x, DIST_SUM);"

# TODO 9.3 (row_linear.c): the row-parallel linear, its bias once
PLANTED_CHECKS="row-parallel linear"
plant "the bias added after g on rank 0" row_linear.c 9.3 "the bias was added after g, on rank 0 only" \
    "    o->linear_forward(out, in, w, tp->rank == 0 ? bias : &none);
    tp->ops.g(tp, out, BLOCK_FORWARD);|||    o->linear_forward(out, in, w, &none);
    tp->ops.g(tp, out, BLOCK_FORWARD);
    if (tp->rank == 0)
        for (int64_t i = 0; i < out->size; i++) out->data[i] += bias->data[i % bias->size];"
plant "the bias on every rank" row_linear.c 9.3 "every rank added the bias before the sum" \
    "tp->rank == 0 ? bias : &none|||bias"
plant "no bias" row_linear.c 9.3 "it is added by no rank" \
    "tp->rank == 0 ? bias : &none|||&none"
plant "no g" row_linear.c 9.3 "the group's sum is missing" \
    "    tp->ops.g(tp, out, BLOCK_FORWARD);
|||"

# TODO 9.4 (vocab_loss.c): the vocabulary-parallel cross-entropy
PLANTED_CHECKS="vocabulary-parallel"
plant "the gradient not divided by N" vocab_loss.c 9.4 "N = 6 times too large, at every column" \
    "/ sums.data[n] / (float)N : 0.0f;|||/ sums.data[n] : 0.0f;" "d[mine] -= 1.0f / (float)N;|||d[mine] -= 1.0f;"
plant "the loss summed, not averaged" vocab_loss.c 9.4 "the sum over the 6 rows, not the mean" \
    "return (float)(loss / N);|||return (float)loss;"
plant "the target's test k <= valid" vocab_loss.c 9.4 "not k <= valid" \
    "if (mine >= 0 && mine < valid) sums|||if (mine >= 0 && mine <= valid) sums" \
    "if (mine >= 0 && mine < valid) d[mine]|||if (mine >= 0 && mine <= valid) d[mine]"
plant "the target's test k > 0, in the loss" vocab_loss.c 9.4 "no rank counted that target, at k = targets[n] - tp->words.start == 0 on its rank (the loss lacks its term)" \
    "if (mine >= 0 && mine < valid) sums|||if (mine > 0 && mine < valid) sums"
plant "the target's test k > 0, in the loss and the gradient" vocab_loss.c 9.4 "no rank counted that target, at k = targets[n] - tp->words.start == 0 on its rank (the loss lacks its term, and its gradient there lacks the -1/N)" \
    "if (mine >= 0 && mine < valid) sums|||if (mine > 0 && mine < valid) sums" \
    "if (mine >= 0 && mine < valid) d[mine]|||if (mine > 0 && mine < valid) d[mine]"
plant "the target's test k > 0, in the gradient" vocab_loss.c 9.4 "no rank counted that target, at k = targets[n] - tp->words.start == 0 on its rank (its gradient there lacks the -1/N)" \
    "if (mine >= 0 && mine < valid) d[mine]|||if (mine > 0 && mine < valid) d[mine]"
plant "the padding in the max" vocab_loss.c 9.4 "gradient off by nan, the padding's gradient up to 0. The padding takes part in the max" \
    "for (int j = 0; j < valid; j++) m = fmaxf(m, z[j]);|||for (int j = 0; j < V; j++) m = fmaxf(m, z[j]);"
plant "the padding in the sum" vocab_loss.c 9.4 "The padding takes part in the sum of exponentials" \
    "for (int j = 0; j < valid; j++) sums.data[n] +=|||for (int j = 0; j < V; j++) sums.data[n] +="
plant "the padding in the max and the sum" vocab_loss.c 9.4 "The padding takes part in the max and the sum" \
    "for (int j = 0; j < valid; j++) m = fmaxf(m, z[j]);|||for (int j = 0; j < V; j++) m = fmaxf(m, z[j]);" \
    "for (int j = 0; j < valid; j++) sums.data[n] +=|||for (int j = 0; j < V; j++) sums.data[n] +="
plant "each rank's own maximum" vocab_loss.c 9.4 "each rank subtracted its own maximum" \
    "    tp_all_reduce_host(tp, &max, DIST_MAX);
|||"
plant "the maxima summed" vocab_loss.c 9.4 "not DIST_MAX" \
    "tp_all_reduce_host(tp, &max, DIST_MAX);|||tp_all_reduce_host(tp, &max, DIST_SUM);"
plant "the gradient added to dlogits" vocab_loss.c 9.4 "do not add to it" \
    "d[j] = j < valid ?|||d[j] += j < valid ?"
plant "dlogits used when NULL" vocab_loss.c 9.4 "dlogits may be NULL" \
    "for (int n = 0; dlogits && n < N; n++) {|||for (int n = 0; n < N; n++) {"
plant "the library's loss" vocab_loss.c 9.4 "calls the library's tp_vocab_cross_entropy" \
    "    const int N = logits->shape[0]|||    return tp_vocab_cross_entropy(tp, dlogits, logits, targets);
    const int N = logits->shape[0]"

# TODO 9.5 (plan.c): parameters and bytes from the shapes
PLANTED_CHECKS="parameters per rank"
plant "blocks [first, last] inclusive" plan.c 9.5 "block 1 included" \
    "    for (int k = first; k < last; k++)
        n +=|||    for (int k = first; k <= last; k++)
        n +="
plant "bytes of blocks [first, last] inclusive" plan.c 9.5 "block 1 included" \
    "    for (int k = first; k < last; k++)
        floats +=|||    for (int k = first; k <= last; k++)
        floats +="
plant "the vocabulary not padded" plan.c 9.5 "the vocabulary is padded to a multiple of t" \
    "Vp = (c->vocab + t - 1) / t * t;|||Vp = c->vocab;"
plant "B sent for an all-reduce of B" plan.c 9.5 "not B" \
    "return 2.0 * (t - 1) / t * 4.0 * floats;|||return 4.0 * floats;"

planted_end
