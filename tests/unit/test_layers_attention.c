/* Unit tests of the causal self-attention core (lib/layers/attention.h) and of the
 * fast softmax cross-entropy for large vocabularies (softmax_xent.h) with its
 * exponential (softmax_exp.h).
 *
 * The attention against a plain-loops reference in double (no GEMM, no shared code),
 * the causal mask (a later position never changes an earlier output), dropout on the
 * weights, the backward against finite differences with and without dropout, += into
 * dqkv, and the same bits on 1 and 2 threads. The fast cross-entropy against the
 * exact one (double exponentials) on a WikiText-2-sized vocabulary within the bounds
 * softmax_xent.h states, extreme logits, NaN, bad labels and threads.
 *
 * Gradient-check tolerances (eps = 1e-2, 1e-3 absolute + 2e-3 relative; see
 * tests/framework/gradcheck.h): the attention's output is smooth in qkv (softmax
 * of scores of size |q||k|/sqrt(dh) < 2 here), its third derivatives are O(1), so
 * the truncation error eps^2/6 |L'''| stays near 1e-5. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/gradcheck.h"
#include "framework/tensors.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "layers/softmax_exp.h"
#include "layers/softmax_xent.h"

/* ------------------------------------------------------------ attention */

typedef struct {
    int B, T, H, D;
} AttCase;

typedef struct {
    AttCase c;
    Tensor qkv, ctx, probs, dropped, R;
    float p;      /* dropout; 0: none */
    uint64_t seed; /* of the Rng each forward starts from (the same mask every time) */
} AttSetup;

static AttSetup att_setup(AttCase c, float p, uint64_t seed) {
    AttSetup s;
    s.c = c;
    s.p = p;
    s.seed = seed;
    s.qkv = random2(seed, c.B * c.T, 3 * c.D);
    s.ctx = tensor_zeros(2, c.B * c.T, c.D);
    s.probs = tensor_zeros(4, c.B, c.H, c.T, c.T);
    s.dropped = tensor_zeros(4, c.B, c.H, c.T, c.T);
    s.R = random2(seed + 1, c.B * c.T, c.D);
    return s;
}

static void att_free(AttSetup *s) {
    tensor_free(&s->qkv);
    tensor_free(&s->ctx);
    tensor_free(&s->probs);
    tensor_free(&s->dropped);
    tensor_free(&s->R);
}

static void att_forward(AttSetup *s) {
    Rng rng;
    rng_seed(&rng, s->seed, 5);
    attention_forward(&s->ctx, &s->probs, s->p > 0 ? &s->dropped : NULL, &s->qkv, s->p, true, &rng);
}

static double att_objective(void *ctx) {
    AttSetup *s = ctx;
    att_forward(s);
    return weighted_sum(&s->ctx, &s->R);
}

static void describe(const AttCase *c, float p) {
    printf("case: B %d, T %d, H %d, D %d (d_head %d), dropout %g\n", c->B, c->T, c->H, c->D,
           c->D / c->H, p);
}

/* The definition, written out in double: for each sequence, head and query position,
 * the scores of the keys at or before it, their softmax, times the mask, times V.
 * mask: NULL, or the multiplier of each weight [B, H, T, T]. */
