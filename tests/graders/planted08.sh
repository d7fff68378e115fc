#!/usr/bin/env bash
# Lesson 08's TODOs (8.1-8.6) against the mistakes participants make, issue 39's among
# them: each is planted in a temporary copy of the solution, the grader is linked against
# it, and the TODO's check must FAIL with the hint that names the mistake (a TODO that
# uses the library's twin of itself included). Only the planted TODO's own check runs
# (CHECK_ONLY), never the program's; the stubs failing every check are
# tests/check-stubs.sh's. The machinery: planted_lib.sh. Needs `make all` first. Last
# line: "N passed, M failed".
#   tests/graders/planted08.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 08-zero tests/graders/grade08.c

# TODO 8.1 (shard.c): a rank's piece, padded
PLANTED_CHECKS="shard ranges"
plant "start = rank x (n / world)" shard.c 8.1 "start = rank x (n / world) is where an unpadded cut would begin" \
    "r.start = r.piece * rank;|||r.start = rank * (n / world);"
plant "n / world rounded down" shard.c 8.1 "n / world rounded down" \
    "r.piece = (n + world - 1) / world;|||r.piece = n / world;"
plant "the library's shard_range" shard.c 8.1 "shard.c uses the library's ZERO_LIBRARY" \
    "    ZeroRange r;|||    return ZERO_LIBRARY.shard_range(n, world, rank);
    ZeroRange r;"
plant "own = n - start - 1 in the last piece (off by one)" shard.c 8.1 "own is one short" \
    "r.start + r.piece : n;|||r.start + r.piece : n - 1;"

# TODO 8.2 (reduce.c): the reduce-scatter of gradients
PLANTED_CHECKS="reduce-scatter of gradients"
plant "an all-reduce for the reduce-scatter" reduce.c 8.2 "an all-reduce gives every rank the whole average" \
    "return dist_reduce_scatter_start(d, piece, full, DIST_AVG);|||return dist_all_reduce_start(d, full, DIST_AVG);"
plant "the reduce-scatter's tensors swapped" reduce.c 8.2 "with its tensors swapped" \
    "return dist_reduce_scatter_start(d, piece, full, DIST_AVG);|||return dist_reduce_scatter_start(d, full, piece, DIST_AVG);"
plant "the sum for the average" reduce.c 8.2 "the sum, not the average (DIST_AVG)" \
    "return dist_reduce_scatter_start(d, piece, full, DIST_AVG);|||return dist_reduce_scatter_start(d, piece, full, DIST_SUM);"
plant "the library's reduce_gradients" reduce.c 8.2 "reduce.c uses the library's ZERO_LIBRARY" \
    "return dist_reduce_scatter_start(d, piece, full, DIST_AVG);|||return ZERO_LIBRARY.reduce_gradients(d, piece, full);"

# TODO 8.2, part 2 (reduce.c): the ring by hand
PLANTED_CHECKS="the ring"
plant "the ring divides by N" reduce.c 8.2 "the sum divided by N" \
    "    tensor_copy(out, &mine);|||    tensor_copy(out, &mine);
    for (int64_t i = 0; i < s; i++) out->data[i] /= (float)N;"
plant "the ring copies out block r + 1" reduce.c 8.2 "holds at the end (block r + 1, mod N)" \
    "Tensor mine = tensor_range(&acc, r * s, s);|||Tensor mine = tensor_range(&acc, ((r + 1) % N) * s, s);"
plant "the ring receives from r + 1 (hangs on 3 ranks only)" reduce.c 8.2 "on 2 ranks r + 1 and r - 1 are the same rank" \
    "&got, (r - 1 + N) % N);|||&got, (r + 1) % N);"
plant "the ring calls the library's reduce-scatter" reduce.c 8.2 "calls the library's dist_reduce_scatter" \
    "    Tensor mine = tensor_range(&acc, r * s, s);
    tensor_copy(out, &mine);|||    dist_reduce_scatter(d, out, in, DIST_SUM);"
plant "the ring takes N steps, not N - 1 (the sums still right)" reduce.c 8.2 "N steps, not N - 1" \
    "for (int k = 0; k < N - 1; k++)|||for (int k = 0; k < N; k++)"
plant "the ring the wrong way round (to r - 1, from r + 1)" reduce.c 8.2 "a ring the wrong way round" \
    "(r + 1) % N, &got, (r - 1 + N) % N);|||(r - 1 + N) % N, &got, (r + 1) % N);"
plant "the ring sends to r + 1 without % N" reduce.c 8.2 "the ring wraps round" \
    "(r + 1) % N, &got|||r + 1, &got"
plant "the ring's block size s = the whole of in" reduce.c 8.2 "past its end (the library's tensor_range stopped it)" \
    "    const int64_t s = out->size;
    CHECK(in->size == s * N, \"ring reduce-scatter of %lld into %lld on %d ranks\",
          (long long)in->size, (long long)s, N);|||    const int64_t s = in->size;"

# TODO 8.3 (step.c): the step on the shard
PLANTED_CHECKS="the sharded step"
plant "Adam's v aliased to m's buffer" step.c 8.3 "Adam's v never changed, anywhere" \
    "Tensor v = zero_state_piece(z, u, 1);|||Tensor v = zero_state_piece(z, u, 0);"
plant "no SGD branch: Adam's update for SGD too" step.c 8.3 "with SGD (z->optimizer == ZERO_SGD) there is no v" \
    "if (z->optimizer == ZERO_SGD) {|||if (0) {"
plant "no SGD branch: nothing for SGD" step.c 8.3 "SGD's momentum never changed, anywhere" \
    "sgd_update_on(z->device, p.data, g.data, m.data, u->piece, &z->sgd, t == 1);|||(void)m;"
