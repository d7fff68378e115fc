/* Unit tests of lib/ops: gemm (whatever backend this build uses) and gemm_blocked
 * (the library's own code) against a plain triple loop in double, for every
 * transpose combination, odd sizes across the blocking boundaries, alpha and beta
 * (beta 0 ignores what C held, NaN included, as BLAS does), leading dimensions wider
 * than the matrices, and calls from inside an OpenMP parallel region; im2col against
 * its definition and col2im as its exact adjoint (the dot-product test). */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "framework/check.h"
#include "ops/gemm.h"
#include "ops/im2col.h"

/* ------------------------------------------------------------ gemm */

typedef void (*GemmFn)(bool, bool, int, int, int, float, const float *, int, const float *, int,
                       float, float *, int);

typedef struct {
    bool ta, tb;
    int M, N, K;
    float alpha, beta;
    int pad_a, pad_b, pad_c; /* extra columns beyond the width: ld = width + pad */
} GemmCase;

static void describe_gemm(const char *fn, const GemmCase *g) {
    printf("case: %s(trans_a %d, trans_b %d, M %d, N %d, K %d, alpha %g, beta %g, "
           "lda = width + %d, ldb = width + %d, ldc = N + %d)\n",
           fn, g->ta, g->tb, g->M, g->N, g->K, (double)g->alpha, (double)g->beta, g->pad_a,
           g->pad_b, g->pad_c);
}

/* Runs one case through fn and compares with a double-precision triple loop.
 *
 * Tolerance: each entry is a sum of K products plus beta*C, rounded in float32. The
 * worst-case forward error of such a sum (any order, FMA or not) is at most
 * (K + 2) * u * S with u = 2^-24 and S = |alpha| sum_k |a_ik b_kj| + |beta c_ij|.
 * We allow (K + 3) * FLT_EPSILON * S = twice that bound: no correct implementation
 * can fail it, and any wrong index or missed term moves an entry by O(S).
 *
 * The padding of A and B (the columns beyond the width) holds NaN: reading it would
 * poison the result. The padding of C holds a sentinel that must survive. */
