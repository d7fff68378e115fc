/* Unit tests of lib/layers: every backward against central finite differences of its
 * forward, conv2d_forward and conv2d_backward against their definitions in double
 * (batch sizes that cut the internal chunks unevenly, 1x1 and non-square kernels,
 * stride, padding, and the shapes that take the direct kernels),
 * the same bits on 1, 2 and 3 threads, backward passes that add (+=) into the
 * gradients they are given, max-pool ties, softmax cross-entropy on huge logits and
 * count_correct.
 *
 * How the gradient checks work: tests/framework/gradcheck.h (L = sum out * R, central
 * differences in double, the errors that are left). The truncation error is zero for
 * conv2d, linear (L is linear in each single weight, input or bias) and for max-pool
 * and ReLU away from their kinks (we keep the inputs away from ties and from 0, farther
 * than eps); small for the smooth softmax cross-entropy (its third derivative is below
 * 1/N, eps^2/6 of it ~ 1e-6). So with eps = 1e-2 we allow 1e-3 absolute + 2e-3
 * relative, as gradcheck.h explains. */
#include <float.h>
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
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "ops/conv_direct.h"
#include "ops/conv_direct16.h"

/* one_thread_note: the gradient checks run thousands of tiny forwards; each opens an
 * OpenMP parallel region, and on a loaded machine every region's barrier can wait a
 * scheduler tick (seconds in all, more under the sanitizers). They run on one thread;
 * what several threads do is checked by check_conv_threads. Every check runs in a
 * child process of its own, so the setting does not leak into the others. */

/* ------------------------------------------------------------ conv2d */

typedef struct {
    int N, C, H, W, Cout, KH, KW, stride, pad;
} ConvCase;

static int out_dim(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

static void describe(const ConvCase *c) {
    printf("case: in [%d, %d, %d, %d], weight [%d, %d, %d, %d], stride %d, padding %d\n", c->N,
           c->C, c->H, c->W, c->Cout, c->C, c->KH, c->KW, c->stride, c->pad);
}

typedef struct {
    ConvCase c;
    Tensor in, w, b, out, R;
} ConvSetup;

static ConvSetup conv_setup(const ConvCase *c, uint64_t seed) {
    ConvSetup s;
    s.c = *c;
    s.in = random4(seed, c->N, c->C, c->H, c->W);
    s.w = random4(seed + 1, c->Cout, c->C, c->KH, c->KW);
    s.b = random1(seed + 2, c->Cout);
    int OH = out_dim(c->H, c->KH, c->stride, c->pad), OW = out_dim(c->W, c->KW, c->stride, c->pad);
    s.out = tensor_zeros(4, c->N, c->Cout, OH, OW);
    s.R = random4(seed + 3, c->N, c->Cout, OH, OW);
    return s;
}

static void conv_free(ConvSetup *s) {
    tensor_free(&s->in);
    tensor_free(&s->w);
    tensor_free(&s->b);
    tensor_free(&s->out);
    tensor_free(&s->R);
}

static double conv_objective(void *ctx) {
    ConvSetup *s = ctx;
    conv2d_forward(&s->out, &s->in, &s->w, &s->b, s->c.stride, s->c.pad);
    return weighted_sum(&s->out, &s->R);
}

static const ConvCase GRAD_CASES[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 0},  /* plain */
    {3, 2, 8, 9, 3, 3, 3, 2, 1},  /* stride 2, padding 1 */
    {2, 2, 5, 6, 2, 4, 2, 1, 2},  /* non-square kernel, padding 2 */
    {2, 3, 5, 5, 3, 1, 1, 1, 0},  /* 1x1 */
    {1, 1, 9, 9, 2, 5, 5, 3, 2},  /* stride 3 */
    {2, 2, 6, 7, 2, 2, 2, 2, 0},  /* stride 2, inputs left out at the edge */
    /* the direct kernels (lib/ops/conv_direct.c): rows of exactly 8 outputs, fewer
     * rows than a register block, 4 channels and 8 taps (not multiples of the blocks
     * of 3 or 5); rows of 20 (the last segment overlaps), 7 channels */
    {2, 2, 5, 9, 4, 2, 2, 1, 0},
    {2, 1, 4, 22, 7, 2, 3, 1, 0},
};

/* The shapes meant for the direct kernels must reach them, or the checks below
 * would test the im2col path twice. */
static bool takes_direct_path(const ConvCase *c) {
    ConvGeometry g = conv_geometry(c->C, c->H, c->W, c->KH, c->KW, c->stride, c->pad);
    return conv_direct_fits(&g);
}

#if defined(__AVX512F__)
/* AVX-512 builds: whether the forward and weight gradient take the channel-vector
 * kernels (lib/ops/conv_direct16.c) rather than the pair kernels (conv_pairs16.c). */
static bool takes_channel_vectors(const ConvCase *c) {
    ConvGeometry g = conv_geometry(c->C, c->H, c->W, c->KH, c->KW, c->stride, c->pad);
    return conv_direct_fits(&g) && conv_direct16_takes(&g) && conv_direct16_many_taps(&g);
}
#endif

