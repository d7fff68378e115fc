/* Unit tests of the fused first block (lib/layers/conv_pool_relu.h, on the wide-row
 * kernels of lib/ops/conv_wide.h): the forward against conv2d, max-pool and ReLU one
 * after another (the same bits where conv2d takes the direct kernels), the weight and
 * bias gradients against their definition in double, backward passes that add (+=),
 * the same bits on 1, 2 and 3 threads, and shapes it must refuse.
 *
 * The shapes: the CNN's first layer on MNIST and CIFAR-10 (pooled rows of 12 and 14:
 * the last 8 windows overlap the ones before), odd convolution outputs (the pool's
 * floor drops a row and a column), pooled rows of 6, 8, 16 and 20, channel and tap counts
 * that leave the register blocks partly empty, a 3x3 and a 5x4 kernel, and a 2x2
 * output. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "framework/check.h"
#include "layers/conv2d.h"
#include "layers/conv_pool_relu.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "ops/conv_direct.h"

typedef struct {
    int N, C, H, W, Cout, KH, KW;
} Case;

static const Case CASES[] = {
    {20, 1, 28, 28, 50, 5, 5},  /* the CNN's first layer on MNIST: several image groups */
    {6, 3, 32, 32, 50, 5, 5},   /* ... on CIFAR-10: 75 taps */
    {5, 2, 17, 21, 37, 5, 5},   /* 13x17 output: odd, pooled to 6x8 (one vector a row) */
    {3, 1, 41, 37, 9, 5, 5},    /* 37x33 output: pooled to 18x16, two vectors a row */
    {2, 1, 9, 44, 6, 5, 5},     /* 5x40 output: pooled rows of 20, the overlap after two */
    {3, 1, 16, 16, 7, 5, 5},    /* 12x12 output: conv2d takes im2col + GEMM there */
    {4, 4, 11, 14, 12, 3, 3},   /* 36 taps, 9x12 output */
    {2, 3, 9, 10, 3, 5, 4},     /* a 5x4 kernel, 3 channels: blocks mostly empty */
    {1, 1, 6, 6, 1, 5, 5},      /* a 2x2 output, one channel */
    {2, 1, 12, 12, 5, 5, 5},    /* 8x8 output: pooled rows of 4, two rows a vector */
    {2, 2, 11, 12, 5, 5, 5},    /* 7x8 output: pooled to 3x4, the last row alone */
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

typedef struct {
    Case c;
    int OH, OW, PH, PW;
    Tensor in, w, b, drelu;
} Setup;

static void describe(const Case *c) {
    printf("  case: N=%d C=%d %dx%d, %d channels out, %dx%d kernel\n", c->N, c->C, c->H, c->W,
           c->Cout, c->KH, c->KW);
}

static Setup setup(const Case *c, uint64_t seed) {
    Setup s = {.c = *c, .OH = c->H - c->KH + 1, .OW = c->W - c->KW + 1};
    s.PH = s.OH / 2;
    s.PW = s.OW / 2;
    s.in = tensor_zeros(4, c->N, c->C, c->H, c->W);
    s.w = tensor_zeros(4, c->Cout, c->C, c->KH, c->KW);
    s.b = tensor_zeros(1, c->Cout);
    s.drelu = tensor_zeros(4, c->N, c->Cout, s.PH, s.PW);
    fill_uniform(s.in.data, s.in.size, seed, -1.0f, 1.0f);
    fill_uniform(s.w.data, s.w.size, seed + 1, -0.3f, 0.3f);
    fill_uniform(s.b.data, s.b.size, seed + 2, -0.3f, 0.3f);
    fill_uniform(s.drelu.data, s.drelu.size, seed + 3, -1.0f, 1.0f);
    return s;
}

static void setup_free(Setup *s) {
    tensor_free(&s->in);
    tensor_free(&s->w);
    tensor_free(&s->b);
    tensor_free(&s->drelu);
}

/* What one forward leaves: the pooled values, their ReLU and the argmax. */
typedef struct {
    Tensor pool, relu;
    int *arg;
} Block;

static Block block_new(const Setup *s) {
    Block k = {tensor_zeros(4, s->c.N, s->c.Cout, s->PH, s->PW), {0}, NULL};
    k.relu = tensor_zeros_like(&k.pool);
    k.arg = calloc((size_t)k.pool.size, sizeof(int));
    return k;
}

static void block_free(Block *k) {
    tensor_free(&k->pool);
    tensor_free(&k->relu);
    free(k->arg);
}

/* The three layers one after another. */
static void unfused_forward(Block *k, const Setup *s) {
    Tensor conv = tensor_zeros(4, s->c.N, s->c.Cout, s->OH, s->OW);
    conv2d_forward(&conv, &s->in, &s->w, &s->b, 1, 0);
    maxpool2d_forward(&k->pool, k->arg, &conv, 2, 2);
    relu_forward(&k->relu, &k->pool);
    tensor_free(&conv);
}

