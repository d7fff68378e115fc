/* lib/parallel/zero with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 1|2|3|4 build/tests/dist/test_zero
 * Every rank trains a small transformer on a batch of its own, once with plain data
 * parallel (the gradients all-reduced, the whole optimiser on every rank: stage 0) and
 * once with each ZeRO stage; the parameters and Adam's moments after 3 steps must be
 * the same. The memory each stage allocates and the bytes it sends are checked against
 * the ZeRO paper's formulas. Rank 0 prints one line per check and "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "models/transformer.h"
#include "parallel/zero.h"
#include "train/clip.h"

enum { VOCAB = 37, B = 4, T = 6, STEPS = 3 };
static const float LR = 1e-2f, DECAY = 0.01f;

static TransformerConfig small_config(void) {
    return (TransformerConfig){.vocab = VOCAB, .d_model = 16, .heads = 2, .d_ff = 24,
                               .layers = 2, .max_len = 64, .dropout = 0.1f};
}

/* This rank's batch of step `step`: its own tokens, so the ranks' gradients differ. */
static void make_batch(int step, int *tokens, int *targets) {
    Rng rng;
    rng_seed(&rng, 77 + 100u * (uint64_t)step, (uint64_t)g_dist->rank);
    for (int i = 0; i < B * T; i++) tokens[i] = (int)rng_below(&rng, VOCAB);
    for (int i = 0; i < B * T; i++) targets[i] = (int)rng_below(&rng, VOCAB);
}

typedef struct {
    float *values, *m, *v; /* [psi] each, packed in the parameters' order */
    int64_t psi;
} Trained;

static void trained_free(Trained *t) { free(t->values), free(t->m), free(t->v); }

/* Stage 0: what lesson 06 does, the reference. The model's seed differs per rank: rank
 * 0's weights are broadcast, as ZeRO's zero_init does. */
static Trained train_plain_in(float clip, DType dtype) {
    const TransformerConfig c = small_config();
    Transformer m;
    transformer_init(&m, &c, B, T, 5 + (uint64_t)g_dist->rank);
    transformer_set_precision(&m, dtype); /* float32: as it was */
    dist_broadcast(g_dist, &m.params.values, 0);
    if (dtype != DTYPE_F32) params_refresh_working(&m.params); /* rank 0's, rounded */
    Adam opt;
    adamw_init(&opt, &m.params, LR, DECAY);
    for (int s = 0; s < STEPS; s++) {
        int tokens[B * T], targets[B * T];
        make_batch(s, tokens, targets);
        params_zero_grad(&m.params);
        transformer_forward_backward(&m, tokens, targets);
        /* the non-blocking all-reduce, as DDP's buckets: MPI's blocking collectives may add
         * the ranks in another order than its non-blocking ones (ZeRO's), 1 ulp apart on 3 */
        dist_wait(g_dist, dist_all_reduce_start(g_dist, &m.params.grads, DIST_AVG));
        if (clip > 0) clip_grad_norm(&m.params, clip);
        adam_step(&opt, &m.params);
        if (dtype != DTYPE_F32) params_refresh_working(&m.params);
    }
    const int64_t n = m.params.total;
    Trained t = {malloc((size_t)n * 4), malloc((size_t)n * 4), malloc((size_t)n * 4), n};
    memcpy(t.values, m.params.values.data, (size_t)n * 4);
    memcpy(t.m, opt.m.data, (size_t)n * 4);
    memcpy(t.v, opt.v.data, (size_t)n * 4);
    adam_free(&opt);
    transformer_free(&m);
    return t;
}

static Trained train_plain(float clip) { return train_plain_in(clip, DTYPE_F32); }

