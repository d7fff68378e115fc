/* An encoder layer cut over a tensor group (Megatron's ParallelTransformerLayer, in the
 * tutorial's post-norm form): models/encoder_block.c with
 *
 *   attention:    f, in-projection by heads (q|k|v rows of this rank's H/t heads),
 *                 attention on those heads, out-projection by columns, g
 *   feed-forward: f, linear1 by rows (F/t of the hidden units), ReLU, linear2 by
 *                 columns, g
 *
 * and the rest (dropout after each part, the residual adds, the layer norms) replicated.
 * The dropout on the attention weights and on the hidden units draws the unsplit
 * layer's masks through windows (layers/dropout.h). In the backward, the input
 * gradients of the column-parallel linears are partial sums: they are all-reduced (f)
 * on their own before they join the residual path's, which every rank has whole.
 *
 * In 16 bits (blocks_set_precision) it runs as the unsplit layer does: activations and
 * their gradients in the list's dtype, the weights' working copy (block_param), the fused
 * attention on this rank's heads (its dropout window), layer norm's statistics and the
 * masks float32; the sums over the group stay float32 until their one rounding
 * (tensor_parallel_sums.c). The fused attention runs in float32 too when the model's
 * configuration asks for it, as the unsplit layer's does. */
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/flash_attention.h"
#include "layers/layernorm.h"
#include "parallel/tensor_parallel_slices.h"

typedef struct {
    TensorParallel *tp;
    int D, H, F;            /* the whole layer's sizes */
    int Dl, Hl, Fl;         /* this rank's: D/t columns of q, k and v, H/t heads, F/t units */
    float dropout;
    bool fused_attention;   /* in float32 too (a 16-bit list always fuses it) */
    Param *in_w, *in_b, *out_w, *out_b, *l1_w, *l1_b, *l2_w, *l2_b, *n1_w, *n1_b, *n2_w, *n2_b;
} Encoder;

/* saved: [N, D] unless said; the unfused attention's weights last (the fused one keeps
 * LSE [B, H/t, T] in their place). Activations in the list's dtype, MEAN, RSTD, LSE and
 * the masks float32. */
enum { OUT, QKV, CTX, A_MASK, R1, Y1, MEAN1, RSTD1, H_ACT, H_MASK, F_MASK, R2, MEAN2, RSTD2,
       PROBS, DROPPED, SAVED,
       LSE = PROBS, SAVED_FUSED };
/* scratch: [N, D] unless said, in the list's dtype but D_PART (float32 always: the
 * partial input gradients and their sum); the unfused attention's score gradients
 * (float32) last; in 16 bits the float32 operands of the sums (TpF32) in their place:
 * X32 [N, max(D, F/t)], G32 [N, max(3D/t, F/t)], W32 [D max(3D/t, F/t)], B32 [D]. */
enum { W_A, W_F, D_R, D_Y, D_F, D_A, D_PART, DX, D_CTX, D_H, D_H2, D_QKV, D_SCORES, SCRATCH,
       X32 = D_SCORES, G32, W32, B32, SCRATCH16 };

static bool fused(const Block *b) {
    return b->dtype != DTYPE_F32 || ((const Encoder *)b->state)->fused_attention;
}

static int max2(int a, int b) { return a > b ? a : b; }

