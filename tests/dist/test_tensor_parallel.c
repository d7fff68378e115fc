/* lib/parallel/tensor_parallel with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 1|2|4 build/tests/dist/test_tensor_parallel      (tensor parallel: t = ranks)
 *   mpirun -n 8|12 build/tests/dist/test_tensor_parallel       (data x pipeline x tensor)
 * Every rank also builds the unsplit model (the same seed gives the same weights) and
 * trains it on the same batches in one process: the reference every check compares
 * with. Rank 0 prints one line per check and "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "models/transformer.h"
#include "parallel/grid.h"
#include "parallel/pipeline.h"
#include "parallel/tensor_parallel.h"
#include "train/checkpoint.h"
#include "train/optim.h"

enum { B = 4, T = 6, SEED = 11 };
/* (at 0.5 this small model on random targets is chaotic: rounding grows to 6e-5 in 100
 * steps in the unsplit model against itself with its adds reordered) */
static const float LR = 0.2f;

/* 4 heads and a feed-forward of 24 split 1, 2 or 4 ways; 37 words pad to 38 and 40 */
static TransformerConfig small_config(int vocab, float dropout) {
    return (TransformerConfig){.vocab = vocab, .d_model = 16, .heads = 4, .d_ff = 24,
                               .layers = 2, .max_len = 64, .dropout = dropout};
}