static bool run_gemm_case(GemmFn fn, const char *name, const GemmCase *g, uint64_t seed) {
    const int arows = g->ta ? g->K : g->M, acols = g->ta ? g->M : g->K;
    const int brows = g->tb ? g->N : g->K, bcols = g->tb ? g->K : g->N;
    const int lda = acols + g->pad_a, ldb = bcols + g->pad_b, ldc = g->N + g->pad_c;
    float *A = malloc(sizeof(float) * (size_t)arows * lda + 4);
    float *B = malloc(sizeof(float) * (size_t)brows * ldb + 4);
    float *C = malloc(sizeof(float) * (size_t)g->M * ldc + 4);
    float *C0 = malloc(sizeof(float) * (size_t)g->M * ldc + 4);
    Rng rng;
    rng_seed(&rng, seed, 17);
    for (int r = 0; r < arows; r++)
        for (int c = 0; c < lda; c++)
            A[(size_t)r * lda + c] = c < acols ? rng_uniform_range(&rng, -1, 1) : NAN;
    for (int r = 0; r < brows; r++)
        for (int c = 0; c < ldb; c++)
            B[(size_t)r * ldb + c] = c < bcols ? rng_uniform_range(&rng, -1, 1) : NAN;
    for (int r = 0; r < g->M; r++)
        for (int c = 0; c < ldc; c++)
            C[(size_t)r * ldc + c] = c < g->N ? (g->beta == 0.0f ? NAN : rng_uniform_range(&rng, -1, 1))
                                              : 12345.0f;
    memcpy(C0, C, sizeof(float) * (size_t)g->M * ldc);

    fn(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, lda, B, ldb, g->beta, C, ldc);

    bool ok = true;
    for (int i = 0; ok && i < g->M; i++)
        for (int j = 0; ok && j < ldc; j++) {
            float got = C[(size_t)i * ldc + j];
            if (j >= g->N) {
                ok = expect_true(got == 12345.0f, "C[%d][%d], beyond N in the padding, was changed to %g",
                                 i, j, got);
                break;
            }
            double sum = 0, mag = 0;
            for (int k = 0; k < g->K; k++) {
                double a = g->ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = g->tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            double want = (double)g->alpha * sum;
            mag *= fabs((double)g->alpha);
            if (g->beta != 0.0f) {
                want += (double)g->beta * C0[(size_t)i * ldc + j];
                mag += fabs((double)g->beta * C0[(size_t)i * ldc + j]);
            }
            double tol = (g->K + 3) * (double)FLT_EPSILON * mag + 1e-30;
            ok = expect_true(fabs(got - want) <= tol,
                             "C[%d][%d] = %.9g, expected %.9g (difference %.3g, tolerance %.3g)",
                             i, j, got, want, fabs(got - want), tol);
        }
    if (!ok) describe_gemm(name, g);
    free(A);
    free(B);
    free(C);
    free(C0);
    return ok;
}

static const int SIZES[] = {1, 3, 17, 65, 257, 300};
enum { NSIZES = sizeof SIZES / sizeof SIZES[0] };

/* Every transpose combination, every size triple from SIZES (the largest products
 * only for some combinations, to keep the double-precision loop quick), plus sizes
 * across the blocks of gemm_blocked (MC = 64 rows, KC = 256, NC = 1024 columns). */
static bool sweep_sizes(GemmFn fn, const char *name) {
    bool ok = true;
    uint64_t seed = 1;
    for (int t = 0; t < 4; t++) {
        for (int i = 0; ok && i < NSIZES; i++)
            for (int j = 0; ok && j < NSIZES; j++)
                for (int k = 0; ok && k < NSIZES; k++) {
                    GemmCase g = {t & 1, t >> 1, SIZES[i], SIZES[j], SIZES[k], 1.0f, 0.0f, 0, 0, 0};
                    if ((double)g.M * g.N * g.K > 3e6 && (i + j + k + t) % 4 != 0) continue;
                    ok = run_gemm_case(fn, name, &g, seed++);
                }
        const int extra[][3] = {{5, 1100, 7}, {3, 1030, 300}, {129, 2049, 2}, {64, 64, 256},
                                {4, 32, 512}, {63, 31, 255}, {2, 2, 1000}};
        for (size_t e = 0; ok && e < sizeof extra / sizeof extra[0]; e++) {
            GemmCase g = {t & 1, t >> 1, extra[e][0], extra[e][1], extra[e][2], 1.0f, 0.0f, 0, 0, 0};
            ok = run_gemm_case(fn, name, &g, seed++);
        }
    }
    return ok;
}

/* The sweeps run on one thread: hundreds of calls each open parallel regions, and on
 * a loaded machine their barriers can each wait a scheduler tick. Several threads are
 * checked below (check_gemm_threads): the same bits as one thread, on shapes that
 * span several row blocks, and right results inside a parallel region. Each check
 * runs in a child process of its own, so the setting does not leak. */
static int on_one_thread(bool (*sweep)(GemmFn, const char *), GemmFn fn, const char *name) {
    omp_set_num_threads(1);
    return sweep(fn, name) ? CHECK_PASS : CHECK_FAIL;
}
static int check_gemm_sizes(void) { return on_one_thread(sweep_sizes, gemm, "gemm"); }
static int check_gemm_blocked_sizes(void) {
    return on_one_thread(sweep_sizes, gemm_blocked, "gemm_blocked");
}

/* alpha and beta, NaN garbage in C when beta is 0, and wide leading dimensions. */
static bool sweep_scalars(GemmFn fn, const char *name) {
    const float alphas[] = {1.0f, -0.5f, 2.5f, 0.0f};
    const float betas[] = {0.0f, 1.0f, 0.3f, -2.0f};
    const int shapes[][3] = {{1, 1, 1}, {17, 3, 65}, {65, 257, 17}, {70, 40, 300}};
    const int pads[][3] = {{0, 0, 0}, {3, 1, 5}, {0, 7, 0}, {11, 0, 2}};
    bool ok = true;
    uint64_t seed = 1000;
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int s = 0; ok && s < 4; s++) {
                    const int *p = pads[(a + b + s) % 4];
                    GemmCase g = {t & 1,        t >> 1,    shapes[s][0], shapes[s][1], shapes[s][2],
                                  alphas[a],    betas[b],  p[0],         p[1],         p[2]};
                    ok = run_gemm_case(fn, name, &g, seed++);
                }
    return ok;
}

