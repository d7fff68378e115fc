/* Unit tests of lib/models: the parameter list (one buffer for values, one for
 * gradients, each parameter a named view into them) and the CNN: parameter counts
 * and PyTorch names, a whole-model finite-difference gradient check, smaller
 * batches than max_batch, learning, and the FLOP counts. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "layers/conv2d.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "models/conv_block.h"
#include "models/params.h"
#include "train/optim.h"

/* ------------------------------------------------------------ params */

static int check_params(void) {
    ParamList list = {0};
    Param *w = params_add(&list, "fc.weight", 2, (int[]){3, 4});
    Param *b = params_add(&list, "fc.bias", 1, (int[]){3});
    Param *k = params_add(&list, "conv.weight", 4, (int[]){2, 3, 5, 5});
    bool ok = expect_true(list.count == 3, "count %d after 3 adds", list.count);
    ok = ok && expect_true(w == list.items[0] && b == list.items[1] && k == list.items[2],
                           "params_add does not return the entries in order");
    ok = ok && expect_true(strcmp(w->name, "fc.weight") == 0 && strcmp(k->name, "conv.weight") == 0,
                           "names \"%s\", \"%s\"", w->name, k->name);
    ok = ok && expect_true(w->value.ndim == 2 && w->value.shape[0] == 3 && w->value.shape[1] == 4 &&
                               k->value.ndim == 4 && k->value.shape[3] == 5 && b->value.ndim == 1 &&
                               tensor_same_shape(&w->grad, &w->value) &&
                               tensor_same_shape(&k->grad, &k->value),
                           "shapes of values or gradients wrong");
    ok = ok && expect_true(params_count(&list) == 12 + 3 + 150, "params_count %lld, expected 165",
                           (long long)params_count(&list));
    ok = ok && expect_true(params_find(&list, "fc.bias") == b && params_find(&list, "conv.weight") == k &&
                               params_find(&list, "fc") == NULL && params_find(&list, "fc.weight2") == NULL,
                           "params_find wrong");
    /* addresses stay put when more are added */
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "extra.%d", i);
        params_add(&list, name, 1, (int[]){2});
    }
    ok = ok && expect_true(params_find(&list, "fc.weight") == w && params_find(&list, "extra.19") != NULL,
                           "parameters moved when more were added");
    params_allocate(&list);
    /* one buffer each: every parameter a view at its offset, in order, no gaps */
    ok = ok && expect_true(list.values.size == 205 && list.grads.size == 205,
                           "buffers of %lld and %lld values for 205 parameters",
                           (long long)list.values.size, (long long)list.grads.size);
    int64_t at = 0;
    for (int i = 0; ok && i < list.count; i++) {
        const Param *p = list.items[i];
        ok = expect_true(p->offset == at && p->value.data == list.values.data + at &&
                             p->grad.data == list.grads.data + at,
                         "%s is not a view at offset %lld of the buffers", p->name, (long long)at);
        at += p->value.size;
    }
    for (int64_t j = 0; ok && j < list.total; j++)
        ok = expect_true(list.values.data[j] == 0 && list.grads.data[j] == 0,
                         "the buffers start non-zero at %lld", (long long)j);
    tensor_fill(&list.grads, 3.0f);
    ok = ok && expect_true(k->grad.data[149] == 3.0f, "conv.weight's gradient is not in the buffer");
    params_zero_grad(&list);
    for (int64_t j = 0; ok && j < list.total; j++)
        ok = expect_true(list.grads.data[j] == 0, "zero_grad left grads[%lld] at %g", (long long)j,
                         list.grads.data[j]);
    params_free(&list);
    ok = ok && expect_true(list.count == 0 && list.values.data == NULL, "params_free left count %d",
                           list.count);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A transformer has hundreds of parameter tensors: no fixed limit. */
