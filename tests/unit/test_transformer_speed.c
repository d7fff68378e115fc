/* The kernels that make lesson 04's transformer fast on the CPU, each against the plain
 * path it replaces:
 *
 *  - gemm_tiled (ops/gemm.h): every way it cuts a product (M, N, K, one tile), every
 *    transpose, alpha and beta, wide leading dimensions: against a double-precision
 *    loop, and the same bits on 1, 2 and 3 threads;
 *  - softmax_exp8 (8 lanes): the bits of softmax_exp on every float it is used on;
 *  - softmax_cross_entropy_fast_store: the same bits as softmax_cross_entropy_fast into
 *    zeros, also in place (the gradient over the logits), and the loss;
 *  - linear forward and backward on a decoder's shapes: the same bits on 1, 2, 3
 *    threads, and close to a double-precision reference;
 *  - the whole model (a decoder large enough to be tiled): one training step gives the
 *    same loss and gradients on 1, 2 and 3 threads, bit for bit. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "layers/linear.h"
#include "layers/softmax_exp.h"
#include "layers/softmax_xent.h"
#include "models/transformer.h"
#include "ops/gemm.h"

static float *random_floats(int64_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    fill_uniform(x, n, seed, -1.0f, 1.0f);
    return x;
}

/* ------------------------------------------------------------ gemm_tiled */

typedef struct {
    int M, N, K;
    const char *what; /* which cut the plan should take */
} TileCase;

/* C = alpha op(A) op(B) + beta C on 1, 2 and 3 threads: the same bits each time, and
 * each entry within (K + 3 + 8) eps S of the double loop (S the sum of the magnitudes;
 * a cut K adds up to 8 partial sums). The columns past the widths hold NaN (A, B) or a
 * sentinel (C) that must survive. */
static bool tiled_case(const TileCase *c, bool ta, bool tb, float alpha, float beta,
                       uint64_t seed) {
    const int M = c->M, N = c->N, K = c->K;
    const int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    const int lda = acols + 3, ldb = bcols + 5, ldc = N + 2;
    float *A = random_floats((int64_t)arows * lda, seed);
    float *B = random_floats((int64_t)brows * ldb, seed + 1);
    float *C0 = random_floats((int64_t)M * ldc, seed + 2);
    for (int r = 0; r < arows; r++)
        for (int k = acols; k < lda; k++) A[(size_t)r * lda + k] = NAN;
    for (int r = 0; r < brows; r++)
        for (int k = bcols; k < ldb; k++) B[(size_t)r * ldb + k] = NAN;
    for (int r = 0; r < M; r++)
        for (int k = N; k < ldc; k++) C0[(size_t)r * ldc + k] = 12345.0f;
    float *C[3];
    for (int t = 0; t < 3; t++) {
        C[t] = malloc(sizeof(float) * (size_t)M * ldc);
        memcpy(C[t], C0, sizeof(float) * (size_t)M * ldc);
        omp_set_num_threads(t + 1);
        gemm_tiled(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C[t], ldc);
    }
    omp_set_num_threads(2);
    bool ok = expect_true(memcmp(C[0], C[1], sizeof(float) * (size_t)M * ldc) == 0 &&
                              memcmp(C[0], C[2], sizeof(float) * (size_t)M * ldc) == 0,
                          "gemm_tiled %s [%d x %d x %d], trans %d%d: 1, 2, 3 threads differ",
                          c->what, M, N, K, ta, tb);
    /* the double loop on a sample of entries (every 7th row and 5th column) */
    for (int i = 0; ok && i < M; i += 7)
        for (int j = 0; ok && j < ldc; j += (j < N ? 5 : 1)) {
            const float got = C[0][(size_t)i * ldc + j];
            if (j >= N) {
                ok = expect_true(got == 12345.0f, "C[%d][%d] past N changed to %g", i, j, got);
                continue;
            }
            double sum = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                const double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                const double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            const double c0 = C0[(size_t)i * ldc + j];
            const double want = alpha * sum + beta * c0;
            const double tol = (K + 11) * (double)FLT_EPSILON * (fabs(alpha) * mag + fabs(beta * c0));
            ok = expect_true(fabs(got - want) <= tol,
                             "gemm_tiled %s [%d x %d x %d], trans %d%d: C[%d][%d] = %.9g, "
                             "expected %.9g (tolerance %.3g)", c->what, M, N, K, ta, tb, i, j,
                             got, want, tol);
        }
    for (int t = 0; t < 3; t++) free(C[t]);
    free(A);
    free(B);
    free(C0);
    return ok;
}

