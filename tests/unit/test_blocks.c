/* lib/models/block: the interface every model is built from, as strategies use it.
 *
 *  - hooks run before and after each block's forward and backward, in the blocks'
 *    order, and a block's gradients are announced final between its backward's two;
 *  - a hook that hands each block its parameters just before it runs and takes them
 *    away after (ZeRO stage 3's gather and free, here a copy in and NaN out) changes
 *    no bit of the loss or the gradients: a block reads its parameters during its own
 *    passes only;
 *  - several parameter listeners each hear every final gradient once;
 *  - two batches in flight in sets of their own (as a pipeline keeps micro-batches)
 *    give what one batch at a time gives;
 *  - a one-block stage (the decoder alone: no scratch, no gradients between blocks)
 *    moves to another device and back, on a stand-in backend; a pinned list does not;
 *  - a batch larger than the model's, or an input of the wrong shape, stops with a
 *    message naming the block. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "framework/check.h"
#include "models/cnn.h"
#include "models/transformer.h"

static TransformerConfig small_config(void) {
    return (TransformerConfig){.vocab = 31, .d_model = 12, .heads = 3, .d_ff = 20, .layers = 2,
                               .max_len = 16, .dropout = 0.2f};
}

static void random_tokens(int *tokens, int n, int V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int i = 0; i < n; i++) tokens[i] = (int)rng_below(&rng, (uint32_t)V);
}

/* ---------------------------------------------------------------- hooks and listeners */

enum { LOG_MAX = 256 };
typedef struct {
    int who[LOG_MAX]; /* hook events: 1000 * hook + 100 * pass + 10 * after + block; grads: -1 - param */
    int n;
    const ParamList *params;
} Log;

static void note(Log *log, int v) {
    if (log->n < LOG_MAX) log->who[log->n] = v;
    log->n++;
}

static void hook_a(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)l;
    note(ctx, 1000 + 100 * (int)pass + 10 * after + b->index);
}
static void hook_b(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)l;
    note(ctx, 2000 + 100 * (int)pass + 10 * after + b->index);
}
static void grad_ready(void *ctx, const Param *p) {
    Log *log = ctx;
    int i = 0;
    while (log->params->items[i] != p) i++;
    note(log, -1 - i);
}

static int check_hooks(void) {
    const TransformerConfig c = small_config();
    enum { B = 2, T = 5 };
    int tokens[B * T], targets[B * T];
    random_tokens(tokens, B * T, c.vocab, 1), random_tokens(targets, B * T, c.vocab, 2);
    Transformer m;
    transformer_init(&m, &c, B, T, 3);
    Log log = {.params = &m.params}, heard = {.params = &m.params};
    blocks_add_hook(&m.blocks, hook_a, &log);
    blocks_add_hook(&m.blocks, hook_b, &log);
    params_listen(&m.params, grad_ready, &log);
    params_listen(&m.params, grad_ready, &heard);
    transformer_forward_backward(&m, tokens, targets);
    /* what should have happened, written out from the definition */
    int want[LOG_MAX], n = 0;
    const int blocks = m.blocks.count;
    for (int k = 0; k < blocks; k++)
        want[n++] = 1000 + k, want[n++] = 2000 + k, want[n++] = 1010 + k, want[n++] = 2010 + k;
    for (int k = blocks - 1; k >= 0; k--) {
        want[n++] = 1100 + k, want[n++] = 2100 + k;
        const Block *b = &m.blocks.items[k];
        for (int j = b->first_param + b->params - 1; j >= b->first_param; j--) want[n++] = -1 - j;
        want[n++] = 1110 + k, want[n++] = 2110 + k;
    }
    bool ok = expect_true(log.n == n, "%d events, expected %d", log.n, n);
    for (int i = 0; ok && i < n; i++)
        ok = expect_true(log.who[i] == want[i], "event %d is %d, expected %d (1000 hook a, 2000 hook "
                         "b, +100 backward, +10 after, + block; -1 - p: parameter p final)", i,
                         log.who[i], want[i]);
    ok = ok && expect_true(heard.n == m.params.count, "the second listener heard %d gradients of %d",
                           heard.n, m.params.count);
    /* without hook a and the first listener, only b and the second are told */
    blocks_remove_hook(&m.blocks, hook_a, &log);
    params_unlisten(&m.params, grad_ready, &log);
    log.n = heard.n = 0;
    transformer_forward_backward(&m, tokens, targets);
    int b_events = 0;
    for (int i = 0; i < log.n && i < LOG_MAX; i++) b_events += log.who[i] >= 2000;
    ok = ok && expect_true(log.n == 4 * blocks && b_events == 4 * blocks,
                           "after removing hook a and a listener: %d events, %d of hook b (want %d)",
                           log.n, b_events, 4 * blocks) &&
         expect_true(heard.n == m.params.count, "the listener left heard %d of %d", heard.n,
                     m.params.count);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- gather and free */

/* The parameters live in `store`; a block's are copied into the model just before its
 * forward or backward and replaced by NaN after: what ZeRO-3 does with all-gathers. */
typedef struct {
    Tensor store;
    int gathers;
} Sharded;

static void param_range(const BlockList *l, const Block *b, int64_t *start, int64_t *count) {
    if (b->params == 0) {
        *start = *count = 0;
        return;
    }
    const Param *first = l->params->items[b->first_param];
    const Param *last = l->params->items[b->first_param + b->params - 1];
    *start = first->offset, *count = last->offset + last->value.size - first->offset;
}

static void gather_free(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)pass;
    Sharded *s = ctx;
    int64_t start, count;
    param_range(l, b, &start, &count);
    Tensor mine = tensor_range(&l->params->values, start, count);
    if (after) {
        tensor_fill(&mine, NAN);
    } else {
        const Tensor from = tensor_range(&s->store, start, count);
        tensor_copy(&mine, &from);
        s->gathers++;
    }
}

