/* TODO 4.3 and 4.4: the heart of causal self-attention, forward and backward.
 *
 * For one sequence and one head, with queries q_i, keys k_j and values v_j (dh floats
 * each, cut from the fused projection qkv [B*T, 3D] by the given code below):
 *
 *   scores[i][j] = q_i . k_j / sqrt(dh)                 how well key j answers query i
 *   p[i][.]      = softmax of scores[i][0..i]           causal: position i sees 0..i only
 *   ctx_i        = sum over j <= i of p[i][j] v_j       (given, with dropout on p)
 *
 * You write the scores, the causal mask and the softmax (4.3), and their backward
 * (4.4). The given code around them slices the heads, applies the dropout and computes
 * the context and the values' gradient, with the signatures of the library's
 * layers/attention.h, so that lesson_use_my_layers can put them into the model. */
#include <math.h>
#include <string.h>

#include "layers/attention.h"
#include "layers/dropout.h"
#include "lesson.h"

void lesson_causal_softmax(float *p, const float *q, const float *k, int T, int dh, int ld) {
#ifdef SOLUTION
    const float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < T; i++) {
        float *row = p + (size_t)i * T;
        const float *qi = q + (size_t)i * ld;
        float max = -INFINITY;
        for (int j = 0; j <= i; j++) { /* the causal mask: keys 0..i only */
            const float *kj = k + (size_t)j * ld;
            float s = 0.0f;
            for (int d = 0; d < dh; d++) s += qi[d] * kj[d];
            row[j] = s * scale;
            max = row[j] > max ? row[j] : max;
        }
        float sum = 0.0f;
        for (int j = 0; j <= i; j++) { /* exp(s - max) <= 1: never overflows */
            row[j] = expf(row[j] - max);
            sum += row[j];
        }
        for (int j = 0; j <= i; j++) row[j] /= sum;
        for (int j = i + 1; j < T; j++) row[j] = 0.0f; /* the future gets no weight */
    }
#else
    /* TODO 4.3: for each query row i (0 <= i < T), with row = p + i * T:
     *   1. scores: row[j] = (q_i . k_j) / sqrt(dh) for j = 0..i only, where
     *      q_i = q + i * ld and k_j = k + j * ld (dh floats each); keep the largest;
     *   2. softmax over j = 0..i: row[j] = exp(row[j] - max), add them up, divide each
     *      by the sum (subtracting the row's max changes nothing mathematically, but
     *      keeps exp from overflowing to inf for large scores);
     *   3. the causal mask: row[j] = 0 for j > i (PyTorch adds -inf to those scores
     *      before the softmax: the same result).
     * Compute in float (expf, sqrtf). */
    TODO_STOP("4.3");
#endif
}

void lesson_causal_softmax_backward(float *dq, float *dk, float *ds, const float *p,
                                    const float *q, const float *k, int T, int dh, int ld) {
#ifdef SOLUTION
    const float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < T; i++) {
        const float *pi = p + (size_t)i * T;
        float *di = ds + (size_t)i * T;
        /* softmax: ds_j = p_j (dp_j - sum_j' p_j' dp_j'), in place (the sum first) */
        float dot = 0.0f;
        for (int j = 0; j <= i; j++) dot += pi[j] * di[j];
        for (int j = 0; j <= i; j++) di[j] = pi[j] * (di[j] - dot);
        for (int j = i + 1; j < T; j++) di[j] = 0.0f;
        /* scores = scale q_i . k_j: each product sends its gradient to both factors */
        float *dqi = dq + (size_t)i * ld;
        const float *qi = q + (size_t)i * ld;
        for (int j = 0; j <= i; j++) {
            const float g = di[j] * scale;
            const float *kj = k + (size_t)j * ld;
            float *dkj = dk + (size_t)j * ld;
            for (int d = 0; d < dh; d++) {
                dqi[d] += g * kj[d];
                dkj[d] += g * qi[d];
            }
        }
    }
#else
    /* TODO 4.4: on entry ds [T, T] holds dL/dp (p = the softmax of TODO 4.3). For each
     * row i:
     *   1. the softmax's backward, in place: dot = sum over j <= i of p[i][j] * ds[i][j],
     *      then ds[i][j] = p[i][j] * (ds[i][j] - dot) for j <= i (compute dot before
     *      overwriting the row), and ds[i][j] = 0 for j > i;
     *   2. the scores' backward: scores[i][j] = scale * q_i . k_j with scale =
     *      1 / sqrt(dh), so with g = ds[i][j] * scale, for j <= i and d < dh:
     *          dq[i * ld + d] += g * k[j * ld + d]
     *          dk[j * ld + d] += g * q[i * ld + d]
     * Add (+=) into dq and dk: they hold other gradients already. */
    TODO_STOP("4.4");
#endif
}

/* ---------------------------------------------------------------- given: the layer */

/* The sizes, and ld = 3D: the row stride of q, k and v inside qkv [B*T, 3D]. */
typedef struct {
    int B, T, H, D, dh, ld;
} Sizes;

static Sizes sizes_of(const AttentionSizes *a) {
    return (Sizes){a->B, a->T, a->H, a->D, a->dh, 3 * a->D};
}

