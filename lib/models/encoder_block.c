#include "encoder_block.h"

#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/flash_attention.h"
#include "layers/layernorm.h"

typedef struct {
    int D, H, F;
    float dropout;
    bool fused_attention; /* in float32 too (a 16-bit list always fuses it) */
    Param *in_w, *in_b, *out_w, *out_b, *l1_w, *l1_b, *l2_w, *l2_b, *n1_w, *n1_b, *n2_w, *n2_b;
} Encoder;

/* Its scratch: a and f the forward's outputs of the attention and the feed-forward
 * before their residual adds (not needed by the backward); the backward's gradients;
 * dx its input's when nobody wants that; the unfused attention's score gradients last
 * (float32; the fused one needs none). All but those in the list's dtype. */
enum { W_A, W_F, D_R, D_Y, D_A, D_CTX, D_H, D_H2, D_QKV, DX, D_SCORES, SCRATCH };

bool encoder_block_fused(const Block *b) {
    return b->dtype != DTYPE_F32 || ((const Encoder *)b->state)->fused_attention;
}

static int saved(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    const DType dt = b->dtype; /* activations; statistics and masks float32 */
    const Tensor row = block_shape_typed(dt, 2, N, e->D), one = block_shape(1, N);
    for (int i = 0; i < ENCODER_SAVED; i++) s[i] = row; /* [N, D] unless said */
    s[ENCODER_QKV] = block_shape_typed(dt, 2, N, 3 * e->D);
    s[ENCODER_A_MASK] = s[ENCODER_F_MASK] = block_shape(2, N, e->D);
    s[ENCODER_MEAN1] = s[ENCODER_RSTD1] = s[ENCODER_MEAN2] = s[ENCODER_RSTD2] = one;
    s[ENCODER_H] = block_shape_typed(dt, 2, N, e->F);
    s[ENCODER_H_MASK] = block_shape(2, N, e->F);
    if (encoder_block_fused(b)) {
        s[ENCODER_LSE] = block_shape(3, B, e->H, T);
        return ENCODER_SAVED_FUSED;
    }
    s[ENCODER_PROBS] = s[ENCODER_DROPPED] = block_shape(4, B, e->H, T, T);
    return ENCODER_SAVED;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape_typed(b->dtype, 2, B * T, ((const Encoder *)b->state)->D);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    const DType dt = b->dtype;
    for (int i = 0; i < SCRATCH; i++) s[i] = block_shape_typed(dt, 2, N, e->D);
    s[D_H] = s[D_H2] = block_shape_typed(dt, 2, N, e->F);
    s[D_QKV] = block_shape_typed(dt, 2, N, 3 * e->D);
    if (encoder_block_fused(b)) return D_SCORES;
    s[D_SCORES] = block_shape(4, B, e->H, T, T);
    return SCRATCH;
}

/* The weights this pass reads (float32 values, or the 16-bit working copy) */
#define W(field) block_param(b, p->field)