static int saved(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    const DType dt = b->dtype;
    for (int i = 0; i < SAVED; i++) s[i] = block_shape_typed(dt, 2, N, e->D);
    s[QKV] = block_shape_typed(dt, 2, N, 3 * e->Dl);
    s[CTX] = block_shape_typed(dt, 2, N, e->Dl);
    s[A_MASK] = s[F_MASK] = block_shape(2, N, e->D);
    s[MEAN1] = s[RSTD1] = s[MEAN2] = s[RSTD2] = block_shape(1, N);
    s[H_ACT] = block_shape_typed(dt, 2, N, e->Fl);
    s[H_MASK] = block_shape(2, N, e->Fl);
    if (fused(b)) {
        s[LSE] = block_shape(3, B, e->Hl, T);
        return SAVED_FUSED;
    }
    s[PROBS] = s[DROPPED] = block_shape(4, B, e->Hl, T, T);
    return SAVED;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape_typed(b->dtype, 2, B * T, ((const Encoder *)b->state)->D);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    const DType dt = b->dtype;
    for (int i = 0; i < D_SCORES; i++) s[i] = block_shape_typed(dt, 2, N, e->D);
    s[D_PART] = block_shape(2, N, e->D);
    s[D_CTX] = block_shape_typed(dt, 2, N, e->Dl);
    s[D_H] = s[D_H2] = block_shape_typed(dt, 2, N, e->Fl);
    s[D_QKV] = block_shape_typed(dt, 2, N, 3 * e->Dl);
    if (dt != DTYPE_F32) {
        const int wide = max2(3 * e->Dl, e->Fl); /* the widest sliced dimension */
        s[X32] = block_shape(1, N * max2(e->D, e->Fl));
        s[G32] = block_shape(1, N * wide);
        s[W32] = block_shape(1, e->D * wide);
        s[B32] = block_shape(1, e->D);
        return SCRATCH16;
    }
    if (fused(b)) return D_SCORES;
    s[D_SCORES] = block_shape(4, B, e->Hl, T, T);
    return SCRATCH;
}

/* The float32 scratch of the sums (TpF32): only D_PART in a float32 model. */
static TpF32 sums_scratch(const Block *b, Tensor *w) {
    TpF32 s = {.part = w[D_PART]};
    if (b->dtype == DTYPE_F32) return s;
    s.x = w[X32], s.g = w[G32], s.w = w[W32], s.b = w[B32];
    return s;
}

/* Where this rank's heads, and its hidden units, sit in the unsplit layer's masks. */
static DropoutWindow heads_window(const Encoder *e, int T) {
    const int64_t head = (int64_t)T * T;
    return (DropoutWindow){e->Hl * head, e->H * head, e->tp->rank * e->Hl * head};
}

static DropoutWindow units_window(const Encoder *e) {
    return (DropoutWindow){e->Fl, e->F, e->tp->ops.shard(e->F, e->tp->t, e->tp->rank).start};
}

/* The weights this pass reads (float32 values, or the 16-bit working copy) */
#define W(field) block_param(b, p->field)

static void forward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    TensorParallel *tp = p->tp;
    const LayerOps *o = c->ops;
    Tensor *s = c->saved, *w = c->work, *x = (Tensor *)c->in;
    const TpF32 sums = sums_scratch(b, w);
    const float drop = p->dropout;
    const bool training = c->training, active = dropout_active(drop, training);
    tp->ops.f(tp, x, BLOCK_FORWARD);
    o->linear_forward(&s[QKV], x, W(in_w), W(in_b));
    if (fused(b)) /* its dropout key kept on the host for the backward */
        o->flash_attention_forward(&s[CTX], &s[LSE], c->host, &s[QKV], drop, training, c->rng,
                                   heads_window(p, c->T));
    else
        o->attention_forward_window(&s[CTX], &s[PROBS], active ? &s[DROPPED] : NULL, &s[QKV],
                                    drop, training, c->rng, heads_window(p, c->T));
    tp_row_linear(tp, o, &w[W_A], &s[CTX], W(out_w), W(out_b), &sums);
    o->dropout_forward(&w[W_A], &s[A_MASK], &w[W_A], drop, training, c->rng);
    layer_ops_add_norm(o, &s[R1], &s[Y1], &s[MEAN1], &s[RSTD1], x, &w[W_A], W(n1_w), W(n1_b));
    tp->ops.f(tp, &s[Y1], BLOCK_FORWARD);
    o->linear_forward(&s[H_ACT], &s[Y1], W(l1_w), W(l1_b));
    o->relu_forward(&s[H_ACT], &s[H_ACT]);
    o->dropout_forward_window(&s[H_ACT], &s[H_MASK], &s[H_ACT], drop, training, c->rng,
                              units_window(p));
    tp_row_linear(tp, o, &w[W_F], &s[H_ACT], W(l2_w), W(l2_b), &sums);
    o->dropout_forward(&w[W_F], &s[F_MASK], &w[W_F], drop, training, c->rng);
    layer_ops_add_norm(o, &s[R2], &s[OUT], &s[MEAN2], &s[RSTD2], &s[Y1], &w[W_F], W(n2_w), W(n2_b));
}

