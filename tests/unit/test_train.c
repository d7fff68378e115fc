/* Unit tests of lib/train and lib/models: the parameter list, SGD (against its update
 * rule worked out here in double), Adam, Adam with L2 decay, AdamW and SGD against
 * numbers from real PyTorch (tests/reference/optim_reference.h, made by
 * tests/reference/make_optim_reference.py), the samplers, and the CNN: parameter
 * counts and PyTorch names, a whole-model finite-difference gradient check, smaller
 * batches than max_batch, and the FLOP counts. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "reference/optim_reference.h"
#include "train/optim.h"
#include "train/params.h"
#include "train/sampler.h"

/* ------------------------------------------------------------ params */

static int check_params(void) {
    ParamList list = {0};
    Param *w = params_add(&list, "fc.weight", 2, (int[]){3, 4});
    Param *b = params_add(&list, "fc.bias", 1, (int[]){3});
    Param *k = params_add(&list, "conv.weight", 4, (int[]){2, 3, 5, 5});
    bool ok = expect_true(list.count == 3, "count %d after 3 adds", list.count);
    ok = ok && expect_true(w == &list.items[0] && b == &list.items[1] && k == &list.items[2],
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
    for (int i = 0; i < list.count; i++)
        for (int64_t j = 0; ok && j < list.items[i].value.size; j++)
            ok = expect_true(list.items[i].value.data[j] == 0 && list.items[i].grad.data[j] == 0,
                             "%s starts non-zero", list.items[i].name);
    /* addresses stay put when more are added */
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "extra.%d", i);
        params_add(&list, name, 1, (int[]){2});
    }
    ok = ok && expect_true(params_find(&list, "fc.weight") == w && params_find(&list, "extra.19") != NULL,
                           "parameters moved when more were added");
    for (int i = 0; i < list.count; i++) tensor_fill(&list.items[i].grad, 3.0f);
    params_zero_grad(&list);
    for (int i = 0; i < list.count; i++)
        for (int64_t j = 0; ok && j < list.items[i].grad.size; j++)
            ok = expect_true(list.items[i].grad.data[j] == 0, "zero_grad left %s[%lld] at %g",
                             list.items[i].name, (long long)j, list.items[i].grad.data[j]);
    params_free(&list);
    ok = ok && expect_true(list.count == 0, "params_free left count %d", list.count);
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
static void body_too_many(void *arg) {
    (void)arg;
    ParamList list = {0};
    for (int i = 0; i <= PARAMS_MAX; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%d", i);
        params_add(&list, name, 1, (int[]){1});
    }
}