static void forward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    const LayerOps *o = c->ops;
    Tensor *s = c->saved, *w = c->work;
    const Tensor *x = c->in;
    const float drop = p->dropout;
    const bool training = c->training, active = dropout_active(drop, training);
    o->linear_forward(&s[ENCODER_QKV], x, W(in_w), W(in_b));
    if (encoder_block_fused(b)) /* the key it draws kept on the host for the backward */
        o->flash_attention_forward(&s[ENCODER_CTX], &s[ENCODER_LSE], c->host, &s[ENCODER_QKV],
                                   drop, training, c->rng, DROPOUT_WHOLE);
    else
        o->attention_forward(&s[ENCODER_CTX], &s[ENCODER_PROBS], active ? &s[ENCODER_DROPPED] : NULL,
                             &s[ENCODER_QKV], drop, training, c->rng);
    o->linear_forward(&w[W_A], &s[ENCODER_CTX], W(out_w), W(out_b));
    o->dropout_forward(&w[W_A], &s[ENCODER_A_MASK], &w[W_A], drop, training, c->rng);
    layer_ops_add_norm(o, &s[ENCODER_R1], &s[ENCODER_Y1], &s[ENCODER_MEAN1], &s[ENCODER_RSTD1], x,
                       &w[W_A], W(n1_w), W(n1_b));
    o->linear_forward(&s[ENCODER_H], &s[ENCODER_Y1], W(l1_w), W(l1_b));
    /* in place: where dropout keeps an entry it is the ReLU's output scaled, so h > 0
     * still marks the ReLU's positive side for the backward */
    if (layer_ops_fuse_relu_dropout(o))
        o->relu_dropout_forward(&s[ENCODER_H], &s[ENCODER_H_MASK], &s[ENCODER_H], drop, training,
                                c->rng);
    else {
        o->relu_forward(&s[ENCODER_H], &s[ENCODER_H]);
        o->dropout_forward(&s[ENCODER_H], &s[ENCODER_H_MASK], &s[ENCODER_H], drop, training,
                           c->rng);
    }
    o->linear_forward(&w[W_F], &s[ENCODER_H], W(l2_w), W(l2_b));
    o->dropout_forward(&w[W_F], &s[ENCODER_F_MASK], &w[W_F], drop, training, c->rng);
    layer_ops_add_norm(o, &s[ENCODER_R2], &s[ENCODER_OUT], &s[ENCODER_MEAN2], &s[ENCODER_RSTD2],
                       &s[ENCODER_Y1], &w[W_F], W(n2_w), W(n2_b));
}

/* A gradient set to zero before a layer adds (+=) into it (tensor_fill: on all threads
 * when large; the seed's model clears about 40 MB of them a layer). */
static void zero(Tensor *t) { tensor_fill(t, 0.0f); }

static void backward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    const LayerOps *o = c->ops;
    const Tensor *s = c->saved, *x = c->in;
    Tensor *w = c->work;
    const bool active = dropout_active(p->dropout, c->training);
    Tensor *din = c->din;
    if (!din) zero(din = &w[DX]); /* nobody wants it, but the residual path runs through it */
    const int clear[] = {D_R, D_Y, D_H, D_H2, D_A, D_CTX, D_QKV};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) zero(&w[clear[i]]);
    /* out = norm2(r2), r2 = y1 + f: dL/dr2 goes to both terms. Written into the cleared
     * D_Y, it is dL/dy1's residual part already, and what f's backward reads (the add's
     * backward would copy it twice, 0 + v each time: the same bits) */
    o->layernorm_backward(&w[D_Y], &p->n2_w->grad, &p->n2_b->grad, c->dout, &s[ENCODER_R2],
                          &s[ENCODER_MEAN2], &s[ENCODER_RSTD2], W(n2_w));
    /* f = dropout(linear2(h)), h = dropout(relu(linear1(y1))) */
    o->dropout_backward(&w[D_R], &w[D_Y], active ? &s[ENCODER_F_MASK] : NULL);
    o->linear_backward(&w[D_H], &p->l2_w->grad, &p->l2_b->grad, &w[D_R], &s[ENCODER_H], W(l2_w));
    const Tensor *dh = &w[D_H2]; /* dL/d(linear1's output) */
    if (layer_ops_fuse_relu_dropout_backward(o)) { /* the GPU: one pass, no middle buffer */
        o->relu_dropout_backward(&w[D_H2], &w[D_H], active ? &s[ENCODER_H_MASK] : NULL,
                                 &s[ENCODER_H]);
    } else {
        o->dropout_backward(&w[D_H2], &w[D_H], active ? &s[ENCODER_H_MASK] : NULL);
        zero(&w[D_H]);
        o->relu_backward(&w[D_H], &w[D_H2], &s[ENCODER_H]);
        dh = &w[D_H];
    }
    o->linear_backward(&w[D_Y], &p->l1_w->grad, &p->l1_b->grad, dh, &s[ENCODER_Y1], W(l1_w));
    /* y1 = norm1(r1), r1 = x + a */
    zero(&w[D_R]);
    o->layernorm_backward(&w[D_R], &p->n1_w->grad, &p->n1_b->grad, &w[D_Y], &s[ENCODER_R1],
                          &s[ENCODER_MEAN1], &s[ENCODER_RSTD1], W(n1_w));
    o->add_backward(din, NULL, &w[D_R]);
    /* a = dropout(out_proj(attention(in_proj(x)))) */
    o->dropout_backward(&w[D_A], &w[D_R], active ? &s[ENCODER_A_MASK] : NULL);
    o->linear_backward(&w[D_CTX], &p->out_w->grad, &p->out_b->grad, &w[D_A], &s[ENCODER_CTX],
                       W(out_w));
    if (encoder_block_fused(b))
        o->flash_attention_backward(&w[D_QKV], &w[D_CTX], &s[ENCODER_QKV], &s[ENCODER_CTX],
                                    &s[ENCODER_LSE], c->host);
    else
        o->attention_backward(&w[D_QKV], &w[D_SCORES], &w[D_CTX], &s[ENCODER_QKV], &s[ENCODER_PROBS],
                              active ? &s[ENCODER_DROPPED] : NULL);
    o->linear_backward(din, &p->in_w->grad, &p->in_b->grad, &w[D_QKV], x, W(in_w));
}

