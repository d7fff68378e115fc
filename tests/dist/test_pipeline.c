/* lib/parallel/pipeline with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 2|3|4 build/tests/dist/test_pipeline
 * Each rank is a stage of a small transformer; every check compares with the unsplit
 * model, which every rank also builds (the same seed gives the same weights). Rank 0
 * prints one line per check and "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "framework/partition_brute.h"
#include "models/transformer.h"
#include "parallel/pipeline.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

enum { VOCAB = 37, B = 8, T = 6 };

static TransformerConfig small_config(float dropout) {
    return (TransformerConfig){.vocab = VOCAB, .d_model = 16, .heads = 2, .d_ff = 24,
                               .layers = 4, .max_len = 64, .dropout = dropout};
}

/* The batch: B sequences of T tokens, and its m micro-batches (pointers into it). */
static void make_batch(int *tokens, int *targets) {
    Rng rng;
    rng_seed(&rng, 77, 0);
    for (int i = 0; i < B * T; i++) tokens[i] = (int)(rng_below(&rng, VOCAB));
    for (int i = 0; i < B * T; i++) targets[i] = (int)(rng_below(&rng, VOCAB));
}

/* The stage of this rank: balanced blocks, a micro-batch's B. */
static void build_stage(Transformer *stage, const TransformerConfig *c, int micro) {
    const int blocks = transformer_block_count(c), p = g_dist->world_size;
    double costs[64];
    int first[16];
    transformer_block_costs(c, T, costs);
    pipeline_partition(costs, blocks, p, first);
    transformer_init_blocks(stage, c, B / micro, T, 5, first[g_dist->rank], first[g_dist->rank + 1]);
}

/* The largest difference between a stage's gradients and the unsplit model's (by
 * name), relative to the largest unsplit gradient. */
static double grad_difference(const Transformer *stage, const Transformer *whole) {
    double worst = 0, scale = 0;
    for (int i = 0; i < stage->params.count; i++) {
        const Param *q = stage->params.items[i];
        const Param *w = NULL;
        for (int j = 0; j < whole->params.count && !w; j++)
            if (strcmp(whole->params.items[j]->name, q->name) == 0) w = whole->params.items[j];
        if (!w) return INFINITY;
        for (int64_t k = 0; k < q->grad.size; k++) {
            worst = fmax(worst, fabs((double)q->grad.data[k] - w->grad.data[k]));
            scale = fmax(scale, fabs((double)w->grad.data[k]));
        }
    }
    return worst / (scale > 0 ? scale : 1);
}

/* One step of the pipeline against forward_backward of the unsplit model. */
static bool same_as_unsplit_in(PipeSchedule schedule, int micro, float dropout, bool exact,
                               DType dtype) {
    const TransformerConfig c = small_config(dropout);
    int tokens[B * T], targets[B * T];
    make_batch(tokens, targets);
    Transformer whole, stage;
    transformer_init(&whole, &c, B, T, 5);
    transformer_set_precision(&whole, dtype);
    params_zero_grad(&whole.params);
    const float want = transformer_forward_backward(&whole, tokens, targets);
    build_stage(&stage, &c, micro);
    transformer_set_precision(&stage, dtype); /* before the pipeline holds its buffers */
    Pipeline pipe;
    pipeline_init(&pipe, g_dist, &stage.blocks, micro, schedule);
    const int *tok[16], *tgt[16];
    for (int i = 0; i < micro; i++) tok[i] = tokens + i * (B / micro) * T, tgt[i] = targets + i * (B / micro) * T;
    const float loss = pipeline_step(&pipe, tok, tgt);
    const double diff = grad_difference(&stage, &whole);
    /* float sums over the rows in micro-batches instead of all at once: a few ulps */
    const double tol = exact ? 0 : 1e-5;
    bool ok = diff <= tol && (exact ? loss == want : fabsf(loss - want) <= 1e-5f * fabsf(want));
    if (!ok)
        fprintf(stderr, "rank %d: %s, %d micro-batches, dropout %g: loss %.9g (unsplit %.9g), "
                "gradients differ by %.3g of the largest (allowed %.3g)\n", g_dist->rank,
                pipeline_schedule_name(schedule), micro, (double)dropout, (double)loss,
                (double)want, diff, tol);
    const int in_flight = pipe.max_slots;
    const int p = g_dist->world_size, s = g_dist->rank;
    const int most = schedule == PIPE_GPIPE ? micro : (p - s < micro ? p - s : micro);
    if (in_flight != most) {
        fprintf(stderr, "rank %d: %s, %d micro-batches: %d in flight at most, expected %d\n",
                s, pipeline_schedule_name(schedule), micro, in_flight, most);
        ok = false;
    }
    /* the memory it holds: as many sets as were in flight (the model's own the first),
     * each with its received input ([B/m * T, D] floats) after stage 0 */
    const int64_t input = s > 0 ? (int64_t)(B / micro) * T * c.d_model * (int64_t)dtype_size(dtype) : 0;
    const int64_t want_bytes = (int64_t)most * (transformer_activation_bytes(&stage) + input);
    if (pipeline_activation_bytes(&pipe) != want_bytes) {
        fprintf(stderr, "rank %d: %s, %d micro-batches: %lld bytes of activations, expected %lld\n",
                s, pipeline_schedule_name(schedule), micro, (long long)pipeline_activation_bytes(&pipe),
                (long long)want_bytes);
        ok = false;
    }
    pipeline_free(&pipe);
    transformer_free(&stage), transformer_free(&whole);
    return ok;
}

