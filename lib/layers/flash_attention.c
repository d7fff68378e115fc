#include "flash_attention.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "softmax_exp.h"

/* ------------------------------------------------------------ checks */

static void check_element_dtype(const char *name, const Tensor *t, DType want) {
    CHECK(t->dtype == DTYPE_F32 || t->dtype == DTYPE_BF16 || t->dtype == DTYPE_F16,
          "flash attention: %s is a %s tensor; it takes float32, bfloat16 or float16 ones", name,
          dtype_name(t->dtype));
    if (t->dtype != want)
        die_at(__FILE__, __LINE__, "flash attention: %s is %s but qkv is %s: qkv, ctx, dctx and "
               "dqkv share one dtype", name, dtype_name(t->dtype), dtype_name(want));
}

/* Sizes from lse [B, H, T] and qkv [B*T, 3D], checked. */
static AttentionSizes sizes_of(const Tensor *lse, const Tensor *qkv) {
    CHECK_SHAPE(lse, -1, -1, -1);
    CHECK_DTYPE(lse, DTYPE_F32);
    AttentionSizes s;
    s.B = lse->shape[0], s.H = lse->shape[1], s.T = lse->shape[2];
    CHECK_SHAPE(qkv, s.B * s.T, -1);
    CHECK(qkv->shape[1] % 3 == 0, "flash attention: qkv has %d columns, not 3 * d_model",
          qkv->shape[1]);
    s.D = qkv->shape[1] / 3;
    CHECK(s.H > 0 && s.D % s.H == 0,
          "flash attention: d_model %d is not a multiple of the %d heads", s.D, s.H);
    s.dh = s.D / s.H;
    check_element_dtype("qkv", qkv, qkv->dtype);
    return s;
}

AttentionSizes flash_attention_check_forward(const Tensor *ctx, const Tensor *lse,
                                             const Tensor *qkv, float dropout_p, bool training,
                                             const Rng *rng, DropoutWindow window) {
    const AttentionSizes s = sizes_of(lse, qkv);
    CHECK_SHAPE(ctx, s.B * s.T, s.D);
    check_element_dtype("ctx", ctx, qkv->dtype);
    CHECK(dropout_p >= 0.0f && dropout_p <= 1.0f, "flash attention dropout %g outside [0, 1]",
          (double)dropout_p);
    if (dropout_active(dropout_p, training))
        CHECK(rng != NULL, "flash attention dropout at training (p = %g) needs an Rng",
              (double)dropout_p);
    attention_check_window(&s, window);
    return s;
}

AttentionSizes flash_attention_check_backward(const Tensor *dqkv, const Tensor *dctx,
                                              const Tensor *qkv, const Tensor *ctx,
                                              const Tensor *lse, const FlashDropout *drop) {
    CHECK(dqkv != NULL, "flash attention backward: dqkv is its only output, it cannot be NULL");
    const AttentionSizes s = sizes_of(lse, qkv);
    CHECK_SAME_SHAPE(dqkv, qkv);
    CHECK_SHAPE(dctx, s.B * s.T, s.D);
    CHECK_SHAPE(ctx, s.B * s.T, s.D);
    check_element_dtype("dqkv", dqkv, qkv->dtype);
    check_element_dtype("dctx", dctx, qkv->dtype);
    check_element_dtype("ctx", ctx, qkv->dtype);
    if (drop && drop->active) attention_check_window(&s, drop->window);
    return s;
}

FlashDropout flash_attention_draw(float dropout_p, bool training, Rng *rng, DropoutWindow window) {
    /* as attention_forward: one key per call, only when active */
    const uint64_t key = dropout_active(dropout_p, training) ? dropout_draw_key(rng) : 0;
    return flash_attention_dropout(dropout_p, training, key, window);
}

FlashDropout flash_attention_dropout(float dropout_p, bool training, uint64_t key,
                                     DropoutWindow window) {
    FlashDropout d;
    d.active = dropout_active(dropout_p, training);
    d.key = d.active ? key : 0;
    d.key_at = NULL;
    d.threshold = dropout_threshold(dropout_p);
    d.keep_scale = !d.active ? 1.0f : dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;
    d.window = window;
    return d;
}

/* ------------------------------------------------------------ one (sequence, head) */

/* Rows [0, T) of columns [col, col + dh) of t (row stride ld), as float32: a head's q,
 * k, v, ctx or dctx. 16-bit values convert exactly. */