static void zero(Tensor *t) { tensor_fill(t, 0.0f); }

static void backward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    TensorParallel *tp = p->tp;
    const LayerOps *o = c->ops;
    const Tensor *s = c->saved, *x = c->in;
    Tensor *w = c->work;
    const TpF32 sums = sums_scratch(b, w);
    const bool active = dropout_active(p->dropout, c->training);
    Tensor *din = c->din;
    if (!din) zero(din = &w[DX]);
    const int clear[] = {D_R, D_Y, D_F, D_H, D_H2, D_A, D_CTX, D_QKV};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) zero(&w[clear[i]]);
    /* out = norm2(r2), r2 = y1 + f */
    o->layernorm_backward(&w[D_R], &p->n2_w->grad, &p->n2_b->grad, c->dout, &s[R2], &s[MEAN2],
                          &s[RSTD2], W(n2_w));
    o->add_backward(&w[D_Y], &w[D_F], &w[D_R]);
    /* f = dropout(g(linear2(h))), h = dropout(relu(linear1(f(y1)))) */
    zero(&w[D_R]);
    o->dropout_backward(&w[D_R], &w[D_F], active ? &s[F_MASK] : NULL);
    tp->ops.g(tp, &w[D_R], BLOCK_BACKWARD);
    o->linear_backward(&w[D_H], &p->l2_w->grad, &p->l2_b->grad, &w[D_R], &s[H_ACT], W(l2_w));
    o->dropout_backward(&w[D_H2], &w[D_H], active ? &s[H_MASK] : NULL);
    zero(&w[D_H]);
    o->relu_backward(&w[D_H], &w[D_H2], &s[H_ACT]);
    tp_column_backward(tp, o, &w[D_Y], &p->l1_w->grad, &p->l1_b->grad, &w[D_H], &s[Y1], W(l1_w),
                       &sums);
    /* y1 = norm1(r1), r1 = x + a */
    zero(&w[D_R]);
    o->layernorm_backward(&w[D_R], &p->n1_w->grad, &p->n1_b->grad, &w[D_Y], &s[R1], &s[MEAN1],
                          &s[RSTD1], W(n1_w));
    o->add_backward(din, NULL, &w[D_R]);
    /* a = dropout(g(out_proj(attention(in_proj(f(x)))))) */
    o->dropout_backward(&w[D_A], &w[D_R], active ? &s[A_MASK] : NULL);
    tp->ops.g(tp, &w[D_A], BLOCK_BACKWARD);
    o->linear_backward(&w[D_CTX], &p->out_w->grad, &p->out_b->grad, &w[D_A], &s[CTX], W(out_w));
    if (fused(b))
        o->flash_attention_backward(&w[D_QKV], &w[D_CTX], &s[QKV], &s[CTX], &s[LSE], c->host);
    else
        o->attention_backward(&w[D_QKV], &w[D_SCORES], &w[D_CTX], &s[QKV], &s[PROBS],
                              active ? &s[DROPPED] : NULL);
    tp_column_backward(tp, o, din, &p->in_w->grad, &p->in_b->grad, &w[D_QKV], x, W(in_w), &sums);
}

#undef W

static double flops(const Block *b, int T) {
    const Encoder *e = b->state;
    const double D = e->D, Dl = e->Dl, Fl = e->Fl; /* this rank's GEMMs and heads */
    return 2 * (3 * Dl * D) + 2 * Dl * D + 2 * (2 * D * Fl) + 4.0 * T * Dl;
}