static bool same_as_unsplit(PipeSchedule schedule, int micro, float dropout, bool exact) {
    return same_as_unsplit_in(schedule, micro, dropout, exact, DTYPE_F32);
}

/* bfloat16 (issue 28): the stages run the model's blocks in its dtype, the buffers
 * between them too. One micro-batch: the unsplit bf16 model's bits; four: its loss and
 * gradients to float32 sums in another order (each micro-batch's 1/m, a power of two
 * here, multiplies the float32 loss gradient before its one rounding to bf16). */
static bool check_bf16(Dist *d) {
    (void)d;
    return same_as_unsplit_in(PIPE_GPIPE, 1, 0.2f, true, DTYPE_BF16) &&
           same_as_unsplit_in(PIPE_1F1B, 1, 0.2f, true, DTYPE_BF16) &&
           same_as_unsplit_in(PIPE_1F1B, 4, 0.0f, false, DTYPE_BF16);
}

/* float16: each stage unscales its own gradients, so an overflow can show on one stage
 * alone; the stages agree (loss_scale_agree over the pipeline's ranks, as lesson 07 does)
 * and all skip. An inf put into the last stage's gradients in step 1 leaves every stage's
 * weights as they were and halves every stage's scale; step 2, clean, moves them all. */
static bool any_rank(void *d, bool found) { return dist_sum_double(d, found) > 0.0; }

static bool check_fp16_skip(Dist *d) {
    const TransformerConfig c = small_config(0.0f);
    const int micro = 2;
    int tokens[B * T], targets[B * T];
    make_batch(tokens, targets);
    Transformer stage;
    build_stage(&stage, &c, micro);
    transformer_set_precision(&stage, DTYPE_F16);
    MixedPrecision mp;
    mixed_precision_init(&mp, DTYPE_F16, &stage.blocks, &stage.params);
    Pipeline pipe;
    pipeline_init(&pipe, d, &stage.blocks, micro, PIPE_1F1B);
    Sgd opt;
    sgd_init(&opt, &stage.params, 0.1f, 0.0f, 0.0f);
    const int *tok[2] = {tokens, tokens + (B / micro) * T}, *tgt[2] = {targets, targets + (B / micro) * T};
    Tensor before = tensor_to(&stage.params.values, DEVICE_CPU);
    const size_t bytes = tensor_bytes(&before);
    const float S = mixed_precision_scale(&mp);
    bool ok = true;
    for (int step = 1; step <= 2; step++) {
        pipeline_step(&pipe, tok, tgt);
        if (step == 1 && d->rank == d->world_size - 1) stage.params.grads.data[0] = INFINITY;
        mixed_precision_unscale(&mp);
        loss_scale_agree(&mp.scaler, any_rank, d);
        if (mixed_precision_should_step(&mp)) sgd_step(&opt, &stage.params);
        mixed_precision_step_done(&mp);
        const bool same = memcmp(before.data, stage.params.values.data, bytes) == 0;
        if ((step == 1) != same || mixed_precision_skipped(&mp) != 1 || mixed_precision_scale(&mp) != S / 2) {
            fprintf(stderr, "rank %d, step %d (an inf on the last stage in step 1): weights %s, %lld "
                    "skipped, scale %g of %g (expected: step 1 skipped on every stage, 1 skipped, "
                    "scale %g)\n", d->rank, step, same ? "unchanged" : "changed",
                    (long long)mixed_precision_skipped(&mp), (double)mixed_precision_scale(&mp),
                    (double)S, (double)S / 2);
            ok = false;
        }
    }
    tensor_free(&before);
    sgd_free(&opt);
    pipeline_free(&pipe);
    mixed_precision_free(&mp);
    transformer_free(&stage);
    return ok;
}

