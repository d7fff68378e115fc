/* Unit tests of lesson 05's network: the vectorised tanh against tanh in double, the
 * small linear layers against their definition (every kernel path: batches below and
 * above 16, widths below and above 8, tails), the MLP's backward against finite
 * differences, orthogonal initialisation, and the policy's parameters (CleanRL's names,
 * order, count and gains). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "framework/gradcheck.h"
#include "layers/linear_small.h"
#include "layers/tanh.h"
#include "models/mlp_policy.h"

/* A network's layer l's weight and bias: its block's parameters */
#define WEIGHT(net, l) ((net).blocks.params->items[(net).blocks.items[l].first_param])
#define BIAS(net, l) ((net).blocks.params->items[(net).blocks.items[l].first_param + 1])

/* ------------------------------------------------------------ tanh */

static double ulps(float got, double want) {
    const float w = (float)want;
    const float ulp = nextafterf(fabsf(w), INFINITY) - fabsf(w);
    return fabs((double)got - want) / ulp;
}

/* Every 61st float from 0 to 10 (some 18 million), both signs: within 3 units in the last
 * place of tanh in double, odd, and exactly +-1 beyond 9. */
static int check_tanh_values(void) {
    enum { CHUNK = 1 << 16 };
    static float in[CHUNK], out[CHUNK], neg_in[CHUNK], neg_out[CHUNK];
    double worst = 0;
    float worst_x = 0;
    bool ok = true;
    uint32_t bits = 0;
    for (bool done = false; !done && ok;) {
        int n = 0;
        for (; n < CHUNK; n++, bits += 61) {
            float x;
            memcpy(&x, &bits, sizeof x);
            if (x > 10.0f) {
                done = true;
                break;
            }
            in[n] = x;
            neg_in[n] = -x;
        }
        tanh_values(out, in, n);
        tanh_values(neg_out, neg_in, n);
        for (int i = 0; ok && i < n; i++) {
            const double e = ulps(out[i], tanh((double)in[i]));
            if (e > worst) worst = e, worst_x = in[i];
            ok = expect_true(neg_out[i] == -out[i], "tanh(-%.9g) = %.9g is not -tanh(%.9g) = %.9g", (double)in[i],
                             (double)neg_out[i], (double)in[i], (double)-out[i]);
        }
    }
    printf("worst: %.2f ulp at %.9g\n", worst, (double)worst_x);
    ok = ok && expect_true(worst <= 3.0, "tanh is %.2f units in the last place off at %.9g", worst, (double)worst_x);
    const float special[] = {0.0f, -0.0f, 9.0f, 20.0f, -1e30f, INFINITY, -INFINITY, NAN, 1e-30f};
    float got[9];
    tanh_values(got, special, 9);
    ok = ok && expect_true(got[0] == 0.0f && !signbit(got[0]) && got[1] == 0.0f && signbit(got[1]),
                           "tanh(+-0) = %g, %g: the sign of zero is kept", (double)got[0], (double)got[1]);
    ok = ok && expect_true(got[2] == 1.0f && got[3] == 1.0f && got[4] == -1.0f && got[5] == 1.0f && got[6] == -1.0f,
                           "tanh of 9, 20, -1e30, inf, -inf: %g %g %g %g %g", (double)got[2], (double)got[3],
                           (double)got[4], (double)got[5], (double)got[6]);
    ok = ok && expect_true(isnan(got[7]), "tanh(NaN) = %g", (double)got[7]);
    ok = ok && expect_true(got[8] == 1e-30f, "tanh(1e-30) = %g", (double)got[8]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_tanh_backward(void) {
    Tensor x = tensor_zeros(2, 7, 9), y = tensor_zeros(2, 7, 9), dy = tensor_zeros(2, 7, 9), dx = tensor_zeros(2, 7, 9);
    fill_uniform(x.data, x.size, 11, -3, 3);
    fill_uniform(dy.data, dy.size, 12, -1, 1);
    fill_uniform(dx.data, dx.size, 13, -1, 1); /* it adds */
    Tensor start = tensor_to(&dx, DEVICE_CPU);
    tanh_forward(&y, &x);
    tanh_backward(&dx, &dy, &y);
    bool ok = true;
    for (int64_t i = 0; ok && i < x.size; i++) {
        const double want = start.data[i] + dy.data[i] * (1.0 - (double)y.data[i] * y.data[i]);
        ok = expect_true(fabs(dx.data[i] - want) <= 1e-6 * (1 + fabs(want)), "dx[%lld] = %g, want %g (+= dy (1 - y^2))",
                         (long long)i, (double)dx.data[i], want);
    }
    FREE_ALL(&x, &y, &dy, &dx, &start);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ linear_small */

static float *random_floats(int64_t n, uint64_t seed) {
    float *p = xcalloc((size_t)n, sizeof *p);
    fill_uniform(p, n, seed, -1, 1);
    return p;
}

/* forward and backward of one shape against sums in double; gradients start non-zero */
static bool linear_case(int B, int in, int out) {
    float *x = random_floats((int64_t)B * in, 1), *w = random_floats((int64_t)out * in, 2), *b = random_floats(out, 3);
    float *dy = random_floats((int64_t)B * out, 4), *dx = random_floats((int64_t)B * in, 5);
    float *dw = random_floats((int64_t)out * in, 6), *db = random_floats(out, 7);
    float *dx0 = xcalloc((size_t)B * in, sizeof(float)), *dw0 = xcalloc((size_t)out * in, sizeof(float));
    float *db0 = xcalloc((size_t)out, sizeof(float)), *y = xcalloc((size_t)B * out, sizeof(float));
    float *wt = xcalloc((size_t)in * out, sizeof(float));
    memcpy(dx0, dx, (size_t)B * in * sizeof(float));
    memcpy(dw0, dw, (size_t)out * in * sizeof(float));
    memcpy(db0, db, (size_t)out * sizeof(float));
    linear_small_forward(y, x, w, b, wt, B, in, out);
    linear_small_backward(dx, dw, db, dy, x, w, B, in, out);
    bool ok = true;
    const double tol = 2e-6 * (in > out ? in : out > B ? out : B);
    for (int r = 0; ok && r < B; r++)
        for (int o = 0; ok && o < out; o++) {
            double s = b[o];
            for (int i = 0; i < in; i++) s += (double)x[r * in + i] * w[o * in + i];
            ok = expect_true(fabs(y[r * out + o] - s) <= tol, "B %d in %d out %d: y[%d][%d] = %.7g, want %.7g", B, in,
                             out, r, o, (double)y[r * out + o], s);
        }
    for (int r = 0; ok && r < B; r++)
        for (int i = 0; ok && i < in; i++) {
            double s = dx0[r * in + i];
            for (int o = 0; o < out; o++) s += (double)dy[r * out + o] * w[o * in + i];
            ok = expect_true(fabs(dx[r * in + i] - s) <= tol, "B %d in %d out %d: dx[%d][%d] = %.7g, want %.7g", B,
                             in, out, r, i, (double)dx[r * in + i], s);
        }
    for (int o = 0; ok && o < out; o++) {
        double sb = db0[o];
        for (int r = 0; r < B; r++) sb += dy[r * out + o];
        ok = expect_true(fabs(db[o] - sb) <= tol, "B %d in %d out %d: db[%d] = %.7g, want %.7g", B, in, out, o,
                         (double)db[o], sb);
        for (int i = 0; ok && i < in; i++) {
            double s = dw0[o * in + i];
            for (int r = 0; r < B; r++) s += (double)dy[r * out + o] * x[r * in + i];
            ok = expect_true(fabs(dw[o * in + i] - s) <= tol, "B %d in %d out %d: dw[%d][%d] = %.7g, want %.7g", B,
                             in, out, o, i, (double)dw[o * in + i], s);
        }
    }
    /* dx NULL: the same weight gradients */
    float *dw2 = xcalloc((size_t)out * in, sizeof(float)), *db2 = xcalloc((size_t)out, sizeof(float));
    float *dw3 = xcalloc((size_t)out * in, sizeof(float)), *db3 = xcalloc((size_t)out, sizeof(float));
    linear_small_backward(NULL, dw2, db2, dy, x, w, B, in, out);
    linear_small_backward(dx, dw3, db3, dy, x, w, B, in, out);
    ok = ok && expect_close("dw with dx NULL", dw2, dw3, (int64_t)out * in, 0, 0) &&
         expect_close("db with dx NULL", db2, db3, out, 0, 0);
    float *bufs[] = {x, w, b, dy, dx, dw, db, dx0, dw0, db0, y, wt, dw2, db2, dw3, db3};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xfree(bufs[i]);
    return ok;
}

static int check_linear_small(void) {
    const int batches[] = {1, 3, 4, 5, 15, 16, 17, 128};
    const int ins[] = {1, 3, 4, 8, 13, 64};
    const int outs[] = {1, 2, 7, 8, 16, 19, 64};
    bool ok = true;
    for (size_t a = 0; a < sizeof batches / sizeof *batches; a++)
        for (size_t b = 0; b < sizeof ins / sizeof *ins; b++)
            for (size_t c = 0; ok && c < sizeof outs / sizeof *outs; c++) ok = linear_case(batches[a], ins[b], outs[c]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A row's output does not depend on the rows beside it (same kernel path): 128 rows at
 * once and in pieces of 32 give the same bits. */
static int check_linear_rows_independent(void) {
    const int B = 128, in = 64, out = 64;
    float *x = random_floats((int64_t)B * in, 21), *w = random_floats((int64_t)out * in, 22), *b = random_floats(out, 23);
    float *y = xcalloc((size_t)B * out, sizeof(float)), *y2 = xcalloc((size_t)B * out, sizeof(float));
    float *wt = xcalloc((size_t)in * out, sizeof(float));
    linear_small_forward(y, x, w, b, wt, B, in, out);
    for (int r = 0; r < B; r += 32) linear_small_forward(y2 + r * out, x + r * in, w, b, wt, 32, in, out);
    const bool ok = expect_close("128 rows against 4 x 32", y2, y, (int64_t)B * out, 0, 0);
    float *bufs[] = {x, w, b, y, y2, wt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xfree(bufs[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the MLP */

typedef struct {
    Mlp *m;
    const float *x, *R; /* input [B, in], weights of the outputs [B, out] */
    int B;
} MlpSetup;

static double mlp_objective(void *ctx) {
    MlpSetup *s = ctx;
    const float *y = mlp_forward(s->m, s->x, s->B);
    double sum = 0;
    for (int i = 0; i < s->B * s->m->out; i++) sum += (double)y[i] * s->R[i];
    return sum;
}

/* Backward against finite differences for every parameter, at batch 5 (dot-product
 * kernels) and 24 (the transposed-weight kernels). */
static int check_mlp_grad(void) {
    bool ok = true;
    const int batches[] = {5, 24};
    for (int k = 0; k < 2; k++) {
        const int B = batches[k];
        Rng rng;
        rng_seed(&rng, 31, 0);
        MlpPolicy pol;
        mlp_policy_init(&pol, 3, 2, false, 12, B, &rng);
        /* larger weights than the init's, so that every layer matters to the loss */
        for (int64_t i = 0; i < pol.params.total; i++) pol.params.values.data[i] += 0.3f * rng_normal(&rng);
        float *x = random_floats((int64_t)B * 3, 32), *R = random_floats((int64_t)B * 2, 33);
        MlpSetup s = {&pol.actor, x, R, B};
        params_zero_grad(&pol.params);
        mlp_forward(&pol.actor, x, B);
        mlp_backward(&pol.actor, x, R, B);
        for (int l = 0; l < 3; l++) {
            Param *ps[2] = {WEIGHT(pol.actor, l), BIAS(pol.actor, l)};
            for (int j = 0; j < 2; j++)
                ok = fd_check(ps[j]->name, ps[j]->value.data, ps[j]->grad.data, ps[j]->value.size, mlp_objective, &s,
                              1e-2f, 1e-3, 2e-3) && ok;
        }
        /* the critic's gradients stay 0: only the actor ran backward */
        for (int l = 0; l < 3; l++)
            for (int64_t i = 0; ok && i < WEIGHT(pol.critic, l)->grad.size; i++)
                ok = expect_true(WEIGHT(pol.critic, l)->grad.data[i] == 0.0f, "%s got a gradient", WEIGHT(pol.critic, l)->name);
        xfree(x);
        xfree(R);
        mlp_policy_free(&pol);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* mlp_forward_cached gives mlp_forward's bits, keeps its transposed weights while the
 * version stays, and makes them again when it changes. */
static int check_mlp_cached(void) {
    Rng rng;
    rng_seed(&rng, 41, 0);
    MlpPolicy p;
    mlp_policy_init(&p, 4, 2, false, 64, 128, &rng);
    float *x = random_floats(128 * 4, 42), y[128 * 2], yc[128 * 2];
    bool ok = true;
    const int batches[3] = {1, 4, 128};
    for (int k = 0; k < 3; k++) {
        memcpy(y, mlp_forward(&p.actor, x, batches[k]), sizeof(float) * 2 * batches[k]);
        memcpy(yc, mlp_forward_cached(&p.actor, x, batches[k], 1), sizeof(float) * 2 * batches[k]);
        ok = expect_close("cached against plain forward", yc, y, 2 * batches[k], 0, 0) && ok;
    }
    for (int64_t i = 0; i < WEIGHT(p.actor, 1)->value.size; i++) WEIGHT(p.actor, 1)->value.data[i] *= 2.0f;
    memcpy(yc, mlp_forward_cached(&p.actor, x, 4, 1), sizeof(float) * 8); /* same version: the old weights */
    ok = expect_close("version 1 again: the weights it was made for", yc, y, 8, 0, 0) && ok;
    memcpy(y, mlp_forward(&p.actor, x, 4), sizeof(float) * 8);
    memcpy(yc, mlp_forward_cached(&p.actor, x, 4, 2), sizeof(float) * 8);
    ok = expect_close("version 2: the new weights", yc, y, 8, 0, 0) && ok;
    xfree(x);
    mlp_policy_free(&p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ initialisation */

/* w [rows, cols] * w^T (rows <= cols) or w^T * w (rows > cols) is gain^2 times I */
static bool orthonormal(const float *w, int rows, int cols, float gain) {
    const bool wide = rows <= cols;
    const int k = wide ? rows : cols, len = wide ? cols : rows;
    double worst = 0;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            double dot = 0;
            for (int i = 0; i < len; i++)
                dot += wide ? (double)w[a * cols + i] * w[b * cols + i] : (double)w[i * cols + a] * w[i * cols + b];
            worst = fmax(worst, fabs(dot / ((double)gain * gain) - (a == b)));
        }
    return expect_true(worst < 1e-5, "%d x %d with gain %g: |W W^T / gain^2 - I| up to %.3g", rows, cols, (double)gain,
                       worst);
}

static int check_orthogonal(void) {
    const int shapes[][2] = {{64, 4}, {64, 64}, {2, 64}, {1, 64}, {3, 3}, {5, 1}};
    bool ok = true;
    for (size_t s = 0; ok && s < sizeof shapes / sizeof *shapes; s++) {
        const int r = shapes[s][0], c = shapes[s][1];
        float *w = xcalloc((size_t)r * c, sizeof(float)), *w2 = xcalloc((size_t)r * c, sizeof(float));
        Rng a, b;
        rng_seed(&a, 7, 1);
        rng_seed(&b, 7, 1);
        orthogonal_init(w, r, c, 1.4142135f, &a);
        orthogonal_init(w2, r, c, 1.4142135f, &b);
        ok = orthonormal(w, r, c, 1.4142135f) && expect_close("the same seed twice", w2, w, (int64_t)r * c, 0, 0);
        xfree(w);
        xfree(w2);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_policy_layout(void) {
    Rng rng;
    rng_seed(&rng, 1, 1);
    MlpPolicy p;
    mlp_policy_init(&p, 4, 2, false, 64, 128, &rng);
    const char *names[] = {"critic.0.weight", "critic.0.bias", "critic.2.weight", "critic.2.bias",
                           "critic.4.weight", "critic.4.bias", "actor.0.weight",  "actor.0.bias",
                           "actor.2.weight",  "actor.2.bias",  "actor.4.weight",  "actor.4.bias"};
    bool ok = expect_true(p.params.count == 12 && p.params.total == 9155,
                          "%d parameters, %lld scalars; CleanRL's CartPole agent has 12 and 9155", p.params.count,
                          (long long)p.params.total);
    for (int i = 0; ok && i < 12; i++)
        ok = expect_true(strcmp(p.params.items[i]->name, names[i]) == 0, "parameter %d is %s, want %s", i,
                         p.params.items[i]->name, names[i]);
    ok = ok && orthonormal(WEIGHT(p.critic, 0)->value.data, 64, 4, sqrtf(2.0f)) &&
         orthonormal(WEIGHT(p.critic, 1)->value.data, 64, 64, sqrtf(2.0f)) &&
         orthonormal(WEIGHT(p.critic, 2)->value.data, 1, 64, 1.0f) && orthonormal(WEIGHT(p.actor, 2)->value.data, 2, 64, 0.01f);
    for (int l = 0; ok && l < 3; l++)
        for (int64_t i = 0; ok && i < BIAS(p.actor, l)->value.size; i++)
            ok = expect_true(BIAS(p.actor, l)->value.data[i] == 0.0f && BIAS(p.critic, l)->value.data[0] == 0.0f,
                             "a bias starts non-zero");
    ok = ok && expect_true(p.logstd == NULL, "a discrete policy has no log std");
    mlp_policy_free(&p);
    MlpPolicy c;
    mlp_policy_init(&c, 3, 1, true, 64, 8, &rng);
    ok = ok && expect_true(c.params.count == 13 && strcmp(c.params.items[6]->name, "actor_mean.0.weight") == 0 &&
                               strcmp(c.params.items[12]->name, "actor_logstd") == 0 && c.logstd->value.data[0] == 0.0f,
                           "continuous: actor_mean.* and actor_logstd (0) after the critic");
    mlp_policy_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_big_batch(void *arg) {
    (void)arg;
    Rng rng;
    rng_seed(&rng, 1, 1);
    MlpPolicy p;
    mlp_policy_init(&p, 4, 2, false, 8, 16, &rng);
    float x[17 * 4] = {0};
    mlp_forward(&p.actor, x, 17);
}

static int check_batch_limit(void) {
    ChildResult r;
    run_child(body_big_batch, NULL, &r);
    return expect_exit("a forward of 17 rows with room for 16", &r, 2, "mlp_forward", "17", "16", (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

int main(void) {
    check_begin("models/mlp_policy and its layers");
    check_run(NULL, "tanh within 3 ulp of tanh in double on 36 million floats in [-10, 10], odd, +-1, NaN", check_tanh_values, 60);
    check_run(NULL, "tanh backward adds dy (1 - y^2)", check_tanh_backward, 10);
    check_run(NULL, "linear_small forward and backward against the definition, 336 shapes", check_linear_small, 60);
    check_run(NULL, "linear_small: a row's output does not depend on the rows beside it", check_linear_rows_independent, 10);
    check_run(NULL, "MLP backward against finite differences (batches 5 and 24)", check_mlp_grad, 60);
    check_run(NULL, "cached forward: the same bits, its weights kept until the version changes", check_mlp_cached, 10);
    check_run(NULL, "orthogonal_init: orthonormal rows or columns times the gain, seeded", check_orthogonal, 10);
    check_run(NULL, "policy parameters: CleanRL's names, order, 9,155 scalars, gains, zero biases", check_policy_layout, 10);
    check_run(NULL, "a batch larger than the room made for it stops with the sizes", check_batch_limit, 10);
    return check_end();
}
