#include "attention.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "dropout.h"
#include "ops/gemm.h"
#include "rounded.h"
#include "softmax_exp.h"

/* One (sequence, head) task's view of the buffers: row i of Q is q + i * ld, etc. */
typedef struct {
    const float *q, *k, *v; /* [T, dh] each, row stride ld = 3D */
    float *p, *w;           /* probs and the weights that multiply V (dropped, or p): [T, T] */
    int ld;
    size_t first; /* index of this task's probs[0][0] in [B, H, T, T] */
    uint64_t mask_first; /* and in the mask of the unsplit [B, H_all, T, T] */
} Head;

static Head head_at(const AttentionSizes *s, int b, int h, const float *qkv, float *probs,
                    float *dropped, DropoutWindow window) {
    Head hd;
    hd.ld = 3 * s->D;
    hd.q = qkv + (size_t)b * s->T * hd.ld + (size_t)h * s->dh;
    hd.k = hd.q + s->D;
    hd.v = hd.q + 2 * s->D;
    hd.first = ((size_t)b * s->H + h) * s->T * s->T;
    hd.mask_first = dropout_index(window, hd.first); /* a head's T x T lie in one row */
    hd.p = probs + hd.first;
    hd.w = dropped ? dropped + hd.first : hd.p;
    return hd;
}

/* p[0..len) = softmax(p[0..len)) in place */
static void softmax_row(float *p, int len) {
    float m = p[0];
    for (int j = 1; j < len; j++) m = p[j] > m ? p[j] : m;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < len; j++) {
        p[j] = softmax_exp(p[j] - m);
        sum += p[j];
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int j = 0; j < len; j++) p[j] *= inv;
}

/* Sizes from probs [B, H, T, T] and qkv [B*T, 3D], checked. */
static AttentionSizes sizes_of(const Tensor *probs, const Tensor *qkv) {
    CHECK_SHAPE(probs, -1, -1, -1, -1);
    AttentionSizes s;
    s.B = probs->shape[0], s.H = probs->shape[1], s.T = probs->shape[2];
    CHECK_SHAPE(probs, s.B, s.H, s.T, s.T);
    CHECK_SHAPE(qkv, s.B * s.T, -1);
    CHECK(qkv->shape[1] % 3 == 0, "attention: qkv has %d columns, not 3 * d_model",
          qkv->shape[1]);
    s.D = qkv->shape[1] / 3;
    CHECK(s.D % s.H == 0, "attention: d_model %d is not a multiple of the %d heads", s.D, s.H);
    s.dh = s.D / s.H;
    return s;
}

AttentionSizes attention_check_forward(const Tensor *ctx, const Tensor *probs,
                                       const Tensor *dropped, const Tensor *qkv,
                                       float dropout_p, bool training, const Rng *rng) {
    const AttentionSizes s = sizes_of(probs, qkv);
    CHECK_SHAPE(ctx, s.B * s.T, s.D);
    if (dropped) CHECK_SAME_SHAPE(dropped, probs);
    CHECK(dropout_p >= 0.0f && dropout_p <= 1.0f, "attention dropout %g outside [0, 1]",
          (double)dropout_p);
    if (dropout_active(dropout_p, training)) {
        CHECK(dropped != NULL, "attention dropout at training (p = %g) needs the dropped buffer",
              (double)dropout_p);
        CHECK(rng != NULL, "attention dropout at training (p = %g) needs an Rng",
              (double)dropout_p);
    }
    return s;
}

void attention_check_window(const AttentionSizes *s, DropoutWindow w) {
    if (!w.cols) return;
    const int64_t head = (int64_t)s->T * s->T;
    CHECK(w.cols == s->H * head && w.full_cols % head == 0 && w.col0 % head == 0 &&
              w.col0 + w.cols <= w.full_cols,
          "attention dropout window: columns [%lld, %lld) of %lld are not heads of %d x %d "
          "weights (%d here)", (long long)w.col0, (long long)(w.col0 + w.cols),
          (long long)w.full_cols, s->T, s->T, s->H);
}

AttentionSizes attention_check_backward(const Tensor *dqkv, const Tensor *dscores,
                                        const Tensor *dctx, const Tensor *qkv,
                                        const Tensor *probs, const Tensor *dropped) {
    CHECK(dqkv != NULL, "attention backward: dqkv is its only output, it cannot be NULL");
    const AttentionSizes s = sizes_of(probs, qkv);
    CHECK_SAME_SHAPE(dqkv, qkv);
    CHECK_SHAPE(dctx, s.B * s.T, s.D);
    CHECK_SAME_SHAPE(dscores, probs);
    if (dropped) CHECK_SAME_SHAPE(dropped, probs);
    return s;
}

/* Scores, softmax, dropout and context of one (sequence, head):
 *   p = scale Q K^T (GEMM; the part above the diagonal is then set to 0),
 *   p = causal softmax of each row, w = p * mask, ctx = w V (GEMM). */
