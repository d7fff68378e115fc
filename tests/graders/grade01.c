/* Grader of lesson 01: one check per TODO (or a few), each against the library's
 * reference layers or finite differences, never against numbers typed in here.
 * Run with `make check-lesson 1` (your code) or `make check-lesson 1 SOLUTION=1`. */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/check.h"
#include "framework/gradcheck.h"
#include "layers/conv2d.h"
#include "layers/maxpool2d.h"
#include "layers/softmax_xent.h"
#include "lesson.h"

/* ---------------------------------------------------------------- helpers */

/* Your TODOs must not call the library's versions of themselves (refuse_library.h);
 * train_epoch and evaluate are TODOs with the library's names. */
static bool lesson_function(const char *name) {
    return strncmp(name, "lesson_", 7) == 0 || strcmp(name, "train_epoch") == 0 ||
           strcmp(name, "evaluate") == 0;
}
#include "graders/refuse_library.h"
WRAP_VOID(conv2d_forward, (Tensor *o, const Tensor *i, const Tensor *w, const Tensor *b, int s, int p),
          (o, i, w, b, s, p))
WRAP_VOID(conv2d_backward, (Tensor *di, Tensor *dw, Tensor *db, const Tensor *dout, const Tensor *i,
                            const Tensor *w, int s, int p), (di, dw, db, dout, i, w, s, p))
WRAP_VOID(maxpool2d_forward, (Tensor *o, int *a, const Tensor *i, int k, int s), (o, a, i, k, s))
WRAP_VOID(maxpool2d_backward, (Tensor *di, const Tensor *dout, const int *a), (di, dout, a))
WRAP_VALUE(float, softmax_cross_entropy, (Tensor *dl, const Tensor *l, const int *y), (dl, l, y))
WRAP_VOID(adam_step, (Adam *opt, ParamList *params), (opt, params))
WRAP_VOID(adam_update, (float *p, const float *g, float *m, float *v, int64_t n, const Adam *opt,
                        int64_t t), (p, g, m, v, n, opt, t))
WRAP_VALUE(EpochResult, cnn_train_epoch, (Cnn *m, Adam *o, const Dataset *d, Sampler *s, Batch *b),
           (m, o, d, s, b))
WRAP_VALUE(EpochResult, cnn_evaluate, (Cnn *m, const Dataset *d, Batch *b), (m, d, b))

static Tensor random_tensor(uint64_t seed, int ndim, int a, int b, int c, int d) {
    Tensor t = ndim == 4 ? tensor_zeros(4, a, b, c, d) : ndim == 2 ? tensor_zeros(2, a, b)
                                                                   : tensor_zeros(1, a);
    fill_uniform(t.data, t.size, seed, -1.0f, 1.0f);
    return t;
}

typedef struct {
    int N, C, H, W, Cout, K, stride, pad;
} ConvCase;

/* A random convolution that fits: sizes small enough for plain loops. */
static ConvCase conv_case(Rng *rng) {
    ConvCase c;
    c.N = 1 + (int)rng_below(rng, 3);
    c.C = 1 + (int)rng_below(rng, 4);
    c.Cout = 1 + (int)rng_below(rng, 5);
    c.H = 4 + (int)rng_below(rng, 9);
    c.W = 4 + (int)rng_below(rng, 9);
    c.K = 1 + (int)rng_below(rng, 5);
    c.stride = 1 + (int)rng_below(rng, 2);
    c.pad = (int)rng_below(rng, 3);
    if (c.K > c.H + 2 * c.pad) c.K = c.H + 2 * c.pad;
    if (c.K > c.W + 2 * c.pad) c.K = c.W + 2 * c.pad;
    return c;
}

static void describe(const ConvCase *c) {
    printf("case: in [%d, %d, %d, %d], weight [%d, %d, %d, %d], stride %d, padding %d\n", c->N,
           c->C, c->H, c->W, c->Cout, c->C, c->K, c->K, c->stride, c->pad);
}