static void read_head(float *dst, const Tensor *t, int64_t first_row, int T, int ld, int col,
                      int dh) {
    for (int i = 0; i < T; i++) {
        const int64_t at = (first_row + i) * ld + col;
        float *d = dst + (size_t)i * dh;
        if (t->dtype == DTYPE_F32) memcpy(d, t->data + at, sizeof(float) * (size_t)dh);
        else
            for (int e = 0; e < dh; e++)
                d[e] = dtype_f32_of_bits(dtype_f32_bits_from_bits16(t->dtype, t->bits16[at + e]));
    }
}

/* t[row, col + e] = (add ? t[row, col + e] : 0) + scale * src[e], rounded once to t's
 * dtype: where the GPU rounds. */
static void write_row(Tensor *t, int64_t at, const float *src, int dh, float scale, bool add) {
    const DType dt = t->dtype;
    for (int e = 0; e < dh; e++) {
        const float old = !add ? 0.0f : dt == DTYPE_F32 ? t->data[at + e]
                        : dtype_f32_of_bits(dtype_f32_bits_from_bits16(dt, t->bits16[at + e]));
        const float v = old + src[e] * scale; /* the same float in every dtype */
        if (dt == DTYPE_F32) t->data[at + e] = v;
        else t->bits16[at + e] = dtype_bits16_from_f32_bits(dt, dtype_bits_of_f32(v));
    }
}

static float dot(const float *a, const float *b, int n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int e = 0; e < n; e++) acc += a[e] * b[e];
    return acc;
}

static void axpy(float *y, float a, const float *x, int n) {
#pragma omp simd
    for (int e = 0; e < n; e++) y[e] += a * x[e];
}

/* The multiplier of weight (i, j) of the task whose weights start at mask_first (the
 * index of its (i = 0, j = 0) in [B, H, T, T]): 0 or keep_scale, 1 without dropout. */
static float mask_at(const FlashDropout *d, uint64_t mask_first, int T, int i, int j) {
    if (!d->active) return 1.0f;
    const uint64_t at = dropout_index(d->window, mask_first + (uint64_t)i * T + (uint64_t)j);
    return dropout_keeps(d->key, at, d->threshold) ? d->keep_scale : 0.0f;
}

/* The forward of one head: q, k, v [T, dh] float32; row i of ctx (the task's columns)
 * is written at ctx_at + i * D, lse [T]. o and sc: scratch of dh and FLASH_TILE floats. */
static void head_forward(const AttentionSizes *s, const FlashDropout *d, uint64_t mask_first,
                         const float *q, const float *k, const float *v, Tensor *ctx,
                         int64_t ctx_at, float *lse, float *o) {
    const int T = s->T, dh = s->dh;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < T; i++) {
        const float *qi = q + (size_t)i * dh;
        float m = -INFINITY, l = 0.0f, sc[FLASH_TILE];
        memset(o, 0, sizeof(float) * (size_t)dh);
        for (int t0 = 0; t0 <= i; t0 += FLASH_TILE) { /* keys t0 .. t0 + n - 1, all <= i */
            const int n = i + 1 - t0 < FLASH_TILE ? i + 1 - t0 : FLASH_TILE;
            float mt = -INFINITY;
            for (int jj = 0; jj < n; jj++) {
                sc[jj] = scale * dot(qi, k + (size_t)(t0 + jj) * dh, dh);
                mt = fmaxf(mt, sc[jj]);
            }
            const float mn = fmaxf(m, mt), a = softmax_exp(m - mn); /* 0 on the first tile */
            l *= a;
            for (int e = 0; e < dh; e++) o[e] *= a;
            for (int jj = 0; jj < n; jj++) {
                const float p = softmax_exp(sc[jj] - mn);
                l += p;
                if (mask_at(d, mask_first, T, i, t0 + jj) != 0.0f)
                    axpy(o, p, v + (size_t)(t0 + jj) * dh, dh);
            }
            m = mn;
        }
        write_row(ctx, ctx_at + (int64_t)i * s->D, o, dh, d->keep_scale / l, false);
        lse[i] = m + logf(l);
    }
}

/* The backward of one head. q, k, v, o (the stored ctx), g (dctx): [T, dh] float32;
 * dq [dh], dk and dv [T, dh] zeroed scratch. dqkv's rows of this head start at qkv_at. */