static int check_conv_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    const size_t ncases = sizeof GRAD_CASES / sizeof GRAD_CASES[0];
    bool ok = expect_true(takes_direct_path(&GRAD_CASES[ncases - 1]) &&
                              takes_direct_path(&GRAD_CASES[ncases - 2]) &&
                              !takes_direct_path(&GRAD_CASES[0]),
                          "the direct-kernel cases do not take the direct path (or the first "
                          "case does): see conv_direct_fits");
    for (size_t t = 0; ok && t < ncases; t++) {
        ConvSetup s = conv_setup(&GRAD_CASES[t], 10 * t + 1);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        conv2d_forward(&s.out, &s.in, &s.w, &s.b, s.c.stride, s.c.pad);
        conv2d_backward(&din, &dw, &db, &s.R, &s.in, &s.w, s.c.stride, s.c.pad);
        ok = fd_check("d input", s.in.data, din.data, s.in.size, conv_objective, &s, 1e-2f, 1e-3, 2e-3);
        ok = fd_check("d weight", s.w.data, dw.data, s.w.size, conv_objective, &s, 1e-2f, 1e-3, 2e-3) && ok;
        ok = fd_check("d bias", s.b.data, db.data, s.b.size, conv_objective, &s, 1e-2f, 1e-3, 2e-3) && ok;
        if (!ok) describe(&s.c);
        tensor_free(&din);
        tensor_free(&dw);
        tensor_free(&db);
        conv_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* din = NULL (the first layer): same weight and bias gradients, bit for bit. */
static int check_conv_null_din(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    bool ok = true;
    for (size_t t = 0; ok && t < sizeof GRAD_CASES / sizeof GRAD_CASES[0]; t++) {
        ConvSetup s = conv_setup(&GRAD_CASES[t], 10 * t + 2);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        Tensor dw2 = tensor_zeros_like(&s.w), db2 = tensor_zeros_like(&s.b);
        conv2d_backward(&din, &dw, &db, &s.R, &s.in, &s.w, s.c.stride, s.c.pad);
        conv2d_backward(NULL, &dw2, &db2, &s.R, &s.in, &s.w, s.c.stride, s.c.pad);
        ok = expect_close("d weight without din", dw2.data, dw.data, dw.size, 0, 0);
        ok = ok && expect_close("d bias without din", db2.data, db.data, db.size, 0, 0);
        if (!ok) describe(&s.c);
        tensor_free(&din);
        tensor_free(&dw);
        tensor_free(&db);
        tensor_free(&dw2);
        tensor_free(&db2);
        conv_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The definition, seven loops, in double. mag gets sum |w x| + |b| per output (for
 * the tolerance). */
static void conv_definition(double *out, double *mag, const ConvSetup *s) {
    const ConvCase *c = &s->c;
    int OH = s->out.shape[2], OW = s->out.shape[3];
    for (int n = 0; n < c->N; n++)
        for (int co = 0; co < c->Cout; co++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double sum = s->b.data[co], m = fabs(s->b.data[co]);
                    for (int ci = 0; ci < c->C; ci++)
                        for (int kh = 0; kh < c->KH; kh++)
                            for (int kw = 0; kw < c->KW; kw++) {
                                int ih = oh * c->stride - c->pad + kh, iw = ow * c->stride - c->pad + kw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                double x = s->in.data[(((size_t)n * c->C + ci) * c->H + ih) * c->W + iw];
                                double w = s->w.data[(((size_t)co * c->C + ci) * c->KH + kh) * c->KW + kw];
                                sum += w * x;
                                m += fabs(w * x);
                            }
                    size_t i = (((size_t)n * c->Cout + co) * OH + oh) * OW + ow;
                    out[i] = sum;
                    mag[i] = m;
                }
}

/* Forward against the definition. Tolerance: an output is a float32 sum of
 * K = C*KH*KW products and a bias; its error is at most (K + 1) u sum |terms|
 * (u = 2^-24) in any summation order; we allow (K + 3) FLT_EPSILON sum |terms|. */
static bool conv_forward_matches(const ConvCase *c, uint64_t seed) {
    ConvSetup s = conv_setup(c, seed);
    for (int64_t i = 0; i < s.out.size; i++) s.out.data[i] = NAN; /* every output must be written */
    conv2d_forward(&s.out, &s.in, &s.w, &s.b, c->stride, c->pad);
    double *want = malloc(sizeof(double) * (size_t)s.out.size);
    double *mag = malloc(sizeof(double) * (size_t)s.out.size);
    conv_definition(want, mag, &s);
    const int K = c->C * c->KH * c->KW;
    bool ok = true;
    for (int64_t i = 0; ok && i < s.out.size; i++) {
        double tol = (K + 3) * (double)FLT_EPSILON * mag[i];
        ok = expect_true(fabs(s.out.data[i] - want[i]) <= tol,
                         "output %lld = %.9g, expected %.9g (tolerance %.3g)", (long long)i,
                         s.out.data[i], want[i], tol);
    }
    if (!ok) describe(c);
    free(want);
    free(mag);
    conv_free(&s);
    return ok;
}

static int check_conv_forward(void) {
    bool ok = true;
    /* batch sizes that split unevenly into the chunks of about 512 output columns */
    const int batches[] = {1, 3, 7, 37, 100};
    const ConvCase shapes[] = {
        {0, 3, 12, 12, 8, 5, 5, 1, 0},  /* 8x8 outputs: 64 columns an image */
        {0, 2, 10, 11, 5, 1, 1, 1, 0},  /* 1x1 kernel */
        {0, 4, 9, 9, 6, 3, 3, 2, 1},    /* stride 2, padding 1 */
        {0, 1, 28, 28, 4, 5, 5, 1, 0},  /* the CNN's first layer, fewer channels */
        {0, 3, 7, 5, 3, 2, 4, 1, 2},    /* non-square kernel and image */
        {0, 2, 6, 23, 7, 3, 4, 1, 0},   /* rows of 20: the last segment overlaps */
        /* the 16-lane kernels (64 taps or more on AVX-512): 37 channels (3 vectors,
         * the last one part padding) on rows of 27 (several pixel tiles); 100 channels
         * (a block of 5 vectors and one of 2) */
        {0, 6, 14, 30, 37, 3, 4, 1, 0},
        {0, 4, 11, 11, 100, 4, 4, 1, 0},
    };
    uint64_t seed = 100;
    for (size_t k = 0; ok && k < sizeof shapes / sizeof shapes[0]; k++)
        for (size_t b = 0; ok && b < sizeof batches / sizeof batches[0]; b++) {
            ConvCase c = shapes[k];
            c.N = batches[b];
            ok = conv_forward_matches(&c, seed++);
        }
    /* random shapes */
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int t = 0; ok && t < 40; t++) {
        ConvCase c;
        c.N = 1 + (int)rng_below(&rng, 9);
        c.C = 1 + (int)rng_below(&rng, 5);
        c.Cout = 1 + (int)rng_below(&rng, 6);
        c.H = 1 + (int)rng_below(&rng, 14);
        c.W = 1 + (int)rng_below(&rng, 14);
        c.KH = 1 + (int)rng_below(&rng, 5);
        c.KW = 1 + (int)rng_below(&rng, 5);
        c.stride = 1 + (int)rng_below(&rng, 3);
        c.pad = (int)rng_below(&rng, 3);
        if (c.KH > c.H + 2 * c.pad || c.KW > c.W + 2 * c.pad) {
            t--;
            continue;
        }
        ok = conv_forward_matches(&c, seed++);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The backward's three gradients by definition, in double, with the sums of |terms|
 * for the tolerance (as for the forward). */
static void conv_backward_definition(double *din, double *din_mag, double *dw, double *dw_mag,
                                     double *db, double *db_mag, const ConvSetup *s) {
    const ConvCase *c = &s->c;
    const int OH = s->R.shape[2], OW = s->R.shape[3];
    memset(din, 0, sizeof(double) * (size_t)s->in.size);
    memset(din_mag, 0, sizeof(double) * (size_t)s->in.size);
    memset(dw, 0, sizeof(double) * (size_t)s->w.size);
    memset(dw_mag, 0, sizeof(double) * (size_t)s->w.size);
    memset(db, 0, sizeof(double) * (size_t)s->b.size);
    memset(db_mag, 0, sizeof(double) * (size_t)s->b.size);
    for (int n = 0; n < c->N; n++)
        for (int co = 0; co < c->Cout; co++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double g = s->R.data[(((size_t)n * c->Cout + co) * OH + oh) * OW + ow];
                    db[co] += g;
                    db_mag[co] += fabs(g);
                    for (int ci = 0; ci < c->C; ci++)
                        for (int kh = 0; kh < c->KH; kh++)
                            for (int kw = 0; kw < c->KW; kw++) {
                                int ih = oh * c->stride - c->pad + kh, iw = ow * c->stride - c->pad + kw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                size_t xi = (((size_t)n * c->C + ci) * c->H + ih) * c->W + iw;
                                size_t wi = (((size_t)co * c->C + ci) * c->KH + kh) * c->KW + kw;
                                din[xi] += s->w.data[wi] * g;
                                din_mag[xi] += fabs(s->w.data[wi] * g);
                                dw[wi] += s->in.data[xi] * g;
                                dw_mag[wi] += fabs(s->in.data[xi] * g);
                            }
                }
}

/* got[i] against want[i] within (terms + 2) FLT_EPSILON mag[i]: a float32 sum of
 * that many terms in any order. */
static bool sums_match(const char *what, const float *got, const double *want, const double *mag,
                       int64_t n, double terms) {
    return expect_sums_close(what, got, want, mag, n, terms + 2);
}

/* Input, weight and bias gradients against the definition on the CNN's own two
 * layers (the direct kernels, at full size) and on shapes for the im2col path. */
static int check_conv_backward_definition(void) {
    const ConvCase cases[] = {
        {20, 1, 28, 28, 50, 5, 5, 1, 0}, /* the CNN's first layer: several image groups */
        {3, 50, 12, 12, 75, 5, 5, 1, 0}, /* its second */
        {2, 3, 7, 22, 7, 3, 3, 1, 0},    /* rows of 20, the last segment overlapping */
        {4, 3, 9, 9, 5, 3, 3, 2, 1},     /* stride 2, padding 1: im2col + GEMM */
        {3, 2, 10, 6, 4, 3, 3, 1, 1},    /* rows shorter than 8: im2col + GEMM */
        /* the 16-lane kernels on AVX-512: rows of 27 (pairs of segments apart in
         * memory), an odd count of segments (15), 100 channels in two blocks, 6 rows
         * of 8 (3 pairs side by side: the block of 4 repeats one) */
        {2, 6, 14, 30, 37, 3, 4, 1, 0},
        {2, 5, 9, 24, 20, 5, 5, 1, 0},
        {2, 4, 11, 11, 100, 4, 4, 1, 0},
        {2, 5, 10, 12, 20, 5, 5, 1, 0},
    };
    bool ok = expect_true(takes_direct_path(&cases[0]) && takes_direct_path(&cases[1]) &&
                              takes_direct_path(&cases[2]) && !takes_direct_path(&cases[3]) &&
                              !takes_direct_path(&cases[4]) && takes_direct_path(&cases[5]) &&
                              takes_direct_path(&cases[6]) && takes_direct_path(&cases[7]) &&
                              takes_direct_path(&cases[8]),
                          "the cases do not take the paths they were chosen for (conv_direct_fits)");
#if defined(__AVX512F__)
    ok = ok && expect_true(takes_channel_vectors(&cases[1]) && takes_channel_vectors(&cases[5]) &&
                               takes_channel_vectors(&cases[6]) && takes_channel_vectors(&cases[7]) &&
                               takes_channel_vectors(&cases[8]) && !takes_channel_vectors(&cases[0]) &&
                               !takes_channel_vectors(&cases[2]),
                           "the cases do not take the 16-lane kernels they were chosen for "
                           "(conv_direct16_many_taps)");
#endif
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const ConvCase *c = &cases[k];
        ConvSetup s = conv_setup(c, 500 + k);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        conv2d_backward(&din, &dw, &db, &s.R, &s.in, &s.w, c->stride, c->pad);
        double *want[6];
        const int64_t sizes[6] = {s.in.size, s.in.size, s.w.size, s.w.size, s.b.size, s.b.size};
        for (int i = 0; i < 6; i++) want[i] = malloc(sizeof(double) * (size_t)sizes[i]);
        conv_backward_definition(want[0], want[1], want[2], want[3], want[4], want[5], &s);
        const int OHW = s.R.shape[2] * s.R.shape[3];
        ok = sums_match("d input", din.data, want[0], want[1], din.size, (double)c->Cout * c->KH * c->KW) &&
             sums_match("d weight", dw.data, want[2], want[3], dw.size, (double)c->N * OHW) &&
             sums_match("d bias", db.data, want[4], want[5], db.size, (double)c->N * OHW);
        if (!ok) describe(c);
        for (int i = 0; i < 6; i++) free(want[i]);
        tensor_free(&din);
        tensor_free(&dw);
        tensor_free(&db);
        conv_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The backward on batch sizes that cut the chunks unevenly, against the backward of
 * each image alone (a batch of 1 is one chunk): the weight and bias gradients are the
 * sums over images, the input gradient is per image. */
static int check_conv_backward_batches(void) {
    bool ok = true;
    const int batches[] = {3, 7, 37};
    for (size_t b = 0; ok && b < 2 * sizeof batches / sizeof batches[0]; b++) {
        /* the direct kernels, then im2col + GEMM (padding 1) on chunks of several images */
        const int pad = b < 3 ? 0 : 1;
        ConvCase c = {batches[b % 3], 3, 12, 12, 8, 5, 5, 1, pad};
        ConvSetup s = conv_setup(&c, 300 + b);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        conv2d_backward(&din, &dw, &db, &s.R, &s.in, &s.w, c.stride, c.pad);
        Tensor dw1 = tensor_zeros_like(&s.w), db1 = tensor_zeros_like(&s.b);
        Tensor din1 = tensor_zeros_like(&s.in);
        const int64_t in_img = s.in.size / c.N, out_img = s.R.size / c.N;
        for (int n = 0; n < c.N; n++) {
            Tensor x = tensor_rows(&s.in, 1), dy = tensor_rows(&s.R, 1), dx = tensor_rows(&din1, 1);
            x.data += n * in_img;
            dy.data += n * out_img;
            dx.data += n * in_img;
            conv2d_backward(&dx, &dw1, &db1, &dy, &x, &s.w, c.stride, c.pad);
        }
        ok = expect_close("d input, batch vs one image at a time", din.data, din1.data, din.size, 1e-5f, 1e-5f);
        ok = ok && expect_close("d weight, batch vs one image at a time", dw.data, dw1.data, dw.size, 1e-4f, 1e-5f);
        ok = ok && expect_close("d bias, batch vs one image at a time", db.data, db1.data, db.size, 1e-4f, 1e-5f);
        if (!ok) describe(&c);
        tensor_free(&din);
        tensor_free(&dw);
        tensor_free(&db);
        tensor_free(&din1);
        tensor_free(&dw1);
        tensor_free(&db1);
        conv_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The design promises the same bits on any number of threads. */
static int check_conv_threads(void) {
    const ConvCase cases[] = {{37, 3, 12, 12, 8, 5, 5, 1, 0}, {100, 4, 9, 9, 6, 3, 3, 2, 1},
                              {7, 50, 12, 12, 75, 5, 5, 1, 0}, {20, 1, 28, 28, 50, 5, 5, 1, 0},
                              {9, 4, 11, 11, 100, 4, 4, 1, 0}, {5, 6, 14, 30, 37, 3, 4, 1, 0}};
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        ConvSetup s = conv_setup(&cases[k], 400 + k);
        Tensor out[3], din[3], dw[3], db[3];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            out[t] = tensor_zeros_like(&s.out);
            din[t] = tensor_zeros_like(&s.in);
            dw[t] = tensor_zeros_like(&s.w);
            db[t] = tensor_zeros_like(&s.b);
            conv2d_forward(&out[t], &s.in, &s.w, &s.b, s.c.stride, s.c.pad);
            conv2d_backward(&din[t], &dw[t], &db[t], &s.R, &s.in, &s.w, s.c.stride, s.c.pad);
        }
        for (int t = 1; ok && t < 3; t++) {
            ok = expect_true(memcmp(out[0].data, out[t].data, sizeof(float) * (size_t)s.out.size) == 0,
                             "forward: 1 and %d threads give different bits", t + 1);
            ok = ok && expect_true(memcmp(din[0].data, din[t].data, sizeof(float) * (size_t)s.in.size) == 0,
                                   "d input: 1 and %d threads give different bits", t + 1);
            ok = ok && expect_true(memcmp(dw[0].data, dw[t].data, sizeof(float) * (size_t)s.w.size) == 0,
                                   "d weight: 1 and %d threads give different bits", t + 1);
            ok = ok && expect_true(memcmp(db[0].data, db[t].data, sizeof(float) * (size_t)s.b.size) == 0,
                                   "d bias: 1 and %d threads give different bits", t + 1);
        }
        if (!ok) describe(&s.c);
        for (int t = 0; t < 3; t++) {
            tensor_free(&out[t]);
            tensor_free(&din[t]);
            tensor_free(&dw[t]);
            tensor_free(&db[t]);
        }
        conv_free(&s);
    }
    conv2d_release_workspace();
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ backward adds (+=) */

/* Fills each gradient with P, runs the backward, and compares with P + the gradient
 * from zeros (to float rounding of that one addition and the sums' order). */
static int check_backward_adds(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    bool ok = true;
    /* conv2d: im2col + GEMM, then the direct kernels */
    const ConvCase add_cases[] = {{3, 2, 8, 9, 3, 3, 3, 2, 1}, {3, 2, 6, 10, 3, 3, 3, 1, 0}};
    for (size_t k = 0; k < 2; k++) {
        ConvCase c = add_cases[k];
        ok = expect_true(takes_direct_path(&c) == (k == 1), "case %zu: not the path meant", k) && ok;
        ConvSetup s = conv_setup(&c, 500);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        Tensor pin = random4(501, c.N, c.C, c.H, c.W), pw = random4(502, c.Cout, c.C, c.KH, c.KW);
        Tensor pb = random1(503, c.Cout);
        Tensor din2 = tensor_zeros_like(&s.in), dw2 = tensor_zeros_like(&s.w), db2 = tensor_zeros_like(&s.b);
        tensor_copy(&din2, &pin);
        tensor_copy(&dw2, &pw);
        tensor_copy(&db2, &pb);
        conv2d_backward(&din, &dw, &db, &s.R, &s.in, &s.w, c.stride, c.pad);
        conv2d_backward(&din2, &dw2, &db2, &s.R, &s.in, &s.w, c.stride, c.pad);
        ok = expect_added("conv2d d input", &din2, &pin, &din, 1e-5f) && ok;
        ok = expect_added("conv2d d weight", &dw2, &pw, &dw, 1e-5f) && ok;
        ok = expect_added("conv2d d bias", &db2, &pb, &db, 1e-5f) && ok;
        FREE_ALL(&din, &dw, &db, &pin, &pw, &pb, &din2, &dw2, &db2);
        conv_free(&s);
    }
    /* linear */
    {
        Tensor in = random2(510, 5, 7), w = random2(511, 4, 7), R = random2(512, 5, 4);
        Tensor din = tensor_zeros_like(&in), dw = tensor_zeros_like(&w), db = tensor_zeros(1, 4);
        Tensor pin = random2(513, 5, 7), pw = random2(514, 4, 7), pb = random1(515, 4);
        Tensor din2 = tensor_zeros_like(&in), dw2 = tensor_zeros_like(&w), db2 = tensor_zeros(1, 4);
        tensor_copy(&din2, &pin);
        tensor_copy(&dw2, &pw);
        tensor_copy(&db2, &pb);
        linear_backward(&din, &dw, &db, &R, &in, &w);
        linear_backward(&din2, &dw2, &db2, &R, &in, &w);
        ok = expect_added("linear d input", &din2, &pin, &din, 1e-5f) && ok;
        ok = expect_added("linear d weight", &dw2, &pw, &dw, 1e-5f) && ok;
        ok = expect_added("linear d bias", &db2, &pb, &db, 1e-5f) && ok;
        FREE_ALL(&in, &w, &R, &din, &dw, &db, &pin, &pw, &pb, &din2, &dw2, &db2);
    }
    /* max-pool (overlapping windows: a pixel can receive from several outputs) */
    {
        Tensor in = random4(520, 2, 3, 7, 7), out = tensor_zeros(4, 2, 3, 3, 3);
        Tensor R = random4(521, 2, 3, 3, 3), p = random4(522, 2, 3, 7, 7);
        int *arg = malloc(sizeof(int) * (size_t)out.size);
        Tensor din = tensor_zeros_like(&in), din2 = tensor_zeros_like(&in);
        tensor_copy(&din2, &p);
        maxpool2d_forward(&out, arg, &in, 3, 2);
        maxpool2d_backward(&din, &R, arg);
        maxpool2d_backward(&din2, &R, arg);
        ok = expect_added("max-pool d input", &din2, &p, &din, 1e-5f) && ok;
        FREE_ALL(&in, &out, &R, &p, &din, &din2);
        free(arg);
    }
    /* ReLU */
    {
        Tensor in = random2(530, 6, 9), out = tensor_zeros(2, 6, 9), R = random2(531, 6, 9);
        Tensor p = random2(532, 6, 9), din = tensor_zeros(2, 6, 9), din2 = tensor_zeros(2, 6, 9);
        tensor_copy(&din2, &p);
        relu_forward(&out, &in);
        relu_backward(&din, &R, &out);
        relu_backward(&din2, &R, &out);
        ok = expect_added("relu d input", &din2, &p, &din, 1e-5f) && ok;
        FREE_ALL(&in, &out, &R, &p, &din, &din2);
    }
    /* softmax cross-entropy */
    {
        Tensor z = random2(540, 4, 5), p = random2(541, 4, 5);
        Tensor dz = tensor_zeros(2, 4, 5), dz2 = tensor_zeros(2, 4, 5);
        const int labels[4] = {0, 4, 2, 2};
        tensor_copy(&dz2, &p);
        float l1 = softmax_cross_entropy(&dz, &z, labels);
        float l2 = softmax_cross_entropy(&dz2, &z, labels);
        ok = expect_added("softmax cross-entropy d logits", &dz2, &p, &dz, 1e-5f) && ok;
        ok = expect_true(l1 == l2, "the loss depends on what dlogits held: %g vs %g", l1, l2) && ok;
        tensor_free(&z);
        tensor_free(&p);
        tensor_free(&dz);
        tensor_free(&dz2);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ max-pool */

typedef struct {
    Tensor in, out, R;
    int *arg;
    int kernel, stride;
} PoolSetup;

static double pool_objective(void *ctx) {
    PoolSetup *s = ctx;
    maxpool2d_forward(&s->out, s->arg, &s->in, s->kernel, s->stride);
    return weighted_sum(&s->out, &s->R);
}

/* Inputs 0.1 apart (a shuffled ramp), so eps = 1e-2 never changes which pixel is the
 * maximum of a window: the pooled output is then linear in each input. */
static int check_pool_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    const int cases[][6] = {/* N, C, H, W, kernel, stride */
                            {2, 3, 6, 8, 2, 2},  {1, 2, 7, 7, 2, 2},  {2, 2, 7, 9, 3, 2},
                            {1, 3, 5, 6, 2, 1},  {2, 1, 10, 8, 3, 3}, {1, 2, 4, 4, 4, 1}};
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int *c = cases[k];
        PoolSetup s;
        s.kernel = c[4], s.stride = c[5];
        int OH = (c[2] - s.kernel) / s.stride + 1, OW = (c[3] - s.kernel) / s.stride + 1;
        s.in = tensor_zeros(4, c[0], c[1], c[2], c[3]);
        s.out = tensor_zeros(4, c[0], c[1], OH, OW);
        s.R = random4(600 + k, c[0], c[1], OH, OW);
        s.arg = malloc(sizeof(int) * (size_t)s.out.size);
        int *perm = malloc(sizeof(int) * (size_t)s.in.size);
        Rng rng;
        rng_seed(&rng, 610 + k, 0);
        rng_permutation(&rng, perm, (int)s.in.size);
        for (int64_t i = 0; i < s.in.size; i++) s.in.data[i] = 0.1f * (float)perm[i] - 5.0f;
        Tensor din = tensor_zeros_like(&s.in);
        maxpool2d_forward(&s.out, s.arg, &s.in, s.kernel, s.stride);
        maxpool2d_backward(&din, &s.R, s.arg);
        ok = fd_check("max-pool d input", s.in.data, din.data, s.in.size, pool_objective, &s, 1e-2f,
                      1e-3, 2e-3);
        if (!ok)
            printf("case: in [%d, %d, %d, %d], kernel %d, stride %d\n", c[0], c[1], c[2], c[3],
                   s.kernel, s.stride);
        tensor_free(&s.in);
        tensor_free(&s.out);
        tensor_free(&s.R);
        tensor_free(&din);
        free(s.arg);
        free(perm);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Forward against the definition, with many ties (values from {0, 1, 2}): the
 * maximum and, among equal maxima, the first in row-major order, as PyTorch. */
static int check_pool_forward_ties(void) {
    bool ok = true;
    /* from the seventh: 2x2 windows 8 at a time (rows of 16 to 27 inputs, odd heights; a
     * row of 9 to 13 outputs ends on a vector overlapping the one before) */
    const int cases[][6] = {{2, 3, 6, 8, 2, 2},  {1, 2, 7, 7, 2, 2},  {2, 2, 7, 9, 3, 2},
                            {1, 3, 5, 6, 2, 1},  {2, 1, 10, 8, 3, 3}, {1, 1, 5, 5, 1, 1},
                            {2, 3, 7, 16, 2, 2}, {1, 2, 5, 17, 2, 2}, {2, 2, 9, 20, 2, 2},
                            {1, 3, 4, 21, 2, 2}, {1, 2, 5, 24, 2, 2}, {2, 1, 4, 27, 2, 2},
                            /* rows of 4 outputs, two rows a vector; an odd row count ends
                             * on the row path */
                            {2, 3, 8, 8, 2, 2},  {1, 2, 9, 9, 2, 2},  {2, 2, 7, 8, 2, 2},
                            {1, 1, 2, 8, 2, 2}};
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int *c = cases[k];
        const int N = c[0], C = c[1], H = c[2], W = c[3], kernel = c[4], stride = c[5];
        int OH = (H - kernel) / stride + 1, OW = (W - kernel) / stride + 1;
        Tensor in = tensor_zeros(4, N, C, H, W), out = tensor_zeros(4, N, C, OH, OW);
        int *arg = malloc(sizeof(int) * (size_t)out.size);
        Rng rng;
        rng_seed(&rng, 700 + k, 0);
        for (int64_t i = 0; i < in.size; i++) in.data[i] = (float)rng_below(&rng, 3) - 1.0f;
        maxpool2d_forward(&out, arg, &in, kernel, stride);
        for (int plane = 0; ok && plane < N * C; plane++)
            for (int oh = 0; ok && oh < OH; oh++)
                for (int ow = 0; ok && ow < OW; ow++) {
                    const float *x = in.data + (size_t)plane * H * W;
                    int best = -1;
                    for (int kh = 0; kh < kernel; kh++)
                        for (int kw = 0; kw < kernel; kw++) {
                            int idx = (oh * stride + kh) * W + ow * stride + kw;
                            if (best < 0 || x[idx] > x[best]) best = idx;
                        }
                    size_t o = (size_t)plane * OH * OW + (size_t)oh * OW + ow;
                    ok = expect_true(out.data[o] == x[best] && arg[o] == best,
                                     "plane %d, output (%d, %d): max %g at %d, expected %g at %d "
                                     "(kernel %d, stride %d)",
                                     plane, oh, ow, out.data[o], arg[o], x[best], best, kernel, stride);
                }
        tensor_free(&in);
        tensor_free(&out);
        free(arg);
    }
    /* NaN never wins a comparison (as in the scalar loop): a window that starts with
     * NaN keeps it; a NaN anywhere else is passed over. 8 windows at a time here. */
    {
        Tensor nin = tensor_zeros(4, 1, 1, 2, 16), nout = tensor_zeros(4, 1, 1, 1, 8);
        int narg[8];
        for (int i = 0; i < 32; i++) nin.data[i] = (float)(i % 5);
        nin.data[0] = NAN;  /* window 0: first */
        nin.data[3] = NAN;  /* window 1: second */
        nin.data[20] = NAN; /* window 2: third (bottom row) */
        maxpool2d_forward(&nout, narg, &nin, 2, 2);
        ok = ok && expect_true(isnan(nout.data[0]) && narg[0] == 0 && narg[1] == 19 &&
                                   nout.data[1] == 4.0f && narg[2] == 4 && nout.data[2] == 4.0f,
                               "NaN in 2x2 windows: %g at %d, %g at %d, %g at %d; expected NaN at "
                               "0, 4 at 19, 4 at 4", nout.data[0], narg[0], nout.data[1], narg[1],
                               nout.data[2], narg[2]);
        tensor_free(&nin);
        tensor_free(&nout);
    }
    /* by hand: one 2x4 plane, two 2x2 windows [5 5; 5 5] and [1 3; 3 2] */
    float v[8] = {5, 5, 1, 3, 5, 5, 3, 2};
    Tensor in = tensor_zeros(4, 1, 1, 2, 4), out = tensor_zeros(4, 1, 1, 1, 2);
    memcpy(in.data, v, sizeof v);
    int arg[2];
    maxpool2d_forward(&out, arg, &in, 2, 2);
    ok = ok && expect_true(arg[0] == 0 && arg[1] == 3 && out.data[0] == 5 && out.data[1] == 3,
                           "ties: argmax %d and %d, expected 0 (first of four 5s) and 3 (first 3)",
                           arg[0], arg[1]);
    /* the gradient of a tie goes to that first maximum only */
    Tensor dout = tensor_zeros(4, 1, 1, 1, 2), din = tensor_zeros(4, 1, 1, 2, 4);
    dout.data[0] = 1.0f, dout.data[1] = 2.0f;
    maxpool2d_backward(&din, &dout, arg);
    const float want[8] = {1, 0, 0, 2, 0, 0, 0, 0};
    ok = ok && expect_close("gradient of tied maxima", din.data, want, 8, 0, 0);
    tensor_free(&in);
    tensor_free(&out);
    tensor_free(&dout);
    tensor_free(&din);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ ReLU */

typedef struct {
    Tensor in, out, R;
} ReluSetup;

static double relu_objective(void *ctx) {
    ReluSetup *s = ctx;
    relu_forward(&s->out, &s->in);
    return weighted_sum(&s->out, &s->R);
}

static int check_relu_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    ReluSetup s;
    s.in = random4(800, 2, 3, 5, 7);
    s.out = tensor_zeros_like(&s.in);
    s.R = random4(801, 2, 3, 5, 7);
    /* keep every input at least 0.1 away from the kink at 0 (eps is 1e-2) */
    for (int64_t i = 0; i < s.in.size; i++)
        s.in.data[i] += s.in.data[i] >= 0 ? 0.1f : -0.1f;
    Tensor din = tensor_zeros_like(&s.in);
    relu_forward(&s.out, &s.in);
    relu_backward(&din, &s.R, &s.out);
    bool ok = fd_check("relu d input", s.in.data, din.data, s.in.size, relu_objective, &s, 1e-2f, 1e-3, 2e-3);
    /* forward by definition; in place (out == in) works */
    for (int64_t i = 0; ok && i < s.in.size; i++)
        ok = expect_true(s.out.data[i] == (s.in.data[i] > 0 ? s.in.data[i] : 0.0f),
                         "relu(%g) = %g", s.in.data[i], s.out.data[i]);
    Tensor copy = tensor_zeros_like(&s.in);
    tensor_copy(&copy, &s.in);
    relu_forward(&copy, &copy);
    ok = ok && expect_close("relu in place", copy.data, s.out.data, copy.size, 0, 0);
    /* a large tensor takes the parallel path */
    Tensor big = tensor_zeros(1, 200000), bigout = tensor_zeros(1, 200000), bigR = tensor_zeros(1, 200000);
    Tensor bigd = tensor_zeros(1, 200000);
    fill_uniform(big.data, big.size, 802, -1, 1);
    fill_uniform(bigR.data, bigR.size, 803, -1, 1);
    relu_forward(&bigout, &big);
    relu_backward(&bigd, &bigR, &bigout);
    for (int64_t i = 0; ok && i < big.size; i++)
        ok = expect_true(bigout.data[i] == (big.data[i] > 0 ? big.data[i] : 0.0f) &&
                             bigd.data[i] == (big.data[i] > 0 ? bigR.data[i] : 0.0f),
                         "large tensor, entry %lld wrong", (long long)i);
    FREE_ALL(&s.in, &s.out, &s.R, &din, &copy, &big, &bigout, &bigR, &bigd);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ linear */

typedef struct {
    Tensor in, w, b, out, R;
} LinearSetup;

static double linear_objective(void *ctx) {
    LinearSetup *s = ctx;
    linear_forward(&s->out, &s->in, &s->w, &s->b);
    return weighted_sum(&s->out, &s->R);
}

static int check_linear_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    const int cases[][3] = {{5, 7, 4}, {1, 1, 1}, {3, 65, 10}, {17, 3, 1}};
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int N = cases[k][0], IN = cases[k][1], OUT = cases[k][2];
        LinearSetup s;
        s.in = random2(900 + 10 * k, N, IN);
        s.w = random2(901 + 10 * k, OUT, IN);
        s.b = random1(902 + 10 * k, OUT);
        s.out = tensor_zeros(2, N, OUT);
        s.R = random2(903 + 10 * k, N, OUT);
        Tensor din = tensor_zeros_like(&s.in), dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        linear_forward(&s.out, &s.in, &s.w, &s.b);
        /* forward by definition: out = in W^T + b */
        for (int n = 0; ok && n < N; n++)
            for (int o = 0; ok && o < OUT; o++) {
                double want = s.b.data[o], mag = fabs(s.b.data[o]);
                for (int i = 0; i < IN; i++) {
                    want += (double)s.in.data[n * IN + i] * s.w.data[o * IN + i];
                    mag += fabs((double)s.in.data[n * IN + i] * s.w.data[o * IN + i]);
                }
                ok = expect_true(fabs(s.out.data[n * OUT + o] - want) <= (IN + 3) * FLT_EPSILON * mag,
                                 "out[%d][%d] = %.9g, expected %.9g", n, o, s.out.data[n * OUT + o], want);
            }
        linear_backward(&din, &dw, &db, &s.R, &s.in, &s.w);
        ok = ok && fd_check("linear d input", s.in.data, din.data, s.in.size, linear_objective, &s, 1e-2f, 1e-3, 2e-3);
        ok = fd_check("linear d weight", s.w.data, dw.data, s.w.size, linear_objective, &s, 1e-2f, 1e-3, 2e-3) && ok;
        ok = fd_check("linear d bias", s.b.data, db.data, s.b.size, linear_objective, &s, 1e-2f, 1e-3, 2e-3) && ok;
        /* din = NULL: the same weight and bias gradients */
        Tensor dw2 = tensor_zeros_like(&s.w), db2 = tensor_zeros_like(&s.b);
        linear_backward(NULL, &dw2, &db2, &s.R, &s.in, &s.w);
        ok = ok && expect_close("linear d weight without din", dw2.data, dw.data, dw.size, 0, 0);
        ok = ok && expect_close("linear d bias without din", db2.data, db.data, db.size, 0, 0);
        if (!ok) printf("case: in [%d, %d], weight [%d, %d]\n", N, IN, OUT, IN);
        FREE_ALL(&s.in, &s.w, &s.b, &s.out, &s.R, &din, &dw, &db, &dw2, &db2);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ softmax cross-entropy */

typedef struct {
    Tensor z;
    const int *labels;
} XentSetup;

static double xent_objective(void *ctx) {
    XentSetup *s = ctx;
    return softmax_cross_entropy(NULL, &s->z, s->labels);
}

/* The loss in double, from the definition: mean of logsumexp(z) - z[label]. */
static double xent_reference(const Tensor *z, const int *labels) {
    const int N = z->shape[0], K = z->shape[1];
    double total = 0;
    for (int n = 0; n < N; n++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < K; j++) m = fmax(m, z->data[n * K + j]);
        for (int j = 0; j < K; j++) s += exp(z->data[n * K + j] - m);
        total += m + log(s) - z->data[n * K + labels[n]];
    }
    return total / N;
}

static int check_xent_grad(void) {
    omp_set_num_threads(1); /* thousands of tiny forwards: see one_thread_note */
    bool ok = true;
    const int cases[][2] = {{4, 5}, {1, 10}, {7, 3}, {3, 1}};
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int N = cases[k][0], K = cases[k][1];
        XentSetup s;
        s.z = random2(1000 + k, N, K);
        for (int64_t i = 0; i < s.z.size; i++) s.z.data[i] *= 3.0f;
        int labels[16];
        for (int n = 0; n < N; n++) labels[n] = (n * 3 + (int)k) % K;
        s.labels = labels;
        Tensor dz = tensor_zeros_like(&s.z);
        float loss = softmax_cross_entropy(&dz, &s.z, labels);
        double want = xent_reference(&s.z, labels);
        ok = expect_true(fabs(loss - want) <= 1e-6 * fabs(want) + 1e-7,
                         "loss %.9g, expected %.9g (mean over the batch)", loss, want);
        /* The loss is smooth: eps = 1e-2 leaves a truncation error of eps^2/6 |L'''|
         * < 2e-6; the loss is returned as a float (rounding 1.2e-7 of ~2), which is
         * 6e-6 on the difference quotient. */
        ok = ok && fd_check("softmax cross-entropy d logits", s.z.data, dz.data, s.z.size,
                            xent_objective, &s, 1e-2f, 1e-4, 2e-3);
        /* each row's gradient sums to 0 */
        for (int n = 0; ok && n < N; n++) {
            double sum = 0;
            for (int j = 0; j < K; j++) sum += dz.data[n * K + j];
            ok = expect_true(fabs(sum) < 1e-6, "row %d of d logits sums to %g, not 0", n, sum);
        }
        if (!ok) printf("case: logits [%d, %d]\n", N, K);
        tensor_free(&s.z);
        tensor_free(&dz);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_xent_extreme(void) {
    /* logits of +-1000: exp would overflow without the maximum subtracted */
    const float z[4][3] = {{1000, -1000, 0}, {-1000, 1000, 1000}, {0, 0, 0}, {1000, -1000, 0}};
    const int labels[4] = {0, 1, 2, 1};
    Tensor t = tensor_zeros(2, 4, 3), dz = tensor_zeros(2, 4, 3);
    memcpy(t.data, z, sizeof z);
    float loss = softmax_cross_entropy(&dz, &t, labels);
    /* rows: 0, log 2, log 3, 2000 */
    double want = (0.0 + log(2.0) + log(3.0) + 2000.0) / 4.0;
    bool ok = expect_true(isfinite(loss) && fabs(loss - want) < 1e-4,
                          "loss %.9g, expected %.9g", loss, want);
    for (int i = 0; ok && i < 12; i++)
        ok = expect_true(isfinite(dz.data[i]), "d logits[%d] = %g", i, dz.data[i]);
    const float dwant[12] = {0, 0, 0, 0, -0.5f / 4, 0.5f / 4, 1.0f / 12, 1.0f / 12, -2.0f / 12,
                             1.0f / 4, -1.0f / 4, 0};
    ok = ok && expect_close("d logits for +-1000", dz.data, dwant, 12, 1e-7f, 1e-6f);
    /* the same with the loss only (dlogits NULL) */
    float loss2 = softmax_cross_entropy(NULL, &t, labels);
    ok = ok && expect_true(loss2 == loss, "loss without gradient %g, with %g", loss2, loss);
    tensor_free(&t);
    tensor_free(&dz);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_count_correct(void) {
    const float z[5][4] = {{0.1f, 0.9f, 0.3f, 0.2f},
                           {5, 5, 1, 0},     /* a tie: the first maximum, class 0 */
                           {-3, -2, -1, -4},
                           {1, 2, 3, 3},     /* a tie: class 2 */
                           {0, 0, 0, 0}};    /* all equal: class 0 */
    Tensor t = tensor_zeros(2, 5, 4);
    memcpy(t.data, z, sizeof z);
    const int right[5] = {1, 0, 2, 2, 0}, wrong[5] = {0, 1, 3, 3, 1}, mixed[5] = {1, 1, 2, 3, 0};
    int a = count_correct(&t, right), b = count_correct(&t, wrong), c = count_correct(&t, mixed);
    bool ok = expect_true(a == 5 && b == 0 && c == 3,
                          "count_correct: %d, %d, %d; expected 5, 0, 3 (ties go to the first maximum)",
                          a, b, c);
    tensor_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("layers");
    check_run(NULL, "conv2d backward: input, weight, bias vs finite differences (stride, padding, 1x1)", check_conv_grad, 60);
    check_run(NULL, "conv2d backward with din = NULL: same weight and bias gradients", check_conv_null_din, 30);
    check_run(NULL, "conv2d forward vs the definition, N = 1, 3, 7, 37, 100, random shapes", check_conv_forward, 60);
    check_run(NULL, "conv2d backward vs the definition: the CNN's layers, rows of 20, im2col shapes", check_conv_backward_definition, 60);
    check_run(NULL, "conv2d backward on uneven chunks vs one image at a time", check_conv_backward_batches, 60);
    check_run(NULL, "conv2d forward and backward: same bits on 1, 2 and 3 threads", check_conv_threads, 60);
    check_run(NULL, "every backward adds (+=) into the gradients it is given", check_backward_adds, 30);
    check_run(NULL, "max-pool backward vs finite differences (overlapping, floor mode)", check_pool_grad, 30);
    check_run(NULL, "max-pool forward by definition; ties go to the first maximum", check_pool_forward_ties, 30);
    check_run(NULL, "relu backward vs finite differences; forward, in place", check_relu_grad, 30);
    check_run(NULL, "linear forward by definition, backward vs finite differences, din = NULL", check_linear_grad, 30);
    check_run(NULL, "softmax cross-entropy: loss, gradient vs finite differences", check_xent_grad, 30);
    check_run(NULL, "softmax cross-entropy finite for logits of +-1000", check_xent_extreme, 10);
    check_run(NULL, "count_correct, ties to the first maximum", check_count_correct, 10);
    return check_end();
}