static void attention_reference(double *ctx, double *probs, const AttSetup *s, const double *mask) {
    const int B = s->c.B, T = s->c.T, H = s->c.H, D = s->c.D, dh = D / H;
    const float *x = s->qkv.data;
    double *sc = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                double m = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    double d = 0;
                    for (int e = 0; e < dh; e++)
                        d += (double)x[(b * T + i) * 3 * D + h * dh + e] *
                             x[(b * T + j) * 3 * D + D + h * dh + e];
                    sc[j] = d / sqrt((double)dh);
                }
                for (int j = 0; j <= i; j++) m = fmax(m, sc[j]);
                for (int j = 0; j < T; j++) sum += j <= i ? exp(sc[j] - m) : 0.0;
                for (int e = 0; e < dh; e++) ctx[(b * T + i) * D + h * dh + e] = 0;
                for (int j = 0; j < T; j++) {
                    const size_t at = (((size_t)b * H + h) * T + i) * T + j;
                    const double p = j <= i ? exp(sc[j] - m) / sum : 0.0;
                    probs[at] = p;
                    const double w = p * (mask ? mask[at] : 1.0);
                    for (int e = 0; e < dh; e++)
                        ctx[(b * T + i) * D + h * dh + e] += w * x[(b * T + j) * 3 * D + 2 * D + h * dh + e];
                }
            }
    free(sc);
}

static bool matches(const char *what, const float *got, const double *want, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            return expect_true(false, "%s[%lld] = %.8g, the definition gives %.8g", what,
                               (long long)i, got[i], want[i]);
    return true;
}

/* d_head 4 (shorter than a vector), 17 (a vector and one more), 64, a single
 * position, a single head, several sequences */
static const AttCase ATT_CASES[] = {
    {2, 5, 2, 8}, {1, 9, 3, 51}, {3, 6, 1, 64}, {2, 1, 2, 6}, {1, 13, 4, 16},
};