plant "the step counted per block" step.c 8.3 "not once per block" \
    "    for (int k = 0; k < z->nunits; k++) {
        const ZeroUnit *u = &z->units[k];|||    for (int k = 0; k < z->nunits; k++) {
        const ZeroUnit *u = &z->units[k];
        if (k > 0) (void)(z->optimizer == ZERO_ADAMW ? ++z->adam.step : ++z->sgd.step);"
plant "the last block's piece left out" step.c 8.3 "a block's piece was not updated" \
    "for (int k = 0; k < z->nunits; k++)|||for (int k = 0; k < z->nunits - 1; k++)"
plant "Adam's t one short (the count before the step)" step.c 8.3 "Adam's bias corrections divide by 1 - beta^t" \
    "u->piece, &z->adam, t);|||u->piece, &z->adam, t - 1);"
plant "the library's step" step.c 8.3 "step.c uses the library's ZERO_LIBRARY" \
    "    const int64_t t = z->optimizer|||    ZERO_LIBRARY.step(z);
    return;
    const int64_t t = z->optimizer"
plant "the library's update of a piece" step.c 8.3 "step.c uses the library's zero_update_piece" \
    "    for (int k = 0; k < z->nunits; k++) {|||    for (int k = 0; k < z->nunits; k++) zero_update_piece(z, &z->units[k], t);
    for (int k = 0; k < 0; k++) {"

# TODO 8.4 (gather.c): the all-gather of parameters
PLANTED_CHECKS="all-gather of parameters"
plant "a reduce-scatter for the all-gather" gather.c 8.4 "the pieces must be put side by side" \
    "return dist_all_gather_start(d, full, piece);|||return dist_reduce_scatter_start(d, (Tensor *)piece, full, DIST_SUM);"
plant "the all-gather's tensors swapped" gather.c 8.4 "with its tensors swapped" \
    "return dist_all_gather_start(d, full, piece);|||return dist_all_gather_start(d, (Tensor *)piece, full);"
plant "the library's gather_params" gather.c 8.4 "gather.c uses the library's ZERO_LIBRARY" \
    "return dist_all_gather_start(d, full, piece);|||return ZERO_LIBRARY.gather_params(d, full, piece);"

# TODO 8.5 (prefetch.c): stage 3's hook
PLANTED_CHECKS="stage 3:"
plant "prefetching index +- 2" prefetch.c 8.5 "the block after it (index + 2) was on its way instead" \
    "(pass == BLOCK_FORWARD ? 1 : -1)|||(pass == BLOCK_FORWARD ? 2 : -2)"
plant "the directions swapped" prefetch.c 8.5 "the directions are swapped" \
    "(pass == BLOCK_FORWARD ? 1 : -1)|||(pass == BLOCK_FORWARD ? -1 : 1)"
plant "+ 1 going back too" prefetch.c 8.5 "the backward runs the blocks in reverse" \
    "(pass == BLOCK_FORWARD ? 1 : -1)|||(pass == BLOCK_FORWARD ? 1 : 1)"
plant "no prefetch" prefetch.c 8.5 "no prefetch" \
    "    if (next >= 0 && next < z->nunits) zero_gather(z, &z->units[next]);
|||    (void)next;
"
plant "no bounds check on the next block" prefetch.c 8.5 "past the last of the" \
    "if (next >= 0 && next < z->nunits) zero_gather|||zero_gather"
plant "the bound next > 0: unit 0 never prefetched going back" prefetch.c 8.5 "the bound on next leaves it out" \
    "if (next >= 0 && next < z->nunits)|||if (next > 0 && next < z->nunits)"
plant "the after flag inverted" prefetch.c 8.5 "the after flag is read the wrong way round" \
    "    if (after) {
        zero_release(z, u);|||    if (!after) {
        zero_release(z, u);"
plant "zero_await of the next block for its prefetch (nothing overlaps)" prefetch.c 8.5 "waited for it at once" \
    "zero_gather(z, &z->units[next]);|||zero_await(z, &z->units[next]);"
plant "the window never released" prefetch.c 8.5 "was still held after its" \
    "        zero_release(z, u);
|||"
plant "the library's stage3_hook" prefetch.c 8.5 "prefetch.c uses the library's ZERO_LIBRARY" \
    "    (void)l;
    if (after) {|||    ZERO_LIBRARY.stage3_hook(ctx, l, b, pass, after);
    return;
    if (after) {"

# TODO 8.6 (memory.c): the memory formula
PLANTED_CHECKS="memory per rank"
plant "K x (psi / N)" memory.c 8.6 "multiply first, then divide" \
    "if (stage >= 1) m.optim = K * psi / N;|||if (stage >= 1) m.optim = K * (psi / N);"
plant "the optimiser's state whole at stage 1" memory.c 8.6 "stage 1 keeps the optimiser's state whole" \
    "if (stage >= 1) m.optim|||if (stage >= 2) m.optim"
plant "the gradients sharded only from stage 3" memory.c 8.6 "stage 2 keeps the gradients whole" \
    "if (stage >= 2) m.grads|||if (stage >= 3) m.grads"
plant "the parameters sharded from stage 2" memory.c 8.6 "stage 2 shards the parameters" \
    "if (stage >= 3) m.params|||if (stage >= 2) m.params"
plant "the library's formula" memory.c 8.6 "memory.c uses the library's zero_memory_formula" \
    "    const int64_t K = optimizer|||    return zero_memory_formula(stage, psi, world, optimizer);
    const int64_t K = optimizer"

planted_end