static Trained train_zero_in(int stage, float clip, Zero *keep, DType dtype) {
    const TransformerConfig c = small_config();
    Transformer m;
    transformer_init(&m, &c, B, T, 5 + (uint64_t)g_dist->rank);
    transformer_set_precision(&m, dtype);
    Zero z;
    zero_init(&z, g_dist, &m.blocks, stage, &ZERO_LIBRARY);
    zero_optimizer_adamw(&z, LR, DECAY);
    for (int s = 0; s < STEPS; s++) {
        int tokens[B * T], targets[B * T];
        make_batch(s, tokens, targets);
        zero_begin_step(&z);
        transformer_forward_backward(&m, tokens, targets);
        zero_finish_gradients(&z);
        if (clip > 0) zero_clip(&z, clip);
        zero_step(&z);
    }
    const int64_t n = z.psi;
    Trained t = {malloc((size_t)n * 4), malloc((size_t)n * 4), malloc((size_t)n * 4), n};
    zero_full_params(&z, t.values);
    zero_full_state(&z, 0, t.m);
    zero_full_state(&z, 1, t.v);
    if (keep) *keep = z; /* its counts only: the buffers are freed below */
    zero_free(&z);
    transformer_free(&m);
    return t;
}

static Trained train_zero(int stage, float clip, Zero *keep) {
    return train_zero_in(stage, clip, keep, DTYPE_F32);
}

/* The largest difference relative to the largest value, over values, m and v. */
static double difference(const Trained *a, const Trained *b) {
    const float *x[3] = {a->values, a->m, a->v}, *y[3] = {b->values, b->m, b->v};
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        double scale = 0, diff = 0;
        for (int64_t i = 0; i < a->psi; i++) {
            scale = fmax(scale, fabs((double)y[k][i]));
            diff = fmax(diff, fabs((double)x[k][i] - y[k][i]));
        }
        worst = fmax(worst, diff / (scale > 0 ? scale : 1));
    }
    return worst;
}

/* Bit for bit. The reduce-scatter adds the same numbers as the all-reduce: two ranks'
 * sum is one addition; with three or four, Open MPI (4.1) adds in rank order in both
 * at these sizes. The clipped run's norm is summed over the shards, in double, then
 * rounded to float: the same float as clip_grad_norm's here. A different MPI could
 * order a sum of three differently: then a few ulps, and this check says by how much. */
static bool same_as_stage0(int stage, float clip) {
    Trained want = train_plain(clip), got = train_zero(stage, clip, NULL);
    const double diff = difference(&got, &want);
    if (diff > 0) printf("  rank %d: stage %d differs from stage 0 by %.3g (relative)\n",
                         g_dist->rank, stage, diff);
    trained_free(&want), trained_free(&got);
    return diff == 0;
}

/* bfloat16 (issue 28): stages 1 and 2 keep the parameters whole and the model's bf16
 * working copy with them, rounded again after each step's all-gather; stage 3 rounds its
 * float32 shard after each step and gathers that into 16-bit windows. Each rounds the
 * same float32 values to the same bf16 bits: the same steps as stage 0 in bf16 (whose
 * copy is rounded after its step), bit for bit, as in float32. Without a refresh the
 * copy keeps the initial weights and the gradients of steps 2 and 3 differ. */
static bool bf16_as_stage0(Dist *d) {
    (void)d;
    Trained want = train_plain_in(0, DTYPE_BF16);
    bool ok = true;
    for (int stage = 1; stage <= 3; stage++) {
        Trained got = train_zero_in(stage, 0, NULL, DTYPE_BF16);
        const double diff = difference(&got, &want);
        if (diff > 0) printf("  rank %d: stage %d in bf16 differs from stage 0 by %.3g (relative)\n",
                             g_dist->rank, stage, diff);
        ok = ok && diff == 0;
        trained_free(&got);
    }
    trained_free(&want);
    return ok;
}

static bool stage1_equal(Dist *d) { (void)d; return same_as_stage0(1, 0); }
static bool stage2_equal(Dist *d) { (void)d; return same_as_stage0(2, 0); }
static bool stage3_equal(Dist *d) { (void)d; return same_as_stage0(3, 0); }
static bool stage3_clipped(Dist *d) { (void)d; return same_as_stage0(3, 0.05f); }