static void head_backward(const AttentionSizes *s, const FlashDropout *d, uint64_t mask_first,
                          const float *q, const float *k, const float *v, const float *o,
                          const float *g, const float *lse, Tensor *dqkv, int64_t qkv_at,
                          float *dq, float *dk, float *dv) {
    const int T = s->T, dh = s->dh, ld = 3 * s->D;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < T; i++) {
        const float *qi = q + (size_t)i * dh, *gi = g + (size_t)i * dh;
        const float delta = dot(gi, o + (size_t)i * dh, dh);
        memset(dq, 0, sizeof(float) * (size_t)dh);
        for (int j = 0; j <= i; j++) {
            const float *kj = k + (size_t)j * dh;
            const float p = softmax_exp(scale * dot(qi, kj, dh) - lse[i]);
            const float mult = mask_at(d, mask_first, T, i, j);
            const float ds = p * (mult * dot(gi, v + (size_t)j * dh, dh) - delta);
            axpy(dq, ds, kj, dh);
            axpy(dk + (size_t)j * dh, ds, qi, dh);
            axpy(dv + (size_t)j * dh, p * mult, gi, dh);
        }
        write_row(dqkv, qkv_at + (int64_t)i * ld, dq, dh, scale, true);
    }
    for (int j = 0; j < T; j++) {
        write_row(dqkv, qkv_at + (int64_t)j * ld + s->D, dk + (size_t)j * dh, dh, scale, true);
        write_row(dqkv, qkv_at + (int64_t)j * ld + 2 * s->D, dv + (size_t)j * dh, dh, 1.0f, true);
    }
}

/* ------------------------------------------------------------ the layer */

void flash_attention_forward(Tensor *ctx, Tensor *lse, FlashDropout *drop, const Tensor *qkv,
                             float dropout_p, bool training, Rng *rng, DropoutWindow window) {
    const AttentionSizes s =
        flash_attention_check_forward(ctx, lse, qkv, dropout_p, training, rng, window);
    CHECK_DEVICE(ctx, DEVICE_CPU);
    CHECK_DEVICE(lse, DEVICE_CPU);
    CHECK_DEVICE(qkv, DEVICE_CPU);
    const FlashDropout d = flash_attention_draw(dropout_p, training, rng, window);
    if (drop) *drop = d;
    const int tasks = s.B * s.H, T = s.T, dh = s.dh, ld = 3 * s.D;
#pragma omp parallel for schedule(static) if (tasks > 1)
    for (int task = 0; task < tasks; task++) {
        const int b = task / s.H, h = task % s.H;
        float *buf = xmalloc(sizeof(float) * ((size_t)3 * T * dh + (size_t)dh)); /* q, k, v, o */
        float *q = buf, *k = q + (size_t)T * dh, *v = k + (size_t)T * dh, *o = v + (size_t)T * dh;
        const int64_t row0 = (int64_t)b * T;
        read_head(q, qkv, row0, T, ld, h * dh, dh);
        read_head(k, qkv, row0, T, ld, s.D + h * dh, dh);
        read_head(v, qkv, row0, T, ld, 2 * s.D + h * dh, dh);
        head_forward(&s, &d, (uint64_t)task * T * T, q, k, v, ctx, row0 * s.D + h * dh,
                     lse->data + (size_t)task * T, o);
        xfree(buf);
    }
}

void flash_attention_backward(Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                              const Tensor *ctx, const Tensor *lse, const FlashDropout *drop) {
    const AttentionSizes s = flash_attention_check_backward(dqkv, dctx, qkv, ctx, lse, drop);
    CHECK_DEVICE(dqkv, DEVICE_CPU);
    CHECK_DEVICE(dctx, DEVICE_CPU);
    CHECK_DEVICE(qkv, DEVICE_CPU);
    CHECK_DEVICE(ctx, DEVICE_CPU);
    CHECK_DEVICE(lse, DEVICE_CPU);
    const FlashDropout none = {.keep_scale = 1.0f};
    const FlashDropout *d = drop ? drop : &none;
    const int tasks = s.B * s.H, T = s.T, dh = s.dh, ld = 3 * s.D;
#pragma omp parallel for schedule(static) if (tasks > 1)
    for (int task = 0; task < tasks; task++) {
        const int b = task / s.H, h = task % s.H;
        const size_t head = (size_t)T * dh;
        /* q, k, v, o, g read; dk, dv summed; dq one row */
        float *buf = xcalloc(7 * head + (size_t)dh, sizeof(float));
        float *q = buf, *k = q + head, *v = k + head, *o = v + head, *g = o + head;
        float *dk = g + head, *dv = dk + head, *dq = dv + head;
        const int64_t row0 = (int64_t)b * T;
        read_head(q, qkv, row0, T, ld, h * dh, dh);
        read_head(k, qkv, row0, T, ld, s.D + h * dh, dh);
        read_head(v, qkv, row0, T, ld, 2 * s.D + h * dh, dh);
        read_head(o, ctx, row0, T, s.D, h * dh, dh);
        read_head(g, dctx, row0, T, s.D, h * dh, dh);
        head_backward(&s, d, (uint64_t)task * T * T, q, k, v, o, g, lse->data + (size_t)task * T,
                      dqkv, row0 * ld + h * dh, dq, dk, dv);
        xfree(buf);
    }
}