static int check_gemm_tiled(void) {
    const TileCase cases[] = {
        {96, 4100, 128, "cut N"},   /* packing A [96, 128] again is cheapest */
        {4100, 96, 128, "cut M"},   /* packing B [128, 96] again is cheapest */
        {64, 72, 8200, "cut K"},    /* C [64, 72] is small against both */
        {100, 90, 80, "one tile"},  /* too small to share */
        {33, 29, 0, "K = 0"},       /* beta C only */
    };
    bool ok = true;
    uint64_t seed = 1;
    for (size_t c = 0; ok && c < sizeof cases / sizeof cases[0]; c++)
        for (int t = 0; ok && t < 4; t++)
            ok = tiled_case(&cases[c], t & 1, t >> 1, t == 3 ? 1.0f : 0.5f, t == 0 ? 0.0f : 0.75f,
                            seed += 3);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Inside a parallel region each thread's call is its own: right results. */
static int check_gemm_tiled_in_region(void) {
    const TileCase c = {96, 4100, 128, "in a region"};
    int fails = 0;
#pragma omp parallel num_threads(2) reduction(+ : fails)
    fails += !tiled_case(&c, false, true, 1.0f, 1.0f, 77 + (uint64_t)omp_get_thread_num());
    return fails == 0 ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ softmax_exp8 */

/* Every float of [-87.33, 0], 8 lanes at a time, and the ends (below the cut, -inf,
 * NaN): each lane has softmax_exp's bits. The sanitizers' -O1 build would take minutes
 * over all 1.1 billion floats: there every 61st group of 8 (still 18 million floats). */
#if CHECK_ASAN
enum { EXP8_STRIDE = 61 };
#else
enum { EXP8_STRIDE = 1 };
#endif

static int check_softmax_exp8(void) {
    uint32_t last; /* the bits of -87.33f; from -0.0f (0x80000000) on, the bits grow with |x| */
    const float cut = -87.33f;
    memcpy(&last, &cut, sizeof last);
    int64_t checked = 0, differ = 0;
    float first = 0.0f;
    for (uint64_t u = 0x80000000u; u <= last; u += 8 * EXP8_STRIDE) {
        float in[8], out[8];
        for (int k = 0; k < 8; k++) {
            const uint32_t b = u + (uint64_t)k <= last ? (uint32_t)(u + (uint64_t)k) : last;
            memcpy(&in[k], &b, sizeof b);
        }
        store8(out, softmax_exp8(load8(in)));
        for (int k = 0; k < 8; k++) {
            const float want = softmax_exp(in[k]);
            if (memcmp(&out[k], &want, sizeof want) != 0 && differ++ == 0) first = in[k];
        }
        checked += 8;
    }
    bool ok = expect_true(differ == 0, "softmax_exp8 differs from softmax_exp on %lld of %lld "
                          "floats (first at %.9g)", (long long)differ, (long long)checked,
                          (double)first);
    const float ends[8] = {-87.34f, -88.0f, -1e30f, -INFINITY, NAN, 0.0f, -0.0f, -87.33f};
    float out[8];
    store8(out, softmax_exp8(load8(ends)));
    for (int k = 0; k < 8; k++) {
        const float want = softmax_exp(ends[k]);
        ok = expect_true(isnan(want) ? isnan(out[k]) : memcmp(&out[k], &want, sizeof want) == 0,
                         "softmax_exp8(%g) = %g, softmax_exp %g", (double)ends[k],
                         (double)out[k], (double)want) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ cross-entropy stored */

static int check_xent_store(void) {
    enum { N = 45, V = 7001 };
    Tensor z = tensor_zeros(2, N, V), added = tensor_zeros(2, N, V), stored = tensor_zeros(2, N, V);
    fill_uniform(z.data, z.size, 5, -6.0f, 6.0f);
    for (int j = 0; j < V; j++) z.data[(size_t)3 * V + j] = j < 2048 ? -INFINITY : z.data[(size_t)3 * V + j];
    int labels[N];
    for (int n = 0; n < N; n++) labels[n] = (n * 977 + 2100) % V;
    fill_uniform(stored.data, stored.size, 6, -1.0f, 1.0f); /* overwritten, not added to */
    const float l_add = softmax_cross_entropy_fast(&added, &z, labels, 1.0f);
    const float l_store = softmax_cross_entropy_fast_store(&stored, &z, labels, 1.0f);
    bool ok = expect_true(l_add == l_store, "loss %.9g stored, %.9g added", l_store, l_add);
    ok = expect_true(memcmp(added.data, stored.data, sizeof(float) * (size_t)z.size) == 0,
                     "the stored gradient differs from the one added to zeros") && ok;
    ok = expect_true(isfinite(l_add), "a block of -inf logits gives the loss %g", l_add) && ok;
    /* in place: the gradient over the logits */
    const float l_inplace = softmax_cross_entropy_fast_store(&z, &z, labels, 1.0f);
    ok = expect_true(l_inplace == l_add, "loss in place %.9g, %.9g", l_inplace, l_add) && ok;
    ok = expect_true(memcmp(z.data, stored.data, sizeof(float) * (size_t)z.size) == 0,
                     "the gradient stored over the logits differs") && ok;
    tensor_free(&z);
    tensor_free(&added);
    tensor_free(&stored);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ linear */

/* A decoder's shapes, small: forward and backward (with the bias's column sums) give the
 * same bits on 1, 2, 3 threads, and the forward is the double-precision product. */
static int check_linear_threads(void) {
    enum { N = 140, IN = 48, OUT = 5003 };
    Tensor x = tensor_zeros(2, N, IN), w = tensor_zeros(2, OUT, IN), b = tensor_zeros(1, OUT);
    Tensor dy = tensor_zeros(2, N, OUT);
    fill_uniform(x.data, x.size, 11, -1, 1);
    fill_uniform(w.data, w.size, 12, -0.1f, 0.1f);
    fill_uniform(b.data, b.size, 13, -0.1f, 0.1f);
    fill_uniform(dy.data, dy.size, 14, -1e-3f, 1e-3f);
    Tensor y[3], dx[3], dw[3], db[3];
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        y[t] = tensor_zeros(2, N, OUT), dx[t] = tensor_zeros(2, N, IN);
        dw[t] = tensor_zeros(2, OUT, IN), db[t] = tensor_zeros(1, OUT);
        linear_forward(&y[t], &x, &w, &b);
        linear_backward(&dx[t], &dw[t], &db[t], &dy, &x, &w);
    }
    omp_set_num_threads(2);
    bool ok = true;
    const Tensor *outs[4] = {y, dx, dw, db};
    const char *names[4] = {"y", "dx", "dW", "db"};
    for (int k = 0; k < 4; k++)
        for (int t = 1; t < 3; t++)
            ok = expect_true(memcmp(outs[k][0].data, outs[k][t].data,
                                    sizeof(float) * (size_t)outs[k][0].size) == 0,
                             "linear %s: 1 and %d threads give different bits", names[k], t + 1) && ok;
    for (int n = 0; ok && n < N; n += 13)
        for (int o = 0; ok && o < OUT; o += 101) {
            double s = b.data[o];
            for (int i = 0; i < IN; i++) s += (double)x.data[n * IN + i] * w.data[(size_t)o * IN + i];
            ok = expect_true(fabs(y[0].data[(size_t)n * OUT + o] - s) <= 1e-5, "y[%d][%d] = %.9g, "
                             "expected %.9g", n, o, y[0].data[(size_t)n * OUT + o], s);
        }
    for (int o = 0; ok && o < OUT; o += 97) {
        double s = 0;
        for (int n = 0; n < N; n++) s += dy.data[(size_t)n * OUT + o];
        ok = expect_true(fabs(db[0].data[o] - s) <= 1e-7, "db[%d] = %.9g, expected %.9g", o,
                         db[0].data[o], s);
    }
    for (int t = 0; t < 3; t++) {
        tensor_free(&y[t]);
        tensor_free(&dx[t]);
        tensor_free(&dw[t]);
        tensor_free(&db[t]);
    }
    tensor_free(&x);
    tensor_free(&w);
    tensor_free(&b);
    tensor_free(&dy);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the model */

/* One step of a model whose decoder is large enough to be cut into tiles, dropout on:
 * the same loss and gradients on 1, 2 and 3 threads. */
static int check_model_threads(void) {
    const TransformerConfig c = {.vocab = 6007, .d_model = 64, .heads = 4, .d_ff = 96,
                                 .layers = 2, .max_len = 64, .dropout = 0.2f};
    enum { B = 8, T = 35, N = B * T };
    int tokens[N], targets[N];
    Rng rng;
    rng_seed(&rng, 3, 0);
    for (int i = 0; i < N; i++) tokens[i] = (int)rng_below(&rng, c.vocab);
    for (int i = 0; i < N; i++) targets[i] = (int)rng_below(&rng, c.vocab);
    Transformer m[3];
    float loss[3];
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        transformer_init(&m[t], &c, B, T, 9);
        params_zero_grad(&m[t].params);
        loss[t] = transformer_forward_backward(&m[t], tokens, targets);
    }
    omp_set_num_threads(2);
    bool ok = expect_true(loss[0] == loss[1] && loss[0] == loss[2],
                          "loss on 1, 2, 3 threads: %.9g, %.9g, %.9g", loss[0], loss[1], loss[2]);
    for (int t = 1; t < 3; t++)
        ok = expect_true(memcmp(m[0].params.grads.data, m[t].params.grads.data,
                                sizeof(float) * (size_t)m[0].params.total) == 0,
                         "the gradients on 1 and %d threads differ", t + 1) && ok;
    for (int t = 0; t < 3; t++) transformer_free(&m[t]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("the transformer's fast CPU kernels against their plain paths");
    check_run(NULL, "gemm_tiled: cut M, N, K, one tile; vs double, same bits on 1, 2, 3 threads", check_gemm_tiled, 120);
    check_run(NULL, "gemm_tiled inside a parallel region", check_gemm_tiled_in_region, 60);
    check_run(NULL, "softmax_exp8: the bits of softmax_exp on every float of [-87.33, 0] and the ends", check_softmax_exp8, 60);
    check_run(NULL, "cross-entropy stored = added to zeros, also in place over the logits", check_xent_store, 30);
    check_run(NULL, "linear on a decoder's shapes: same bits on 1, 2, 3 threads; vs double", check_linear_threads, 60);
    check_run(NULL, "a training step of a tiled model: same bits on 1, 2, 3 threads", check_model_threads, 120);
    return check_end();
}