static int check_gather_free(void) {
    const TransformerConfig c = small_config();
    enum { B = 3, T = 6 };
    int tokens[B * T], targets[B * T];
    random_tokens(tokens, B * T, c.vocab, 4), random_tokens(targets, B * T, c.vocab, 5);
    Transformer plain, sharded;
    transformer_init(&plain, &c, B, T, 9);
    transformer_init(&sharded, &c, B, T, 9);
    Sharded s = {.store = tensor_zeros(1, (int)sharded.params.total)};
    tensor_copy(&s.store, &sharded.params.values);
    tensor_fill(&sharded.params.values, NAN); /* nothing is where a block would find it */
    blocks_add_hook(&sharded.blocks, gather_free, &s);
    bool ok = true;
    for (int step = 0; ok && step < 2; step++) {
        params_zero_grad(&plain.params), params_zero_grad(&sharded.params);
        const float want = transformer_forward_backward(&plain, tokens, targets);
        const float got = transformer_forward_backward(&sharded, tokens, targets);
        ok = expect_true(got == want, "step %d: loss %.9g with gathered parameters, %.9g without",
                         step, (double)got, (double)want) &&
             expect_true(memcmp(plain.params.grads.data, sharded.params.grads.data,
                                sizeof(float) * (size_t)plain.params.total) == 0,
                         "step %d: other gradients with parameters gathered block by block", step);
    }
    ok = ok && expect_true(s.gathers == 2 * 2 * sharded.blocks.count,
                           "%d gathers in 2 steps of %d blocks, expected a forward and a backward "
                           "each", s.gathers, sharded.blocks.count);
    tensor_free(&s.store);
    transformer_free(&plain), transformer_free(&sharded);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- sets in flight */

/* Batches a and b forward into two sets, then both backward (a pipeline's GPipe), against
 * each forward followed by its backward: the same gradients, bit for bit (dropout too:
 * its masks are drawn in the forwards, in the same order both ways). */
static int check_sets_in_flight(void) {
    const TransformerConfig c = small_config();
    enum { B = 2, T = 7, N = B * T };
    int tokens[2][N], targets[2][N];
    for (int i = 0; i < 2; i++)
        random_tokens(tokens[i], N, c.vocab, 10 + i), random_tokens(targets[i], N, c.vocab, 20 + i);
    Transformer one, two;
    transformer_init(&one, &c, B, T, 11);
    transformer_init(&two, &c, B, T, 11);
    /* dropout on: the masks are drawn in the forwards, in the same order both ways */
    params_zero_grad(&one.params), params_zero_grad(&two.params);
    const int L = one.blocks.count;
    for (int i = 0; i < 2; i++) transformer_forward_backward(&one, tokens[i], targets[i]);
    BlockActs sets[2];
    Tensor dlogits = tensor_zeros(2, N, c.vocab);
    for (int i = 0; i < 2; i++) {
        blocks_acts_init(&two.blocks, &sets[i]);
        blocks_forward(&two.blocks, &sets[i], 0, L, tokens[i], NULL);
    }
    for (int i = 0; i < 2; i++) {
        blocks_loss(&two.blocks, &blocks_saved(&two.blocks, &sets[i], L - 1)[0], targets[i], &dlogits);
        blocks_backward(&two.blocks, &sets[i], 0, L, &dlogits, NULL, NULL);
    }
    const bool ok = expect_true(memcmp(one.params.grads.data, two.params.grads.data,
                                       sizeof(float) * (size_t)one.params.total) == 0,
                                "two batches in flight gave other gradients than one at a time");
    for (int i = 0; i < 2; i++) blocks_acts_free(&sets[i]);
    tensor_free(&dlogits);
    transformer_free(&one), transformer_free(&two);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- moving */

/* A stand-in for the GPU's backend: host memory that calls itself DEVICE_CUDA. */
static void *fake_alloc(size_t bytes) { return calloc(1, bytes); }
static void fake_fill(float *p, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) p[i] = v;
}
static void fake_scale(float *p, int64_t n, float f) {
    for (int64_t i = 0; i < n; i++) p[i] *= f;
}
static void fake_copy(void *dst, Device dd, const void *src, Device sd, size_t bytes) {
    (void)dd, (void)sd;
    memcpy(dst, src, bytes);
}
static const TensorDeviceOps FAKE = {"stand-in", fake_alloc, free, fake_fill, fake_scale, fake_copy,
                                     NULL, NULL};

static bool all_on(BlockList *l, Device device, int B, int T) {
    bool ok = expect_true(l->device == device, "the list says %s", device_name(l->device));
    for (int i = 0; i < l->count; i++)
        for (int j = 0; j < l->acts.saved_count[i]; j++) {
            const Tensor *t = &l->acts.saved[(size_t)i * BLOCK_SAVED_MAX + j];
            ok = ok && expect_true(t->device == device && t->raw, "block %d's activation %d on the %s",
                                   i, j, device_name(t->device));
        }
    Tensor out;
    blocks_output_shape(l, l->first + l->count - 1, B, T, &out);
    return ok && expect_true(l->dloss.device == device && tensor_same_shape(&l->dloss, &out),
                             "the loss's gradient on the %s", device_name(l->dloss.device)) &&
           expect_true(!l->work.raw && !l->grad[0].raw && !l->grad[1].raw,
                       "a lone decoder has scratch or gradients between blocks");
}

static void move_pinned(void *arg) {
    BlockList *l = arg;
    l->pinned = 1;
    blocks_to_device(l, DEVICE_CPU);
}

static int check_move_one_block(void) {
    const TransformerConfig c = small_config();
    enum { B = 2, T = 4 };
    tensor_register_device(DEVICE_CUDA, &FAKE);
    Transformer m;
    const int last = transformer_block_count(&c);
    transformer_init_blocks(&m, &c, B, T, 1, last - 1, last); /* the decoder alone */
    blocks_to_device(&m.blocks, DEVICE_CUDA);
    bool ok = all_on(&m.blocks, DEVICE_CUDA, B, T);
    ChildResult r;
    run_child(move_pinned, &m.blocks, &r);
    ok = ok && expect_exit("moving a pinned list", &r, 2, "holds buffers made for it",
                           (const char *)NULL);
    blocks_to_device(&m.blocks, DEVICE_CPU);
    ok = ok && all_on(&m.blocks, DEVICE_CPU, B, T);
    transformer_free(&m);
    tensor_register_device(DEVICE_CUDA, NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- refusals */

static void too_large_batch(void *arg) {
    (void)arg;
    const TransformerConfig c = small_config();
    Transformer m;
    transformer_init(&m, &c, 2, 4, 1);
    blocks_set_batch(&m.blocks, 3, 4);
}

static void wrong_input(void *arg) {
    (void)arg;
    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn m;
    cnn_init(&m, 1, 28, 28, 10, 4, &rng);
    Tensor x = tensor_zeros(4, 4, 50, 12, 11); /* conv2's input should be [4, 50, 12, 12] */
    blocks_set_batch(&m.blocks, 4, 1);
    blocks_forward(&m.blocks, &m.blocks.acts, 1, 4, NULL, &x);
}

static void too_many_listeners(void *arg) {
    (void)arg;
    ParamList list = {0};
    for (int i = 0; i <= PARAM_LISTENERS_MAX; i++) params_listen(&list, grad_ready, NULL);
}

static int check_refusals(void) {
    ChildResult r;
    run_child(too_large_batch, NULL, &r);
    bool ok = expect_exit("3 sequences into a model of 2", &r, 1, "a batch of 3 x 4",
                          "1 to 2 sequences", (const char *)NULL);
    run_child(wrong_input, NULL, &r);
    ok = ok && expect_exit("conv2 given [4, 50, 12, 11]", &r, 2, "block 1 (conv2) takes [4, 50, 12, 12]",
                           "given [4, 50, 12, 11]", (const char *)NULL);
    run_child(too_many_listeners, NULL, &r);
    ok = ok && expect_exit("one listener too many", &r, 2, "more than 4 listeners", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("model blocks");
    check_run(NULL, "hooks before and after each pass of each block, gradients final in between, several listeners", check_hooks, 30);
    check_run(NULL, "parameters handed to each block only for its passes (ZeRO-3's gather and free): the same bits", check_gather_free, 30);
    check_run(NULL, "two batches in flight in sets of their own: the gradients of one at a time", check_sets_in_flight, 30);
    check_run(NULL, "a one-block stage to another device and back (stand-in backend); a pinned model stays", check_move_one_block, 30);
    check_run(NULL, "a batch too large, an input of the wrong shape, a listener too many: stopped with a message", check_refusals, 30);
    return check_end();
}
