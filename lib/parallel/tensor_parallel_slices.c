#include "parallel/tensor_parallel_slices.h"

#include <string.h>

#include "core/check.h"

Param *tp_declare(TensorParallel *tp, ParamList *params, const char *name, TpSplit split,
                  int ndim, const int *shape) {
    CHECK(params->count == tp->split_count, "a tensor-parallel model's parameters come from its "
          "blocks only (%d declared, %d noted): one TensorParallel per model (tensor_parallel_init "
          "a new one for another model)", params->count, tp->split_count);
    if (tp->split_count == tp->split_cap) { /* grow */
        const int cap = tp->split_cap ? 2 * tp->split_cap : 32;
        TpSplit *more = xcalloc((size_t)cap, sizeof *more);
        if (tp->split_count) memcpy(more, tp->split, (size_t)tp->split_count * sizeof *more);
        xfree(tp->split);
        tp->split = more, tp->split_cap = cap;
    }
    tp->split[tp->split_count++] = split;
    return params_add(params, name, ndim, shape);
}

/* rows and columns of a parameter seen as a matrix ([n] is n x 1) */
static int rows_of_tensor(const Tensor *t) { return t->shape[0]; }
static int cols_of_tensor(const Tensor *t) { return (int)(t->size / t->shape[0]); }

void tp_slice_layout(const TensorParallel *tp, TpSplit split, const Tensor *whole,
                     const Tensor *local, int r, int *rows_of, int *col0) {
    const int lr = rows_of_tensor(local), wr = rows_of_tensor(whole);
    *col0 = 0;
    if (split == TP_QKV_ROWS) {
        CHECK(wr % 3 == 0 && lr * tp->t == wr, "q|k|v rows: %d of %d", lr, wr);
        tp->ops.qkv_rows(wr / 3, tp->t, r, rows_of);
        return;
    }
    const int start = split == TP_ROWS || split == TP_WORDS ? tp->ops.shard(lr * tp->t, tp->t, r).start : 0;
    for (int i = 0; i < lr; i++) rows_of[i] = start + i < wr ? start + i : -1; /* -1: padding */
    if (split == TP_COLUMNS) *col0 = tp->ops.shard(cols_of_tensor(whole), tp->t, r).start;
}

void tp_draw_slice(TensorParallel *tp, Param *p, TpSplit split, int rows, int cols, float bound,
                   Rng *rng) {
    Tensor whole = tensor_zeros(2, rows, cols);
    Param draw = {.value = whole};
    param_uniform(&draw, bound, rng); /* every rank draws all of it: the same stream */
    const Tensor *local = &p->value;
    const int lr = rows_of_tensor(local), lc = cols_of_tensor(local);
    int *rows_of = xmalloc((size_t)lr * sizeof *rows_of), col0;
    tp_slice_layout(tp, split, &whole, local, tp->rank, rows_of, &col0);
    for (int i = 0; i < lr; i++) {
        float *dst = local->data + (size_t)i * lc;
        if (rows_of[i] < 0) memset(dst, 0, sizeof(float) * (size_t)lc);
        else memcpy(dst, whole.data + (size_t)rows_of[i] * cols + col0, sizeof(float) * (size_t)lc);
    }
    xfree(rows_of);
    tensor_free(&whole);
}

void tp_zeros_to(TensorParallel *tp, Device device) {
    if (tp->zeros.device == device) return;
    Tensor z = tensor_to(&tp->zeros, device);
    tensor_free(&tp->zeros);
    tp->zeros = z;
}

/* host[...] resized to the shape of like */
static Tensor *host_like(Tensor *host, const Tensor *like) {
    if (host->size != like->size) {
        tensor_free(host);
        *host = tensor_zeros(2, like->shape[0], like->shape[1]);
    }
    return host;
}

/* buf resized to a float32 tensor of like's shape on like's device */
static Tensor *f32_like(Tensor *buf, const Tensor *like) {
    if (buf->size != like->size || buf->device != like->device) {
        tensor_free(buf);
        *buf = tensor_zeros_on(like->device, 2, like->shape[0], like->shape[1]);
    }
    return buf;
}

float tp_loss(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
              Tensor *dlogits) {
    return tp_loss_scaled(ctx, ops, logits, targets, dlogits, 1.0f);
}

float tp_loss_scaled(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
                     Tensor *dlogits, float scale) {
    TensorParallel *tp = ctx;
    if (logits->dtype != DTYPE_F32) {
        /* 16-bit logits, read exactly as float32: the cross-entropy and its all-reduces
         * run in float32, and the gradient (times fp16's loss scale) is rounded once
         * into the 16-bit dlogits */
        Tensor *z = f32_like(&tp->logits32, logits);
        tensor_convert(z, logits);
        Tensor *dz = dlogits ? f32_like(&tp->dlogits32, logits) : NULL;
        const float loss = tp_loss_scaled(ctx, ops, z, targets, dz, scale);
        if (dlogits) tensor_convert(dlogits, dz);
        return loss;
    }
    if (dlogits && scale != 1.0f) {
        const float loss = tp_loss_scaled(ctx, ops, logits, targets, dlogits, 1.0f);
        tensor_scale(dlogits, scale); /* the float32 gradient times S */
        return loss;
    }
    (void)ops;
    if (logits->device == DEVICE_CPU)
        return tp->ops.vocab_cross_entropy(tp, dlogits, logits, targets);
    /* On a GPU: the [N, V/t] logits to the host and back. The loss is a small part of a
     * step next to the GEMMs, but a kernel would keep them where they are (owed). */
    const int N = logits->shape[0];
    Tensor *z = host_like(&tp->host_logits, logits);
    tensor_copy(z, logits);
    if (tp->host_targets_cap < N) { /* kept between calls */
        xfree(tp->host_targets);
        tp->host_targets = xmalloc((size_t)N * sizeof *tp->host_targets);
        tp->host_targets_cap = N;
    }
    int *host_targets = tp->host_targets;
    device_copy(host_targets, DEVICE_CPU, targets, logits->device, (size_t)N * sizeof *host_targets);
    Tensor *dz = dlogits ? host_like(&tp->host_dlogits, logits) : NULL;
    const float loss = tp->ops.vocab_cross_entropy(tp, dz, z, host_targets);
    if (dlogits) tensor_copy(dlogits, dz);
    return loss;
}