static int check_gemm_scalars(void) { return on_one_thread(sweep_scalars, gemm, "gemm"); }
static int check_gemm_blocked_scalars(void) {
    return on_one_thread(sweep_scalars, gemm_blocked, "gemm_blocked");
}

/* K = 0: C = beta * C (and beta = 0 clears NaN); M or N = 0 touches nothing. */
static int check_gemm_degenerate(void) {
    float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};
    float C[4] = {1, -2, 3, NAN};
    bool ok = true;
    gemm_blocked(false, false, 2, 2, 0, 1.0f, A, 1, B, 2, 2.0f, C, 2);
    ok = ok && expect_true(C[0] == 2 && C[1] == -4 && C[2] == 6 && isnan(C[3]),
                           "K = 0, beta = 2: C = [%g %g %g %g], expected [2 -4 6 nan]", C[0], C[1],
                           C[2], C[3]);
    gemm_blocked(false, false, 2, 2, 0, 1.0f, A, 1, B, 2, 0.0f, C, 2);
    ok = ok && expect_true(C[0] == 0 && C[1] == 0 && C[2] == 0 && C[3] == 0,
                           "K = 0, beta = 0: C = [%g %g %g %g], expected zeros", C[0], C[1], C[2], C[3]);
    float D[4] = {9, 9, 9, 9};
    gemm_blocked(false, false, 0, 2, 2, 1.0f, A, 2, B, 2, 0.0f, D, 2);
    gemm_blocked(false, false, 2, 0, 2, 1.0f, A, 2, B, 2, 0.0f, D, 2);
    gemm(false, false, 0, 2, 2, 1.0f, A, 2, B, 2, 0.0f, D, 2);
    gemm(false, false, 2, 0, 2, 1.0f, A, 2, B, 2, 0.0f, D, 2);
    ok = ok && expect_true(D[0] == 9 && D[1] == 9 && D[2] == 9 && D[3] == 9,
                           "M = 0 or N = 0 changed C");
    /* a 2x2 by hand: [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50] */
    float E[4] = {NAN, NAN, NAN, NAN}, F[4] = {NAN, NAN, NAN, NAN};
    gemm(false, false, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, E, 2);
    gemm_blocked(false, false, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, F, 2);
    const float want[4] = {19, 22, 43, 50};
    ok = ok && expect_close("gemm 2x2", E, want, 4, 0, 0);
    ok = ok && expect_close("gemm_blocked 2x2", F, want, 4, 0, 0);
    const char *name = gemm_backend_name();
    ok = ok && expect_true(name && name[0], "gemm_backend_name() is empty");
    printf("backend: %s\n", name);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Each thread of a parallel region runs its own problem: no shared scratch space,
 * no nested team stepping on another thread's C. */
static bool gemm_in_parallel(GemmFn fn, const char *name) {
    enum { T = 4 };
    int fails = 0;
#pragma omp parallel num_threads(T) reduction(+ : fails)
    {
        int id = omp_get_thread_num();
        for (int rep = 0; rep < 3; rep++) {
            GemmCase g = {(id + rep) & 1, ((id + rep) >> 1) & 1, 40 + 23 * id, 300 - 31 * id,
                          100 + 70 * id + rep, 1.0f, 0.5f, id % 3, 0, 1};
            if (!run_gemm_case(fn, name, &g, (uint64_t)(5000 + 10 * id + rep))) fails++;
        }
    }
    return expect_true(fails == 0, "%s: %d of %d problems wrong inside a parallel region", name,
                       fails, 3 * T);
}

