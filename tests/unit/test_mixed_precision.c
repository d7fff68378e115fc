/* Unit tests of mixed precision's foundation: dynamic loss scaling (lib/train/loss_scale)
 * against GradScaler's rules, and the 16-bit working copy of a parameter list
 * (lib/models/params.h) beside its float32 master.
 *
 * The references: GradScaler's documented defaults and update rule (halve and skip on
 * inf/NaN, double after growth_interval clean steps in a row); an unscaled run of the
 * same layers (a power-of-two scale is exact in float, so unscaling must give its bits
 * back, and clipping after it the unscaled run's clipped gradients); tensor_convert and
 * core/dtype.h's rounding (itself tested against IEEE 754's definition in
 * test_core_dtype.c); the SGD rule worked out in double. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "layers/linear.h"
#include "layers/softmax_xent.h"
#include "models/params.h"
#include "train/clip.h"
#include "train/loss_scale.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

/* ------------------------------------------------------------ loss scaling */

/* One step of the documented flow on a clean (or not) gradient buffer: unscale,
 * step if allowed (counted in *stepped), update. */
static void one_step(LossScaler *ls, Tensor *grads, int *stepped) {
    loss_scale_unscale(ls, grads);
    if (loss_scale_should_step(ls)) ++*stepped;
    loss_scale_update(ls);
}