static void head_forward(const AttentionSizes *s, Head hd, float *ctx, bool drop, uint64_t key,
                         uint64_t threshold, float keep_scale) {
    const int T = s->T, dh = s->dh;
    gemm(false, true, T, T, dh, 1.0f / sqrtf((float)dh), hd.q, hd.ld, hd.k, hd.ld, 0.0f, hd.p, T);
    for (int i = 0; i < T; i++) {
        float *p = hd.p + (size_t)i * T, *w = hd.w + (size_t)i * T;
        softmax_row(p, i + 1);
        for (int j = i + 1; j < T; j++) p[j] = 0.0f;
        if (drop) {
            const uint64_t row = hd.mask_first + (uint64_t)i * T;
            for (int j = 0; j < T; j++)
                w[j] = dropout_keeps(key, row + (uint64_t)j, threshold) ? p[j] * keep_scale : 0.0f;
        } else if (w != p) {
            memcpy(w, p, sizeof(float) * (size_t)T);
        }
    }
    gemm(false, false, T, dh, T, 1.0f, hd.w, T, hd.v, hd.ld, 0.0f, ctx, s->D);
}

void attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                       float dropout_p, bool training, Rng *rng) {
    attention_forward_window(ctx, probs, dropped, qkv, dropout_p, training, rng, DROPOUT_WHOLE);
}

void attention_forward_window(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                              float dropout_p, bool training, Rng *rng, DropoutWindow window) {
    ROUNDED_REFUSE("a 16-bit run uses the fused attention, layers/flash_attention.h", ctx, probs, dropped, qkv);
    const AttentionSizes s =
        attention_check_forward(ctx, probs, dropped, qkv, dropout_p, training, rng);
    attention_check_window(&s, window);
    CHECK_DEVICE(ctx, DEVICE_CPU);
    CHECK_DEVICE(probs, DEVICE_CPU);
    CHECK_DEVICE(dropped, DEVICE_CPU);
    CHECK_DEVICE(qkv, DEVICE_CPU);
    const bool drop = dropout_active(dropout_p, training);
    const uint64_t key = drop ? dropout_draw_key(rng) : 0, threshold = dropout_threshold(dropout_p);
    const float keep_scale = dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;
    const int tasks = s.B * s.H;
#pragma omp parallel for schedule(static) if (tasks > 1)
    for (int task = 0; task < tasks; task++) {
        const int b = task / s.H, h = task % s.H;
        Head hd = head_at(&s, b, h, qkv->data, probs->data, dropped ? dropped->data : NULL, window);
        float *c = ctx->data + (size_t)b * s.T * s.D + (size_t)h * s.dh;
        head_forward(&s, hd, c, drop, key, threshold, keep_scale);
    }
}

/* The backward of one (sequence, head), w the weights that multiplied V:
 *   dv += w^T dctx,  dw = dctx V^T                              (GEMMs)
 *   ds[i][j] = w[i][j] dw[i][j] - p[i][j] sum_j' w[i][j'] dw[i][j']
 *     (the softmax's backward with the mask folded in: p * (mask * dw) = w * dw)
 *   dq += scale ds K,  dk += scale ds^T Q                         (GEMMs) */
static void head_backward(const AttentionSizes *s, Head hd, float *dq, float *ds,
                          const float *dctx) {
    const int T = s->T, dh = s->dh, ld = hd.ld;
    const float scale = 1.0f / sqrtf((float)dh);
    float *dk = dq + s->D, *dv = dq + 2 * s->D;
    gemm(true, false, T, dh, T, 1.0f, hd.w, T, dctx, s->D, 1.0f, dv, ld);
    gemm(false, true, T, T, dh, 1.0f, dctx, s->D, hd.v, ld, 0.0f, ds, T);
    for (int i = 0; i < T; i++) {
        const float *p = hd.p + (size_t)i * T, *w = hd.w + (size_t)i * T;
        float *d = ds + (size_t)i * T;
        float wdw = 0.0f;
        for (int j = 0; j <= i; j++) wdw += w[j] * d[j];
        for (int j = 0; j <= i; j++) d[j] = w[j] * d[j] - p[j] * wdw;
        for (int j = i + 1; j < T; j++) d[j] = 0.0f;
    }
    gemm(false, false, T, dh, T, scale, ds, T, hd.k, ld, 1.0f, dq, ld);
    gemm(true, false, T, dh, T, scale, ds, T, hd.q, ld, 1.0f, dk, ld);
}

void attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx, const Tensor *qkv,
                        const Tensor *probs, const Tensor *dropped) {
    ROUNDED_REFUSE("a 16-bit run uses the fused attention, layers/flash_attention.h", dqkv, dscores, dctx, qkv, probs, dropped);
    const AttentionSizes s = attention_check_backward(dqkv, dscores, dctx, qkv, probs, dropped);
    CHECK_DEVICE(dqkv, DEVICE_CPU);
    CHECK_DEVICE(dscores, DEVICE_CPU);
    CHECK_DEVICE(dctx, DEVICE_CPU);
    CHECK_DEVICE(qkv, DEVICE_CPU);
    CHECK_DEVICE(probs, DEVICE_CPU);
    CHECK_DEVICE(dropped, DEVICE_CPU);
    const int tasks = s.B * s.H;
#pragma omp parallel for schedule(static) if (tasks > 1)
    for (int task = 0; task < tasks; task++) {
        const int b = task / s.H, h = task % s.H;
        /* probs and dropped are only read: the casts drop const for the shared view */
        Head hd = head_at(&s, b, h, qkv->data, (float *)probs->data,
                          dropped ? (float *)dropped->data : NULL, DROPOUT_WHOLE);
        float *dq = dqkv->data + (size_t)b * s.T * hd.ld + (size_t)h * s.dh;
        const float *dc = dctx->data + (size_t)b * s.T * s.D + (size_t)h * s.dh;
        head_backward(&s, hd, dq, dscores->data + hd.first, dc);
    }
}