static void init(Block *b, Rng *rng) {
    Encoder *p = b->state;
    TensorParallel *tp = p->tp;
    const int D = p->D, F = p->F;
    const float fD = (float)D, fF = (float)F; /* the unsplit layer's draws, in its order */
    tp_draw_slice(tp, p->in_w, TP_QKV_ROWS, 3 * D, D, sqrtf(6.0f / (fD + 3 * fD)), rng);
    tp_draw_slice(tp, p->out_w, TP_COLUMNS, D, D, 1.0f / sqrtf(fD), rng);
    tp_draw_slice(tp, p->l1_w, TP_ROWS, F, D, 1.0f / sqrtf(fD), rng);
    tp_draw_slice(tp, p->l1_b, TP_ROWS, F, 1, 1.0f / sqrtf(fD), rng);
    tp_draw_slice(tp, p->l2_w, TP_COLUMNS, D, F, 1.0f / sqrtf(fF), rng);
    tp_draw_slice(tp, p->l2_b, TP_REPLICATED, D, 1, 1.0f / sqrtf(fF), rng);
    tensor_fill(&p->n1_w->value, 1.0f);
    tensor_fill(&p->n2_w->value, 1.0f);
}

static void to_device(Block *b, Device device) { tp_zeros_to(((Encoder *)b->state)->tp, device); }

static const BlockType TP_ENCODER = {.kind = "encoder layer (by heads)", .saved = saved,
                                      .input = input, .scratch = scratch, .forward = forward,
                                      .backward = backward, .flops = flops, .init = init,
                                      .to_device = to_device, .host_bytes = sizeof(FlashDropout),
                                      .sixteen_bit = true};

Block *tp_make_encoder(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                       const char *name) {
    TensorParallel *tp = ctx;
    const int t = tp->t, D = c->d_model, F = c->d_ff;
    Encoder *p = xcalloc(1, sizeof *p);
    *p = (Encoder){.tp = tp, .D = D, .H = c->heads, .F = F, .Dl = D / t, .Hl = c->heads / t,
                   .Fl = F / t, .dropout = c->dropout, .fused_attention = c->fused_attention};
    const int first = l->params->count, Dl = p->Dl, Fl = p->Fl;
    char n[PARAM_NAME_MAX + 48];
#define ADD(field, suffix, split, ...)                          \
    (snprintf(n, sizeof n, "%s." suffix, prefix),               \
     p->field = tp_declare(tp, l->params, n, split, __VA_ARGS__))
    ADD(in_w, "self_attn.in_proj_weight", TP_QKV_ROWS, 2, (int[]){3 * Dl, D});
    ADD(in_b, "self_attn.in_proj_bias", TP_QKV_ROWS, 1, (int[]){3 * Dl});
    ADD(out_w, "self_attn.out_proj.weight", TP_COLUMNS, 2, (int[]){D, Dl});
    ADD(out_b, "self_attn.out_proj.bias", TP_REPLICATED, 1, (int[]){D});
    ADD(l1_w, "linear1.weight", TP_ROWS, 2, (int[]){Fl, D});
    ADD(l1_b, "linear1.bias", TP_ROWS, 1, (int[]){Fl});
    ADD(l2_w, "linear2.weight", TP_COLUMNS, 2, (int[]){D, Fl});
    ADD(l2_b, "linear2.bias", TP_REPLICATED, 1, (int[]){D});
    ADD(n1_w, "norm1.weight", TP_REPLICATED, 1, (int[]){D});
    ADD(n1_b, "norm1.bias", TP_REPLICATED, 1, (int[]){D});
    ADD(n2_w, "norm2.weight", TP_REPLICATED, 1, (int[]){D});
    ADD(n2_b, "norm2.bias", TP_REPLICATED, 1, (int[]){D});
#undef ADD
    return blocks_add(l, &TP_ENCODER, p, name, first);
}