static int check_params_many(void) {
    ParamList list = {0};
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "layers.%d.weight", i);
        params_add(&list, name, 2, (int[]){2, i + 1});
    }
    params_allocate(&list);
    Param *last = params_find(&list, "layers.299.weight");
    bool ok = expect_true(list.count == 300 && last && last->value.size == 600 &&
                              last->value.data + 600 == list.values.data + list.total,
                          "300 parameters: count %d, the last one not at the buffer's end",
                          list.count);
    params_free(&list);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_duplicate(void *arg) {
    (void)arg;
    ParamList list = {0};
    params_add(&list, "conv1.weight", 1, (int[]){3});
    params_add(&list, "conv1.bias", 1, (int[]){3});
    params_add(&list, "conv1.weight", 1, (int[]){3});
}
static void body_long_name(void *arg) {
    (void)arg;
    ParamList list = {0};
    char name[200];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    params_add(&list, name, 1, (int[]){3});
}
static void body_add_after_allocate(void *arg) {
    (void)arg;
    ParamList list = {0};
    params_add(&list, "a", 1, (int[]){3});
    params_allocate(&list);
    params_add(&list, "b", 1, (int[]){3});
}

static int check_params_misuse(void) {
    ChildResult o;
    run_child(body_duplicate, NULL, &o);
    bool ok = expect_exit("a name added twice", &o, 2, "conv1.weight", "params.c", (const char *)NULL);
    run_child(body_long_name, NULL, &o);
    ok = ok && expect_exit("a name too long", &o, 2, "too long", (const char *)NULL);
    run_child(body_add_after_allocate, NULL, &o);
    ok = ok && expect_exit("a parameter added after params_allocate", &o, 2, "params_allocate",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the CNN */

static int check_cnn_params(void) {
    static const char *const names[8] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                         "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
    const struct {
        int C, H, W;
        int64_t count;
        int d;
    } cases[2] = {{1, 28, 28, 155685, 4}, {3, 32, 32, 191935, 5}};
    bool ok = true;
    for (int t = 0; ok && t < 2; t++) {
        Rng rng;
        rng_seed(&rng, 1, 0);
        Cnn m;
        cnn_init(&m, cases[t].C, cases[t].H, cases[t].W, 10, 4, &rng);
        const int C = cases[t].C, flat = 75 * cases[t].d * cases[t].d;
        const int shapes[8][5] = {/* ndim, dims */
                                  {4, 50, C, 5, 5}, {1, 50}, {4, 75, 50, 5, 5}, {1, 75},
                                  {2, 50, flat},    {1, 50}, {2, 10, 50},       {1, 10}};
        ok = expect_true(params_count(&m.params) == cases[t].count,
                         "%dx%dx%d: %lld parameters, expected %lld", C, cases[t].H, cases[t].W,
                         (long long)params_count(&m.params), (long long)cases[t].count);
        ok = ok && expect_true(m.params.count == 8, "%d parameter tensors, expected 8", m.params.count);
        for (int i = 0; ok && i < 8; i++) {
            const Param *p = m.params.items[i];
            bool same = p->value.ndim == shapes[i][0];
            for (int dd = 0; same && dd < shapes[i][0]; dd++) same = p->value.shape[dd] == shapes[i][dd + 1];
            char got[64];
            ok = expect_true(strcmp(p->name, names[i]) == 0, "parameter %d is \"%s\", PyTorch calls it \"%s\"",
                             i, p->name, names[i]);
            ok = ok && expect_true(same, "%s has shape %s", p->name, tensor_shape_str(&p->value, got, 64));
            /* PyTorch's init: uniform in +-1/sqrt(fan_in), not all zero */
            const int fans[4] = {C * 25, 50 * 25, flat, 50}; /* weight and bias of each layer */
            const int fan_in = fans[i / 2];
            double bound = 1.0 / sqrt((double)fan_in), maxabs = 0;
            for (int64_t k = 0; k < p->value.size; k++) maxabs = fmax(maxabs, fabs(p->value.data[k]));
            ok = ok && expect_true(maxabs <= bound * (1 + 1e-6) && maxabs > 0.5 * bound,
                                   "%s: largest |value| %g, PyTorch's init bound is %g", p->name, maxabs, bound);
        }
        for (int k = 0; ok && k < 4; k++) /* each block holds its layer's weight and bias */
            ok = expect_true(m.blocks.items[k].first_param == 2 * k && m.blocks.items[k].params == 2,
                             "block %d holds parameters %d and up (%d of them), not %d and %d",
                             k, m.blocks.items[k].first_param, m.blocks.items[k].params, 2 * k, 2 * k + 1);
        cnn_free(&m);
    }
    /* the same seed gives the same weights */
    Rng r1, r2;
    rng_seed(&r1, 7, 0);
    rng_seed(&r2, 7, 0);
    Cnn a, b;
    cnn_init(&a, 1, 28, 28, 10, 2, &r1);
    cnn_init(&b, 1, 28, 28, 10, 2, &r2);
    for (int i = 0; ok && i < 8; i++)
        ok = expect_close("weights from the same seed", a.params.items[i]->value.data,
                          b.params.items[i]->value.data, a.params.items[i]->value.size, 0, 0);
    cnn_free(&a);
    cnn_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A model for side x side grey images, then (when n > 0) a forward pass of an
 * [n, c, h, w] batch. */
typedef struct {
    int side, n, c, h, w;
} CnnMisuse;

static void body_cnn_misuse(void *arg) {
    const CnnMisuse *u = arg;
    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn m;
    cnn_init(&m, 1, u->side, u->side, 10, 2, &rng);
    if (u->n > 0) {
        Tensor x = tensor_zeros(4, u->n, u->c, u->h, u->w);
        cnn_forward(&m, &x);
    }
}

static int check_cnn_misuse(void) {
    CnnMisuse small = {15, 0, 0, 0, 0}, big_batch = {16, 3, 1, 16, 16},
              wrong_image = {28, 2, 3, 28, 28};
    ChildResult o;
    run_child(body_cnn_misuse, &small, &o);
    bool ok = expect_exit("15x15 images", &o, 2, "15x15", (const char *)NULL);
    run_child(body_cnn_misuse, &big_batch, &o);
    ok = ok && expect_exit("a batch larger than max_batch", &o, 2, "3", (const char *)NULL);
    run_child(body_cnn_misuse, &wrong_image, &o);
    ok = ok && expect_exit("3-channel images into a 1-channel model", &o, 2, "[2, 3, 28, 28]",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The loss of the first n rows of logits, in double (the definition). */
static double loss_double(const Tensor *logits, const int *labels) {
    const int N = logits->shape[0], K = logits->shape[1];
    double total = 0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        double m = -INFINITY, s = 0;
        for (int j = 0; j < K; j++) m = fmax(m, z[j]);
        for (int j = 0; j < K; j++) s += exp(z[j] - m);
        total += m + log(s) - z[labels[n]];
    }
    return total / N;
}

/* One training step's gradients: forward, loss into d_logits, backward. */
static float cnn_gradients(Cnn *m, const Tensor *images, const int *labels) {
    params_zero_grad(&m->params);
    Tensor logits = cnn_forward(m, images);
    Tensor dl = tensor_rows(&m->d_logits, images->shape[0]);
    tensor_fill(&dl, 0.0f);
    float loss = softmax_cross_entropy(&dl, &logits, labels);
    cnn_backward(m, images);
    return loss;
}

/* Block k's saved activation j of the last forward (j = 0: its output). */
static Tensor *saved_of(Cnn *m, int k, int j) { return &blocks_saved(&m->blocks, &m->blocks.acts, k)[j]; }

/* Which way every kink of the network went in the last forward: each max-pool's
 * choice and each ReLU's sign (the ReLUs' outputs > 0). buf may be NULL; returns the
 * number of entries. */
static int64_t kink_state(Cnn *m, int *buf) {
    const Tensor *signs[3] = {saved_of(m, 0, CONV_OUT), saved_of(m, 1, CONV_OUT), saved_of(m, 2, 0)};
    int64_t n = 0;
    for (int k = 0; k < 2; k++) {
        const Tensor *arg = saved_of(m, k, CONV_ARGMAX);
        for (int64_t i = 0; i < arg->size; i++, n++)
            if (buf) buf[n] = ((const int *)arg->data)[i];
    }
    for (int t = 0; t < 3; t++)
        for (int64_t i = 0; i < signs[t]->size; i++, n++)
            if (buf) buf[n] = signs[t]->data[i] > 0.0f;
    return n;
}

/* The whole model against finite differences, on 3 random 3x20x20 images, for a
 * sample of 30 entries of every parameter (all of the smaller ones).
 *
 * Float32 makes this delicate, hence the choices:
 *  - the loss is a function of ~10^5 float32 operations, each rounded to ~6e-8
 *    relative; a small eps drowns the difference in that noise (it grows like 1/eps),
 *    so we start at eps = 1e-2 and sum the loss in double from the logits;
 *  - but this network's activations are ~0.1, so [x - 1e-2, x + 1e-2] often holds a
 *    kink (a ReLU at 0, a max-pool's choice changing), and then the difference
 *    quotient is 5-25% off even though the backward is right (measured: a quarter of
 *    the entries). So we record which way every kink went (kink_state) at x and at
 *    x +- eps and take the first eps of 1e-2, 3e-3, 1e-3, 3e-4 that crosses none;
 *    an entry that crosses one even at 3e-4 is skipped. Without a kink in between,
 *    the network is linear in the segment and only the smooth loss bends it: the
 *    truncation error eps^2/6 |L'''| stays below ~1e-5;
 *  - entries whose gradients are both below 1e-4 carry no information at this
 *    precision (noise ~ 1e-7 / 2 eps) and are skipped (mostly dead ReLUs: exactly 0);
 *  - what is left must agree within 1e-2 relative (of the larger value) + 2e-5
 *    absolute, every entry: a wrong index, a missing term or a transposed weight
 *    moves entries by far more than that. */
static int check_cnn_gradient(void) {
    /* ~1000 tiny forwards: on one thread, so OpenMP's barriers cannot slow them down on a
     * loaded machine (test_layers checks the threads); this child process only */
    omp_set_num_threads(1);
    enum { B = 3, C = 3, S = 20, SAMPLE = 30 };
    Rng rng;
    rng_seed(&rng, 2024, 0);
    Cnn m;
    cnn_init(&m, C, S, S, 10, B, &rng);
    Tensor x = tensor_zeros(4, B, C, S, S);
    fill_uniform(x.data, x.size, 99, 0.0f, 1.0f);
    const int labels[B] = {3, 7, 0};
    cnn_gradients(&m, &x, labels);
    const int64_t nk = kink_state(&m, NULL);
    int *base = malloc(sizeof(int) * (size_t)nk), *now = malloc(sizeof(int) * (size_t)nk);
    kink_state(&m, base);
    const float epss[4] = {1e-2f, 3e-3f, 1e-3f, 3e-4f};
    bool ok = true;
    int compared = 0, small = 0, kinked = 0;
    double worst = 0;
    for (int pi = 0; pi < m.params.count; pi++) {
        Param *p = m.params.items[pi];
        int n = p->value.size < SAMPLE ? (int)p->value.size : SAMPLE;
        int *perm = malloc(sizeof(int) * (size_t)p->value.size);
        rng_permutation(&rng, perm, (int)p->value.size);
        int p_bad = 0, p_compared = 0;
        for (int s = 0; s < n; s++) {
            const int k = perm[s];
            const float x0 = p->value.data[k];
            double num = NAN;
            for (int e = 0; e < 4 && isnan(num); e++) {
                const float xp = x0 + epss[e], xm = x0 - epss[e];
                p->value.data[k] = xp;
                Tensor lp = cnn_forward(&m, &x);
                double fp = loss_double(&lp, labels);
                kink_state(&m, now);
                bool same = memcmp(now, base, sizeof(int) * (size_t)nk) == 0;
                p->value.data[k] = xm;
                Tensor lm = cnn_forward(&m, &x);
                double fm = loss_double(&lm, labels);
                kink_state(&m, now);
                same = same && memcmp(now, base, sizeof(int) * (size_t)nk) == 0;
                p->value.data[k] = x0;
                if (same) num = (fp - fm) / ((double)xp - (double)xm);
            }
            const double ana = p->grad.data[k];
            if (isnan(num)) {
                kinked++;
                continue;
            }
            if (fabs(num) < 1e-4 && fabs(ana) < 1e-4) {
                small++;
                continue;
            }
            p_compared++;
            double diff = fabs(num - ana), tol = 1e-2 * fmax(fabs(num), fabs(ana)) + 2e-5;
            worst = fmax(worst, diff / tol);
            if (!(diff <= tol)) {
                if (p_bad < 3)
                    printf("%s[%d]: backward %.7g, finite difference %.7g\n", p->name, k, ana, num);
                p_bad++;
            }
        }
        if (p_bad) ok = expect_true(false, "%s: %d of %d sampled entries disagree", p->name, p_bad, p_compared);
        printf("%s: %d entries compared\n", p->name, p_compared);
        compared += p_compared;
        free(perm);
    }
    printf("compared %d entries (worst at %.2f of the tolerance); skipped %d below 1e-4, "
           "%d next to a kink\n", compared, worst, small, kinked);
    ok = ok && expect_true(compared >= 120, "only %d entries could be compared", compared);
    free(base);
    free(now);
    tensor_free(&x);
    cnn_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A batch smaller than max_batch: the same logits for those rows as a full batch,
 * and the same gradients as a model built for exactly that batch. */
static int check_cnn_small_batch(void) {
    enum { MAXB = 8, SMALL = 5 };
    Rng r1, r2;
    rng_seed(&r1, 31, 0);
    rng_seed(&r2, 31, 0);
    Cnn m, exact;
    cnn_init(&m, 1, 28, 28, 10, MAXB, &r1);
    cnn_init(&exact, 1, 28, 28, 10, SMALL, &r2);
    Tensor x = tensor_zeros(4, MAXB, 1, 28, 28);
    fill_uniform(x.data, x.size, 5, 0.0f, 1.0f);
    Tensor full = cnn_forward(&m, &x);
    bool ok = expect_true(full.ndim == 2 && full.shape[0] == MAXB && full.shape[1] == 10 &&
                              full.data == saved_of(&m, 3, 0)->data,
                          "cnn_forward returned a [%d, %d] view, expected the [8, 10] rows of logits",
                          full.shape[0], full.shape[1]);
    float want[MAXB * 10];
    memcpy(want, full.data, sizeof want);
    Tensor xs = tensor_rows(&x, SMALL);
    Tensor part = cnn_forward(&m, &xs);
    ok = ok && expect_true(part.shape[0] == SMALL, "a batch of %d gave %d rows", SMALL, part.shape[0]);
    ok = ok && expect_close("logits of 5 images vs the same rows of a batch of 8", part.data, want,
                            SMALL * 10, 1e-6f, 1e-5f);
    printf("bit for bit: %s\n", memcmp(part.data, want, sizeof(float) * SMALL * 10) == 0 ? "yes" : "no");
    Tensor x1 = tensor_rows(&x, 1);
    Tensor one = cnn_forward(&m, &x1);
    ok = ok && expect_close("logits of 1 image vs row 0 of a batch of 8", one.data, want, 10, 1e-6f, 1e-5f);
    /* gradients of a batch of 5 in the model for 8 and in a model for 5 */
    const int labels[SMALL] = {1, 4, 9, 0, 4};
    float l1 = cnn_gradients(&m, &xs, labels), l2 = cnn_gradients(&exact, &xs, labels);
    ok = ok && expect_true(fabsf(l1 - l2) <= 1e-6f * fabsf(l2), "losses %g and %g", l1, l2);
    for (int i = 0; ok && i < m.params.count; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s gradient, 5 images in a model for 8 vs for 5", m.params.items[i]->name);
        ok = expect_close(what, m.params.items[i]->grad.data, exact.params.items[i]->grad.data,
                          m.params.items[i]->grad.size, 1e-6f, 1e-4f);
    }
    tensor_free(&x);
    cnn_free(&m);
    cnn_free(&exact);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A lesson's layers in the table, counted: with any of them the model must call
 * them, not the fused first block (layers/conv_pool_relu.h). */
static int g_calls;
static void counted_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *w, const Tensor *b,
                                   int stride, int pad) {
    g_calls++;
    conv2d_forward(out, in, w, b, stride, pad);
}
static void counted_conv2d_backward(Tensor *din, Tensor *dw, Tensor *db, const Tensor *dout,
                                    const Tensor *in, const Tensor *w, int stride, int pad) {
    g_calls++;
    conv2d_backward(din, dw, db, dout, in, w, stride, pad);
}
static void counted_maxpool2d_forward(Tensor *out, int *arg, const Tensor *in, int k, int s) {
    g_calls++;
    maxpool2d_forward(out, arg, in, k, s);
}
static void counted_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *arg) {
    g_calls++;
    maxpool2d_backward(din, dout, arg);
}
static void counted_relu_forward(Tensor *out, const Tensor *in) {
    g_calls++;
    relu_forward(out, in);
}
static void counted_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    g_calls++;
    relu_backward(din, dout, out);
}

/* A step of a model whose table has the library's layers but the ones `swap` names
 * (a bit each: conv2d, max-pool, ReLU; forward 1, 2, 4, backward 8, 16, 32) replaced
 * by counted wrappers of them. Returns the calls the wrappers took. */
static int step_with_swapped(Cnn *m, int swap, const Tensor *x, const int *labels) {
    if (swap & 1) m->layers.conv2d_forward = counted_conv2d_forward;
    if (swap & 2) m->layers.maxpool2d_forward = counted_maxpool2d_forward;
    if (swap & 4) m->layers.relu_forward = counted_relu_forward;
    if (swap & 8) m->layers.conv2d_backward = counted_conv2d_backward;
    if (swap & 16) m->layers.maxpool2d_backward = counted_maxpool2d_backward;
    if (swap & 32) m->layers.relu_backward = counted_relu_backward;
    g_calls = 0;
    cnn_gradients(m, x, labels);
    return g_calls;
}

/* Every parameter gradient of a against b: conv1's to float rounding (the fused block
 * sums them in another order), the rest bit for bit. */
static bool same_gradients(const Cnn *a, const Cnn *b, const char *how) {
    bool ok = true;
    for (int i = 0; ok && i < a->params.count; i++) {
        const Param *pa = a->params.items[i], *pb = b->params.items[i];
        char what[200];
        snprintf(what, sizeof what, "%s gradient, %s", pa->name, how);
        if (i < a->blocks.items[0].params) { /* conv1's */
            float scale = 0.0f;
            for (int64_t j = 0; j < pb->grad.size; j++) scale = fmaxf(scale, fabsf(pb->grad.data[j]));
            ok = expect_close(what, pa->grad.data, pb->grad.data, pa->grad.size, 1e-5f * scale, 1e-5f);
        } else {
            ok = expect_true(memcmp(pa->grad.data, pb->grad.data, sizeof(float) * (size_t)pa->grad.size) == 0,
                             "%s: not the same bits", what);
        }
    }
    return ok;
}

/* The library's table runs the first block fused. A lesson's function in any one of
 * the six entries runs, as lesson 01's program swaps in its max-pool alone (with
 * --pool mine): each is called as often as the model has such layers (2 convolutions,
 * 2 pools, 3 ReLUs).
 * Every mix gives the fused model's logits bit for bit and its gradients (conv1's to
 * float rounding); so does a table with all six swapped. */
static int check_cnn_fused_block(void) {
    enum { B = 12 };
    static const int expected[6] = {2, 2, 3, 2, 2, 3};
    Rng r1;
    rng_seed(&r1, 41, 0);
    Cnn fused;
    cnn_init(&fused, 1, 28, 28, 10, B, &r1);
    Tensor x = tensor_zeros(4, B, 1, 28, 28);
    fill_uniform(x.data, x.size, 7, 0.0f, 1.0f);
    const int labels[B] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    bool ok = expect_true(step_with_swapped(&fused, 0, &x, labels) == 0, "wrappers called with none in the table");
    for (int e = 0; ok && e <= 6; e++) {
        const int swap = e < 6 ? 1 << e : 63; /* one entry, then all six */
        Rng r2;
        rng_seed(&r2, 41, 0);
        Cnn mixed;
        cnn_init(&mixed, 1, 28, 28, 10, B, &r2);
        const int calls = step_with_swapped(&mixed, swap, &x, labels);
        const int want = e < 6 ? expected[e] : 14;
        char how[80];
        snprintf(how, sizeof how, "fused vs a table with entries %#x swapped", swap);
        ok = expect_true(calls == want, "%s: the swapped layers were called %d times in a step, expected %d",
                         how, calls, want);
        ok = ok && expect_true(memcmp(saved_of(&fused, 3, 0)->data, saved_of(&mixed, 3, 0)->data, sizeof(float) * B * 10) == 0,
                               "%s: the logits differ in their bits", how);
        ok = ok && same_gradients(&fused, &mixed, how);
        cnn_free(&mixed);
    }
    tensor_free(&x);
    cnn_free(&fused);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A few Adam steps on one fixed batch drive its loss down: the pieces work together. */
static int check_cnn_learns(void) {
    omp_set_num_threads(1); /* many small steps; see check_cnn_gradient */
    enum { B = 16 };
    Rng rng;
    rng_seed(&rng, 3, 0);
    Cnn m;
    cnn_init(&m, 1, 16, 16, 10, B, &rng);
    Tensor x = tensor_zeros(4, B, 1, 16, 16);
    fill_uniform(x.data, x.size, 8, 0.0f, 1.0f);
    int labels[B];
    for (int i = 0; i < B; i++) labels[i] = i % 10;
    Adam opt;
    adam_init(&opt, &m.params, 1e-3f);
    float first = 0, last = 0;
    for (int step = 0; step < 60; step++) {
        last = cnn_gradients(&m, &x, labels);
        if (step == 0) first = last;
        adam_step(&opt, &m.params);
    }
    bool ok = expect_true(isfinite(last) && last < 0.5f * first,
                          "loss %.4f after 60 Adam steps on one batch, from %.4f: not learning",
                          last, first);
    adam_free(&opt);
    tensor_free(&x);
    cnn_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_cnn_flops(void) {
    bool ok = true;
    const int cases[][3] = {{1, 28, 28}, {3, 32, 32}, {2, 20, 24}};
    for (int t = 0; ok && t < 3; t++) {
        const int C = cases[t][0], H = cases[t][1], W = cases[t][2];
        Rng rng;
        rng_seed(&rng, 1, 0);
        Cnn m;
        cnn_init(&m, C, H, W, 10, 1, &rng);
        /* multiply-adds per image, from the architecture */
        const int h1 = H - 4, w1 = W - 4;                   /* conv1 output */
        const int h2 = h1 / 2 - 4, w2 = w1 / 2 - 4;         /* conv2 output, after pool 1 */
        const double flat = 75.0 * (h2 / 2) * (w2 / 2);     /* after pool 2 */
        const double conv1 = (double)h1 * w1 * 50 * (C * 25), conv2 = (double)h2 * w2 * 75 * (50 * 25);
        const double fwd = 2 * (conv1 + conv2 + flat * 50 + 50 * 10);
        const double train = 3 * fwd - 2 * conv1;
        ok = expect_true(cnn_forward_flops(&m) == fwd, "%dx%dx%d: forward %.0f FLOPs, expected %.0f", C,
                         H, W, cnn_forward_flops(&m), fwd);
        ok = ok && expect_true(cnn_train_flops(&m) == train,
                               "%dx%dx%d: training step %.0f FLOPs, expected 3 x forward - first conv = %.0f",
                               C, H, W, cnn_train_flops(&m), train);
        if (t == 0)
            ok = ok && expect_true(fwd == 13561000.0 && train == 39243000.0,
                                   "test bug: 1x28x28 forward %.0f, train %.0f", fwd, train);
        cnn_free(&m);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("models");
    check_run(NULL, "params: add, find, count, one buffer of views, zero_grad, stable addresses", check_params, 10);
    check_run(NULL, "params: 300 tensors (no fixed limit), in one buffer", check_params_many, 10);
    check_run(NULL, "params: a name twice, a name too long, an add after allocation stop with status 2", check_params_misuse, 10);
    check_run(NULL, "CNN: 155685 / 191935 parameters, PyTorch names and shapes, init", check_cnn_params, 10);
    check_run(NULL, "CNN: too small images, too big a batch, wrong channels stop", check_cnn_misuse, 10);
    check_run(NULL, "CNN: whole-model gradient vs finite differences", check_cnn_gradient, 60);
    check_run(NULL, "CNN: a smaller batch than max_batch, same logits and gradients", check_cnn_small_batch, 30);
    check_run(NULL, "CNN: fused first block = the layers one by one; a lesson's layer runs unfused", check_cnn_fused_block, 30);
    check_run(NULL, "CNN: 60 Adam steps on one batch lower its loss", check_cnn_learns, 60);
    check_run(NULL, "CNN: FLOPs of forward and training step", check_cnn_flops, 10);
    return check_end();
}
