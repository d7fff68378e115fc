#include "tensor_parallel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "layers/softmax_exp.h"
#include "train/clip.h"

const TensorParallelOps TP_LIBRARY = {
    .shard = tp_shard,
    .qkv_rows = tp_qkv_rows,
    .f = tp_f,
    .g = tp_g,
    .row_linear_forward = tp_row_linear_forward,
    .vocab_cross_entropy = tp_vocab_cross_entropy,
};

/* ---------------------------------------------------------------- the cuts */

TpRange tp_shard(int n, int t, int r) {
    CHECK(t >= 1 && n % t == 0 && r >= 0 && r < t, "%d rows do not split %d ways (rank %d)", n,
          t, r);
    return (TpRange){r * (n / t), n / t};
}

void tp_qkv_rows(int D, int t, int r, int *rows) {
    const TpRange mine = tp_shard(D, t, r); /* this rank's heads' columns of q, k and v */
    for (int part = 0; part < 3; part++)    /* q, k, v: blocks of D rows each */
        for (int i = 0; i < mine.count; i++) rows[part * mine.count + i] = part * D + mine.start + i;
}

/* ---------------------------------------------------------------- f and g */

void tp_f(TensorParallel *tp, Tensor *x, BlockPass pass) {
    if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_SUM);
}

void tp_g(TensorParallel *tp, Tensor *x, BlockPass pass) {
    if (pass == BLOCK_FORWARD) dist_all_reduce(tp->group, x, DIST_SUM);
}

void tp_row_linear_forward(TensorParallel *tp, const LayerOps *o, Tensor *out, const Tensor *in,
                           const Tensor *w, const Tensor *bias) {
    /* each rank's product is a partial sum: the bias goes into one of them only */
    CHECK(bias->size <= tp->zeros.size, "a row-parallel bias of %lld for a model %lld wide",
          (long long)bias->size, (long long)tp->zeros.size);
    Tensor none = tensor_range(&tp->zeros, 0, bias->size);
    o->linear_forward(out, in, w, tp->rank == 0 ? bias : &none);
    tp->ops.g(tp, out, BLOCK_FORWARD);
}

/* ---------------------------------------------------------------- the loss */

void tp_all_reduce_host(TensorParallel *tp, Tensor *host, DistOp op) {
    if (tp->group->device == DEVICE_CPU) {
        dist_all_reduce(tp->group, host, op);
        return;
    }
    /* NCCL reduces device memory only: through a buffer there, kept between calls (a
     * loss a micro-batch would otherwise allocate and free twice each time) */
    if (tp->device_scratch.size < host->size) {
        tensor_free(&tp->device_scratch);
        tp->device_scratch = tensor_zeros_on(tp->group->device, 1, (int)host->size);
    }
    Tensor there = tensor_range(&tp->device_scratch, 0, host->size);
    tensor_copy(&there, host);
    dist_all_reduce(tp->group, &there, op);
    tensor_copy(host, &there);
}

/* The largest of z[0..n), and the sum of exp(z[j] - m): one row of this rank's words. */
static float row_max(const float *z, int n) {
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int j = 0; j < n; j++) m = z[j] > m ? z[j] : m;
    return m;
}

static float row_sum_exp(const float *z, int n, float m) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < n; j++) s += softmax_exp(z[j] - m);
    return s;
}

float tp_vocab_cross_entropy(TensorParallel *tp, Tensor *dlogits, const Tensor *logits,
                             const int *targets) {
    CHECK_DEVICE(logits, DEVICE_CPU);
    const int N = logits->shape[0], V = logits->shape[1], first = tp->words.start;
    int valid = tp->vocab - first < V ? tp->vocab - first : V; /* the rest: padding */
    if (valid < 0) valid = 0;                                    /* a rank of padding only */
    for (int n = 0; n < N; n++)
        CHECK(targets[n] >= 0 && targets[n] < tp->vocab,
              "target %d of row %d is outside the vocabulary 0..%d", targets[n], n, tp->vocab - 1);
    Tensor max = tensor_zeros(1, N), sums = tensor_zeros(2, 2, N); /* [sum exp; target - max] */
    const bool threads = (int64_t)N * V > 65536;
#pragma omp parallel for schedule(static) if (threads)
    for (int n = 0; n < N; n++) max.data[n] = row_max(logits->data + (size_t)n * V, valid);
    tp_all_reduce_host(tp, &max, DIST_MAX); /* every rank subtracts the same maximum */
#pragma omp parallel for schedule(static) if (threads)
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * V;
        sums.data[n] = row_sum_exp(z, valid, max.data[n]);
        const int local = targets[n] - first; /* the rank that holds the target adds it */
        if (local >= 0 && local < valid) sums.data[N + n] = z[local] - max.data[n];
    }
    tp_all_reduce_host(tp, &sums, DIST_SUM);
    double loss = 0.0;
    for (int n = 0; n < N; n++) loss += logf(sums.data[n]) - sums.data[N + n];
    if (dlogits) {
#pragma omp parallel for schedule(static) if (threads)
        for (int n = 0; n < N; n++) {
            const float *z = logits->data + (size_t)n * V;
            float *d = dlogits->data + (size_t)n * V;
            const float m = max.data[n], scale = 1.0f / sums.data[n] / (float)N;
#pragma omp simd
            for (int j = 0; j < valid; j++) d[j] = softmax_exp(z[j] - m) * scale;
            for (int j = valid; j < V; j++) d[j] = 0.0f; /* padding: never a word */
            const int local = targets[n] - first;
            if (local >= 0 && local < valid) d[local] -= 1.0f / (float)N;
        }
    }
    tensor_free(&max);
    tensor_free(&sums);
    return (float)(loss / N);
}