static int check_defaults(void) {
    LossScaler ls;
    loss_scale_init(&ls);
    /* torch.amp.GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
     * growth_interval=2000) */
    bool ok = expect_true(ls.scale == 65536.0f && loss_scale_value(&ls) == 65536.0f,
                          "initial scale %g, expected 2^16", (double)ls.scale) &&
              expect_true(ls.growth_factor == 2.0f && ls.backoff_factor == 0.5f &&
                          ls.growth_interval == 2000, "growth %g, backoff %g, interval %d; "
                          "expected 2, 0.5, 2000", (double)ls.growth_factor,
                          (double)ls.backoff_factor, ls.growth_interval) &&
              expect_true(ls.growth_tracker == 0 && ls.steps_skipped == 0 && ls.steps_taken == 0,
                          "counters not zero at the start");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* An inf, a -inf or a NaN anywhere (first, middle, last element of a buffer that
 * OpenMP splits) is found: the step is skipped, the scale halved, the clean-step count
 * restarted, the skip counted; every other gradient is still divided by the scale. A
 * finite FLT_MAX is not an overflow. */
static int check_inf_skips(void) {
    enum { N = 100003 };
    const float bad[] = {INFINITY, -INFINITY, NAN};
    const char *bad_name[] = {"+inf", "-inf", "NaN"};
    const int64_t where[] = {0, N / 2 + 7, N - 1};
    Tensor g = tensor_zeros(1, N), want = tensor_zeros(1, N);
    bool ok = true;
    for (int b = 0; b < 3 && ok; b++)
        for (int w = 0; w < 3 && ok; w++) {
            LossScaler ls;
            loss_scale_init(&ls);
            int stepped = 0;
            fill_uniform(g.data, N, 10 + (uint64_t)w, -1.0f, 1.0f);
            one_step(&ls, &g, &stepped); /* a clean step first: the count is 1 */
            fill_uniform(g.data, N, 20 + (uint64_t)w, -3000.0f, 3000.0f);
            for (int64_t k = 0; k < N; k++) want.data[k] = g.data[k] / 65536.0f;
            g.data[where[w]] = bad[b];
            const float before = ls.scale;
            const bool found = loss_scale_unscale(&ls, &g);
            const bool step = loss_scale_should_step(&ls);
            loss_scale_update(&ls);
            ok = expect_true(found && !step, "%s at element %lld of %d not found", bad_name[b],
                             (long long)where[w], N) &&
                 expect_true(ls.scale == before * 0.5f, "scale %g after the skipped step, "
                             "expected %g / 2", (double)ls.scale, (double)before) &&
                 expect_true(ls.growth_tracker == 0 && ls.steps_skipped == 1 && ls.steps_taken == 1 &&
                             stepped == 1, "after one clean and one skipped step: tracker %d, "
                             "skipped %lld, taken %lld", ls.growth_tracker,
                             (long long)ls.steps_skipped, (long long)ls.steps_taken);
            ok = ok && expect_true(!isfinite(g.data[where[w]]), "the %s became %g", bad_name[b],
                                   (double)g.data[where[w]]);
            g.data[where[w]] = want.data[where[w]] = 0.0f; /* compare the others */
            ok = ok && expect_close("the other gradients, divided by 2^16", g.data, want.data, N, 0, 0);
        }
    /* the largest finite float is not an overflow; a clean step keeps the scale */
    LossScaler ls;
    loss_scale_init(&ls);
    fill_uniform(g.data, N, 30, -1.0f, 1.0f);
    g.data[5] = FLT_MAX, g.data[6] = -FLT_MAX;
    const bool found = loss_scale_unscale(&ls, &g);
    loss_scale_update(&ls);
    ok = ok && expect_true(!found && ls.scale == 65536.0f && ls.growth_tracker == 1,
                           "FLT_MAX taken for an overflow (found %d, scale %g)", found, (double)ls.scale);
    tensor_free(&g), tensor_free(&want);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A scale too large for the gradients overflows them in a real backward: a linear
 * layer (weights 0, so every class has probability 1/8; inputs in [100, 200); every
 * label 0) has weight gradients of about 130 in size, so scales from 2^127 down to
 * about 2^121 overflow them. Each such step is found, skipped and halved, and the first
 * clean scale is the largest power of two S with S max|dW| below FLT_MAX, max|dW| from
 * the same backward unscaled. */
static float weight_grad_unscaled_max(const Tensor *x, const Tensor *w, const Tensor *b,
                                      const int *labels, float scale, Tensor *dw) {
    Tensor y = tensor_zeros(2, x->shape[0], w->shape[0]), dy = tensor_zeros_like(&y);
    Tensor db = tensor_zeros_like(b);
    linear_forward(&y, x, w, b);
    softmax_cross_entropy(&dy, &y, labels);
    tensor_scale(&dy, scale);
    tensor_fill(dw, 0.0f);
    linear_backward(NULL, dw, &db, &dy, x, w);
    float m = 0.0f;
    for (int64_t k = 0; k < dw->size; k++) m = fabsf(dw->data[k]) > m ? fabsf(dw->data[k]) : m;
    tensor_free(&y), tensor_free(&dy), tensor_free(&db);
    return m;
}

static int check_backward_overflow(void) {
    enum { N = 64, IN = 16, OUT = 8 };
    Tensor x = tensor_zeros(2, N, IN), w = tensor_zeros(2, OUT, IN), b = tensor_zeros(1, OUT);
    Tensor dw = tensor_zeros(2, OUT, IN);
    fill_uniform(x.data, x.size, 1, 100.0f, 200.0f);
    int labels[N] = {0};
    const float m = weight_grad_unscaled_max(&x, &w, &b, labels, 1.0f, &dw);
    const double clean = exp2(floor(log2((double)FLT_MAX / m)));
    LossScaler ls;
    loss_scale_init_with(&ls, 0x1p127f, 2.0f, 0.5f, 2000); /* 2^127: near float's top */
    bool found = true;
    int steps = 0;
    for (; steps < 40 && found; steps++) {
        const float s = ls.scale;
        weight_grad_unscaled_max(&x, &w, &b, labels, s, &dw);
        found = loss_scale_unscale(&ls, &dw);
        printf("scale 2^%d: %s\n", (int)log2f(s), found ? "the weight gradient overflowed, step skipped"
                                                         : "clean");
        loss_scale_update(&ls);
    }
    check_show("largest weight gradient %g unscaled: 2^127 down to 2^%d overflowed and were skipped, "
               "2^%d is the first clean scale (expected 2^%d)", (double)m, (int)log2f(ls.scale) + 1,
               (int)log2f(ls.scale), (int)log2(clean));
    const bool ok = expect_true(!found && ls.steps_skipped == steps - 1 && ls.steps_skipped > 0,
                                "%d steps, %lld skipped: expected overflow at 2^127, then halving "
                                "until clean", steps, (long long)ls.steps_skipped) &&
                    expect_true(ls.scale == (float)clean, "the first clean scale is %g, expected %g",
                                (double)ls.scale, clean);
    tensor_free(&x), tensor_free(&w), tensor_free(&b), tensor_free(&dw);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 1,999 clean steps keep the scale, the 2,000th doubles it; an inf restarts the count
 * (1,999 clean steps after it do not double); a growth that would overflow float
 * keeps the scale. */
static int check_growth(void) {
    Tensor g = tensor_zeros(1, 33);
    LossScaler ls;
    loss_scale_init(&ls);
    int stepped = 0;
    for (int s = 0; s < 1999; s++) {
        fill_uniform(g.data, g.size, (uint64_t)s, -1.0f, 1.0f);
        one_step(&ls, &g, &stepped);
    }
    bool ok = expect_true(ls.scale == 65536.0f && ls.growth_tracker == 1999,
                          "after 1,999 clean steps: scale %g (expected 65536), %d counted",
                          (double)ls.scale, ls.growth_tracker);
    const float at1999 = ls.scale;
    one_step(&ls, &g, &stepped);
    check_show("from 65536: %g after 1,999 clean steps, %g after 2,000", (double)at1999,
               (double)ls.scale);
    ok = ok && expect_true(ls.scale == 131072.0f && ls.growth_tracker == 0,
                           "after 2,000 clean steps: scale %g (expected 131072), %d counted",
                           (double)ls.scale, ls.growth_tracker);
    for (int s = 0; s < 1999; s++) one_step(&ls, &g, &stepped);
    g.data[3] = NAN; /* the 2,000th step since the doubling: skipped, halved */
    one_step(&ls, &g, &stepped);
    g.data[3] = 0.0f;
    ok = ok && expect_true(ls.scale == 65536.0f && ls.growth_tracker == 0,
                           "a NaN on the 2,000th step: scale %g (expected 65536), %d counted",
                           (double)ls.scale, ls.growth_tracker);
    for (int s = 0; s < 1999; s++) one_step(&ls, &g, &stepped);
    ok = ok && expect_true(ls.scale == 65536.0f, "1,999 clean steps after the NaN: scale %g, "
                           "expected 65536 (the count restarts on a skip)", (double)ls.scale);
    one_step(&ls, &g, &stepped);
    ok = ok && expect_true(ls.scale == 131072.0f, "2,000 clean steps after the NaN: scale %g, "
                           "expected 131072", (double)ls.scale) &&
         expect_true(stepped == 5999 && ls.steps_taken == stepped &&
                     ls.steps_skipped == 1, "%d steps taken (%lld counted), %lld skipped; expected "
                     "5999 and 1", stepped, (long long)ls.steps_taken, (long long)ls.steps_skipped);
    /* another interval; and no growth to infinity */
    loss_scale_init_with(&ls, 3.0f, 4.0f, 0.25f, 3);
    for (int s = 0; s < 3; s++) one_step(&ls, &g, &stepped);
    ok = ok && expect_true(ls.scale == 12.0f, "interval 3, growth 4 from 3: %g, expected 12",
                           (double)ls.scale);
    loss_scale_init_with(&ls, 0x1p127f, 2.0f, 0.5f, 1);
    one_step(&ls, &g, &stepped);
    ok = ok && expect_true(ls.scale == 0x1p127f && ls.growth_tracker == 0, "2^127 grown to %g: "
                           "a scale must stay finite (GradScaler keeps it)", (double)ls.scale);
    tensor_free(&g);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A linear layer and softmax cross-entropy: (a) the unscaled run, clipped; (b) the loss
 * gradient times 2^16, backward, unscaled, clipped: the same gradients and norm, bit for
 * bit; (c) clipped before unscaling (the mistake): far from (a). */
static int check_unscale_before_clip(void) {
    enum { N = 32, IN = 20, OUT = 10 };
    const float max_norm = 0.05f;
    Tensor x = tensor_zeros(2, N, IN), y = tensor_zeros(2, N, OUT), dy = tensor_zeros(2, N, OUT);
    ParamList run[3];
    int labels[N];
    for (int n = 0; n < N; n++) labels[n] = (7 * n + 3) % OUT;
    fill_uniform(x.data, x.size, 5, -1.0f, 1.0f);
    float norm[3];
    for (int r = 0; r < 3; r++) {
        run[r] = (ParamList){0};
        Param *w = params_add(&run[r], "fc.weight", 2, (int[]){OUT, IN});
        Param *b = params_add(&run[r], "fc.bias", 1, (int[]){OUT});
        params_allocate(&run[r]);
        fill_uniform(w->value.data, w->value.size, 6, -0.3f, 0.3f);
        fill_uniform(b->value.data, b->value.size, 7, -0.3f, 0.3f);
        LossScaler ls;
        loss_scale_init(&ls);
        linear_forward(&y, &x, &w->value, &b->value);
        tensor_fill(&dy, 0.0f);
        softmax_cross_entropy(&dy, &y, labels);
        if (r > 0) tensor_scale(&dy, loss_scale_value(&ls));
        linear_backward(NULL, &w->grad, &b->grad, &dy, &x, &w->value);
        if (r == 1) loss_scale_unscale(&ls, &run[r].grads);
        norm[r] = clip_grad_norm(&run[r], max_norm);
        if (r == 2) loss_scale_unscale(&ls, &run[r].grads); /* the wrong order */
    }
    check_show("norm before clipping: unscaled run %.7g, unscaled then clipped %.7g, clipped while "
               "scaled %.7g (max_norm %g)", (double)norm[0], (double)norm[1], (double)norm[2],
               (double)max_norm);
    bool ok = expect_true(norm[0] > max_norm, "the test needs gradients that clipping scales") &&
              expect_close("norm (unscale, then clip)", &norm[1], &norm[0], 1, 0, 0) &&
              expect_close("clipped gradients (unscale, then clip)", run[1].grads.data,
                           run[0].grads.data, run[0].total, 0, 0);
    /* the wrong order clips by max_norm / (S |g|) and unscaling then shrinks by S again */
    const float after_wrong = grad_norm(&run[2]), after_right = grad_norm(&run[1]);
    check_show("norm after: %.7g (unscale, then clip), %.7g (clip, then unscale)",
               (double)after_right, (double)after_wrong);
    ok = ok && expect_true(after_wrong < 1e-3f * after_right, "clipping scaled gradients should "
                           "have shrunk them far below the unscaled run's: %g vs %g",
                           (double)after_wrong, (double)after_right);
    for (int r = 0; r < 3; r++) params_free(&run[r]);
    tensor_free(&x), tensor_free(&y), tensor_free(&dy);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Why fp16 needs the scale: gradients around 1e-8 round to zero in float16 (smallest
 * subnormal 2^-24 = 6e-8, and below half of it nothing is left); times 2^16 they are
 * normal float16 values, kept to float16's 11 significant bits, and unscaled in float32
 * they come back within 2^-11 of themselves. */
static int check_fp16_underflow(void) {
    enum { N = 4096 };
    Tensor g = tensor_zeros(1, N), plain = tensor_zeros(1, N), scaled = tensor_zeros(1, N);
    Tensor half = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, N);
    fill_uniform(g.data, N, 9, 1e-9f, 3e-8f);
    tensor_convert(&half, &g); /* float16 gradients without scaling */
    tensor_convert(&plain, &half);
    LossScaler ls;
    loss_scale_init(&ls);
    tensor_copy(&scaled, &g);
    tensor_scale(&scaled, loss_scale_value(&ls)); /* what a scaled backward gives */
    tensor_convert(&half, &scaled);
    tensor_convert(&scaled, &half);
    loss_scale_unscale(&ls, &scaled);
    int64_t zeros = 0;
    double worst = 0.0;
    for (int64_t k = 0; k < N; k++) {
        zeros += plain.data[k] == 0.0f;
        const double rel = fabs((double)scaled.data[k] - g.data[k]) / g.data[k];
        if (rel > worst) worst = rel;
    }
    check_show("gradients in [1e-9, 3e-8) through float16: %lld of %d are 0 without scaling; "
               "scaled by 2^16, the largest relative error is %.3g (2^-11 = %.3g)",
               (long long)zeros, N, worst, 0x1p-11);
    bool ok = expect_true(zeros > N / 2, "only %lld of %d tiny gradients lost without scaling: "
                          "the test's values are too large", (long long)zeros, N) &&
              expect_true(worst <= 0x1p-11, "scaled float16 gradients within %g of themselves, "
                          "expected 2^-11", worst);
    tensor_free(&g), tensor_free(&plain), tensor_free(&scaled), tensor_free(&half);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Two ranks, an inf on rank 1 only: without agreeing rank 0 would step and the replicas
 * would part; with the MAX of the flags (the callback) both skip and halve together. */
typedef struct {
    bool flag[2];
} TwoRanks;

static bool any_of_two(void *ctx, bool found) {
    const TwoRanks *t = ctx;
    return found || t->flag[0] || t->flag[1];
}

static int check_agree(void) {
    LossScaler ls[2];
    Tensor g[2];
    TwoRanks ranks;
    for (int r = 0; r < 2; r++) {
        loss_scale_init(&ls[r]);
        g[r] = tensor_zeros(1, 100);
        fill_uniform(g[r].data, 100, 40 + (uint64_t)r, -1.0f, 1.0f);
    }
    g[1].data[42] = INFINITY;
    for (int r = 0; r < 2; r++) ranks.flag[r] = loss_scale_unscale(&ls[r], &g[r]);
    bool ok = expect_true(!ranks.flag[0] && ranks.flag[1], "local verdicts %d and %d, expected 0 and 1",
                          ranks.flag[0], ranks.flag[1]);
    bool step[2];
    for (int r = 0; r < 2; r++) {
        loss_scale_agree(&ls[r], any_of_two, &ranks);
        step[r] = loss_scale_should_step(&ls[r]);
        loss_scale_update(&ls[r]);
    }
    check_show("inf on rank 1 only: rank 0 %s, rank 1 %s; scales %g and %g",
               step[0] ? "steps" : "skips", step[1] ? "steps" : "skips", (double)ls[0].scale,
               (double)ls[1].scale);
    ok = ok && expect_true(!step[0] && !step[1], "every rank must skip the step") &&
         expect_true(ls[0].scale == 32768.0f && ls[1].scale == 32768.0f && ls[0].steps_skipped == 1 &&
                     ls[1].steps_skipped == 1, "both scales halved and both skips counted");
    tensor_free(&g[0]), tensor_free(&g[1]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void unscale_twice(void *arg) {
    (void)arg;
    LossScaler ls;
    loss_scale_init(&ls);
    Tensor g = tensor_zeros(1, 4);
    loss_scale_unscale(&ls, &g);
    loss_scale_unscale(&ls, &g);
}
static void step_before_unscale(void *arg) {
    (void)arg;
    LossScaler ls;
    loss_scale_init(&ls);
    loss_scale_should_step(&ls);
}
static void update_before_unscale(void *arg) {
    (void)arg;
    LossScaler ls;
    loss_scale_init(&ls);
    loss_scale_update(&ls);
}
static void unscale_bf16(void *arg) {
    (void)arg;
    LossScaler ls;
    loss_scale_init(&ls);
    Tensor g = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 4);
    loss_scale_unscale(&ls, &g);
}
static void bad_backoff(void *arg) {
    (void)arg;
    LossScaler ls;
    loss_scale_init_with(&ls, 65536.0f, 2.0f, 2.0f, 2000);
}

/* Misuse stops with a message that names it. */
static int check_misuse(void) {
    ChildResult r;
    run_child(unscale_twice, NULL, &r);
    bool ok = expect_exit("unscale twice in one step", &r, EXIT_BUG, "twice", (const char *)NULL);
    run_child(step_before_unscale, NULL, &r);
    ok = ok && expect_exit("step before unscale", &r, EXIT_BUG, "before loss_scale_unscale",
                           (const char *)NULL);
    run_child(update_before_unscale, NULL, &r);
    ok = ok && expect_exit("update before unscale", &r, EXIT_BUG, "before loss_scale_unscale",
                           (const char *)NULL);
    run_child(unscale_bf16, NULL, &r);
    ok = ok && expect_exit("bfloat16 gradients", &r, EXIT_BUG, "bfloat16", (const char *)NULL);
    run_child(bad_backoff, NULL, &r);
    ok = ok && expect_exit("backoff factor 2", &r, EXIT_USER_ERROR, "backoff factor is 2",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ master weights */

/* The list's working copy equals tensor_convert of its values, bit for bit, and each
 * parameter's work view is that parameter's part of it, with its shape. */
static bool working_is_convert(const ParamList *list, const char *when) {
    const Tensor *wk = &list->working;
    Tensor want = tensor_zeros_typed(DEVICE_CPU, wk->dtype, 1, (int)wk->size);
    tensor_convert(&want, &list->values);
    bool ok = expect_true(wk->size == list->values.size && wk->device == list->values.device,
                          "%s: working copy of %lld elements on %s, values %lld on %s", when,
                          (long long)wk->size, device_name(wk->device), (long long)list->values.size,
                          device_name(list->values.device));
    for (int64_t k = 0; k < wk->size && ok; k++)
        ok = expect_true(wk->bits16[k] == want.bits16[k], "%s: element %lld is 0x%04x, "
                         "tensor_convert gives 0x%04x (from %a)", when, (long long)k,
                         wk->bits16[k], want.bits16[k], (double)list->values.data[k]);
    for (int i = 0; i < list->count && ok; i++) {
        const Param *p = list->items[i];
        ok = expect_true(p->work.dtype == wk->dtype && p->work.device == wk->device &&
                         p->work.bits16 == wk->bits16 + p->offset && p->work.size == p->value.size &&
                         p->work.ndim == p->value.ndim &&
                         memcmp(p->work.shape, p->value.shape, sizeof p->work.shape) == 0,
                         "%s: %s's work view is not its part of the working copy", when, p->name);
    }
    tensor_free(&want);
    return ok;
}

static void make_list(ParamList *list) {
    *list = (ParamList){0};
    params_add(list, "emb.weight", 2, (int[]){37, 11});
    params_add(list, "ln.bias", 1, (int[]){11});
    params_add(list, "conv.weight", 4, (int[]){3, 2, 5, 5});
    params_allocate(list);
    /* values across float16's range and past it: subnormals, overflow to inf, ties */
    float *v = list->values.data;
    fill_uniform(v, list->total, 3, -4.0f, 4.0f);
    for (int64_t k = 0; k < list->total; k += 7) v[k] *= 0x1p-20f;
    for (int64_t k = 3; k < list->total; k += 13) v[k] *= 0x1p14f;
    v[1] = 1.0f + 0x1p-8f; /* a bfloat16 tie, to even: 1.0 */
    v[2] = 65520.0f;       /* float16: rounds to inf */
}

static int check_working_copy(void) {
    ParamList list;
    make_list(&list);
    bool ok = expect_true(list.working.raw == NULL && list.items[0]->work.raw == NULL,
                          "a working copy before params_set_working");
    for (int d = DTYPE_BF16; d <= DTYPE_F16 && ok; d++) {
        params_set_working(&list, (DType)d);
        ok = expect_true(list.working.dtype == (DType)d, "working copy of %s, asked %s",
                         dtype_name(list.working.dtype), dtype_name((DType)d)) &&
             working_is_convert(&list, dtype_name((DType)d));
        /* an optimiser step changes the master only; the refresh follows it */
        Sgd opt;
        sgd_init(&opt, &list, 0.1f, 0.0f, 0.0f);
        fill_uniform(list.grads.data, list.total, 4, -1.0f, 1.0f);
        sgd_step(&opt, &list);
        Tensor fresh = tensor_zeros_typed(DEVICE_CPU, (DType)d, 1, (int)list.total);
        tensor_convert(&fresh, &list.values);
        int64_t stale = 0; /* the step must leave something for the refresh to do */
        for (int64_t k = 0; k < list.total; k++) stale += fresh.bits16[k] != list.working.bits16[k];
        tensor_free(&fresh);
        ok = ok && expect_true(stale > 0, "an SGD step with lr 0.1 changed no %s value",
                               dtype_name((DType)d));
        params_refresh_working(&list);
        ok = ok && working_is_convert(&list, "after a step and a refresh");
        sgd_free(&opt);
    }
    /* a padded layout (ZeRO's): the working copy follows, gaps included */
    int64_t offset[3] = {0, 37 * 11 + 5, 37 * 11 + 5 + 11 + 3};
    params_set_layout(&list, offset, offset[2] + 150 + 9);
    ok = ok && working_is_convert(&list, "after params_set_layout") &&
         expect_true(list.working.bits16[37 * 11 + 2] == 0, "a gap of the layout is not zero");
    params_free(&list);
    ok = ok && expect_true(list.working.raw == NULL, "params_free left the working copy");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void working_f32(void *arg) {
    (void)arg;
    ParamList list;
    make_list(&list);
    params_set_working(&list, DTYPE_F32);
}
static void refresh_without(void *arg) {
    (void)arg;
    ParamList list;
    make_list(&list);
    params_refresh_working(&list);
}

static int check_working_misuse(void) {
    ChildResult r;
    run_child(working_f32, NULL, &r);
    bool ok = expect_exit("a float32 working copy", &r, EXIT_BUG, "bfloat16 or float16", (const char *)NULL);
    run_child(refresh_without, NULL, &r);
    ok = ok && expect_exit("refresh without a working copy", &r, EXIT_BUG, "params_set_working first",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The test: a learning rate whose update lr g is below half a bfloat16 step of
 * the weights. Updated in bfloat16 alone (w = round(w - lr g)) the weights never move:
 * every step is lost. The float32 master moves every step (to lr g k after k steps,
 * the SGD rule in double), and its bfloat16 working copy changes once the master has
 * moved past half a step. Weights in [1, 2): a bfloat16 step there is 2^-7 (2^-8 just
 * below 1), half of it 2^-9 = 0.00195; lr g = 0.001. */
static int check_master_weights(void) {
    enum { STEPS = 100, N = 64 };
    const float lr = 1e-3f, grad = 1.0f;
    ParamList list = {0};
    params_add(&list, "w", 1, (int[]){N});
    params_allocate(&list);
    fill_uniform(list.values.data, N, 8, 1.0f, 2.0f);
    for (int64_t k = 0; k < N; k++) /* start from bfloat16 values, as a bf16-only run does */
        list.values.data[k] = dtype_f32_from_bf16(dtype_bf16_from_f32(list.values.data[k]));
    params_set_working(&list, DTYPE_BF16);
    uint16_t only16[N], first16[N];
    float w0[N];
    int changed_at[N];
    for (int k = 0; k < N; k++)
        only16[k] = first16[k] = list.working.bits16[k], w0[k] = list.values.data[k], changed_at[k] = 0;
    Sgd opt;
    sgd_init(&opt, &list, lr, 0.0f, 0.0f);
    bool ok = true;
    int lost = 0;
    for (int s = 1; s <= STEPS && ok; s++) {
        tensor_fill(&list.grads, grad);
        float prev[N];
        memcpy(prev, list.values.data, sizeof prev);
        sgd_step(&opt, &list);
        params_refresh_working(&list);
        for (int k = 0; k < N && ok; k++) {
            const uint16_t next = dtype_bf16_from_f32(dtype_f32_from_bf16(only16[k]) - lr * grad);
            lost += next == only16[k];
            only16[k] = next;
            ok = expect_true(list.values.data[k] < prev[k], "step %d: the float32 master w[%d] "
                             "did not move (%.9g)", s, k, (double)prev[k]);
            if (!changed_at[k] && list.working.bits16[k] != first16[k]) changed_at[k] = s;
        }
    }
    check_show("lr %g, gradient %g, %d steps; w[0]: bfloat16-only update stays %.9g (%d of %d "
               "updates lost); float32 master %.9g -> %.9g (SGD in double: %.9g); its bfloat16 "
               "copy %.9g -> %.9g, first changed at step %d", (double)lr, (double)grad, STEPS,
               (double)dtype_f32_from_bf16(only16[0]), lost, STEPS * N, (double)w0[0],
               (double)list.values.data[0], (double)w0[0] - STEPS * (double)lr * grad,
               (double)dtype_f32_from_bf16(first16[0]),
               (double)dtype_f32_from_bf16(list.working.bits16[0]), changed_at[0]);
    ok = ok && expect_true(lost == STEPS * N, "a bfloat16-only update kept %d of %d updates: the "
                           "test's learning rate is too large", STEPS * N - lost, STEPS * N);
    for (int k = 0; k < N && ok; k++) {
        const double want = (double)w0[k] - STEPS * (double)lr * grad;
        ok = expect_true(fabs(list.values.data[k] - want) <= STEPS * 0x1p-24 * 2.0,
                         "master w[%d] = %.9g after %d steps, the SGD rule gives %.9g", k,
                         (double)list.values.data[k], STEPS, want) &&
             expect_true(changed_at[k] > 0, "w[%d]'s bfloat16 working copy never changed", k);
    }
    ok = ok && working_is_convert(&list, "after the steps");
    sgd_free(&opt);
    params_free(&list);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ checkpoints */

/* A MixedPrecision of `dtype` over a stand-in model: a list of that dtype, a parameter
 * list with a working copy (all mixed_precision_init looks at). */
typedef struct {
    BlockList blocks;
    ParamList params;
    MixedPrecision mp;
} Fake;

static void fake_init(Fake *f, DType dtype) {
    memset(f, 0, sizeof *f);
    f->blocks.dtype = dtype;
    if (dtype != DTYPE_F32) f->params.working = tensor_zeros_typed(DEVICE_CPU, dtype, 1, 4);
    mixed_precision_init(&f->mp, dtype, &f->blocks, &f->params);
}
static void fake_free(Fake *f) {
    mixed_precision_free(&f->mp);
    tensor_free(&f->params.working);
}

/* A file of one scalar, and the scaler's entries when `mp` is not NULL (after edit). */
static void encode_with(MixedPrecision *mp, void (*edit)(MixedPrecisionCkpt *), uint8_t **buf, size_t *len) {
    Checkpoint c = {0};
    int64_t step = 42;
    MixedPrecisionCkpt slot;
    ckpt_add_i64(&c, "train.global_step", &step);
    if (mp) mixed_precision_ckpt_add(&c, mp, &slot);
    if (mp && edit) edit(&slot);
    ckpt_encode(&c, buf, len);
    ckpt_free(&c);
}

/* Loads buf into f's scaler the way a program does; rc of the decode, *took: _loaded. */
static int load_into(Fake *f, const uint8_t *buf, size_t len, bool *took, CkptError *err) {
    Checkpoint c = {0};
    int64_t step = 0;
    MixedPrecisionCkpt slot;
    ckpt_add_i64(&c, "train.global_step", &step);
    mixed_precision_ckpt_add(&c, &f->mp, &slot);
    const int rc = ckpt_decode(&c, buf, len, "test.ckpt", err);
    ckpt_free(&c);
    *took = rc == 0 && mixed_precision_ckpt_loaded(&f->mp, &slot);
    return rc;
}

static bool scaler_is(const Fake *f, float scale, int tracker, int64_t taken, int64_t skipped,
                      const char *what) {
    const LossScaler *ls = &f->mp.scaler;
    return expect_true(ls->scale == scale && ls->growth_tracker == tracker && ls->steps_taken == taken &&
                       ls->steps_skipped == skipped && f->blocks.loss_scale == scale,
                       "%s: scale %g (the blocks' %g), tracker %d, taken %lld, skipped %lld; expected "
                       "%g, %d, %lld, %lld", what, (double)ls->scale, (double)f->blocks.loss_scale,
                       ls->growth_tracker, (long long)ls->steps_taken, (long long)ls->steps_skipped,
                       (double)scale, tracker, (long long)taken, (long long)skipped);
}

static void negative_scale(MixedPrecisionCkpt *s) { s->scale = -2.0; }
static void tracker_at_interval(MixedPrecisionCkpt *s) { s->growth_tracker = 2000; }

static int check_checkpoint(void) {
    Fake a, b, c32, cbf;
    fake_init(&a, DTYPE_F16), fake_init(&c32, DTYPE_F32), fake_init(&cbf, DTYPE_BF16);
    LossScaler *ls = &a.mp.scaler; /* a run 1,234 steps in: 3 skipped, 17 clean since */
    ls->scale = 8192.0f, ls->growth_tracker = 17, ls->steps_taken = 1231, ls->steps_skipped = 3;
    uint8_t *buf;
    size_t len;
    bool took;
    CkptError err = {{0}};
    /* an fp16 run's checkpoint into a fresh fp16 run: its scaler, and the blocks' scale */
    encode_with(&a.mp, NULL, &buf, &len);
    fake_init(&b, DTYPE_F16);
    bool ok = expect_true(load_into(&b, buf, len, &took, &err) == 0 && took, "an fp16 checkpoint: "
                          "not taken (%s)", err.msg) &&
              scaler_is(&b, 8192.0f, 17, 1231, 3, "fp16 into fp16");
    fake_free(&b);
    /* ... into a bf16 run: loads, nothing to take */
    ok = ok && expect_true(load_into(&cbf, buf, len, &took, &err) == 0 && !took, "an fp16 checkpoint "
                           "into a bf16 run: rc or taken (%s)", err.msg);
    xfree(buf);
    /* a checkpoint from before the scaler was kept, and a float32 run's (no entries: its
     * file as before): loads, the fresh scaler stays */
    for (int k = 0; k < 2; k++) {
        encode_with(k == 0 ? NULL : &c32.mp, NULL, &buf, &len);
        fake_init(&b, DTYPE_F16);
        ok = ok && expect_true(load_into(&b, buf, len, &took, &err) == 0 && !took, "%s: rc or taken "
                               "(%s)", k == 0 ? "an older checkpoint" : "a float32 run's", err.msg) &&
             scaler_is(&b, 65536.0f, 0, 0, 0, k == 0 ? "an older checkpoint" : "a float32 run's");
        fake_free(&b);
        xfree(buf);
    }
    /* impossible values behind a valid checksum: refused by name, nothing changed */
    void (*edits[2])(MixedPrecisionCkpt *) = {negative_scale, tracker_at_interval};
    const char *want[2] = {"'loss_scale.scale' is -2, below", "'loss_scale.growth_tracker' is 2000, outside 0..1999"};
    for (int k = 0; k < 2; k++) {
        encode_with(&a.mp, edits[k], &buf, &len);
        fake_init(&b, DTYPE_F16);
        err.msg[0] = '\0';
        ok = ok && expect_true(load_into(&b, buf, len, &took, &err) == -1 && strstr(err.msg, want[k]),
                               "expected a refusal with \"%s\": %s", want[k], err.msg) &&
             scaler_is(&b, 65536.0f, 0, 0, 0, "after a refusal");
        fake_free(&b);
        xfree(buf);
    }
    /* a float32 run's file is the file of before, byte for byte */
    uint8_t *old, *now;
    size_t old_len, now_len;
    encode_with(NULL, NULL, &old, &old_len);
    encode_with(&c32.mp, NULL, &now, &now_len);
    ok = ok && expect_true(old_len == now_len && memcmp(old, now, old_len) == 0, "a float32 run's "
                           "checkpoint changed: %zu bytes, %zu before", now_len, old_len);
    xfree(old), xfree(now);
    fake_free(&a), fake_free(&c32), fake_free(&cbf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("mixed precision: loss scaling, master weights");
    check_run(NULL, "loss scaling: GradScaler's defaults (2^16, x2, x0.5, 2000 steps)", check_defaults, 10);
    check_run(NULL, "loss scaling: +inf, -inf or NaN anywhere skips the step and halves the scale; FLT_MAX does not", check_inf_skips, 20);
    check_run(NULL, "loss scaling: a scale of 2^127 overflows a real backward; halved until clean", check_backward_overflow, 20);
    check_run(NULL, "loss scaling: 2,000 clean steps double the scale, 1,999 do not; a skip restarts the count", check_growth, 20);
    check_run(NULL, "loss scaling: unscale then clip = the unscaled run's clipped gradients, bit for bit; clip then unscale does not", check_unscale_before_clip, 20);
    check_run(NULL, "loss scaling: float16 gradients near 1e-8 vanish unscaled, survive at 2^16", check_fp16_underflow, 20);
    check_run(NULL, "loss scaling: an inf on one rank skips the step on every rank (the agreed flag)", check_agree, 10);
    check_run(NULL, "loss scaling: misuse stops with a message (twice, before unscale, bfloat16, bad factor)", check_misuse, 20);
    check_run(NULL, "master weights: the working copy = tensor_convert of the master, bf16 and fp16, through a step and a new layout", check_working_copy, 20);
    check_run(NULL, "master weights: a float32 working copy or a refresh without one stops with a message", check_working_misuse, 20);
    check_run(NULL, "checkpoint: fp16's scaler round-trips (and reaches the blocks), bf16 skips it; an older or float32 run's file (unchanged) leaves it fresh; bad values refused by name", check_checkpoint, 20);
    check_run(NULL, "master weights: an lr a bfloat16-only update loses moves the float32 master and, in time, its bf16 copy", check_master_weights, 20);
    return check_end();
}
