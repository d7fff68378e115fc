/* Unit tests of lib/train: SGD (against its update rule worked out here in double),
 * Adam, Adam with L2 decay, AdamW and SGD against numbers from real PyTorch
 * (tests/reference/optim_reference.h, made by tests/reference/make_optim_reference.py),
 * on one parameter and split over two (one flat buffer either way), and the samplers (the
 * distributed one against torch.utils.data.DistributedSampler's indices:
 * tests/reference/sampler_reference.h, made by tests/reference/make_sampler_reference.py). */
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
#include "models/params.h"
#include "reference/clip_reference.h"
#include "reference/optim_reference.h"
#include "reference/sampler_reference.h"
#include "train/clip.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/sampler.h"
#include "train/schedule.h"

/* ------------------------------------------------------------ optimisers */

/* Two parameters, [2, 3] and [4], and their gradients at step s (fixed numbers). */
static void make_two(ParamList *list) {
    *list = (ParamList){0};
    Param *a = params_add(list, "a", 2, (int[]){2, 3});
    Param *b = params_add(list, "b", 1, (int[]){4});
    params_allocate(list);
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
        for (int64_t k = 0; k < list->items[i]->grad.size; k++)
            list->items[i]->grad.data[k] = grad_at(step, i, (int)k);
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
            for (int64_t k = 0; k < list.items[i]->value.size; k++) p[i][k] = list.items[i]->value.data[k];
        Sgd opt;
        sgd_init(&opt, &list, settings[s][0], settings[s][1], settings[s][2]);
        /* a momentum buffer only with momentum (torch.optim.SGD's state likewise): 5.2 GB
         * of a 1.3B model's GPU otherwise (issue 30, fault 11) */
        ok = expect_true(opt.buf.size == (mom != 0 ? list.total : 0),
                         "SGD(momentum %g) holds a buffer of %lld values, expected %lld", mom,
                         (long long)opt.buf.size, (long long)(mom != 0 ? list.total : 0));
        for (int step = 1; ok && step <= 3; step++) {
            set_grads(&list, step);
            sgd_step(&opt, &list);
            for (int i = 0; i < 2; i++)
                for (int64_t k = 0; k < list.items[i]->value.size; k++) {
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
                char what[160];
                snprintf(what, sizeof what, "SGD(lr %g, momentum %g, weight decay %g) step %d, %s", lr,
                         mom, wd, step, list.items[i]->name);
                ok = expect_close(what, list.items[i]->value.data, want, list.items[i]->value.size, 1e-6f, 1e-5f);
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
        params_allocate(&list);
        vals[0] = a->value.data, vals[1] = b->value.data;
        grads[0] = a->grad.data, grads[1] = b->grad.data;
        sizes[0] = 2, sizes[1] = 4;
    } else {
        Param *a = params_add(&list, "p", 1, (int[]){OPTIM_REF_N});
        params_allocate(&list);
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
    memcpy(p, list.items[0]->value.data, sizeof p);
    for (int step = 1; step <= 3; step++) {
        set_grads(&list, step);
        adam_step(&opt, &list);
        for (int k = 0; k < 6; k++) g[k] = grad_at(step, 0, k);
        adam_update(p, g, m, v, 6, &opt, step);
    }
    ok = ok && expect_true(opt.step == 3, "step count %lld after 3 steps", (long long)opt.step);
    ok = ok && expect_close("adam_update by hand vs adam_step", p, list.items[0]->value.data, 6, 0, 0);
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

/* The order of `epoch` of the one-replica sampler: the permutation a distributed sampler
 * takes its positions from (identity without shuffle). */
static void plain_order(int *out, int count, bool shuffle, uint64_t seed, int epoch) {
    Sampler p;
    sampler_init(&p, count, shuffle, seed);
    sampler_set_epoch(&p, epoch);
    drain(&p, out, 5);
    sampler_free(&p);
}

/* Rank `rank`'s indices of one epoch, in batches of 3; returns how many. */
static int distributed_epoch(int *out, int count, bool shuffle, uint64_t seed, int replicas,
                             int rank, bool drop_last, int epoch) {
    Sampler s;
    sampler_init_distributed(&s, count, shuffle, seed, replicas, rank, drop_last);
    sampler_set_epoch(&s, epoch);
    int n = drain(&s, out, 3);
    sampler_free(&s);
    return n;
}

/* Against torch.utils.data.DistributedSampler itself (tests/reference/sampler_reference.h):
 * with shuffle=False the indices are PyTorch's; with shuffle=True they are PyTorch's
 * positions applied to the epoch's permutation. */
static int check_sampler_distributed_torch(void) {
    bool ok = true;
    for (size_t c = 0; ok && c < sizeof SAMPLER_REF_CASES / sizeof SAMPLER_REF_CASES[0]; c++) {
        const SamplerRefCase *rc = &SAMPLER_REF_CASES[c];
        int perm[64], got[64];
        for (int sh = 0; ok && sh < 2; sh++)
            for (int epoch = 0; ok && epoch <= 3; epoch += 3) {
                plain_order(perm, rc->count, sh, 5, epoch);
                for (int r = 0; ok && r < rc->num_replicas; r++) {
                    int n = distributed_epoch(got, rc->count, sh, 5, rc->num_replicas, r,
                                              rc->drop_last, epoch);
                    const int *pos = SAMPLER_REF_INDICES + rc->first + r * rc->num_samples;
                    ok = expect_true(n == rc->num_samples, "%d examples, %d replicas, drop_last=%d: "
                                     "rank %d gets %d indices, PyTorch %d", rc->count,
                                     rc->num_replicas, rc->drop_last, r, n, rc->num_samples);
                    for (int k = 0; ok && k < n; k++)
                        ok = expect_true(got[k] == perm[pos[k]], "%d examples, %d replicas, "
                                         "drop_last=%d, shuffle=%d, epoch %d: rank %d's index %d is "
                                         "%d, PyTorch's position %d of the order holds %d",
                                         rc->count, rc->num_replicas, rc->drop_last, sh, epoch, r, k,
                                         got[k], pos[k], perm[pos[k]]);
                }
            }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* DistributedSampler.__iter__ written out as PyTorch does it (after the permutation):
 * pad by repeating the list (as often as needed) or cut it to total_size, then take
 * indices[rank:total_size:num_replicas]. Returns num_samples. */
static int torch_distributed(int *out, const int *order, int count, int replicas, int rank,
                             bool drop_last) {
    int num_samples = drop_last && count % replicas != 0
                          ? (int)ceil((double)(count - replicas) / replicas)
                          : (int)ceil((double)count / replicas);
    int total = num_samples * replicas;
    int *list = malloc(sizeof(int) * (size_t)(total > count ? total : count));
    memcpy(list, order, sizeof(int) * (size_t)count);
    for (int len = count; len < total;) /* indices += indices[:padding_size], repeated */
        for (int i = 0; i < count && len < total; i++) list[len++] = list[i];
    int n = 0;
    for (int i = rank; i < total; i += replicas) out[n++] = list[i];
    free(list);
    return n;
}

/* Every size 1..40 on 1..6 replicas, drop_last and shuffle on and off, two epochs: the
 * indices of PyTorch's procedure, and what the ranks cover together: with drop_last each
 * index at most once, all but fewer than num_replicas of them; without it every index, and
 * only the first (total - count) of the order twice. */
static int check_sampler_distributed_sweep(void) {
    enum { MAX = 40, RANKS = 6 };
    int order[MAX], want[MAX], got[MAX], seen[MAX];
    bool ok = true;
    for (int count = 1; ok && count <= MAX; count++)
        for (int R = 1; ok && R <= RANKS; R++)
            for (int dl = 0; ok && dl < 2; dl++)
                for (int sh = 0; ok && sh < 2; sh++)
                    for (int epoch = 0; ok && epoch < 2; epoch++) {
                        if (dl && count < R) continue; /* PyTorch: 0 samples; the library refuses */
                        plain_order(order, count, sh, 11, epoch);
                        memset(seen, 0, sizeof seen);
                        int total = 0;
                        for (int r = 0; ok && r < R; r++) {
                            int n = distributed_epoch(got, count, sh, 11, R, r, dl, epoch);
                            int m = torch_distributed(want, order, count, R, r, dl);
                            ok = expect_true(n == m && memcmp(got, want, sizeof(int) * (size_t)n) == 0,
                                             "%d examples, %d replicas, drop_last=%d, shuffle=%d, "
                                             "epoch %d: rank %d gets %d indices (first %d), "
                                             "PyTorch's procedure %d (first %d)", count, R, dl, sh,
                                             epoch, r, n, n ? got[0] : -1, m, m ? want[0] : -1);
                            for (int k = 0; ok && k < n; k++) seen[got[k]]++;
                            total += n;
                        }
                        int once = 0, twice = 0, more = 0;
                        for (int i = 0; i < count; i++)
                            once += seen[i] == 1, twice += seen[i] == 2, more += seen[i] > 2;
                        if (ok && dl)
                            ok = expect_true(total == once && total > count - R && twice + more == 0,
                                             "drop_last, %d examples on %d ranks: %d indices, %d "
                                             "distinct, %d repeated", count, R, total, once,
                                             twice + more);
                        else if (ok && count >= R)
                            ok = expect_true(once + twice == count && twice == total - count && more == 0,
                                             "padded, %d examples on %d ranks: %d seen once, %d "
                                             "twice, %d more often; expected %d twice",
                                             count, R, once, twice, more, total - count);
                    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void diverge_nan(void *arg) {
    (void)arg;
    train_stop_if_diverged(NAN, "step 3", 3e38);
    printf("went on after a NaN loss\n");
}
static void diverge_inf(void *arg) {
    (void)arg;
    train_stop_if_diverged(INFINITY, "epoch 2", 0.5);
    printf("went on after an infinite loss\n");
}

/* A non-finite loss stops the run (exit 1), naming where and the learning rate; a
 * finite one, however large, does not. */
static int check_diverged(void) {
    ChildResult r;
    run_child(diverge_nan, NULL, &r);
    bool ok = expect_exit("NaN loss", &r, 1, "diverged", "step 3", "--lr 3e+38", (const char *)NULL);
    run_child(diverge_inf, NULL, &r);
    ok = ok && expect_exit("infinite loss", &r, 1, "epoch 2", "--lr 0.5", (const char *)NULL);
    train_stop_if_diverged(1e30, "step 1", 1e-3); /* returns */
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ clipping, schedules */

/* clip_grad_norm against torch.nn.utils.clip_grad_norm_ on two parameters: max_norm
 * below the norm (clips), far above (keeps), and a norm of 1.06e-6 under max_norm 1.5e-6,
 * which PyTorch still scales (by max_norm / (norm + 1e-6)). Within 2 float steps: the
 * norm is summed in double here, in float there. */
static int check_clip_torch(void) {
    const struct {
        const char *what;
        float max_norm, norm;
        const float *before, *after;
    } cases[] = {{"max_norm 0.5 (clips)", CLIP_REF_CLIPS_MAX, CLIP_REF_CLIPS_NORM, CLIP_REF_CLIPS_BEFORE,
                  CLIP_REF_CLIPS_AFTER},
                 {"max_norm 100 (keeps)", CLIP_REF_KEEPS_MAX, CLIP_REF_KEEPS_NORM, CLIP_REF_KEEPS_BEFORE,
                  CLIP_REF_KEEPS_AFTER},
                 {"norm 1.06e-6, max_norm 1.5e-6 (scales by 0.73)", CLIP_REF_TINY_MAX, CLIP_REF_TINY_NORM,
                  CLIP_REF_TINY_BEFORE, CLIP_REF_TINY_AFTER}};
    bool ok = true;
    for (size_t c = 0; ok && c < sizeof cases / sizeof cases[0]; c++) {
        ParamList list;
        make_two(&list);
        memcpy(list.grads.data, cases[c].before, sizeof CLIP_REF_GRADS);
        const float norm = clip_grad_norm(&list, cases[c].max_norm);
        char what[128];
        snprintf(what, sizeof what, "%s: the norm returned", cases[c].what);
        ok = expect_close(what, &norm, &cases[c].norm, 1, 0.0f, 1e-6f);
        snprintf(what, sizeof what, "%s: the gradients after", cases[c].what);
        ok = ok && expect_close(what, list.grads.data, cases[c].after, 10, 0.0f, 2.5e-7f);
        params_free(&list);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A buffer of several blocks: the norm is the double sum's, and bit for bit the same on
 * 1 and 2 threads; grad_norm scales nothing; a NaN gradient gives a NaN norm. */
static int check_clip_blocks(void) {
    ParamList list = {0};
    params_add(&list, "w", 1, (int[]){3 * CLIP_BLOCK + 5});
    params_add(&list, "b", 1, (int[]){7});
    params_allocate(&list);
    fill_uniform(list.grads.data, list.total, 42, -0.01f, 0.02f);
    double want = 0.0;
    for (int64_t k = 0; k < list.total; k++) want += (double)list.grads.data[k] * list.grads.data[k];
    const float want_norm = (float)sqrt(want);
    const float g0 = list.grads.data[0];
    omp_set_num_threads(1);
    const float one = grad_norm(&list);
    omp_set_num_threads(2);
    const float two = grad_norm(&list);
    bool ok = expect_close("the norm of 49,164 gradients", &one, &want_norm, 1, 0.0f, 1e-6f) &&
              expect_true(memcmp(&one, &two, sizeof one) == 0, "1 thread: %.9g, 2 threads: %.9g", one, two) &&
              expect_true(list.grads.data[0] == g0, "grad_norm changed a gradient");
    const float max_norm = one / 4;
    const float norm = clip_grad_norm(&list, max_norm);
    const float after = grad_norm(&list);
    ok = ok && expect_close("clip_grad_norm returns the norm before clipping", &norm, &one, 1, 0.0f, 0.0f) &&
         expect_close("the norm after clipping to a quarter", &after, &max_norm, 1, 0.0f, 1e-5f);
    list.grads.data[17] = NAN;
    const float nan_norm = clip_grad_norm(&list, 1.0f);
    ok = ok && expect_true(isnan(nan_norm), "a NaN gradient gave the norm %g, not NaN", nan_norm);
    params_free(&list);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_schedules_torch(void) {
    bool ok = true;
    const float *settings[2] = {SCHED_REF_TUTORIAL, SCHED_REF_HALVES};
    const float *want[2] = {SCHED_REF_TUTORIAL_LR, SCHED_REF_HALVES_LR};
    for (int s = 0; ok && s < 2; s++) {
        float got[SCHED_REF_EPOCHS];
        for (int e = 0; e < SCHED_REF_EPOCHS; e++)
            got[e] = step_lr(settings[s][0], settings[s][2], (int)settings[s][1], e);
        char what[96];
        snprintf(what, sizeof what, "StepLR(lr %g, step_size %g, gamma %g), epochs 0..7", settings[s][0],
                 settings[s][1], settings[s][2]);
        ok = expect_close(what, got, want[s], SCHED_REF_EPOCHS, 0.0f, 1e-6f);
    }
    float lin[SCHED_REF_LINEAR_TOTAL + 1];
    for (int u = 0; u <= SCHED_REF_LINEAR_TOTAL; u++)
        lin[u] = linear_lr(SCHED_REF_LINEAR_LR0, u, SCHED_REF_LINEAR_TOTAL);
    ok = ok && expect_close("linear annealing vs LambdaLR(1 - u / total)", lin, SCHED_REF_LINEAR_LR,
                            SCHED_REF_LINEAR_TOTAL + 1, 1e-12f, 1e-6f);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("train");
    check_run(NULL, "SGD: 3 steps vs torch.optim.SGD's rule in double (momentum, weight decay); no buffer without momentum", check_sgd_rule, 10);
    check_run(NULL, "Adam(lr=0.01) vs PyTorch, 4 steps", check_adam_torch, 10);
    check_run(NULL, "Adam(lr=0.01, weight_decay=0.1) vs PyTorch, 4 steps", check_adam_wd_torch, 10);
    check_run(NULL, "AdamW(lr=0.01, weight_decay=0.1) vs PyTorch, 4 steps", check_adamw_torch, 10);
    check_run(NULL, "SGD(lr=0.1, momentum=0.9, weight_decay=0.01) vs PyTorch, 4 steps", check_sgd_torch, 10);
    check_run(NULL, "Adam: PyTorch's defaults; adam_update is adam_step's loop", check_adam_defaults, 10);
    check_run(NULL, "sampler: sequential order, short last batch, then 0", check_sampler_sequential, 10);
    check_run(NULL, "sampler: random order is a permutation of (seed, epoch); set_epoch rewinds", check_sampler_random, 10);
    check_run(NULL, "distributed sampler vs torch DistributedSampler: drop_last, padding, shuffle off and on", check_sampler_distributed_torch, 10);
    check_run(NULL, "distributed sampler: PyTorch's pad/cut/slice for 1-40 examples on 1-6 ranks", check_sampler_distributed_sweep, 20);
    check_run(NULL, "a NaN or infinite loss stops the run, naming the step and --lr", check_diverged, 10);
    check_run(NULL, "clip_grad_norm vs torch.nn.utils.clip_grad_norm_ (clips, keeps, scales below max_norm)", check_clip_torch, 10);
    check_run(NULL, "clip_grad_norm: double sum over blocks, same bits on 1 and 2 threads, NaN", check_clip_blocks, 20);
    check_run(NULL, "StepLR and linear annealing vs PyTorch's schedulers", check_schedules_torch, 10);
    return check_end();
}