static int check_attention_forward(void) {
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof ATT_CASES / sizeof ATT_CASES[0]; k++) {
        for (int with_dropout = 0; ok && with_dropout < 2; with_dropout++) {
            AttSetup s = att_setup(ATT_CASES[k], with_dropout ? 0.3f : 0.0f, 30 + k);
            for (int64_t i = 0; i < s.qkv.size; i++) s.qkv.data[i] *= 2.0f; /* sharper softmax */
            att_forward(&s);
            double *ctx = malloc(sizeof(double) * (size_t)s.ctx.size);
            double *probs = malloc(sizeof(double) * (size_t)s.probs.size);
            double *mask = NULL;
            if (with_dropout) { /* the mask the layer must have drawn: one key per call */
                Rng rng;
                rng_seed(&rng, s.seed, 5);
                const uint64_t key = dropout_draw_key(&rng), th = dropout_threshold(s.p);
                mask = malloc(sizeof(double) * (size_t)s.probs.size);
                for (int64_t i = 0; i < s.probs.size; i++)
                    mask[i] = dropout_keeps(key, (uint64_t)i, th) ? 1.0 / (1.0 - s.p) : 0.0;
            }
            attention_reference(ctx, probs, &s, mask);
            /* float sums of dh products and a float exponential: 1e-5 relative */
            ok = matches("probs", s.probs.data, probs, s.probs.size, 1e-5);
            ok = ok && matches("ctx", s.ctx.data, ctx, s.ctx.size, 1e-5);
            /* the causal mask: exactly 0 above the diagonal */
            const int T = s.c.T;
            for (int64_t i = 0; ok && i < s.probs.size; i++)
                if ((i % T) > (i / T) % T)
                    ok = expect_true(s.probs.data[i] == 0.0f && (!with_dropout || s.dropped.data[i] == 0.0f),
                                     "weight of a later position at %lld: %g", (long long)i, s.probs.data[i]);
            if (with_dropout)
                for (int64_t i = 0; ok && i < s.probs.size; i++)
                    ok = expect_true(s.dropped.data[i] == s.probs.data[i] * (float)mask[i],
                                     "dropped[%lld] = %g is not probs %g times the mask %g",
                                     (long long)i, s.dropped.data[i], s.probs.data[i], mask[i]);
            if (!ok) describe(&s.c, s.p);
            free(ctx);
            free(probs);
            free(mask);
            att_free(&s);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Changing the tokens after position t (their q, k and v) leaves the outputs at
 * positions 0..t alone, in every sequence: the model cannot see the future. */
static int check_attention_causal(void) {
    const AttCase c = {2, 8, 2, 16};
    AttSetup s = att_setup(c, 0.0f, 50);
    att_forward(&s);
    Tensor before = tensor_zeros(2, c.B * c.T, c.D);
    tensor_copy(&before, &s.ctx);
    const int t = 4;
    for (int b = 0; b < c.B; b++)
        for (int r = t + 1; r < c.T; r++)
            for (int j = 0; j < 3 * c.D; j++) s.qkv.data[(b * c.T + r) * 3 * c.D + j] += 0.5f;
    att_forward(&s);
    bool ok = true, changed = false;
    for (int b = 0; b < c.B; b++)
        for (int r = 0; r < c.T; r++)
            for (int j = 0; j < c.D; j++) {
                const size_t i = (size_t)(b * c.T + r) * c.D + j;
                if (r <= t)
                    ok = ok && expect_true(s.ctx.data[i] == before.data[i],
                                           "sequence %d, position %d changed when only positions "
                                           "after %d did", b, r, t);
                else
                    changed = changed || s.ctx.data[i] != before.data[i];
            }
    ok = ok && expect_true(changed, "the later positions did not change either (test broken?)");
    tensor_free(&before);
    att_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_attention_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards */
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof ATT_CASES / sizeof ATT_CASES[0]; k++) {
        for (int with_dropout = 0; ok && with_dropout < 2; with_dropout++) {
            if (ATT_CASES[k].D > 32) continue; /* the big ones: forward only, for time */
            AttSetup s = att_setup(ATT_CASES[k], with_dropout ? 0.25f : 0.0f, 60 + k);
            att_forward(&s);
            Tensor dqkv = tensor_zeros_like(&s.qkv), dscores = tensor_zeros_like(&s.probs);
            attention_backward(&dqkv, &dscores, &s.R, &s.qkv, &s.probs, s.p > 0 ? &s.dropped : NULL);
            ok = fd_check("attention d qkv", s.qkv.data, dqkv.data, s.qkv.size, att_objective, &s,
                          1e-2f, 1e-3, 2e-3);
            if (!ok) describe(&s.c, s.p);
            tensor_free(&dqkv);
            tensor_free(&dscores);
            att_free(&s);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Evaluation: no dropout, dropped (when given) a copy of probs, nothing drawn; the
 * backward adds (+=) into dqkv. */
static int check_attention_eval_adds(void) {
    const AttCase c = {2, 6, 2, 12};
    AttSetup s = att_setup(c, 0.0f, 70);
    Rng rng, before;
    rng_seed(&rng, 1, 1);
    before = rng;
    fill_uniform(s.dropped.data, s.dropped.size, 71, -1, 1);
    attention_forward(&s.ctx, &s.probs, &s.dropped, &s.qkv, 0.5f, false, &rng);
    bool ok = expect_close("dropped at evaluation", s.dropped.data, s.probs.data, s.probs.size, 0, 0);
    ok = ok && expect_true(rng.state == before.state, "evaluation drew from the Rng");
    Tensor ctx2 = tensor_zeros_like(&s.ctx);
    attention_forward(&ctx2, &s.probs, NULL, &s.qkv, 0.0f, true, NULL);
    ok = ok && expect_close("ctx, evaluation vs p = 0", ctx2.data, s.ctx.data, s.ctx.size, 0, 0);
    Tensor d0 = tensor_zeros_like(&s.qkv), dp = random2(72, c.B * c.T, 3 * c.D), p = tensor_zeros_like(&s.qkv);
    Tensor ws = tensor_zeros_like(&s.probs);
    tensor_copy(&p, &dp);
    attention_backward(&d0, &ws, &s.R, &s.qkv, &s.probs, NULL);
    attention_backward(&dp, &ws, &s.R, &s.qkv, &s.probs, &s.dropped);
    for (int64_t i = 0; i < p.size; i++) p.data[i] += d0.data[i];
    ok = ok && expect_close("attention d qkv added", dp.data, p.data, p.size, 1e-6f, 1e-6f);
    tensor_free(&ctx2);
    tensor_free(&d0);
    tensor_free(&dp);
    tensor_free(&p);
    tensor_free(&ws);
    att_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_attention_threads(void) {
    const AttCase c = {3, 35, 2, 64};
    AttSetup s = att_setup(c, 0.2f, 80);
    Tensor ctx[2], probs[2], dropped[2], dqkv[2], ds[2];
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        att_forward(&s);
        ctx[t] = tensor_zeros_like(&s.ctx), probs[t] = tensor_zeros_like(&s.probs);
        dropped[t] = tensor_zeros_like(&s.probs), dqkv[t] = tensor_zeros_like(&s.qkv);
        ds[t] = tensor_zeros_like(&s.probs);
        tensor_copy(&ctx[t], &s.ctx);
        tensor_copy(&probs[t], &s.probs);
        tensor_copy(&dropped[t], &s.dropped);
        attention_backward(&dqkv[t], &ds[t], &s.R, &s.qkv, &s.probs, &s.dropped);
    }
    bool ok = bits_equal("attention ctx", &ctx[0], &ctx[1]);
    ok = bits_equal("attention probs", &probs[0], &probs[1]) && ok;
    ok = bits_equal("attention dropped", &dropped[0], &dropped[1]) && ok;
    ok = bits_equal("attention d qkv", &dqkv[0], &dqkv[1]) && ok;
    ok = bits_equal("attention d scores", &ds[0], &ds[1]) && ok;
    for (int t = 0; t < 2; t++) {
        tensor_free(&ctx[t]);
        tensor_free(&probs[t]);
        tensor_free(&dropped[t]);
        tensor_free(&dqkv[t]);
        tensor_free(&ds[t]);
    }
    att_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void attention_bad_heads(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros(2, 8, 30), ctx = tensor_zeros(2, 8, 10), probs = tensor_zeros(4, 2, 3, 4, 4);
    attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
}

static void attention_bad_rows(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros(2, 9, 24), ctx = tensor_zeros(2, 9, 8), probs = tensor_zeros(4, 2, 2, 4, 4);
    attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
}

static int check_attention_errors(void) {
    ChildResult r;
    run_child(attention_bad_heads, NULL, &r);
    bool ok = expect_exit("d_model 10 with 3 heads", &r, 2, "attention.c", "d_model 10",
                          "3 heads", (const char *)NULL);
    run_child(attention_bad_rows, NULL, &r);
    ok = expect_exit("9 rows for 2 sequences of 4", &r, 2, "qkv", "[9, 24]", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ softmax_exp */

/* Against exp in double: relative error at most 1.1e-7 (the bound softmax_exp.h
 * states for every float of [-87.33, 0], with or without FMA) on a million points;
 * exactly 1 at 0; 0 below the normal range and at -inf; NaN stays NaN. One Taylor
 * term fewer would already give 1.7e-7. */
static int check_softmax_exp(void) {
    enum { N = 1000000 };
    double worst = 0;
    float worst_x = 0;
    for (int i = 0; i <= N; i++) {
        const float x = -87.3f * (float)i / N;
        const double want = exp((double)x), got = softmax_exp(x);
        const double rel = fabs(got - want) / want;
        if (rel > worst) worst = rel, worst_x = x;
    }
    bool ok = expect_true(worst <= 1.1e-7, "softmax_exp: relative error %.3g at x = %.9g (bound 1.1e-7)",
                          worst, worst_x);
    ok = expect_true(softmax_exp(0.0f) == 1.0f, "softmax_exp(0) = %.9g", softmax_exp(0.0f)) && ok;
    ok = expect_true(softmax_exp(-88.0f) == 0.0f && softmax_exp(-1e30f) == 0.0f &&
                         softmax_exp(-INFINITY) == 0.0f,
                     "softmax_exp below -87.33: %g, %g, %g (expected 0)", softmax_exp(-88.0f),
                     softmax_exp(-1e30f), softmax_exp(-INFINITY)) && ok;
    ok = expect_true(isnan(softmax_exp(NAN)), "softmax_exp(NaN) = %g", softmax_exp(NAN)) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ fast cross-entropy */

/* WikiText-2's vocabulary (33,278 words), 40 rows, logits of a trained model's spread
 * (a few units) and one far-off row; against the double version. */
static int check_xent_fast_vs_exact(void) {
    enum { N = 40, V = 33278 };
    Tensor z = random2(90, N, V), d_exact = tensor_zeros(2, N, V), d_fast = tensor_zeros(2, N, V);
    for (int64_t i = 0; i < z.size; i++) z.data[i] *= 4.0f;
    for (int j = 0; j < V; j++) z.data[(size_t)7 * V + j] = 30.0f + 50.0f * z.data[(size_t)7 * V + j];
    int labels[N];
    for (int n = 0; n < N; n++) labels[n] = (n * 7919) % V;
    const float exact = softmax_cross_entropy(&d_exact, &z, labels);
    const float fast = softmax_cross_entropy_fast(&d_fast, &z, labels, 1.0f);
    bool ok = expect_true(fabs(fast - exact) <= 2e-6 * fabs(exact),
                          "loss %.9g, exact %.9g (bound 2e-6 relative)", fast, exact);
    ok = expect_close("d logits, fast vs exact (bound 1e-6 / N)", d_fast.data, d_exact.data, z.size,
                      1e-6f / N, 0) && ok;
    /* the loss alone is the same number */
    ok = expect_true(softmax_cross_entropy_fast(NULL, &z, labels, 1.0f) == fast,
                     "loss without the gradient differs") && ok;
    /* += : a second call doubles the gradient */
    Tensor twice = tensor_zeros(2, N, V);
    tensor_copy(&twice, &d_fast);
    softmax_cross_entropy_fast(&twice, &z, labels, 1.0f);
    for (int64_t i = 0; i < z.size; i++) d_fast.data[i] *= 2.0f;
    ok = expect_close("d logits added twice", twice.data, d_fast.data, z.size, 1e-9f, 1e-6f) && ok;
    tensor_free(&z);
    tensor_free(&d_exact);
    tensor_free(&d_fast);
    tensor_free(&twice);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

typedef struct {
    Tensor z;
    const int *labels;
} XentSetup;

static double xent_objective(void *ctx) {
    XentSetup *s = ctx;
    return softmax_cross_entropy_fast(NULL, &s->z, s->labels, 1.0f);
}

/* Small shapes: finite differences; logits of +-1000 and a NaN. */
static int check_xent_fast_small(void) {
    omp_set_num_threads(1);
    bool ok = true;
    const int cases[][2] = {{4, 5}, {1, 37}, {7, 3}, {3, 1}};
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int N = cases[k][0], K = cases[k][1];
        XentSetup s = {random2(95 + k, N, K), NULL};
        for (int64_t i = 0; i < s.z.size; i++) s.z.data[i] *= 3.0f;
        int labels[8];
        for (int n = 0; n < N; n++) labels[n] = (n * 3 + (int)k) % K;
        s.labels = labels;
        Tensor dz = tensor_zeros_like(&s.z);
        softmax_cross_entropy_fast(&dz, &s.z, labels, 1.0f);
        /* smooth: truncation below 2e-6; the float loss's rounding 6e-6 on the quotient */
        ok = fd_check("fast cross-entropy d logits", s.z.data, dz.data, s.z.size, xent_objective, &s,
                      1e-2f, 1e-4, 2e-3);
        if (!ok) printf("case: logits [%d, %d]\n", N, K);
        tensor_free(&s.z);
        tensor_free(&dz);
    }
    const float z[3][3] = {{1000, -1000, 0}, {-1000, 1000, 1000}, {0, 0, 0}};
    const int labels[3] = {0, 1, 2};
    Tensor t = tensor_zeros(2, 3, 3), dz = tensor_zeros(2, 3, 3);
    memcpy(t.data, z, sizeof z);
    const float loss = softmax_cross_entropy_fast(&dz, &t, labels, 1.0f);
    const double want = (0.0 + log(2.0) + log(3.0)) / 3.0;
    ok = ok && expect_true(fabs(loss - want) < 1e-6, "logits of +-1000: loss %.9g, expected %.9g", loss, want);
    const float dwant[9] = {0, 0, 0, 0, -0.5f / 3, 0.5f / 3, 1.0f / 9, 1.0f / 9, -2.0f / 9};
    ok = ok && expect_close("d logits for +-1000", dz.data, dwant, 9, 1e-7f, 1e-6f);
    t.data[4] = NAN;
    ok = ok && expect_true(isnan(softmax_cross_entropy_fast(NULL, &t, labels, 1.0f)),
                           "a NaN logit does not give a NaN loss");
    tensor_free(&t);
    tensor_free(&dz);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_xent_fast_threads(void) {
    enum { N = 37, V = 5003 };
    Tensor z = random2(99, N, V), d[2];
    int labels[N];
    for (int n = 0; n < N; n++) labels[n] = (n * 131) % V;
    float loss[2];
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        d[t] = tensor_zeros(2, N, V);
        loss[t] = softmax_cross_entropy_fast(&d[t], &z, labels, 1.0f);
    }
    bool ok = expect_true(loss[0] == loss[1], "loss on 1 thread %.9g, on 2 %.9g", loss[0], loss[1]);
    ok = bits_equal("fast cross-entropy d logits", &d[0], &d[1]) && ok;
    tensor_free(&z);
    tensor_free(&d[0]);
    tensor_free(&d[1]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void xent_bad_label(void *arg) {
    (void)arg;
    Tensor z = tensor_zeros(2, 2, 4);
    const int labels[2] = {3, 4};
    softmax_cross_entropy_fast(NULL, &z, labels, 1.0f);
}

static int check_xent_fast_bad_label(void) {
    ChildResult r;
    run_child(xent_bad_label, NULL, &r);
    return expect_exit("label 4 of 4 classes", &r, 2, "softmax_xent.c", "label 4 of row 1",
                       "0..3", (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

int main(void) {
    check_begin("attention and large-vocabulary cross-entropy");
    check_run(NULL, "attention forward vs plain loops in double (d_head 4 to 64, dropout)", check_attention_forward, 30);
    check_run(NULL, "attention: later positions never change earlier outputs (causal)", check_attention_causal, 10);
    check_run(NULL, "attention backward vs finite differences, with and without dropout", check_attention_grad, 60);
    check_run(NULL, "attention at evaluation: no dropout, nothing drawn; backward adds (+=)", check_attention_eval_adds, 10);
    check_run(NULL, "attention forward and backward: same bits on 1 and 2 threads", check_attention_threads, 30);
    check_run(NULL, "attention: heads that do not divide d_model, rows not whole sequences", check_attention_errors, 10);
    check_run(NULL, "softmax_exp: within 1.1e-7 of exp on [-87.3, 0]; 1, 0, NaN at the ends", check_softmax_exp, 30);
    check_run(NULL, "fast cross-entropy vs exact on 33,278 classes; loss alone; adds (+=)", check_xent_fast_vs_exact, 60);
    check_run(NULL, "fast cross-entropy: finite differences, logits of +-1000, NaN", check_xent_fast_small, 30);
    check_run(NULL, "fast cross-entropy: same bits on 1 and 2 threads", check_xent_fast_threads, 30);
    check_run(NULL, "fast cross-entropy: a label outside the classes stops", check_xent_fast_bad_label, 10);
    return check_end();
}