/* Allocated = formula, within 1% plus the padding's bytes in each buffer. */
static bool memory_as_formula(Dist *d) {
    bool ok = true;
    for (int stage = 1; stage <= 3; stage++) {
        Zero z;
        Trained t = train_zero(stage, 0, &z);
        const ZeroMemory f = zero_memory_formula(stage, z.psi, d->world_size, ZERO_ADAMW);
        const int64_t pad = 4 * (z.padded - z.psi);
        const int64_t got[3] = {z.memory.params, z.memory.grads, z.memory.optim};
        const int64_t want[3] = {f.params, f.grads, f.optim};
        static const char *const what[3] = {"parameters", "gradients", "optimiser"};
        for (int k = 0; k < 3; k++)
            if (llabs(got[k] - want[k]) > want[k] / 100 + pad) {
                printf("  rank %d, stage %d: %s %lld bytes, the formula %lld\n", d->rank, stage,
                       what[k], (long long)got[k], (long long)want[k]);
                ok = false;
            }
        trained_free(&t);
    }
    return ok;
}

/* The bytes one step sends: 2 (stages 1, 2) or 3 (stage 3) x 4 psi (N - 1) / N. */
static bool bytes_as_formula(Dist *d) {
    bool ok = true;
    for (int k = 0; k < 6; k++) { /* stages 1-3, float32 then bf16 (stage 3 gathers bf16) */
        const int stage = 1 + k % 3;
        const DType dtype = k < 3 ? DTYPE_F32 : DTYPE_BF16;
        const TransformerConfig c = small_config();
        Transformer m;
        transformer_init(&m, &c, B, T, 5);
        transformer_set_precision(&m, dtype);
        Zero z;
        zero_init(&z, d, &m.blocks, stage, &ZERO_LIBRARY);
        zero_optimizer_adamw(&z, LR, DECAY);
        int tokens[B * T], targets[B * T];
        make_batch(0, tokens, targets);
        dist_counts_reset(d);
        zero_begin_step(&z);
        transformer_forward_backward(&m, tokens, targets);
        zero_finish_gradients(&z);
        zero_step(&z);
        const double sent = (double)(dist_counts(d, DIST_KIND_ALL_GATHER).bytes_sent +
                                     dist_counts(d, DIST_KIND_REDUCE_SCATTER).bytes_sent);
        const double want = zero_bytes_formula(stage, z.psi, d->world_size, dtype);
        if (fabs(sent - want) > 0.005 * want + 0.5) {
            printf("  rank %d, stage %d in %s: sent %.0f bytes in a step, the formula %.0f\n",
                   d->rank, stage, dtype_name(dtype), sent, want);
            ok = false;
        }
        zero_free(&z);
        transformer_free(&m);
    }
    return ok;
}

/* Stage 3 between steps holds no block: every window free, no parameter pointing at one. */
static bool stage3_releases(Dist *d) {
    const TransformerConfig c = small_config();
    Transformer m;
    transformer_init(&m, &c, B, T, 5);
    Zero z;
    zero_init(&z, d, &m.blocks, 3, &ZERO_LIBRARY);
    zero_optimizer_adamw(&z, LR, DECAY);
    int tokens[B * T], targets[B * T];
    make_batch(0, tokens, targets);
    zero_begin_step(&z);
    transformer_forward_backward(&m, tokens, targets);
    zero_finish_gradients(&z);
    zero_step(&z);
    bool ok = z.param_windows[0].unit < 0 && z.param_windows[1].unit < 0;
    for (int i = 0; i < m.params.count; i++)
        ok = ok && m.params.items[i]->value.data == NULL && m.params.items[i]->grad.data == NULL;
    if (!ok) printf("  rank %d: a block's parameters are still gathered after the step\n", d->rank);
    zero_free(&z);
    transformer_free(&m);
    return ok;
}

int main(void) {
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 60});
    run("stage 1: parameters and Adam moments after 3 AdamW steps = stage 0's", stage1_equal);
    run("stage 2: the same, gradients reduce-scattered during the backward", stage2_equal);
    run("stage 3: the same, parameters gathered block by block", stage3_equal);
    run("stage 3 with clipping by the global norm summed over the shards", stage3_clipped);
    run("memory of stages 1-3 = the formulas (1% + padding)", memory_as_formula);
    run("bytes sent in a step = 2 or 3 x 4 psi (N-1)/N, bf16 stage 3 (2 x 2 + 4) psi (N-1)/N (0.5%)", bytes_as_formula);
    run("stage 3 holds no gathered block between steps", stage3_releases);
    run("bf16: stages 1 and 2 (the working copy refreshed after the all-gather) and 3 (its rounded shard gathered) = stage 0 in bf16", bf16_as_stage0);
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