static bool check_gpipe(Dist *d) {
    (void)d;
    bool ok = true;
    const int micros[] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++) ok = same_as_unsplit(PIPE_GPIPE, micros[i], 0, false) && ok;
    return ok;
}

static bool check_1f1b(Dist *d) {
    (void)d;
    bool ok = true;
    const int micros[] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++) ok = same_as_unsplit(PIPE_1F1B, micros[i], 0, false) && ok;
    return ok;
}

/* One micro-batch is the unsplit model's batch: the same operations, dropout too
 * (each block draws from its own stream), so the same bits. */
static bool check_one_micro_exact(Dist *d) {
    (void)d;
    return same_as_unsplit(PIPE_GPIPE, 1, 0.2f, true) && same_as_unsplit(PIPE_1F1B, 1, 0.2f, true);
}

/* The schedules' lists: every micro-batch forward once, then back once, after its
 * forward; 1F1B's warm-up p - 1 - s; the bubble formula. */
static bool check_schedules(Dist *d) {
    bool ok = true;
    PipeOp ops[64];
    for (int p = 1; p <= 4; p++)
        for (int s = 0; s < p; s++)
            for (int m = 1; m <= 8; m++)
                for (int k = 0; k < 2; k++) {
                    const int n = pipeline_schedule(k ? PIPE_1F1B : PIPE_GPIPE, p, s, m, ops);
                    int fwd[8] = {0}, bwd[8] = {0}, in_flight = 0, most = 0;
                    for (int i = 0; i < n; i++) {
                        if (ops[i].kind == PIPE_FORWARD) fwd[ops[i].micro]++, in_flight++;
                        else ok = ok && fwd[ops[i].micro] == 1, bwd[ops[i].micro]++, in_flight--;
                        most = in_flight > most ? in_flight : most;
                    }
                    for (int i = 0; i < m; i++) ok = ok && fwd[i] == 1 && bwd[i] == 1;
                    const int want = k ? (p - s < m ? p - s : m) : m;
                    if (n != 2 * m || most != want) {
                        fprintf(stderr, "rank %d: schedule %d, stage %d of %d, %d micro-batches: %d "
                                "ops, %d in flight (expected %d)\n", d->rank, k, s, p, m, n, most, want);
                        ok = false;
                    }
                }
    ok = ok && fabs(pipeline_bubble_formula(4, 8) - 3.0 / 11.0) < 1e-12;
    const double busy[2] = {3, 1};
    ok = ok && fabs(pipeline_bubble_fraction(busy, 2, 4) - 0.5) < 1e-12;
    return ok;
}

/* The partition: the least largest stage, against every cut of a small case. */
static bool check_partition(Dist *d) {
    Rng rng;
    rng_seed(&rng, 3, 0);
    bool ok = true;
    for (int trial = 0; trial < 200 && ok; trial++) {
        const int blocks = 3 + (int)rng_below(&rng, 6), stages = 1 + (int)rng_below(&rng, 3);
        double costs[8];
        for (int k = 0; k < blocks; k++) costs[k] = 1 + (double)rng_below(&rng, 9);
        int first[5];
        pipeline_partition(costs, blocks, stages, first);
        double got = 0;
        for (int s = 0; s < stages; s++) {
            double c = 0;
            ok = ok && first[s] < first[s + 1];
            for (int k = first[s]; k < first[s + 1]; k++) c += costs[k];
            got = fmax(got, c);
        }
        const double best = partition_brute_force(costs, blocks, stages);
        ok = ok && first[0] == 0 && first[stages] == blocks && got == best;
        if (!ok) fprintf(stderr, "rank %d: partition of %d blocks into %d: largest %g, best %g\n",
                         d->rank, blocks, stages, got, best);
    }
    return ok;
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 60});
    run("schedules: GPipe and 1F1B lists, in flight at most m and p - s; bubble formula", check_schedules);
    run("partition: the least largest stage (against every cut)", check_partition);
    run("GPipe, m = 1, 2, 4, 8: the unsplit model's loss and gradients", check_gpipe);
    run("1F1B, m = 1, 2, 4, 8: the unsplit model's loss and gradients", check_1f1b);
    run("one micro-batch with dropout: the unsplit model's bits", check_one_micro_exact);
    run("bf16: one micro-batch = the unsplit bf16 model's bits; 1F1B m = 4 to float32 sums", check_bf16);
    run("fp16: an inf on the last stage skips the step on every stage, every scale halves", check_fp16_skip);
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