static int check_params_misuse(void) {
    ChildResult o;
    run_child(body_duplicate, NULL, &o);
    bool ok = expect_exit("a name added twice", &o, 2, "conv1.weight", "params.c", (const char *)NULL);
    run_child(body_long_name, NULL, &o);
    ok = ok && expect_exit("a name too long", &o, 2, "too long", (const char *)NULL);
    run_child(body_too_many, NULL, &o);
    ok = ok && expect_exit("more than PARAMS_MAX parameters", &o, 2, "params.c", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ optimisers */

/* Two parameters, [2, 3] and [4], and their gradients at step s (fixed numbers). */
static void make_two(ParamList *list) {
    *list = (ParamList){0};
    Param *a = params_add(list, "a", 2, (int[]){2, 3});
    Param *b = params_add(list, "b", 1, (int[]){4});
    const float a0[6] = {0.5f, -1.0f, 2.0f, 0.0f, 0.25f, -3.0f}, b0[4] = {1.0f, -0.5f, 0.125f, 4.0f};
    memcpy(a->value.data, a0, sizeof a0);
    memcpy(b->value.data, b0, sizeof b0);
}

static float grad_at(int step, int param, int k) {
    /* arbitrary but fixed, signs and sizes mixed */
    return (float)(0.3 * sin(1.7 * step + 2.3 * k + param) + 0.1 * (k % 3) - 0.05 * step);
}

static void set_grads(ParamList *list, int step) {
    for (int i = 0; i < list->count; i++)
        for (int64_t k = 0; k < list->items[i].grad.size; k++)
            list->items[i].grad.data[k] = grad_at(step, i, (int)k);
}

/* torch.optim.SGD, worked out in double for one scalar:
 *   d = g + wd p;  buf = d (step 1) or momentum buf + d;  p -= lr buf  (d if momentum 0) */
static int check_sgd_rule(void) {
    const float settings[][3] = {{0.1f, 0.9f, 0.01f}, {0.05f, 0.0f, 0.0f}, {0.1f, 0.5f, 0.1f}, {0.2f, 0.0f, 0.05f}};
    bool ok = true;
    for (size_t s = 0; ok && s < sizeof settings / sizeof settings[0]; s++) {
        const double lr = settings[s][0], mom = settings[s][1], wd = settings[s][2];
        ParamList list;
        make_two(&list);
        double p[2][6], buf[2][6] = {{0}};
        for (int i = 0; i < 2; i++)
            for (int64_t k = 0; k < list.items[i].value.size; k++) p[i][k] = list.items[i].value.data[k];
        Sgd opt;
        sgd_init(&opt, &list, settings[s][0], settings[s][1], settings[s][2]);
        for (int step = 1; ok && step <= 3; step++) {
            set_grads(&list, step);
            sgd_step(&opt, &list);
            for (int i = 0; i < 2; i++)
                for (int64_t k = 0; k < list.items[i].value.size; k++) {
                    double d = grad_at(step, i, (int)k) + wd * p[i][k];
                    if (mom != 0) {
                        buf[i][k] = step == 1 ? d : mom * buf[i][k] + d;
                        d = buf[i][k];
                    }
                    p[i][k] -= lr * d;
                }
            for (int i = 0; ok && i < 2; i++) {
                float want[6];
                for (int k = 0; k < 6; k++) want[k] = (float)p[i][k];
                char what[96];
                snprintf(what, sizeof what, "SGD(lr %g, momentum %g, weight decay %g) step %d, %s", lr,
                         mom, wd, step, list.items[i].name);
                ok = expect_close(what, list.items[i].value.data, want, list.items[i].value.size, 1e-6f, 1e-5f);
            }
        }
        sgd_free(&opt);
        params_free(&list);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The PyTorch reference: one parameter of OPTIM_REF_N values, or the same values split
 * over two parameters (2 and 4 values) to see that every tensor of the list is updated. */
typedef enum { RUN_ADAM, RUN_ADAM_WD, RUN_ADAMW, RUN_SGD } OptKind;

static bool run_reference(OptKind kind, const char *name, const float (*want)[OPTIM_REF_N], bool split) {
    ParamList list = {0};
    float *vals[2], *grads[2];
    int sizes[2];
    if (split) {
        Param *a = params_add(&list, "a", 1, (int[]){2});
        Param *b = params_add(&list, "b", 2, (int[]){2, 2});
        vals[0] = a->value.data, vals[1] = b->value.data;
        grads[0] = a->grad.data, grads[1] = b->grad.data;
        sizes[0] = 2, sizes[1] = 4;
    } else {
        Param *a = params_add(&list, "p", 1, (int[]){OPTIM_REF_N});
        vals[0] = a->value.data, grads[0] = a->grad.data, sizes[0] = OPTIM_REF_N;
        vals[1] = grads[1] = NULL, sizes[1] = 0;
    }
    for (int i = 0, off = 0; i < 2; off += sizes[i], i++)
        if (sizes[i]) memcpy(vals[i], OPTIM_REF_P0 + off, sizeof(float) * (size_t)sizes[i]);
    Adam adam;
    Sgd sgd;
    if (kind == RUN_SGD) {
        sgd_init(&sgd, &list, 0.1f, 0.9f, 0.01f);
    } else {
        adam_init(&adam, &list, 0.01f);
        if (kind != RUN_ADAM) adam.weight_decay = 0.1f;
        if (kind == RUN_ADAMW) adam.decoupled = true;
    }
    bool ok = true;
    for (int step = 0; ok && step < OPTIM_REF_STEPS; step++) {
        for (int i = 0, off = 0; i < 2; off += sizes[i], i++)
            if (sizes[i]) memcpy(grads[i], OPTIM_REF_GRADS[step] + off, sizeof(float) * (size_t)sizes[i]);
        if (kind == RUN_SGD) sgd_step(&sgd, &list);
        else adam_step(&adam, &list);
        float got[OPTIM_REF_N];
        for (int i = 0, off = 0; i < 2; off += sizes[i], i++)
            if (sizes[i]) memcpy(got + off, vals[i], sizeof(float) * (size_t)sizes[i]);
        char what[128];
        snprintf(what, sizeof what, "%s%s, parameters after step %d (PyTorch %s)", name,
                 split ? " over two tensors" : "", step + 1, OPTIM_REF_TORCH_VERSION);
        /* float32 on both sides, the same formula in a slightly different order (PyTorch
         * takes the bias corrections in double): a few float32 ulps apart */
        ok = expect_close(what, got, want[step], OPTIM_REF_N, 1e-6f, 1e-5f);
    }
    if (kind == RUN_SGD) sgd_free(&sgd);
    else adam_free(&adam);
    params_free(&list);
    return ok;
}

/* Both layouts (one parameter, then the same values over two) against PyTorch. */
static int both_layouts(OptKind kind, const char *name, const float (*want)[OPTIM_REF_N]) {
    bool ok = run_reference(kind, name, want, false);
    ok = run_reference(kind, name, want, true) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_adam_torch(void) {
    return both_layouts(RUN_ADAM, "Adam(lr=0.01)", OPTIM_REF_ADAM);
}
static int check_adam_wd_torch(void) {
    return both_layouts(RUN_ADAM_WD, "Adam(lr=0.01, weight_decay=0.1)", OPTIM_REF_ADAM_WD);
}
static int check_adamw_torch(void) {
    return both_layouts(RUN_ADAMW, "AdamW(lr=0.01, weight_decay=0.1)", OPTIM_REF_ADAMW);
}
static int check_sgd_torch(void) {
    return both_layouts(RUN_SGD, "SGD(lr=0.1, momentum=0.9, weight_decay=0.01)", OPTIM_REF_SGD);
}

/* adam_init takes PyTorch's defaults; adam_update alone is the loop adam_step runs. */
static int check_adam_defaults(void) {
    ParamList list;
    make_two(&list);
    Adam opt;
    adam_init(&opt, &list, 0.001f);
    bool ok = expect_true(opt.lr == 0.001f && opt.beta1 == 0.9f && opt.beta2 == 0.999f &&
                              opt.eps == 1e-8f && opt.weight_decay == 0.0f && !opt.decoupled &&
                              opt.step == 0,
                          "adam_init: lr %g, betas (%g, %g), eps %g, weight decay %g, decoupled %d, step %lld",
                          opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay, opt.decoupled,
                          (long long)opt.step);
    /* the same three steps through adam_step and through adam_update by hand */
    float p[6], m[6] = {0}, v[6] = {0}, g[6];
    memcpy(p, list.items[0].value.data, sizeof p);
    for (int step = 1; step <= 3; step++) {
        set_grads(&list, step);
        adam_step(&opt, &list);
        for (int k = 0; k < 6; k++) g[k] = grad_at(step, 0, k);
        adam_update(p, g, m, v, 6, &opt, step);
    }
    ok = ok && expect_true(opt.step == 3, "step count %lld after 3 steps", (long long)opt.step);
    ok = ok && expect_close("adam_update by hand vs adam_step", p, list.items[0].value.data, 6, 0, 0);
    adam_free(&opt);
    params_free(&list);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ samplers */

static bool expect_is_permutation(const int *order, int n) {
    char *seen = calloc((size_t)n, 1);
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        ok = expect_true(order[i] >= 0 && order[i] < n && !seen[order[i]],
                         "entry %d is %d: not a permutation of 0..%d", i, order[i], n - 1);
        if (ok) seen[order[i]] = 1;
    }
    free(seen);
    return ok;
}

/* All indices of one epoch, in batches of `batch`. Returns how many. */
static int drain(Sampler *s, int *out, int batch) {
    int total = 0, n;
    while ((n = sampler_next(s, out + total, batch)) > 0) total += n;
    return total;
}

static int check_sampler_sequential(void) {
    Sampler s;
    sampler_init(&s, 10, false, 123);
    int idx[16], sizes[5];
    for (int i = 0; i < 5; i++) sizes[i] = sampler_next(&s, idx + (i < 3 ? 4 * i : 12), 4);
    bool ok = expect_true(sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2 && sizes[3] == 0 && sizes[4] == 0,
                          "10 examples in batches of 4: %d, %d, %d, then %d, %d; expected 4, 4, 2, 0, 0",
                          sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]);
    for (int i = 0; ok && i < 10; i++) ok = expect_true(idx[i] == i, "index %d is %d", i, idx[i]);
    sampler_set_epoch(&s, 5);
    int all[10];
    ok = ok && expect_true(drain(&s, all, 3) == 10, "epoch 5 does not give 10 indices");
    for (int i = 0; ok && i < 10; i++) ok = expect_true(all[i] == i, "epoch 5: index %d is %d", i, all[i]);
    sampler_free(&s);
    /* one example, a batch larger than the set */
    sampler_init(&s, 1, true, 9);
    int one[8];
    int n = sampler_next(&s, one, 8);
    ok = ok && expect_true(n == 1 && one[0] == 0 && sampler_next(&s, one, 8) == 0,
                           "one example: got %d indices", n);
    sampler_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_sampler_random(void) {
    enum { N = 1000 };
    int *a = malloc(sizeof(int) * N), *b = malloc(sizeof(int) * N), *c = malloc(sizeof(int) * N);
    Sampler s, t;
    sampler_init(&s, N, true, 42);
    sampler_init(&t, N, true, 42);
    bool ok = expect_true(drain(&s, a, 64) == N, "epoch 0 does not give %d indices", N);
    ok = ok && expect_is_permutation(a, N);
    int in_place = 0;
    for (int i = 0; i < N; i++) in_place += a[i] == i;
    ok = ok && expect_true(in_place < 20, "%d of %d in their own place: not shuffled", in_place, N);
    /* same (seed, epoch), same order, whatever the batch size */
    ok = ok && expect_true(drain(&t, b, 7) == N && memcmp(a, b, sizeof(int) * N) == 0,
                           "two samplers with the same seed disagree in epoch 0");
    /* another epoch, another order; set_epoch rewinds */
    sampler_set_epoch(&s, 1);
    ok = ok && expect_true(drain(&s, c, 100) == N, "epoch 1 does not give %d indices", N);
    ok = ok && expect_is_permutation(c, N);
    ok = ok && expect_true(memcmp(a, c, sizeof(int) * N) != 0, "epochs 0 and 1 have the same order");
    /* back to epoch 0 (a resumed job): the same order as before */
    sampler_set_epoch(&s, 0);
    ok = ok && expect_true(drain(&s, b, 33) == N && memcmp(a, b, sizeof(int) * N) == 0,
                           "set_epoch(0) again gives another order");
    /* set_epoch in the middle of an epoch rewinds to its start */
    sampler_set_epoch(&s, 1);
    int part[10];
    sampler_next(&s, part, 10);
    sampler_set_epoch(&s, 1);
    ok = ok && expect_true(drain(&s, b, 64) == N && memcmp(b, c, sizeof(int) * N) == 0,
                           "set_epoch mid-epoch did not rewind");
    /* another seed, another order */
    Sampler u;
    sampler_init(&u, N, true, 43);
    ok = ok && expect_true(drain(&u, b, 64) == N && memcmp(a, b, sizeof(int) * N) != 0,
                           "seeds 42 and 43 give the same order");
    sampler_free(&u);
    /* epochs 0..9 all differ from one another */
    int *orders = malloc(sizeof(int) * N * 10);
    for (int e = 0; e < 10; e++) {
        sampler_set_epoch(&s, e);
        drain(&s, orders + e * N, 50);
    }
    for (int e = 0; ok && e < 10; e++)
        for (int f = e + 1; ok && f < 10; f++)
            ok = expect_true(memcmp(orders + e * N, orders + f * N, sizeof(int) * N) != 0,
                             "epochs %d and %d have the same order", e, f);
    free(orders);
    sampler_free(&s);
    sampler_free(&t);
    free(a);
    free(b);
    free(c);
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
            const Param *p = &m.params.items[i];
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
        ok = ok && expect_true(m.conv1_w == params_find(&m.params, "conv1.weight") &&
                                   m.fc2_b == params_find(&m.params, "fc2.bias"),
                               "the model's parameter pointers are not its list's entries");
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
        ok = expect_close("weights from the same seed", a.params.items[i].value.data,
                          b.params.items[i].value.data, a.params.items[i].value.size, 0, 0);
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

/* Which way every kink of the network went in the last forward: each max-pool's
 * choice and each ReLU's sign (pool1 > 0, pool2 > 0, fc1 > 0). buf may be NULL;
 * returns the number of entries. */
static int64_t kink_state(const Cnn *m, int *buf) {
    const Tensor *signs[3] = {&m->pool1, &m->pool2, &m->fc1};
    int64_t n = 0;
    for (int64_t i = 0; i < m->pool1.size; i++, n++)
        if (buf) buf[n] = m->pool1_arg[i];
    for (int64_t i = 0; i < m->pool2.size; i++, n++)
        if (buf) buf[n] = m->pool2_arg[i];
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
        Param *p = &m.params.items[pi];
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
                              full.data == m.logits.data,
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
        char what[96];
        snprintf(what, sizeof what, "%s gradient, 5 images in a model for 8 vs for 5", m.params.items[i].name);
        ok = expect_close(what, m.params.items[i].grad.data, exact.params.items[i].grad.data,
                          m.params.items[i].grad.size, 1e-6f, 1e-4f);
    }
    tensor_free(&x);
    cnn_free(&m);
    cnn_free(&exact);
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
    check_begin("train and models");
    check_run(NULL, "params: add, find, count, zero_grad, stable addresses", check_params, 10);
    check_run(NULL, "params: a name twice, a name too long, too many stop with status 2", check_params_misuse, 10);
    check_run(NULL, "SGD: 3 steps vs torch.optim.SGD's rule in double (momentum, weight decay)", check_sgd_rule, 10);
    check_run(NULL, "Adam(lr=0.01) vs PyTorch, 4 steps", check_adam_torch, 10);
    check_run(NULL, "Adam(lr=0.01, weight_decay=0.1) vs PyTorch, 4 steps", check_adam_wd_torch, 10);
    check_run(NULL, "AdamW(lr=0.01, weight_decay=0.1) vs PyTorch, 4 steps", check_adamw_torch, 10);
    check_run(NULL, "SGD(lr=0.1, momentum=0.9, weight_decay=0.01) vs PyTorch, 4 steps", check_sgd_torch, 10);
    check_run(NULL, "Adam: PyTorch's defaults; adam_update is adam_step's loop", check_adam_defaults, 10);
    check_run(NULL, "sampler: sequential order, short last batch, then 0", check_sampler_sequential, 10);
    check_run(NULL, "sampler: random order is a permutation of (seed, epoch); set_epoch rewinds", check_sampler_random, 10);
    check_run(NULL, "CNN: 155685 / 191935 parameters, PyTorch names and shapes, init", check_cnn_params, 10);
    check_run(NULL, "CNN: too small images, too big a batch, wrong channels stop", check_cnn_misuse, 10);
    check_run(NULL, "CNN: whole-model gradient vs finite differences", check_cnn_gradient, 60);
    check_run(NULL, "CNN: a smaller batch than max_batch, same logits and gradients", check_cnn_small_batch, 30);
    check_run(NULL, "CNN: 60 Adam steps on one batch lower its loss", check_cnn_learns, 60);
    check_run(NULL, "CNN: FLOPs of forward and training step", check_cnn_flops, 10);
    return check_end();
}