/* The forward of one (sequence, head): p (TODO 4.3), the dropout, the context. */
static void head_forward(const Sizes *sz, int task, Tensor *ctx, Tensor *probs, Tensor *dropped,
                         const Tensor *qkv, bool drop, uint64_t key, uint64_t threshold,
                         float keep_scale) {
    const Sizes s = *sz;
    const int T = s.T;
    const int b = task / s.H, h = task % s.H;
    const float *q = qkv->data + (size_t)b * T * s.ld + (size_t)h * s.dh;
    const float *k = q + s.D, *v = q + 2 * s.D;
    const size_t first = (size_t)task * T * T; /* this head's p[0][0] in [B, H, T, T] */
    float *p = probs->data + first;
    lesson_causal_softmax(p, q, k, T, s.dh, s.ld); /* TODO 4.3 */
    float *w = p;                                   /* the weights that multiply V */
    if (dropped) {
        w = dropped->data + first;
        for (int e = 0; e < T * T; e++)
            w[e] = drop ? (dropout_keeps(key, first + (size_t)e, threshold) ? p[e] * keep_scale : 0.0f)
                        : p[e];
    }
    float *c = ctx->data + (size_t)b * T * s.D + (size_t)h * s.dh; /* row i: c + i * D */
    for (int i = 0; i < T; i++) {
        float *ci = c + (size_t)i * s.D;
        memset(ci, 0, sizeof(float) * (size_t)s.dh);
        for (int j = 0; j <= i; j++) {
            const float wij = w[(size_t)i * T + j];
            const float *vj = v + (size_t)j * s.ld;
            for (int d = 0; d < s.dh; d++) ci[d] += wij * vj[d];
        }
    }
}

void lesson_attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                              float dropout_p, bool training, Rng *rng) {
    const AttentionSizes a = attention_check_forward(ctx, probs, dropped, qkv, dropout_p, training, rng);
    CHECK(qkv->device == DEVICE_CPU, "your attention runs on the CPU only");
    const Sizes s = sizes_of(&a);
    /* dropout on the attention weights, with the library's masks (layers/dropout.h):
     * one key per call, entry e of probs [B, H, T, T] kept when dropout_keeps(key, e) */
    const bool drop = dropout_active(dropout_p, training);
    const uint64_t key = drop ? dropout_draw_key(rng) : 0, threshold = dropout_threshold(dropout_p);
    const float keep_scale = dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;
    /* head 0 first, alone: an unfinished TODO then stops the program from one thread,
     * with its message (exit() from several threads at once can crash instead) */
    head_forward(&s, 0, ctx, probs, dropped, qkv, drop, key, threshold, keep_scale);
#pragma omp parallel for schedule(static)
    for (int task = 1; task < s.B * s.H; task++)
        head_forward(&s, task, ctx, probs, dropped, qkv, drop, key, threshold, keep_scale);
}

/* The backward of one (sequence, head): dv and dL/dp (given), then TODO 4.4. */
static void head_backward(const Sizes *sz, int task, Tensor *dqkv, Tensor *dscores,
                          const Tensor *dctx, const Tensor *qkv, const Tensor *probs,
                          const Tensor *dropped) {
    const Sizes s = *sz;
    const int T = s.T;
    const int b = task / s.H, h = task % s.H;
    const size_t off = (size_t)b * T * s.ld + (size_t)h * s.dh, first = (size_t)task * T * T;
    const float *q = qkv->data + off, *k = q + s.D, *v = q + 2 * s.D;
    float *dq = dqkv->data + off, *dk = dq + s.D, *dv = dq + 2 * s.D;
    const float *p = probs->data + first;
    const float *w = dropped ? dropped->data + first : p;
    const float *dc = dctx->data + (size_t)b * T * s.D + (size_t)h * s.dh;
    float *ds = dscores->data + first;
    /* ctx_i = sum_j w_ij v_j: dv_j += w_ij dctx_i, and dL/dw_ij = dctx_i . v_j;
     * w = p * mask, so dL/dp_ij = dL/dw_ij * mask_ij (mask_ij = w_ij / p_ij) */
    for (int i = 0; i < T; i++) {
        const float *dci = dc + (size_t)i * s.D;
        for (int j = 0; j < T; j++) {
            float g = 0.0f;
            if (j <= i) {
                const float *vj = v + (size_t)j * s.ld;
                float *dvj = dv + (size_t)j * s.ld;
                const float wij = w[(size_t)i * T + j];
                for (int d = 0; d < s.dh; d++) {
                    g += dci[d] * vj[d];
                    dvj[d] += wij * dci[d];
                }
                const float pij = p[(size_t)i * T + j];
                if (w != p) g = pij != 0.0f ? g * (wij / pij) : 0.0f;
            }
            ds[(size_t)i * T + j] = g;
        }
    }
    lesson_causal_softmax_backward(dq, dk, ds, p, q, k, T, s.dh, s.ld); /* TODO 4.4 */
}

void lesson_attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx,
                               const Tensor *qkv, const Tensor *probs, const Tensor *dropped) {
    const AttentionSizes a = attention_check_backward(dqkv, dscores, dctx, qkv, probs, dropped);
    CHECK(qkv->device == DEVICE_CPU, "your attention runs on the CPU only");
    const Sizes s = sizes_of(&a);
    head_backward(&s, 0, dqkv, dscores, dctx, qkv, probs, dropped); /* alone first, as above */
#pragma omp parallel for schedule(static)
    for (int task = 1; task < s.B * s.H; task++)
        head_backward(&s, task, dqkv, dscores, dctx, qkv, probs, dropped);
}

void lesson_use_my_layers(Transformer *m) {
    CHECK(m->device == DEVICE_CPU, "your layers are CPU code: put them into a model on the CPU");
    m->layers.attention_forward = lesson_attention_forward;
    m->layers.attention_backward = lesson_attention_backward;
    m->layers.layernorm_forward = lesson_layernorm_forward;
    m->layers.layernorm_backward = lesson_layernorm_backward;
}