/* ---------------------------------------------------------------- set-up */

int tensor_parallel_check(const TransformerConfig *c, int t, char *msg, size_t cap) {
    if (t >= 1 && c->heads % t == 0 && c->d_ff % t == 0) return 0;
    if (t < 1) {
        snprintf(msg, cap, "--tp must be at least 1, got %d", t);
        return -1;
    }
    char size[64];
    if (c->heads % t) snprintf(size, sizeof size, "%d heads", c->heads);
    else snprintf(size, sizeof size, "feed-forward width of %d", c->d_ff);
    char fits[128] = "";
    for (int k = 1, len = 0; k <= c->heads && len < (int)sizeof fits - 12; k++)
        if (c->heads % k == 0 && c->d_ff % k == 0)
            len += snprintf(fits + len, sizeof fits - (size_t)len, "%s%d", len ? ", " : "", k);
    snprintf(msg, cap, "--tp %d does not divide the model's %s: each rank holds 1/t of the %s "
             "(sizes that fit this model: %s)", t, size, c->heads % t ? "heads" : "hidden units", fits);
    return -1;
}

void tensor_parallel_init(TensorParallel *tp, Dist *group, const TransformerConfig *c) {
    char msg[256];
    if (tensor_parallel_check(c, group->world_size, msg, sizeof msg)) fatal("%s", msg);
    memset(tp, 0, sizeof *tp);
    tp->group = group;
    tp->t = group->world_size, tp->rank = group->rank;
    tp->vocab = c->vocab;
    tp->vocab_padded = (c->vocab + tp->t - 1) / tp->t * tp->t;
    tp->words = tp_shard(tp->vocab_padded, tp->t, tp->rank);
    tp->ops = TP_LIBRARY;
    tp->zeros = tensor_zeros(1, c->d_model);
}

void tensor_parallel_free(TensorParallel *tp) {
    xfree(tp->split);
    tensor_free(&tp->zeros);
    tensor_free(&tp->host_logits);
    tensor_free(&tp->host_dlogits);
    tensor_free(&tp->logits32);
    tensor_free(&tp->dlogits32);
    tensor_free(&tp->device_scratch);
    xfree(tp->host_targets);
    memset(tp, 0, sizeof *tp);
}

/* ---------------------------------------------------------------- counts */

double tensor_parallel_grad_squares(const TensorParallel *tp, const ParamList *params) {
    CHECK(tp->split_count == params->count, "the parameters (%d) are not the sharded model's (%d)",
          params->count, tp->split_count);
    double sum = 0.0;
    for (int i = 0; i < params->count; i++)
        if (tp->split[i] != TP_REPLICATED || tp->rank == 0)
            sum += grad_sum_squares(&params->items[i]->grad);
    return sum;
}

int64_t tensor_parallel_param_count(const TransformerConfig *c, int t, int first, int last) {
    const int64_t D = c->d_model, F = c->d_ff, Vp = (c->vocab + t - 1) / t * t;
    const int64_t layer = 3 * D * D / t + 3 * D / t  /* in-projection, by heads */
                          + D * D / t + D            /* out-projection, its bias whole */
                          + F * D / t + F / t        /* linear1, by rows */
                          + D * F / t + D            /* linear2, by columns */
                          + 4 * D;                   /* two layer norms */
    int64_t n = 0;
    for (int k = first; k < last; k++)
        n += k == 0 ? Vp / t * D : k <= c->layers ? layer : Vp / t * D + Vp / t;
    return n;
}

double tensor_parallel_bytes(const TransformerConfig *c, int64_t rows, int t, int first, int last) {
    if (t == 1) return 0.0;
    double floats = 0.0; /* all-reduced per step, of rows tokens */
    for (int k = first; k < last; k++)
        floats += k == 0 ? (double)rows * c->d_model             /* g forward */
                  : k <= c->layers ? 4.0 * rows * c->d_model     /* 2 g forward, 2 f backward */
                  : (double)rows * c->d_model + 3.0 * rows;      /* f backward; the loss's */
    return 2.0 * (t - 1) / t * 4.0 * floats;
}