static int check_gemm_parallel(void) {
    bool ok = gemm_in_parallel(gemm_blocked, "gemm_blocked");
    ok = gemm_in_parallel(gemm, "gemm") && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Several threads: gemm_blocked gives the same bits on 1, 2 and 3 threads (each block
 * of MC rows is computed whole by one thread, in the same order), on shapes with
 * several row and column blocks and every transpose; and both gemm and gemm_blocked
 * are right on 2 threads against the double loop. */
static int check_gemm_threads(void) {
    const GemmCase cases[] = {
        {false, true, 301, 1100, 300, 1.0f, 0.0f, 0, 0, 0}, {true, false, 65, 257, 17, -0.5f, 1.0f, 2, 0, 1},
        {true, true, 257, 65, 300, 2.5f, 0.3f, 0, 3, 0},    {false, false, 129, 33, 513, 1.0f, 0.0f, 1, 1, 1}};
    bool ok = true;
    for (size_t c = 0; ok && c < sizeof cases / sizeof cases[0]; c++) {
        const GemmCase *g = &cases[c];
        const int arows = g->ta ? g->K : g->M, acols = g->ta ? g->M : g->K;
        const int brows = g->tb ? g->N : g->K, bcols = g->tb ? g->K : g->N;
        const int lda = acols + g->pad_a, ldb = bcols + g->pad_b, ldc = g->N + g->pad_c;
        const size_t nc = (size_t)g->M * ldc;
        float *A = malloc(sizeof(float) * (size_t)arows * lda), *B = malloc(sizeof(float) * (size_t)brows * ldb);
        float *C0 = malloc(sizeof(float) * nc), *C[3];
        fill_uniform(A, (int64_t)arows * lda, 10 + c, -1, 1);
        fill_uniform(B, (int64_t)brows * ldb, 20 + c, -1, 1);
        fill_uniform(C0, (int64_t)nc, 30 + c, -1, 1);
        for (int t = 0; t < 3; t++) {
            C[t] = malloc(sizeof(float) * nc);
            memcpy(C[t], C0, sizeof(float) * nc);
            omp_set_num_threads(t + 1);
            gemm_blocked(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, lda, B, ldb, g->beta, C[t], ldc);
        }
        ok = expect_true(memcmp(C[0], C[1], sizeof(float) * nc) == 0 && memcmp(C[0], C[2], sizeof(float) * nc) == 0,
                         "gemm_blocked gives different bits on 1, 2, 3 threads");
        omp_set_num_threads(2);
        ok = ok && run_gemm_case(gemm_blocked, "gemm_blocked on 2 threads", g, 40 + c);
        ok = ok && run_gemm_case(gemm, "gemm on 2 threads", g, 50 + c);
        if (!ok) describe_gemm("gemm_blocked", g);
        for (int t = 0; t < 3; t++) free(C[t]);
        free(A);
        free(B);
        free(C0);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ im2col / col2im */

/* The input pixel a kernel tap meets, or 0 in the padding: the definition. */
static float tap(const float *x, const ConvGeometry *g, int n, int c, int kh, int kw, int oh, int ow) {
    int ih = oh * g->stride - g->pad + kh, iw = ow * g->stride - g->pad + kw;
    if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) return 0.0f;
    return x[(((size_t)n * g->C + c) * g->H + ih) * g->W + iw];
}

typedef struct {
    int nimg;
    ConvGeometry g;
} Geo;

static Geo random_geometry(Rng *rng) {
    Geo r;
    for (;;) {
        int C = 1 + (int)rng_below(rng, 4), H = 1 + (int)rng_below(rng, 12),
            W = 1 + (int)rng_below(rng, 12);
        int KH = 1 + (int)rng_below(rng, 5), KW = 1 + (int)rng_below(rng, 5);
        int stride = 1 + (int)rng_below(rng, 3), pad = (int)rng_below(rng, 3);
        if (H + 2 * pad < KH || W + 2 * pad < KW) continue;
        r.nimg = 1 + (int)rng_below(rng, 3);
        r.g = conv_geometry(C, H, W, KH, KW, stride, pad);
        return r;
    }
}

static void describe_geo(const Geo *q) {
    const ConvGeometry *g = &q->g;
    printf("case: %d images [%d, %d, %d], kernel %dx%d, stride %d, padding %d -> %dx%d\n", q->nimg,
           g->C, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->OH, g->OW);
}

static void body_kernel_too_big(void *arg) {
    (void)arg;
    conv_geometry(1, 4, 4, 7, 3, 1, 1);
}

static int check_conv_geometry(void) {
    bool ok = true;
    ConvGeometry g = conv_geometry(3, 32, 28, 5, 3, 1, 0);
    ok = ok && expect_true(g.OH == 28 && g.OW == 26, "32x28, 5x3 kernel: %dx%d, expected 28x26", g.OH, g.OW);
    g = conv_geometry(1, 7, 8, 3, 3, 2, 1);
    ok = ok && expect_true(g.OH == 4 && g.OW == 4, "7x8, 3x3, stride 2, pad 1: %dx%d, expected 4x4", g.OH, g.OW);
    g = conv_geometry(1, 1, 1, 5, 5, 3, 2);
    ok = ok && expect_true(g.OH == 1 && g.OW == 1, "1x1, 5x5, pad 2: %dx%d, expected 1x1", g.OH, g.OW);
    ok = ok && expect_true(g.C == 1 && g.H == 1 && g.W == 1 && g.KH == 5 && g.KW == 5 &&
                               g.stride == 3 && g.pad == 2,
                           "conv_geometry does not keep its inputs");
    /* a kernel that does not fit stops with status 2 (checked in a child) */
    ChildResult o;
    run_child_stderr(body_kernel_too_big, NULL, &o);
    ok = ok && expect_exit("a 7x3 kernel on a 4x4 input with padding 1", &o, 2, (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_im2col(void) {
    Rng rng;
    rng_seed(&rng, 77, 0);
    bool ok = true;
    for (int t = 0; ok && t < 300; t++) {
        Geo q = random_geometry(&rng);
        const ConvGeometry *g = &q.g;
        const int rows = g->C * g->KH * g->KW, ncols = q.nimg * g->OH * g->OW;
        size_t nx = (size_t)q.nimg * g->C * g->H * g->W;
        float *x = malloc(sizeof(float) * nx);
        float *cols = malloc(sizeof(float) * (size_t)rows * ncols);
        fill_uniform(x, (int64_t)nx, 100 + (uint64_t)t, -1, 1);
        for (size_t i = 0; i < (size_t)rows * ncols; i++) cols[i] = NAN; /* all must be written */
        im2col(cols, x, q.nimg, g);
        for (int c = 0; ok && c < g->C; c++)
            for (int kh = 0; ok && kh < g->KH; kh++)
                for (int kw = 0; ok && kw < g->KW; kw++)
                    for (int n = 0; ok && n < q.nimg; n++)
                        for (int oh = 0; ok && oh < g->OH; oh++)
                            for (int ow = 0; ok && ow < g->OW; ow++) {
                                int row = (c * g->KH + kh) * g->KW + kw;
                                int col = (n * g->OH + oh) * g->OW + ow;
                                float got = cols[(size_t)row * ncols + col];
                                float want = tap(x, g, n, c, kh, kw, oh, ow);
                                /* a copy: exact, and NaN (never written) fails */
                                ok = expect_true(got == want,
                                                 "cols[row %d (c %d, kh %d, kw %d)][col %d (n %d, oh %d, ow %d)] "
                                                 "= %g, expected %g",
                                                 row, c, kh, kw, col, n, oh, ow, got, want);
                            }
        if (!ok) describe_geo(&q);
        free(x);
        free(cols);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* col2im against the definition: every column entry added onto its pixel (in double),
 * and added onto what the images already held. */
static int check_col2im(void) {
    Rng rng;
    rng_seed(&rng, 78, 0);
    bool ok = true;
    for (int t = 0; ok && t < 300; t++) {
        Geo q = random_geometry(&rng);
        const ConvGeometry *g = &q.g;
        const int rows = g->C * g->KH * g->KW, ncols = q.nimg * g->OH * g->OW;
        size_t nx = (size_t)q.nimg * g->C * g->H * g->W;
        float *img = malloc(sizeof(float) * nx), *start = malloc(sizeof(float) * nx);
        double *want = calloc(nx, sizeof(double)), *mag = calloc(nx, sizeof(double));
        float *cols = malloc(sizeof(float) * (size_t)rows * ncols);
        fill_uniform(cols, (int64_t)rows * ncols, 200 + (uint64_t)t, -1, 1);
        fill_uniform(start, (int64_t)nx, 300 + (uint64_t)t, -1, 1);
        memcpy(img, start, sizeof(float) * nx);
        for (size_t i = 0; i < nx; i++) want[i] = start[i], mag[i] = fabs(start[i]);
        for (int c = 0; c < g->C; c++)
            for (int kh = 0; kh < g->KH; kh++)
                for (int kw = 0; kw < g->KW; kw++)
                    for (int n = 0; n < q.nimg; n++)
                        for (int oh = 0; oh < g->OH; oh++)
                            for (int ow = 0; ow < g->OW; ow++) {
                                int ih = oh * g->stride - g->pad + kh, iw = ow * g->stride - g->pad + kw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                size_t i = (((size_t)n * g->C + c) * g->H + ih) * g->W + iw;
                                float v = cols[(size_t)((c * g->KH + kh) * g->KW + kw) * ncols +
                                               (n * g->OH + oh) * g->OW + ow];
                                want[i] += v;
                                mag[i] += fabs(v);
                            }
        col2im(img, cols, q.nimg, g);
        for (size_t i = 0; ok && i < nx; i++) {
            /* a sum of at most KH*KW + 1 terms in float: error <= (terms) u * sum |terms| */
            double tol = (g->KH * g->KW + 2) * (double)FLT_EPSILON * mag[i];
            ok = expect_true(fabs(img[i] - want[i]) <= tol,
                             "pixel %zu = %.9g, expected %.9g (started at %g)", i, img[i], want[i],
                             start[i]);
        }
        if (!ok) describe_geo(&q);
        free(img);
        free(start);
        free(want);
        free(mag);
        free(cols);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The dot-product test: <im2col(x), y> = <x, col2im(y)> for random x and y, the
 * definition of the adjoint. Both sides summed in double; they are sums of the same
 * products x_i y_j, so they agree to rounding of the float col2im sums only. */
static int check_adjoint(void) {
    Rng rng;
    rng_seed(&rng, 79, 0);
    bool ok = true;
    for (int t = 0; ok && t < 500; t++) {
        Geo q = random_geometry(&rng);
        const ConvGeometry *g = &q.g;
        const size_t ncol = (size_t)g->C * g->KH * g->KW * q.nimg * g->OH * g->OW;
        const size_t nx = (size_t)q.nimg * g->C * g->H * g->W;
        float *x = malloc(sizeof(float) * nx), *ax = calloc(nx, sizeof(float));
        float *y = malloc(sizeof(float) * ncol), *cx = malloc(sizeof(float) * ncol);
        fill_uniform(x, (int64_t)nx, 400 + (uint64_t)t, -1, 1);
        fill_uniform(y, (int64_t)ncol, 500 + (uint64_t)t, -1, 1);
        im2col(cx, x, q.nimg, g);
        col2im(ax, y, q.nimg, g);
        double lhs = 0, rhs = 0, mag = 0;
        for (size_t i = 0; i < ncol; i++) lhs += (double)cx[i] * y[i], mag += fabs((double)cx[i] * y[i]);
        for (size_t i = 0; i < nx; i++) rhs += (double)x[i] * ax[i];
        double tol = (g->KH * g->KW + 2) * (double)FLT_EPSILON * mag + 1e-12;
        ok = expect_true(fabs(lhs - rhs) <= tol, "<im2col(x), y> = %.12g but <x, col2im(y)> = %.12g",
                         lhs, rhs);
        if (!ok) describe_geo(&q);
        free(x);
        free(ax);
        free(y);
        free(cx);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("ops");
    check_run(NULL, "gemm: 4 transposes x sizes 1..300 (and across blocks) vs double loop", check_gemm_sizes, 60);
    check_run(NULL, "gemm_blocked: 4 transposes x sizes 1..300 (and across blocks) vs double loop", check_gemm_blocked_sizes, 60);
    check_run(NULL, "gemm: alpha, beta (0 ignores NaN in C), wide leading dimensions", check_gemm_scalars, 60);
    check_run(NULL, "gemm_blocked: alpha, beta (0 ignores NaN in C), wide leading dimensions", check_gemm_blocked_scalars, 60);
    check_run(NULL, "gemm, gemm_blocked: K = 0, M or N = 0, a 2x2 by hand", check_gemm_degenerate, 10);
    check_run(NULL, "gemm, gemm_blocked inside an OpenMP parallel region", check_gemm_parallel, 60);
    check_run(NULL, "gemm_blocked: same bits on 1, 2, 3 threads; both right on 2", check_gemm_threads, 30);
    check_run(NULL, "conv_geometry: output sizes; a kernel too big stops", check_conv_geometry, 10);
    check_run(NULL, "im2col equals its definition (stride 1-3, pad 0-2, kernel 1-5)", check_im2col, 30);
    check_run(NULL, "col2im adds each column entry onto its pixel", check_col2im, 30);
    check_run(NULL, "col2im is the adjoint of im2col (dot-product test)", check_adjoint, 30);
    return check_end();
}