static int out_size(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

/* ---------------------------------------------------------------- TODO 1.1 */

static int check_conv_forward(void) {
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (int t = 0; t < 16; t++) {
        ConvCase c = conv_case(&rng);
        Tensor in = random_tensor(100 + t, 4, c.N, c.C, c.H, c.W);
        Tensor w = random_tensor(200 + t, 4, c.Cout, c.C, c.K, c.K);
        Tensor b = random_tensor(300 + t, 1, c.Cout, 0, 0, 0);
        int OH = out_size(c.H, c.K, c.stride, c.pad), OW = out_size(c.W, c.K, c.stride, c.pad);
        Tensor mine = tensor_zeros(4, c.N, c.Cout, OH, OW), ref = tensor_zeros_like(&mine);
        tensor_fill(&mine, NAN); /* every output must be written */
        lesson_conv2d_forward(&mine, &in, &w, &b, c.stride, c.pad);
        conv2d_forward(&ref, &in, &w, &b, c.stride, c.pad);
        if (!expect_close("out", mine.data, ref.data, ref.size, 1e-5f, 1e-4f)) {
            describe(&c);
            printf("hint: check the bias, the padding test (0 <= ih < H) and ih = oh*stride - pad + kh\n");
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 1.2 */

/* Whether mine[i] is close to want[i] for all i. */
static bool all_close(const float *mine, const float *want, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(mine[i] - want[i]) <= 1e-4f + 1e-4f * fabsf(want[i]))) return false;
    return true;
}

/* The usual mistakes in a gradient that should be init + g (ref): what the
 * participant's mine looks like, or NULL when it is none of them. */
static const char *gradient_mistake(const float *mine, const float *ref, const float *init,
                                    int64_t n) {
    float *g = malloc(sizeof(float) * (size_t)n), *want = malloc(sizeof(float) * (size_t)n);
    const char *what = NULL;
    for (int64_t i = 0; i < n; i++) g[i] = ref[i] - init[i];
    if (all_close(mine, g, n)) what = "it was assigned (=): gradients start non-zero here, add (+=) into them";
    for (int64_t i = 0; i < n && !what; i++) want[i] = init[i] - g[i];
    if (!what && all_close(mine, want, n)) what = "its sign is wrong: it is the negative of the gradient";
    if (!what && all_close(mine, init, n)) what = "nothing was added to it";
    for (int64_t i = 0; i < n && !what; i++) want[i] = init[i] + 2 * g[i];
    if (!what && all_close(mine, want, n)) what = "the gradient was added twice";
    free(g), free(want);
    return what;
}

/* Both backward passes, from gradients pre-filled with the same random values so
 * that "=" instead of "+=" shows. */
static int compare_conv_backward(const ConvCase *c, uint64_t seed, bool with_din) {
    Tensor in = random_tensor(seed, 4, c->N, c->C, c->H, c->W);
    Tensor w = random_tensor(seed + 1, 4, c->Cout, c->C, c->K, c->K);
    int OH = out_size(c->H, c->K, c->stride, c->pad), OW = out_size(c->W, c->K, c->stride, c->pad);
    Tensor dout = random_tensor(seed + 2, 4, c->N, c->Cout, OH, OW);
    Tensor din[2], dw[2], db[2];
    for (int k = 0; k < 2; k++) {
        din[k] = random_tensor(seed + 3, 4, c->N, c->C, c->H, c->W);
        dw[k] = random_tensor(seed + 4, 4, c->Cout, c->C, c->K, c->K);
        db[k] = random_tensor(seed + 5, 1, c->Cout, 0, 0, 0);
    }
    lesson_conv2d_backward(with_din ? &din[0] : NULL, &dw[0], &db[0], &dout, &in, &w, c->stride,
                           c->pad);
    conv2d_backward(with_din ? &din[1] : NULL, &dw[1], &db[1], &dout, &in, &w, c->stride, c->pad);
    bool ok = expect_close("dbias", db[0].data, db[1].data, db[1].size, 1e-4f, 1e-4f) &&
              expect_close("dweight", dw[0].data, dw[1].data, dw[1].size, 1e-4f, 1e-4f) &&
              expect_close("din", din[0].data, din[1].data, din[1].size, 1e-4f, 1e-4f);
    if (!ok) {
        describe(c);
        const Tensor init[3] = {random_tensor(seed + 5, 1, c->Cout, 0, 0, 0),
                                random_tensor(seed + 4, 4, c->Cout, c->C, c->K, c->K),
                                random_tensor(seed + 3, 4, c->N, c->C, c->H, c->W)};
        const Tensor *mine[3] = {&db[0], &dw[0], &din[0]}, *ref[3] = {&db[1], &dw[1], &din[1]};
        const char *names[3] = {"dbias", "dweight", "din"};
        /* the same call from pre-fills 1 larger: a gradient that adds (+=) ends 1 larger */
        Tensor again[3];
        for (int k = 0; k < 3; k++) {
            again[k] = tensor_zeros_like(&init[k]);
            for (int64_t i = 0; i < init[k].size; i++) again[k].data[i] = init[k].data[i] + 1.0f;
        }
        lesson_conv2d_backward(with_din ? &again[2] : NULL, &again[1], &again[0], &dout, &in, &w,
                               c->stride, c->pad);
        bool named = false;
        /* the same call 8 more times: different results mean threads race */
        for (int rep = 0; rep < 8 && !named; rep++) {
            Tensor more[3];
            for (int k = 0; k < 3; k++) {
                more[k] = tensor_zeros_like(&init[k]);
                for (int64_t i = 0; i < init[k].size; i++) more[k].data[i] = init[k].data[i] + 1.0f;
            }
            lesson_conv2d_backward(with_din ? &more[2] : NULL, &more[1], &more[0], &dout, &in, &w,
                                   c->stride, c->pad);
            for (int k = 0; k < (with_din ? 3 : 2) && !named; k++)
                if (memcmp(more[k].data, again[k].data, sizeof(float) * (size_t)init[k].size) != 0) {
                    printf("hint: %s: the same call gives different results from one run to the "
                           "next: threads add into the same elements at once (a data race). "
                           "Split the loops so that each thread owns the elements it writes "
                           "(for din, the images n; for dweight and dbias, the channels co)\n",
                           names[k]);
                    named = true;
                }
        }
        for (int k = 0; k < (with_din ? 3 : 2) && !named; k++) {
            bool adds = true;
            for (int64_t i = 0; i < init[k].size && adds; i++)
                adds = fabsf(again[k].data[i] - mine[k]->data[i] - 1.0f) <= 1e-3f;
            if (!adds) {
                printf("hint: %s: part of it is assigned (=), not added: gradients start non-zero "
                       "here, add (+=) into them\n", names[k]);
                named = true;
                continue;
            }
            const char *m = gradient_mistake(mine[k]->data, ref[k]->data, init[k].data, ref[k]->size);
            if (m && !all_close(mine[k]->data, ref[k]->data, ref[k]->size)) {
                printf("hint: %s: %s\n", names[k], m);
                named = true;
            }
        }
        if (!with_din) printf("(din is NULL in this case: the backward must skip it)\n");
        if (!named)
            printf("hint: compare your index arithmetic with the forward's: dweight[co][ci][kh][kw] "
                   "gathers dout[n][co][oh][ow] * in[n][ci][ih][iw] over n, oh, ow\n");
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_conv_backward(void) {
    /* at least 4 threads, whatever the machine: a race between threads adding into the
     * same gradient (an omp for over n without a reduction) only shows with several */
    if (omp_get_max_threads() < 4) omp_set_num_threads(4);
    for (int round = 0; round < 4; round++) { /* a race loses updates only now and then */
        Rng rng;
        rng_seed(&rng, 12, 0);
        for (int t = 0; t < 16; t++) {
            ConvCase c = conv_case(&rng);
            if (compare_conv_backward(&c, 1000 + 10 * (uint64_t)t, t % 4 != 3) != CHECK_PASS)
                return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* Finite differences on L = sum(out * R), through the library's forward: checks the
 * gradient against the definition of a derivative, independently of any backward. */
/* L = sum(conv2d_forward(in, w, b) * R), the library's forward: the objective whose
 * finite differences your backward must match. */
typedef struct {
    Tensor *in, *w, *b, *out, *R;
    int stride, pad;
} ConvObjective;
static double conv_objective(void *ctx) {
    ConvObjective *o = ctx;
    conv2d_forward(o->out, o->in, o->w, o->b, o->stride, o->pad);
    return weighted_sum(o->out, o->R);
}

static int check_conv_backward_numeric(void) {
    ConvCase c = {2, 3, 7, 6, 4, 3, 2, 1};
    Tensor in = random_tensor(1, 4, c.N, c.C, c.H, c.W);
    Tensor w = random_tensor(2, 4, c.Cout, c.C, c.K, c.K);
    Tensor b = random_tensor(3, 1, c.Cout, 0, 0, 0);
    int OH = out_size(c.H, c.K, c.stride, c.pad), OW = out_size(c.W, c.K, c.stride, c.pad);
    Tensor R = random_tensor(4, 4, c.N, c.Cout, OH, OW), out = tensor_zeros_like(&R);
    Tensor din = tensor_zeros_like(&in), dw = tensor_zeros_like(&w), db = tensor_zeros_like(&b);
    lesson_conv2d_backward(&din, &dw, &db, &R, &in, &w, c.stride, c.pad);

    /* about 23 entries of each: every entry would take too many forwards */
    ConvObjective o = {&in, &w, &b, &out, &R, c.stride, c.pad};
    Tensor *wrt[] = {&in, &w, &b}, *grad[] = {&din, &dw, &db};
    const char *names[] = {"din", "dweight", "dbias"};
    for (int k = 0; k < 3; k++)
        if (!fd_check_sampled(names[k], wrt[k]->data, grad[k]->data, wrt[k]->size,
                              1 + wrt[k]->size / 23, conv_objective, &o, 1e-2f, 2e-3, 1e-2))
            return CHECK_FAIL;
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 1.3 */

static const int POOLS[][2] = {{2, 2}, {3, 2}, {3, 3}, {2, 1}}; /* kernel, stride */

static int check_pool_forward(void) {
    for (int t = 0; t < 4; t++) {
        int k = POOLS[t][0], s = POOLS[t][1], H = 9 + t, W = 8;
        Tensor in = random_tensor(40 + t, 4, 2, 3, H, W);
        int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
        Tensor mine = tensor_zeros(4, 2, 3, OH, OW), ref = tensor_zeros_like(&mine);
        int *arg_mine = xcalloc((size_t)mine.size, sizeof(int));
        int *arg_ref = xcalloc((size_t)mine.size, sizeof(int));
        lesson_maxpool2d_forward(&mine, arg_mine, &in, k, s);
        maxpool2d_forward(&ref, arg_ref, &in, k, s);
        if (!expect_close("out", mine.data, ref.data, ref.size, 0, 0)) {
            printf("kernel %d, stride %d, input [2, 3, %d, %d]\n", k, s, H, W);
            return CHECK_FAIL;
        }
        for (int64_t i = 0; i < ref.size; i++)
            if (arg_mine[i] != arg_ref[i]) {
                printf("argmax[%lld] is %d, expected %d (kernel %d, stride %d): the index of the "
                       "winner within its H x W plane, row * W + column\n",
                       (long long)i, arg_mine[i], arg_ref[i], k, s);
                return CHECK_FAIL;
            }
    }
    return CHECK_PASS;
}

/* Equal values in every window: PyTorch (and the library) pick the first. */
static int check_pool_ties(void) {
    Tensor in = tensor_zeros(4, 1, 2, 6, 6);
    for (int64_t i = 0; i < in.size; i++) in.data[i] = (float)((i / 13) % 3); /* many ties */
    Tensor mine = tensor_zeros(4, 1, 2, 3, 3), ref = tensor_zeros_like(&mine);
    int arg_mine[18], arg_ref[18];
    lesson_maxpool2d_forward(&mine, arg_mine, &in, 2, 2);
    maxpool2d_forward(&ref, arg_ref, &in, 2, 2);
    for (int i = 0; i < 18; i++)
        if (arg_mine[i] != arg_ref[i]) {
            /* output i: plane i / 9, window rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1 */
            const float *plane = in.data + (i / 9) * 36;
            const int oh = (i % 9) / 3, ow = i % 3, r = arg_mine[i] / 6, col = arg_mine[i] % 6;
            const bool inside = arg_mine[i] >= 0 && arg_mine[i] < 36 && r / 2 == oh && col / 2 == ow;
            printf("argmax[%d] is %d, expected %d: ", i, arg_mine[i], arg_ref[i]);
            if (!inside)
                printf("that is not a position of its 2x2 window (rows %d-%d, columns %d-%d of "
                       "the 6x6 plane, index row * 6 + column): search each window alone\n",
                       2 * oh, 2 * oh + 1, 2 * ow, 2 * ow + 1);
            else if (plane[arg_mine[i]] == plane[arg_ref[i]])
                printf("both hold the window's maximum (a tie): keep the first one, in row-major "
                       "order (compare with '>', not '>=')\n");
            else
                printf("the value there (%g) is not the window's maximum (%g)\n",
                       (double)plane[arg_mine[i]], (double)plane[arg_ref[i]]);
            return CHECK_FAIL;
        }
    return CHECK_PASS;
}

static int check_pool_backward(void) {
    for (int t = 0; t < 4; t++) {
        int k = POOLS[t][0], s = POOLS[t][1], H = 9 + t, W = 8;
        Tensor in = random_tensor(50 + t, 4, 2, 3, H, W);
        int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
        Tensor out = tensor_zeros(4, 2, 3, OH, OW), dout = random_tensor(60 + t, 4, 2, 3, OH, OW);
        int *arg = xcalloc((size_t)out.size, sizeof(int));
        maxpool2d_forward(&out, arg, &in, k, s); /* the library's argmax: tests 1.3b alone */
        Tensor mine = random_tensor(70 + t, 4, 2, 3, H, W), ref = random_tensor(70 + t, 4, 2, 3, H, W);
        lesson_maxpool2d_backward(&mine, &dout, arg);
        maxpool2d_backward(&ref, &dout, arg);
        if (!expect_close("din", mine.data, ref.data, ref.size, 1e-6f, 1e-6f)) {
            printf("kernel %d, stride %d; din started non-zero: add (+=) into it\n", k, s);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 1.4 */

static int check_loss_reference(void) {
    Tensor z = random_tensor(5, 2, 13, 10, 0, 0);
    for (int64_t i = 0; i < z.size; i++) z.data[i] *= 4.0f;
    int labels[13];
    for (int n = 0; n < 13; n++) labels[n] = (n * 7) % 10;
    Tensor d_mine = random_tensor(6, 2, 13, 10, 0, 0), d_ref = random_tensor(6, 2, 13, 10, 0, 0);
    float mine = lesson_softmax_cross_entropy(&d_mine, &z, labels);
    float ref = softmax_cross_entropy(&d_ref, &z, labels);
    if (!expect_close("loss", &mine, &ref, 1, 1e-5f, 1e-5f)) return CHECK_FAIL;
    if (!expect_close("dlogits", d_mine.data, d_ref.data, d_ref.size, 1e-6f, 1e-5f)) {
        printf("hint: (p_j - [j == label]) / N, added (+=) to what dlogits held\n");
        return CHECK_FAIL;
    }
    float again = lesson_softmax_cross_entropy(NULL, &z, labels);
    if (!expect_close("loss with dlogits = NULL", &again, &ref, 1, 1e-5f, 1e-5f)) return CHECK_FAIL;
    return CHECK_PASS;
}

typedef struct {
    const Tensor *z; /* [4, 6] logits */
    const int *labels;
} LossCtx;

static double loss_of(void *ctx) {
    const LossCtx *c = ctx;
    return softmax_cross_entropy(NULL, c->z, c->labels); /* the library's: only dz is yours */
}

/* Your dlogits against central differences of the library's loss. eps = 1e-2: the loss
 * is a float32 of about 2, so its rounding (~1e-7) over 2 eps is ~1e-5; 5e-4 + 1e-2 *
 * |numeric| leaves room for that and the O(eps^2) truncation, not for a wrong term. */
static int check_loss_numeric(void) {
    Tensor z = random_tensor(8, 2, 4, 6, 0, 0), dz = tensor_zeros(2, 4, 6);
    int labels[4] = {0, 5, 2, 2};
    lesson_softmax_cross_entropy(&dz, &z, labels);
    LossCtx ctx = {&z, labels};
    return fd_check("dlogits vs finite difference", z.data, dz.data, z.size, loss_of, &ctx, 1e-2f,
                    5e-4, 1e-2)
               ? CHECK_PASS
               : CHECK_FAIL;
}

static int check_loss_large_logits(void) {
    Tensor z = tensor_zeros(2, 2, 3), dz = tensor_zeros(2, 2, 3);
    float vals[] = {1000, 0, -1000, 500, 1000, 999};
    memcpy(z.data, vals, sizeof vals);
    int labels[2] = {0, 2};
    float loss = lesson_softmax_cross_entropy(&dz, &z, labels);
    float ref = softmax_cross_entropy(NULL, &z, labels); /* = (0 + 1.3133) / 2 */
    bool ok = expect_true(isfinite(loss), "loss is %g for logits of +-1000: subtract the row's "
                                          "maximum before exp()", (double)loss) &&
              expect_close("loss", &loss, &ref, 1, 1e-4f, 1e-4f);
    for (int i = 0; ok && i < 6; i++)
        ok = expect_true(isfinite(dz.data[i]), "dlogits[%d] is %g", i, (double)dz.data[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 1.5 */

static int check_adam(float weight_decay, float grad_scale) {
    ParamList mine = {0}, ref = {0};
    params_add(&mine, "a", 2, (int[]){3, 5});
    params_add(&mine, "b", 1, (int[]){7});
    params_add(&ref, "a", 2, (int[]){3, 5});
    params_add(&ref, "b", 1, (int[]){7});
    params_allocate(&mine);
    params_allocate(&ref);
    for (int i = 0; i < 2; i++) {
        fill_uniform(mine.items[i]->value.data, mine.items[i]->value.size, 80 + i, -1, 1);
        tensor_copy(&ref.items[i]->value, &mine.items[i]->value);
    }
    Adam a, b;
    adam_init(&a, &mine, 0.01f);
    adam_init(&b, &ref, 0.01f);
    a.weight_decay = b.weight_decay = weight_decay;
    for (int step = 1; step <= 3; step++) {
        for (int i = 0; i < 2; i++) { /* new gradients each step */
            fill_uniform(mine.items[i]->grad.data, mine.items[i]->grad.size, 90 + 10 * step + i,
                         -2 * grad_scale, 2 * grad_scale);
            tensor_copy(&ref.items[i]->grad, &mine.items[i]->grad);
        }
        lesson_adam_step(&a, &mine);
        adam_step(&b, &ref);
        for (int i = 0; i < 2; i++) {
            const Param *p = mine.items[i], *q = ref.items[i];
            char what[128];
            snprintf(what, sizeof what, "step %d: parameter '%s'", step, p->name);
            if (!expect_close(what, p->value.data, q->value.data, q->value.size, 1e-6f, 1e-5f) ||
                !expect_close("first moment m", a.m.data + p->offset, b.m.data + q->offset,
                              q->value.size, 1e-6f, 1e-5f) ||
                !expect_close("second moment v", a.v.data + p->offset, b.v.data + q->offset,
                              q->value.size, 1e-7f, 1e-5f)) {
                printf("hint: step %d; did you increase opt->step first and use the bias "
                       "corrections 1 - beta^t? eps goes after the division: "
                       "sqrt(v) / sqrt(1 - beta2^t) + eps.%s\n", step,
                       weight_decay ? " With weight decay, g = grad + weight_decay * p." : "");
                return CHECK_FAIL;
            }
        }
        if (!expect_true(a.step == step, "opt->step is %lld after %d steps", (long long)a.step, step))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_adam_plain(void) { return check_adam(0.0f, 1.0f); }
static int check_adam_weight_decay(void) { return check_adam(0.05f, 1.0f); }
/* Gradients of 1e-7: sqrt(v) is then about as small as eps, so where eps goes shows. */
static int check_adam_tiny_gradients(void) { return check_adam(0.0f, 1e-7f); }

/* ---------------------------------------------------------------- TODO 1.6, 1.7 */

/* A short run on the synthetic set, with the library's layers everywhere except
 * the part under test. */
typedef struct {
    Dataset train, test;
    Cnn model;
    Adam opt;
    Sampler sampler;
    Batch batch;
} Run;

static void run_init(Run *r, int train_count, int batch) {
    dataset_make_synthetic(train_count, 1, 28, 1, &r->train);
    dataset_make_synthetic(250, 1, 28, 2, &r->test);
    Rng rng;
    rng_seed(&rng, 3, 0);
    cnn_init(&r->model, 1, 28, 28, 10, batch, &rng);
    adam_init(&r->opt, &r->model.params, 1e-3f);
    sampler_init(&r->sampler, r->train.count, true, 5);
    sampler_set_epoch(&r->sampler, 1);
    batch_init(&r->batch, batch, &r->train);
}

/* The training loop as the lesson describes it, built from your loss (TODO 1.4) and
 * Adam (TODO 1.5), so that the check of TODO 1.6 tests the loop alone; or from the
 * library's two, for a check of the convolution alone. */
static double reference_epoch(Run *r, bool library_loss_and_adam) {
    float (*loss)(Tensor *, const Tensor *, const int *) =
        library_loss_and_adam ? softmax_cross_entropy : lesson_softmax_cross_entropy;
    void (*step)(Adam *, ParamList *) = library_loss_and_adam ? adam_step : lesson_adam_step;
    double sum = 0;
    int n, seen = 0;
    while ((n = sampler_next(&r->sampler, r->batch.indices, r->batch.size)) > 0) {
        Tensor images = tensor_rows(&r->batch.images, n);
        dataset_gather(&r->train, r->batch.indices, n, &images, r->batch.labels);
        Tensor logits = cnn_forward(&r->model, &images);
        Tensor dlogits = tensor_rows(&r->model.d_logits, n);
        tensor_fill(&dlogits, 0.0f);
        sum += (double)loss(&dlogits, &logits, r->batch.labels) * n;
        params_zero_grad(&r->model.params);
        cnn_backward(&r->model, &images);
        step(&r->opt, &r->model.params);
        seen += n;
    }
    return sum / seen;
}

/* Whether every parameter of a and b agrees (quietly). */
static bool same_params(const Run *a, const Run *b) {
    for (int i = 0; i < b->model.params.count; i++) {
        const Tensor *p = &a->model.params.items[i]->value, *q = &b->model.params.items[i]->value;
        for (int64_t k = 0; k < q->size; k++)
            if (!(fabsf(p->data[k] - q->data[k]) <= 1e-4f + 1e-3f * fabsf(q->data[k]))) return false;
    }
    return true;
}

/* After a mismatch over a whole epoch: train_epoch and the reference loop on 1 batch,
 * then 2, to say which quantity first differs, and why that usually happens. */
static void diagnose_train_epoch(void) {
    for (int batches = 1; batches <= 2; batches++) {
        Run mine, ref;
        run_init(&mine, 32 * batches, 32);
        run_init(&ref, 32 * batches, 32);
        EpochResult r = train_epoch(&mine.model, &mine.opt, &mine.train, &mine.sampler, &mine.batch);
        double want = reference_epoch(&ref, false);
        if (!(fabs(r.loss - want) <= 1e-4 + 1e-3 * fabs(want))) {
            printf("hint: with %d batch%s of 32 the mean loss is %.6f, expected %.6f: ", batches,
                   batches == 1 ? "" : "es", r.loss, want);
            if (batches == 1) printf("the loss of one batch is already wrong (the batch's mean "
                                     "loss is what your softmax_cross_entropy returns)\n");
            else printf("the second batch's loss differs, so the first step changed the model "
                        "differently: see the parameters\n");
            return;
        }
        if (!same_params(&mine, &ref)) {
            if (batches == 1) {
                printf("hint: after one step the parameters differ from the reference loop: one "
                       "backward and one lesson_adam_step per batch\n");
            } else {
                bool dlogits_same = true;
                const Tensor *a = &mine.model.d_logits, *b = &ref.model.d_logits;
                for (int64_t k = 0; k < b->size; k++) dlogits_same &= fabsf(a->data[k] - b->data[k]) <= 1e-5f;
                printf("hint: the first step is right, the second is not: the first batch's "
                       "gradients were still there. %s\n", dlogits_same
                           ? "Zero the parameters' gradients (params_zero_grad) before each "
                             "backward: every backward adds (+=) into them"
                           : "Clear d_logits (tensor_fill 0) before the loss: the loss adds its "
                             "gradient into it");
            }
            return;
        }
    }
    printf("hint: full batches are right; the short last batch is not: weight each batch's mean "
           "loss by its size n and divide the sum by the examples seen\n");
}

static int check_train_epoch(void) {
    Run mine, ref;
    run_init(&mine, 330, 32); /* 330 = 10 full batches and a short one of 10 */
    run_init(&ref, 330, 32);
    EpochResult r = train_epoch(&mine.model, &mine.opt, &mine.train, &mine.sampler, &mine.batch);
    double ref_loss = reference_epoch(&ref, false);
    if (!expect_true(r.examples == 330, "train_epoch saw %d examples, expected 330 (all of "
                                        "them, the short last batch too)", r.examples))
        return CHECK_FAIL;
    float got = (float)r.loss, want = (float)ref_loss;
    if (!expect_close("mean training loss", &got, &want, 1, 1e-4f, 1e-3f)) {
        diagnose_train_epoch();
        return CHECK_FAIL;
    }
    for (int i = 0; i < ref.model.params.count; i++) {
        const Param *p = mine.model.params.items[i], *q = ref.model.params.items[i];
        if (!expect_close(p->name, p->value.data, q->value.data, q->value.size, 1e-4f, 1e-3f)) {
            diagnose_train_epoch();
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

static int check_evaluate(void) {
    Run r;
    run_init(&r, 100, 100);
    EpochResult got = evaluate(&r.model, &r.test, &r.batch); /* 250 = 100 + 100 + 50 */
    Tensor images = tensor_zeros(4, 250, 1, 28, 28);
    int labels[250], idx[250];
    for (int i = 0; i < 250; i++) idx[i] = i;
    dataset_gather(&r.test, idx, 250, &images, labels);
    Cnn big;
    Rng rng;
    rng_seed(&rng, 3, 0);
    cnn_init(&big, 1, 28, 28, 10, 250, &rng); /* same seed: same weights */
    Tensor logits = cnn_forward(&big, &images);
    float want_loss = softmax_cross_entropy(NULL, &logits, labels);
    float want_acc = (float)count_correct(&logits, labels) / 250.0f;
    float got_loss = (float)got.loss, got_acc = (float)got.accuracy;
    bool ok = expect_true(got.examples == 250, "evaluate saw %d examples, expected 250",
                          got.examples) &&
              expect_close("test loss", &got_loss, &want_loss, 1, 1e-4f, 1e-4f) &&
              expect_close("test accuracy", &got_acc, &want_acc, 1, 1e-6f, 0);
    if (!ok) printf("hint: the test set has 250 examples and the batch holds 100\n");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* All TODOs together: the lesson's model (your max-pool) learns the synthetic set. */
static int check_learns(void) {
    Run r;
    run_init(&r, 3000, 100);
    r.model.layers.maxpool2d_forward = lesson_maxpool2d_forward;
    r.model.layers.maxpool2d_backward = lesson_maxpool2d_backward;
    EpochResult before = evaluate(&r.model, &r.test, &r.batch);
    EpochResult tr = train_epoch(&r.model, &r.opt, &r.train, &r.sampler, &r.batch);
    EpochResult after = evaluate(&r.model, &r.test, &r.batch);
    printf("test loss %.4f -> %.4f, accuracy %.3f -> %.3f (train loss %.4f)\n", before.loss,
           after.loss, before.accuracy, after.accuracy, tr.loss);
    bool ok = expect_true(after.loss < 0.5 * before.loss, "the test loss did not halve") &&
              expect_true(after.accuracy >= 0.8, "test accuracy %.3f < 0.8 after one epoch",
                          after.accuracy);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Your convolution inside the model: a few steps give the same parameters. The loss and
 * Adam are the library's here, so that only TODOs 1.1-1.2 decide this check. */
static int check_conv_in_model(void) {
    Run mine, ref;
    run_init(&mine, 64, 16);
    run_init(&ref, 64, 16);
    mine.model.layers.conv2d_forward = lesson_conv2d_forward;
    mine.model.layers.conv2d_backward = lesson_conv2d_backward;
    reference_epoch(&mine, true);
    reference_epoch(&ref, true);
    for (int i = 0; i < ref.model.params.count; i++) {
        const Param *p = mine.model.params.items[i], *q = ref.model.params.items[i];
        if (!expect_close(p->name, p->value.data, q->value.data, q->value.size, 1e-4f, 1e-3f))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

int main(void) {
    check_begin("lesson 01: cpu-cnn");
    check_run("TODO 1.1", "conv2d forward matches the library on 16 random shapes", check_conv_forward, 30);
    check_run("TODO 1.2", "conv2d backward matches the library (din, dweight, dbias)", check_conv_backward, 30);
    check_run("TODO 1.2", "conv2d backward agrees with finite differences", check_conv_backward_numeric, 30);
    check_run("TODO 1.1-1.2", "the model trained with your convolution matches the library's", check_conv_in_model, 60);
    check_run("TODO 1.3", "max-pool forward: values and argmax (kernel 2/3, stride 1-3)", check_pool_forward, 30);
    check_run("TODO 1.3", "max-pool forward: ties go to the first maximum", check_pool_ties, 30);
    check_run("TODO 1.3", "max-pool backward routes gradients through argmax", check_pool_backward, 30);
    check_run("TODO 1.4", "softmax cross-entropy: loss and gradient match the library", check_loss_reference, 30);
    check_run("TODO 1.4", "softmax cross-entropy gradient agrees with finite differences", check_loss_numeric, 30);
    check_run("TODO 1.4", "softmax cross-entropy stays finite for logits of +-1000", check_loss_large_logits, 30);
    check_run("TODO 1.5", "Adam: three steps follow torch.optim.Adam's rule", check_adam_plain, 30);
    check_run("TODO 1.5", "Adam with weight decay", check_adam_weight_decay, 30);
    check_run("TODO 1.5", "Adam with tiny gradients: eps added to sqrt(v) / sqrt(1 - beta2^t)", check_adam_tiny_gradients, 30);
    check_run("TODO 1.6", "train_epoch: same loss and parameters as the reference loop", check_train_epoch, 60);
    check_run("TODO 1.7", "evaluate: loss and accuracy over 250 images in batches of 100", check_evaluate, 60);
    check_run("TODO 1.3-1.7", "one epoch on the synthetic set reaches 80% test accuracy", check_learns, 120);
    return check_end();
}