/* Step `step`'s batch of `rows` sequences, the same on every rank. */
static void make_batch(int vocab, int step, int rows, int *tokens, int *targets) {
    Rng rng;
    rng_seed(&rng, 77 + (uint64_t)step, 0);
    for (int i = 0; i < rows * T; i++) tokens[i] = (int)rng_below(&rng, (uint64_t)vocab);
    for (int i = 0; i < rows * T; i++) targets[i] = (int)rng_below(&rng, (uint64_t)vocab);
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* The largest |a - b| over the whole model's parameters, relative to the largest |b|. */
static double params_gap(const Tensor *a, const Tensor *b) {
    double gap = 0.0, top = 0.0;
    for (int64_t i = 0; i < b->size; i++) {
        gap = fmax(gap, fabs((double)a->data[i] - b->data[i]));
        top = fmax(top, fabs((double)b->data[i]));
    }
    return gap / fmax(top, 1e-30);
}

/* The whole model's gradients from the slices: tensor_parallel_gather on a list whose
 * values are the gradients. */
static void gather_grads(TensorParallel *tp, ParamList *local, Transformer *whole) {
    Param *copies = xcalloc((size_t)local->count, sizeof *copies);
    Param **items = xcalloc((size_t)local->count, sizeof *items);
    for (int i = 0; i < local->count; i++) {
        copies[i] = *local->items[i];
        copies[i].value = local->items[i]->grad;
        items[i] = &copies[i];
    }
    ParamList view = {.items = items, .count = local->count, .total = local->total};
    tensor_parallel_gather(tp, &view, &whole->blocks, NULL, NULL);
    xfree(items);
    xfree(copies);
}

/* ---------------------------------------------------------------- t = ranks */

/* A column-parallel linear (rows of W) gives exactly the unsplit layer's columns; a
 * row-parallel one (columns of W, g, the bias once) the unsplit output to rounding. */
static bool linears(Dist *d) {
    enum { N = 5, IN = 8, OUT = 256 };
    TransformerConfig c = small_config(37, 0.0f);
    c.d_model = OUT; /* the zero bias of the other ranks: as wide as the output */
    TensorParallel tp;
    tensor_parallel_init(&tp, d, &c);
    const int t = d->world_size, r = d->rank;
    Rng rng;
    rng_seed(&rng, 3, 0);
    Tensor x = tensor_zeros(2, N, IN), w = tensor_zeros(2, OUT, IN), bias = tensor_zeros(1, OUT);
    Tensor y = tensor_zeros(2, N, OUT);
    for (int64_t i = 0; i < x.size; i++) x.data[i] = rng_uniform_range(&rng, -1, 1);
    for (int64_t i = 0; i < w.size; i++) w.data[i] = rng_uniform_range(&rng, -1, 1);
    for (int64_t i = 0; i < bias.size; i++) bias.data[i] = rng_uniform_range(&rng, -1, 1);
    const LayerOps *o = layer_ops(DEVICE_CPU);
    o->linear_forward(&y, &x, &w, &bias);
    /* column-parallel: rows [r OUT/t, ...) of W and the bias */
    const TpRange mine = tp_shard(OUT, t, r);
    Tensor wc = tensor_range(&w, (int64_t)mine.start * IN, (int64_t)mine.count * IN);
    wc = tensor_view(&wc, 2, mine.count, IN);
    Tensor bc = tensor_range(&bias, mine.start, mine.count), yc = tensor_zeros(2, N, mine.count);
    o->linear_forward(&yc, &x, &wc, &bc);
    bool exact = true;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < mine.count; j++)
            exact &= yc.data[n * mine.count + j] == y.data[n * OUT + mine.start + j];
    /* row-parallel: columns [r IN/t, ...) of W and of x */
    const TpRange cols = tp_shard(IN, t, r);
    Tensor wr = tensor_zeros(2, OUT, cols.count), xr = tensor_zeros(2, N, cols.count);
    Tensor yr = tensor_zeros(2, N, OUT);
    for (int i = 0; i < OUT; i++)
        for (int k = 0; k < cols.count; k++) wr.data[i * cols.count + k] = w.data[i * IN + cols.start + k];
    for (int n = 0; n < N; n++)
        for (int k = 0; k < cols.count; k++) xr.data[n * cols.count + k] = x.data[n * IN + cols.start + k];
    tp_row_linear_forward(&tp, o, &yr, &xr, &wr, &bias);
    double worst = 0.0;
    for (int64_t i = 0; i < y.size; i++) worst = fmax(worst, fabs(yr.data[i] - y.data[i]));
    if (!exact) printf("rank %d: a column-parallel output differs from the unsplit layer's\n", r);
    if (worst > 1e-5) printf("rank %d: row-parallel output off by %g (1e-5 allowed)\n", r, worst);
    Tensor *all[] = {&x, &w, &bias, &y, &yc, &wr, &xr, &yr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    tensor_parallel_free(&tp);
    return exact && worst <= 1e-5;
}

typedef struct {
    bool digest_same; /* tensor_parallel_digest = params_digest of the gathered model */
    double loss_gap, grad_gap, param_gap;
    int64_t all_reduces, bytes_sent, expected_bytes, params, expected_params;
} Compared;

/* STEPS SGD steps of the model cut t = ranks ways and of the unsplit one. */
static Compared train_both(Dist *d, int vocab, int steps) {
    const TransformerConfig c = small_config(vocab, 0.1f);
    const int blocks = transformer_block_count(&c), t = d->world_size;
    TensorParallel tp;
    tensor_parallel_init(&tp, d, &c);
    const TransformerBlockMakers make = tensor_parallel_makers(&tp);
    Transformer m, ref, whole;
    transformer_init_made(&m, &c, B, T, SEED, 0, blocks, &make);
    transformer_init(&ref, &c, B, T, SEED);
    transformer_init(&whole, &c, 1, 1, 0); /* what the slices are gathered into */
    Sgd opt, ref_opt;
    sgd_init(&opt, &m.params, LR, 0.0f, 0.0f);
    sgd_init(&ref_opt, &ref.params, LR, 0.0f, 0.0f);
    Compared r = {.params = m.params.total, .expected_params = tensor_parallel_param_count(&c, t, 0, blocks)};
    for (int s = 0; s < steps; s++) {
        int tokens[B * T], targets[B * T];
        make_batch(vocab, s, B, tokens, targets);
        params_zero_grad(&m.params);
        params_zero_grad(&ref.params);
        dist_counts_reset(d);
        const float loss = transformer_forward_backward(&m, tokens, targets);
        const float ref_loss = transformer_forward_backward(&ref, tokens, targets);
        r.loss_gap = fmax(r.loss_gap, rel(loss, ref_loss));
        if (s == 0) {
            const DistCounts n = dist_counts(d, DIST_KIND_ALL_REDUCE);
            r.all_reduces = n.calls, r.bytes_sent = n.bytes_sent;
            /* 2 forward and 2 backward per layer and the embedding's and the decoder's
             * [N, D]; the loss's maxima [N] and sums with the target's logit [2N] */
            const int64_t row = (int64_t)B * T * c.d_model * 4;
            const int64_t one = t > 1 ? 2 * (t - 1) * row / t : 0;
            const int64_t loss_bytes = t > 1 ? 2 * (t - 1) * (B * T * 4) / t + 2 * (t - 1) * (2 * B * T * 4) / t : 0;
            r.expected_bytes = (4 * c.layers + 2) * one + loss_bytes;
            gather_grads(&tp, &m.params, &whole);
            r.grad_gap = params_gap(&whole.params.values, &ref.params.grads);
        }
        sgd_step(&opt, &m.params);
        sgd_step(&ref_opt, &ref.params);
    }
    tensor_parallel_gather(&tp, &m.params, &whole.blocks, NULL, NULL);
    r.param_gap = params_gap(&whole.params.values, &ref.params.values);
    r.digest_same = tensor_parallel_digest(&tp, &m.params, NULL) == params_digest(&whole.params);
    sgd_free(&opt);
    sgd_free(&ref_opt);
    transformer_free(&m);
    transformer_free(&ref);
    transformer_free(&whole);
    tensor_parallel_free(&tp);
    return r;
}

static bool same_steps(Dist *d) {
    const Compared r = train_both(d, 37, 100);
    const bool ok = r.loss_gap <= 1e-5 && r.grad_gap <= 1e-5 && r.param_gap <= 1e-5 && r.digest_same;
    if (!ok || d->rank == 0)
        printf("    rank %d: 100 steps, dropout 0.1: loss within %.2g relative (1e-5 allowed), "
               "first gradients %.2g and final parameters %.2g of the largest (1e-5 each); the "
               "digest from the slices %s the gathered model's\n", d->rank, r.loss_gap,
               r.grad_gap, r.param_gap, r.digest_same ? "=" : "DIFFERS FROM");
    return ok;
}

static bool counted(Dist *d) {
    const Compared r = train_both(d, 37, 1);
    const int t = d->world_size;
    const int64_t want = 4 * 2 + 4; /* 2 layers x 4, embedding, decoder, loss x 2 (one rank too) */
    const TransformerConfig c = small_config(37, 0.1f);
    const double formula = tensor_parallel_bytes(&c, B * T, t, 0, transformer_block_count(&c));
    const bool ok = r.all_reduces == want && r.bytes_sent == r.expected_bytes &&
                    fabs(formula - (double)r.bytes_sent) <= (double)want && /* rounded down a call */
                    r.params == r.expected_params;
    if (!ok || d->rank == 0)
        printf("    rank %d: %lld all-reduces (%lld expected), %lld bytes sent (%lld; the "
               "library's formula %.1f), %lld parameters (%lld from the shapes)\n", d->rank,
               (long long)r.all_reduces, (long long)want, (long long)r.bytes_sent,
               (long long)r.expected_bytes, formula,
               (long long)r.params, (long long)r.expected_params);
    return ok;
}

/* 50,257 words (GPT-2's), padded to a multiple of t, over 3 steps */
static bool odd_vocabulary(Dist *d) {
    const Compared r = train_both(d, 50257, 3);
    const bool ok = r.loss_gap <= 1e-5 && r.param_gap <= 1e-4;
    if (!ok || d->rank == 0)
        printf("    rank %d: 50,257 words: loss within %.2g relative, parameters %.2g\n", d->rank,
               r.loss_gap, r.param_gap);
    return ok;
}

/* ---------------------------------------------------------------- 16 bits */

/* A 16-bit model cut t ways against the unsplit 16-bit model (docs/mixed-precision.md):
 * the same weights, the same working copy, the same batches.
 *
 * What differs, and how much. The sharded blocks round where the unsplit ones round;
 * the only difference is inside the sums over the group (a row-parallel linear's output,
 * a column-parallel linear's input gradient, the loss's sums), which stay float32 until
 * their one rounding but are added in another order: (p_0 + p_1) + ... instead of one
 * GEMM's order. So at t = 1 the blocks are the unsplit ones bit for bit (the same
 * float32 calls on the same numbers: the CPU's 16-bit linear is the float32 one on
 * exact copies; the bias sits in rank 0's partial, where the unsplit layer adds it,
 * before the one rounding), checked here: the logits, and the gradients from the same
 * logits gradient. The loss is another implementation (the vocabulary-parallel one sums
 * its exponentials in its own order, softmax_cross_entropy_fast in blocks and double),
 * so the steps, which include it, get the bounds below at t = 1 too (measured: the
 * same bits, losses and weights). At t > 1 two
 * float32 sums of K terms differ by about K 2^-24 of their terms' size, and their 16-bit
 * roundings (unit roundoff u = 2^-8 for bfloat16, 2^-11 for float16) differ only where
 * the sum falls that close to a rounding boundary: a fraction of about K 2^-24 / u
 * of the values (1e-4 here), each then one 16-bit step (at most 2u of it) off. Bounds:
 *   - at least 99% of the first forward's logits hold the unsplit model's bits (the
 *     rule tests/gpu/check_gpu16.c measures: a second rounding anywhere breaks it);
 *   - the parameters' gradients, from the unsplit model's logits gradient (the loss
 *     left out), within u sqrt(1%) = u / 10 in relative L2 norm: what 1% of the 16-bit
 *     values behind them, each one rounding (u) off, would give;
 *   - each of BF_STEPS SGD steps' losses (the loss included) within u / 100 relative,
 *     and the weights after them within u / 10 in relative L2 norm.
 * Rounding each rank's partial to 16 bits before the all-reduce (the mistake this
 * guards against: t + 1 roundings) fails them. Tried by hand at t = 2 and 4: in the
 * row-parallel forward, 35% to 42% of the logits held the unsplit bits, the gradients
 * were 3.7e-3 to 7.8e-3 off in bf16 (u / 10 = 3.9e-4; fp16 5.4e-4 against 4.9e-5) and
 * the losses up to 1.2e-4 relative (u / 100 = 3.9e-5); in the column-parallel backward
 * (t = 2) the logits stay, the gradients were 1.7e-3 off (fp16 2.5e-4). Measured
 * without it: every logit the same, gradients 1e-8 (bf16) and 4e-6 (fp16) off, the
 * losses equal (fp16: 7e-8). */

enum { BF_STEPS = 3 };

typedef struct {
    int64_t logits, logits_same;   /* the logits of the group, and those with the unsplit's bits */
    double grad_gap;               /* the whole model's gradients: relative L2 difference */
    bool grads_same;               /* ... bit for bit */
    double loss_gap[BF_STEPS];     /* each step's |loss difference| / loss */
    double param_gap;              /* after the steps: the weights' relative L2 difference */
} Compared16;

static double rel_l2(const Tensor *a, const Tensor *b) {
    double d = 0, n = 0;
    for (int64_t i = 0; i < b->size; i++) {
        const double x = (double)a->data[i] - b->data[i];
        d += x * x, n += (double)b->data[i] * b->data[i];
    }
    return sqrt(d / fmax(n, 1e-300));
}

static bool same_floats(const Tensor *a, const Tensor *b) {
    return a->size == b->size && memcmp(a->data, b->data, tensor_bytes(b)) == 0;
}

static Compared16 train_both16(Dist *d, DType dtype, float dropout) {
    const TransformerConfig c = small_config(37, dropout);
    const int blocks = transformer_block_count(&c);
    TensorParallel tp;
    tensor_parallel_init(&tp, d, &c);
    const TransformerBlockMakers make = tensor_parallel_makers(&tp);
    Transformer m, ref, whole;
    transformer_init_made(&m, &c, B, T, SEED, 0, blocks, &make);
    transformer_init(&ref, &c, B, T, SEED);
    transformer_init(&whole, &c, 1, 1, 0);
    transformer_set_precision(&m, dtype);
    transformer_set_precision(&ref, dtype);
    Compared16 r = {0};
    int tokens[B * T], targets[B * T];
    /* the blocks: the forward's logits, then the backward from the unsplit model's
     * logits gradient (this rank's words of it) */
    make_batch(c.vocab, 0, B, tokens, targets);
    params_zero_grad(&m.params);
    params_zero_grad(&ref.params);
    const Tensor *z = transformer_forward(&m, 0, blocks, tokens, NULL);
    const Tensor *zr = transformer_forward(&ref, 0, blocks, tokens, NULL);
    transformer_loss_grad(&ref, targets);
    const int V = c.vocab, Vl = z->shape[1], first = tp.words.start;
    const uint16_t *zs = z->raw, *zrs = zr->raw, *dzr = ref.dlogits.raw;
    Tensor dz = tensor_zeros_typed(DEVICE_CPU, dtype, 2, B * T, Vl); /* padding: 0 */
    for (int n = 0; n < B * T; n++)
        for (int j = 0; j < Vl && first + j < V; j++) {
            const int64_t at = (int64_t)n * Vl + j, there = (int64_t)n * V + first + j;
            ((uint16_t *)dz.raw)[at] = dzr[there];
            r.logits++;
            r.logits_same += zs[at] == zrs[there];
        }
    transformer_backward(&m, 0, blocks, &dz, NULL, NULL);
    transformer_backward(&ref, 0, blocks, &ref.dlogits, NULL, NULL);
    gather_grads(&tp, &m.params, &whole);
    r.grad_gap = rel_l2(&whole.params.values, &ref.params.grads);
    r.grads_same = same_floats(&whole.params.values, &ref.params.grads);
    tensor_free(&dz);
    /* then SGD steps, the loss included, the working copy refreshed after each */
    Sgd opt, ref_opt;
    sgd_init(&opt, &m.params, LR, 0.0f, 0.0f);
    sgd_init(&ref_opt, &ref.params, LR, 0.0f, 0.0f);
    for (int s = 0; s < BF_STEPS; s++) {
        make_batch(c.vocab, s, B, tokens, targets);
        params_zero_grad(&m.params);
        params_zero_grad(&ref.params);
        const float loss = transformer_forward_backward(&m, tokens, targets);
        const float ref_loss = transformer_forward_backward(&ref, tokens, targets);
        r.loss_gap[s] = rel(loss, ref_loss);
        sgd_step(&opt, &m.params);
        sgd_step(&ref_opt, &ref.params);
        params_refresh_working(&m.params);
        params_refresh_working(&ref.params);
    }
    tensor_parallel_gather(&tp, &m.params, &whole.blocks, NULL, NULL);
    r.param_gap = rel_l2(&whole.params.values, &ref.params.values);
    r.logits = (int64_t)dist_sum_double(d, (double)r.logits);
    r.logits_same = (int64_t)dist_sum_double(d, (double)r.logits_same);
    sgd_free(&opt);
    sgd_free(&ref_opt);
    transformer_free(&m);
    transformer_free(&ref);
    transformer_free(&whole);
    tensor_parallel_free(&tp);
    return r;
}

static bool sixteen_bit_in(Dist *d, DType dtype, float dropout) {
    const Compared16 r = train_both16(d, dtype, dropout);
    const double u = dtype == DTYPE_BF16 ? 0x1p-8 : 0x1p-11;
    const bool whole = d->world_size == 1; /* t = 1: the blocks bit for bit */
    double loss_gap = 0;
    for (int s = 0; s < BF_STEPS; s++) loss_gap = fmax(loss_gap, r.loss_gap[s]);
    const bool blocks = whole ? r.logits_same == r.logits && r.grads_same
                              : r.logits_same >= 0.99 * (double)r.logits && r.grad_gap <= u / 10;
    const bool ok = blocks && loss_gap <= u / 100 && r.param_gap <= u / 10;
    if (!ok || d->rank == 0)
        printf("    rank %d: %s, dropout %.1f: %lld of %lld logits with the unsplit bits (%s), "
               "gradients %.2g off (%s), %d steps' losses %.2g (%s), weights %.2g (%s)\n",
               d->rank, dtype_name(dtype), (double)dropout, (long long)r.logits_same,
               (long long)r.logits, whole ? "all" : "99%", r.grad_gap,
               whole ? "bit for bit" : "u/10", BF_STEPS, loss_gap, "u/100", r.param_gap, "u/10");
    return ok;
}

static bool sixteen_bit(Dist *d) {
    bool ok = sixteen_bit_in(d, DTYPE_BF16, 0.0f);
    ok = sixteen_bit_in(d, DTYPE_BF16, 0.1f) && ok;
    return sixteen_bit_in(d, DTYPE_F16, 0.1f) && ok;
}

/* ---------------------------------------------------------------- data x pipeline x tensor */

enum { MICRO = 2, MICRO_ROWS = 2, GRID_STEPS = 20 };

/* The ranks as dp x 2 x 2 (8: 2 x 2 x 2, 12: 3 x 2 x 2), GRID_STEPS SGD steps of a batch
 * of dp x MICRO x MICRO_ROWS sequences: each replica its share, in MICRO micro-batches
 * through 1F1B, its gradients averaged over the replicas; against one process on the
 * whole batch. Dropout off: a replica's micro-batch draws the masks a whole batch
 * would not (the masks at t > 1 are checked above). */
static bool grid_steps(Dist *d) {
    Grid g;
    grid_init(&g, d, (GridShape){.dp = 0, .pp = 2, .tp = 2});
    const int dp = g.shape.dp, rows = dp * MICRO * MICRO_ROWS, stage = g.coord[GRID_PIPE];
    const TransformerConfig c = small_config(37, 0.0f);
    const int blocks = transformer_block_count(&c);
    double costs[16];
    int first[3];
    transformer_block_costs(&c, T, costs);
    pipeline_partition(costs, blocks, 2, first);
    TensorParallel tp;
    tensor_parallel_init(&tp, g.tensor, &c);
    const TransformerBlockMakers make = tensor_parallel_makers(&tp);
    Transformer m, ref, whole;
    transformer_init_made(&m, &c, MICRO_ROWS, T, SEED, first[stage], first[stage + 1], &make);
    transformer_init(&ref, &c, rows, T, SEED);
    transformer_init(&whole, &c, 1, 1, 0);
    Pipeline pipe;
    pipeline_init(&pipe, g.pipe, &m.blocks, MICRO, PIPE_1F1B);
    Sgd opt, ref_opt;
    sgd_init(&opt, &m.params, LR, 0.0f, 0.0f);
    sgd_init(&ref_opt, &ref.params, LR, 0.0f, 0.0f);
    double gap = 0.0;
    int *tokens = xmalloc((size_t)rows * T * sizeof(int)), *targets = xmalloc((size_t)rows * T * sizeof(int));
    for (int s = 0; s < GRID_STEPS; s++) {
        make_batch(c.vocab, s, rows, tokens, targets);
        const int *tok[MICRO], *tgt[MICRO];
        for (int i = 0; i < MICRO; i++) { /* this replica's micro-batches */
            const size_t at = ((size_t)g.coord[GRID_DATA] * MICRO + i) * MICRO_ROWS * T;
            tok[i] = tokens + at, tgt[i] = targets + at;
        }
        const float loss = pipeline_step(&pipe, tok, tgt);
        dist_all_reduce(g.data, &m.params.grads, DIST_AVG);
        const double mean = dist_sum_double(g.data, loss) / dp;
        params_zero_grad(&ref.params);
        const float ref_loss = transformer_forward_backward(&ref, tokens, targets);
        gap = fmax(gap, rel(mean, ref_loss));
        sgd_step(&opt, &m.params);
        sgd_step(&ref_opt, &ref.params);
    }
    tensor_parallel_gather(&tp, &m.params, &whole.blocks, g.pipe, first);
    const double param_gap = params_gap(&whole.params.values, &ref.params.values);
    /* every rank holds the same whole model: its digest, in two halves, on all ranks; and
     * the digest from the slices, one parameter at a time, is the gathered model's */
    const uint64_t digest = params_digest(&whole.params);
    const bool streamed = tensor_parallel_digest(&tp, &m.params, g.pipe) == digest;
    double *all = xmalloc(2 * (size_t)d->world_size * sizeof *all);
    dist_all_gather_double(d, (double)(digest >> 32), all);
    dist_all_gather_double(d, (double)(digest & 0xffffffffu), all + d->world_size);
    bool same = true;
    for (int r = 0; r < d->world_size; r++)
        same &= all[r] == all[0] && all[d->world_size + r] == all[d->world_size];
    char line[160];
    grid_describe(&g, line, sizeof line);
    const bool ok = gap <= 1e-5 && param_gap <= 1e-5 && same && streamed;
    if (!ok || d->rank == 0)
        printf("    rank %d: %s: %d steps, loss within %.2g relative (1e-5 allowed), parameters "
               "%.2g of the largest (1e-5), whole-model digests %s, %s from the slices\n", d->rank,
               line, GRID_STEPS, gap, param_gap, same ? "equal on every rank" : "DIFFER between ranks",
               streamed ? "the same" : "NOT THE SAME");
    xfree(all);
    xfree(tokens);
    xfree(targets);
    sgd_free(&opt);
    sgd_free(&ref_opt);
    pipeline_free(&pipe);
    transformer_free(&m);
    transformer_free(&ref);
    transformer_free(&whole);
    tensor_parallel_free(&tp);
    grid_free(&g);
    return ok;
}

int main(void) {
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 120});
    const int n = g_dist->world_size;
    if (n == 1 || n == 2 || n == 4) {
        run("a column-parallel linear = the unsplit layer's columns, row-parallel to rounding", linears);
        run("the model cut t ways takes the unsplit model's 100 steps (dropout on)", same_steps);
        run("2 all-reduces per layer each way, bytes and parameters as the formulas", counted);
        run("a vocabulary of 50,257 words, padded, trains as the unsplit model", odd_vocabulary);
        run("bf16 and fp16: t = 1 the unsplit 16-bit blocks' bits, t > 1 within bounds of u (dropout off, on)",
            sixteen_bit);
    }
    if (n == 8 || n == 12)
        run("data x pipeline 2 x tensor 2 takes one process's 20 steps", grid_steps);
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