static int check_forward(void) {
    bool ok = true;
    for (int i = 0; ok && i < NCASES; i++) {
        Setup s = setup(&CASES[i], 100 + i);
        Block want = block_new(&s), got = block_new(&s);
        unfused_forward(&want, &s);
        conv_pool_relu_forward(&got.pool, got.arg, &got.relu, &s.in, &s.w, &s.b);
        ConvGeometry g = conv_geometry(s.c.C, s.c.H, s.c.W, s.c.KH, s.c.KW, 1, 0);
        if (conv_direct_fits(&g)) { /* the same sums in the same order */
            ok = expect_true(memcmp(got.pool.data, want.pool.data, sizeof(float) * (size_t)want.pool.size) == 0,
                             "pooled values differ from conv2d + max-pool's in their bits");
        } else { /* conv2d sums in a GEMM's order there */
            ok = expect_close("pooled values", got.pool.data, want.pool.data, want.pool.size, 1e-5f, 1e-5f);
        }
        ok = ok && expect_close("relu", got.relu.data, want.relu.data, want.relu.size, 1e-5f, 1e-5f);
        for (int64_t j = 0; ok && j < want.pool.size; j++) {
            ok = expect_true(got.arg[j] == want.arg[j], "argmax[%lld] = %d, max-pool says %d",
                             (long long)j, got.arg[j], want.arg[j]);
            ok = ok && expect_true(got.relu.data[j] == (got.pool.data[j] > 0.0f ? got.pool.data[j] : 0.0f),
                                   "relu[%lld] is not max(pool, 0)", (long long)j);
        }
        if (!ok) describe(&s.c);
        block_free(&want);
        block_free(&got);
        setup_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The gradients by their definition, in double, from the forward's argmax and relu:
 * each pooled gradient that passed the ReLU goes to the one convolution output its
 * argmax names, and from there to every weight and the bias of that channel. */
static void definition(double *dw, double *dw_mag, double *db, double *db_mag, const Setup *s,
                       const Block *k) {
    const Case *c = &s->c;
    memset(dw, 0, sizeof(double) * (size_t)s->w.size);
    memset(dw_mag, 0, sizeof(double) * (size_t)s->w.size);
    memset(db, 0, sizeof(double) * (size_t)c->Cout);
    memset(db_mag, 0, sizeof(double) * (size_t)c->Cout);
    for (int n = 0; n < c->N; n++)
        for (int co = 0; co < c->Cout; co++)
            for (int j = 0; j < s->PH * s->PW; j++) {
                const size_t at = ((size_t)n * c->Cout + co) * s->PH * s->PW + j;
                if (!(k->relu.data[at] > 0.0f)) continue;
                const double g = s->drelu.data[at];
                const int oh = k->arg[at] / s->OW, ow = k->arg[at] % s->OW;
                db[co] += g;
                db_mag[co] += fabs(g);
                for (int ci = 0; ci < c->C; ci++)
                    for (int kh = 0; kh < c->KH; kh++)
                        for (int kw = 0; kw < c->KW; kw++) {
                            const size_t xi = (((size_t)n * c->C + ci) * c->H + oh + kh) * c->W + ow + kw;
                            const size_t wi = (((size_t)co * c->C + ci) * c->KH + kh) * c->KW + kw;
                            dw[wi] += s->in.data[xi] * g;
                            dw_mag[wi] += fabs(s->in.data[xi] * g);
                        }
            }
}

/* got[i] against want[i] within (8 sqrt(terms) + 2) FLT_EPSILON mag[i]: the rounding
 * of a float32 sum of that many terms grows like their square root (the worst case,
 * terms FLT_EPSILON mag, would let a term of an image go missing unseen). The inputs
 * are fixed and the sums thread-independent, so a pass is a pass on every run. */
static bool sums_match(const char *what, const float *got, const double *want, const double *mag,
                       int64_t n, double terms) {
    return expect_sums_close(what, got, want, mag, n, 8 * sqrt(terms) + 2);
}

static int check_backward(void) {
    bool ok = true;
    for (int i = 0; ok && i < NCASES; i++) {
        Setup s = setup(&CASES[i], 200 + i);
        Block k = block_new(&s);
        conv_pool_relu_forward(&k.pool, k.arg, &k.relu, &s.in, &s.w, &s.b);
        /* the backward adds: start from P and take P away again in double */
        Tensor dw = tensor_zeros_like(&s.w), db = tensor_zeros_like(&s.b);
        fill_uniform(dw.data, dw.size, 300 + i, -1.0f, 1.0f);
        fill_uniform(db.data, db.size, 400 + i, -1.0f, 1.0f);
        double *want = malloc(sizeof(double) * (size_t)(2 * s.w.size + 2 * s.b.size));
        double *mag = want + s.w.size, *bwant = mag + s.w.size, *bmag = bwant + s.b.size;
        definition(want, mag, bwant, bmag, &s, &k);
        for (int64_t j = 0; j < s.w.size; j++) want[j] += dw.data[j], mag[j] += fabs(dw.data[j]);
        for (int64_t j = 0; j < s.b.size; j++) bwant[j] += db.data[j], bmag[j] += fabs(db.data[j]);
        conv_pool_relu_backward(&dw, &db, &s.drelu, &k.relu, k.arg, &s.in, &s.w);
        const double terms = (double)s.c.N * s.PH * s.PW + 1;
        ok = sums_match("d weight", dw.data, want, mag, dw.size, terms) &&
             sums_match("d bias", db.data, bwant, bmag, db.size, terms);
        if (!ok) describe(&s.c);
        free(want);
        tensor_free(&dw);
        tensor_free(&db);
        block_free(&k);
        setup_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_threads(void) {
    bool ok = true;
    for (int i = 0; ok && i < NCASES; i++) {
        Setup s = setup(&CASES[i], 500 + i);
        Block k[3];
        Tensor dw[3], db[3];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            k[t] = block_new(&s);
            dw[t] = tensor_zeros_like(&s.w);
            db[t] = tensor_zeros_like(&s.b);
            conv_pool_relu_forward(&k[t].pool, k[t].arg, &k[t].relu, &s.in, &s.w, &s.b);
            conv_pool_relu_backward(&dw[t], &db[t], &s.drelu, &k[t].relu, k[t].arg, &s.in, &s.w);
        }
        for (int t = 1; ok && t < 3; t++) {
            ok = expect_true(memcmp(k[0].pool.data, k[t].pool.data, sizeof(float) * (size_t)k[0].pool.size) == 0 &&
                                 memcmp(k[0].arg, k[t].arg, sizeof(int) * (size_t)k[0].pool.size) == 0,
                             "forward: 1 and %d threads give different bits", t + 1);
            ok = ok && expect_true(memcmp(dw[0].data, dw[t].data, sizeof(float) * (size_t)s.w.size) == 0,
                                   "d weight: 1 and %d threads give different bits", t + 1);
            ok = ok && expect_true(memcmp(db[0].data, db[t].data, sizeof(float) * (size_t)s.b.size) == 0,
                                   "d bias: 1 and %d threads give different bits", t + 1);
        }
        if (!ok) describe(&s.c);
        for (int t = 0; t < 3; t++) {
            block_free(&k[t]);
            tensor_free(&dw[t]);
            tensor_free(&db[t]);
        }
        setup_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ shapes it refuses */

typedef struct {
    int which; /* 0: pool of the wrong size, 1: a 1x1 convolution output, 2: relu's size */
} Misuse;

static void body_misuse(void *arg) {
    const Misuse *u = arg;
    const int H = u->which == 1 ? 5 : 28;
    Tensor in = tensor_zeros(4, 2, 1, H, H), w = tensor_zeros(4, 50, 1, 5, 5), b = tensor_zeros(1, 50);
    const int P = u->which == 0 ? 11 : (H - 4) / 2 > 0 ? (H - 4) / 2 : 1;
    Tensor pool = tensor_zeros(4, 2, 50, P, P), relu = tensor_zeros(4, 2, 50, P, u->which == 2 ? P + 1 : P);
    int *arg_ = calloc((size_t)relu.size, sizeof(int));
    conv_pool_relu_forward(&pool, arg_, &relu, &in, &w, &b);
}

static int check_misuse(void) {
    ChildResult r;
    Misuse pool = {0}, tiny = {1}, relu = {2};
    run_child(body_misuse, &pool, &r);
    bool ok = expect_exit("a pool tensor of 11x11 for a 24x24 convolution output", &r, 2, "[2, 50, 11, 11]",
                          (const char *)NULL);
    run_child(body_misuse, &tiny, &r);
    ok = ok && expect_exit("a 1x1 convolution output", &r, 2, "too small for a 2x2 max-pool",
                           (const char *)NULL);
    run_child(body_misuse, &relu, &r);
    ok = ok && expect_exit("relu of another shape than pool", &r, 2, "relu", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("conv_pool_relu");
    check_run(NULL, "fused conv + max-pool + ReLU forward = the three layers (same bits on the direct kernels)", check_forward, 60);
    check_run(NULL, "fused backward: weight and bias gradients vs the definition, added (+=)", check_backward, 60);
    check_run(NULL, "fused forward and backward: same bits on 1, 2 and 3 threads", check_threads, 60);
    check_run(NULL, "fused block refuses shapes that do not fit", check_misuse, 30);
    return check_end();
}