static double flops(const Block *b, int T) {
    const Encoder *e = b->state;
    const double D = e->D, F = e->F; /* in_proj, out_proj, the feed-forward, attention */
    return 2 * (3 * D * D) + 2 * D * D + 2 * (2 * D * F) + 4.0 * T * D;
}

static void init(Block *b, Rng *rng) {
    Encoder *p = b->state;
    const float D = (float)p->D, F = (float)p->F;
    param_uniform(p->in_w, sqrtf(6.0f / (D + 3 * D)), rng); /* Xavier; bias 0 */
    param_uniform(p->out_w, 1.0f / sqrtf(D), rng);          /* Linear's; bias 0 */
    param_uniform(p->l1_w, 1.0f / sqrtf(D), rng);
    param_uniform(p->l1_b, 1.0f / sqrtf(D), rng);
    param_uniform(p->l2_w, 1.0f / sqrtf(F), rng);
    param_uniform(p->l2_b, 1.0f / sqrtf(F), rng);
    tensor_fill(&p->n1_w->value, 1.0f);
    tensor_fill(&p->n2_w->value, 1.0f);
}

#undef W

static const BlockType ENCODER = {.kind = "encoder layer", .saved = saved, .input = input,
                                   .scratch = scratch, .forward = forward, .backward = backward,
                                   .flops = flops, .init = init,
                                   .host_bytes = sizeof(FlashDropout), .sixteen_bit = true};

Block *encoder_block_add(BlockList *l, const char *prefix, const char *name, int d_model,
                         int heads, int d_ff, float dropout, bool fused_attention) {
    Encoder *p = xcalloc(1, sizeof *p);
    *p = (Encoder){.D = d_model, .H = heads, .F = d_ff, .dropout = dropout,
                   .fused_attention = fused_attention};
    const int first = l->params->count, D = d_model, F = d_ff;
    char n[PARAM_NAME_MAX + 48]; /* params_add checks the length */
#define ADD(field, suffix, ...) \
    (snprintf(n, sizeof n, "%s." suffix, prefix), p->field = params_add(l->params, n, __VA_ARGS__))
    ADD(in_w, "self_attn.in_proj_weight", 2, (int[]){3 * D, D});
    ADD(in_b, "self_attn.in_proj_bias", 1, (int[]){3 * D});
    ADD(out_w, "self_attn.out_proj.weight", 2, (int[]){D, D});
    ADD(out_b, "self_attn.out_proj.bias", 1, (int[]){D});
    ADD(l1_w, "linear1.weight", 2, (int[]){F, D});
    ADD(l1_b, "linear1.bias", 1, (int[]){F});
    ADD(l2_w, "linear2.weight", 2, (int[]){D, F});
    ADD(l2_b, "linear2.bias", 1, (int[]){D});
    ADD(n1_w, "norm1.weight", 1, (int[]){D});
    ADD(n1_b, "norm1.bias", 1, (int[]){D});
    ADD(n2_w, "norm2.weight", 1, (int[]){D});
    ADD(n2_b, "norm2.bias", 1, (int[]){D});
#undef ADD
    return blocks_add(l, &ENCODER, p, name, first);
}
