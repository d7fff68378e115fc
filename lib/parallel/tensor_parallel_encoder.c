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
 * on their own before they join the residual path's, which every rank has whole. */
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/layernorm.h"
#include "parallel/tensor_parallel_slices.h"

typedef struct {
    TensorParallel *tp;
    int D, H, F;            /* the whole layer's sizes */
    int Dl, Hl, Fl;         /* this rank's: D/t columns of q, k and v, H/t heads, F/t units */
    float dropout;
    Param *in_w, *in_b, *out_w, *out_b, *l1_w, *l1_b, *l2_w, *l2_b, *n1_w, *n1_b, *n2_w, *n2_b;
} Encoder;

/* saved: [N, D] unless said */
enum { OUT, QKV, PROBS, DROPPED, CTX, A_MASK, R1, Y1, MEAN1, RSTD1, H_ACT, H_MASK, F_MASK, R2,
       MEAN2, RSTD2, SAVED };
/* scratch: [N, D] unless said */
enum { W_A, W_F, D_R, D_Y, D_F, D_A, D_PART, DX, D_CTX, D_H, D_H2, D_QKV, D_SCORES, SCRATCH };

static int saved(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    for (int i = 0; i < SAVED; i++) s[i] = block_shape(2, N, e->D);
    s[QKV] = block_shape(2, N, 3 * e->Dl);
    s[CTX] = block_shape(2, N, e->Dl);
    s[PROBS] = s[DROPPED] = block_shape(4, B, e->Hl, T, T);
    s[MEAN1] = s[RSTD1] = s[MEAN2] = s[RSTD2] = block_shape(1, N);
    s[H_ACT] = s[H_MASK] = block_shape(2, N, e->Fl);
    return SAVED;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape(2, B * T, ((const Encoder *)b->state)->D);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Encoder *e = b->state;
    const int N = B * T;
    for (int i = 0; i < SCRATCH; i++) s[i] = block_shape(2, N, e->D);
    s[D_CTX] = block_shape(2, N, e->Dl);
    s[D_H] = s[D_H2] = block_shape(2, N, e->Fl);
    s[D_QKV] = block_shape(2, N, 3 * e->Dl);
    s[D_SCORES] = block_shape(4, B, e->Hl, T, T);
    return SCRATCH;
}

/* Where this rank's heads, and its hidden units, sit in the unsplit layer's masks. */
static DropoutWindow heads_window(const Encoder *e, int T) {
    const int64_t head = (int64_t)T * T;
    return (DropoutWindow){e->Hl * head, e->H * head, e->tp->rank * e->Hl * head};
}

static DropoutWindow units_window(const Encoder *e) {
    return (DropoutWindow){e->Fl, e->F, e->tp->ops.shard(e->F, e->tp->t, e->tp->rank).start};
}

static void forward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    TensorParallel *tp = p->tp;
    const LayerOps *o = c->ops;
    Tensor *s = c->saved, *w = c->work, *x = (Tensor *)c->in;
    const float drop = p->dropout;
    const bool training = c->training, active = dropout_active(drop, training);
    tp->ops.f(tp, x, BLOCK_FORWARD);
    o->linear_forward(&s[QKV], x, &p->in_w->value, &p->in_b->value);
    o->attention_forward_window(&s[CTX], &s[PROBS], active ? &s[DROPPED] : NULL, &s[QKV], drop,
                                training, c->rng, heads_window(p, c->T));
    tp->ops.row_linear_forward(tp, o, &w[W_A], &s[CTX], &p->out_w->value, &p->out_b->value);
    o->dropout_forward(&w[W_A], &s[A_MASK], &w[W_A], drop, training, c->rng);
    o->add_forward(&s[R1], x, &w[W_A]);
    o->layernorm_forward(&s[Y1], &s[MEAN1], &s[RSTD1], &s[R1], &p->n1_w->value, &p->n1_b->value,
                         LAYERNORM_EPS);
    tp->ops.f(tp, &s[Y1], BLOCK_FORWARD);
    o->linear_forward(&s[H_ACT], &s[Y1], &p->l1_w->value, &p->l1_b->value);
    o->relu_forward(&s[H_ACT], &s[H_ACT]);
    o->dropout_forward_window(&s[H_ACT], &s[H_MASK], &s[H_ACT], drop, training, c->rng,
                              units_window(p));
    tp->ops.row_linear_forward(tp, o, &w[W_F], &s[H_ACT], &p->l2_w->value, &p->l2_b->value);
    o->dropout_forward(&w[W_F], &s[F_MASK], &w[W_F], drop, training, c->rng);
    o->add_forward(&s[R2], &s[Y1], &w[W_F]);
    o->layernorm_forward(&s[OUT], &s[MEAN2], &s[RSTD2], &s[R2], &p->n2_w->value, &p->n2_b->value,
                         LAYERNORM_EPS);
}

static void zero(Tensor *t) { tensor_fill(t, 0.0f); }

/* into += the group's sum of a column-parallel linear's partial input gradient */
static void join_partial(const Encoder *p, const LayerOps *o, Tensor *into, Tensor *part) {
    p->tp->ops.f(p->tp, part, BLOCK_BACKWARD);
    o->add_backward(into, NULL, part);
}

static void backward(Block *b, const BlockCall *c) {
    const Encoder *p = b->state;
    TensorParallel *tp = p->tp;
    const LayerOps *o = c->ops;
    const Tensor *s = c->saved, *x = c->in;
    Tensor *w = c->work;
    const bool active = dropout_active(p->dropout, c->training);
    Tensor *din = c->din;
    if (!din) zero(din = &w[DX]);
    const int clear[] = {D_R, D_Y, D_F, D_H, D_H2, D_A, D_CTX, D_QKV, D_PART};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) zero(&w[clear[i]]);
    /* out = norm2(r2), r2 = y1 + f */
    o->layernorm_backward(&w[D_R], &p->n2_w->grad, &p->n2_b->grad, c->dout, &s[R2], &s[MEAN2],
                          &s[RSTD2], &p->n2_w->value);
    o->add_backward(&w[D_Y], &w[D_F], &w[D_R]);
    /* f = dropout(g(linear2(h))), h = dropout(relu(linear1(f(y1)))) */
    zero(&w[D_R]);
    o->dropout_backward(&w[D_R], &w[D_F], active ? &s[F_MASK] : NULL);
    tp->ops.g(tp, &w[D_R], BLOCK_BACKWARD);
    o->linear_backward(&w[D_H], &p->l2_w->grad, &p->l2_b->grad, &w[D_R], &s[H_ACT], &p->l2_w->value);
    o->dropout_backward(&w[D_H2], &w[D_H], active ? &s[H_MASK] : NULL);
    zero(&w[D_H]);
    o->relu_backward(&w[D_H], &w[D_H2], &s[H_ACT]);
    o->linear_backward(&w[D_PART], &p->l1_w->grad, &p->l1_b->grad, &w[D_H], &s[Y1], &p->l1_w->value);
    join_partial(p, o, &w[D_Y], &w[D_PART]);
    /* y1 = norm1(r1), r1 = x + a */
    zero(&w[D_R]);
    o->layernorm_backward(&w[D_R], &p->n1_w->grad, &p->n1_b->grad, &w[D_Y], &s[R1], &s[MEAN1],
                          &s[RSTD1], &p->n1_w->value);
    o->add_backward(din, NULL, &w[D_R]);
    /* a = dropout(g(out_proj(attention(in_proj(f(x)))))) */
    o->dropout_backward(&w[D_A], &w[D_R], active ? &s[A_MASK] : NULL);
    tp->ops.g(tp, &w[D_A], BLOCK_BACKWARD);
    o->linear_backward(&w[D_CTX], &p->out_w->grad, &p->out_b->grad, &w[D_A], &s[CTX],
                       &p->out_w->value);
    o->attention_backward(&w[D_QKV], &w[D_SCORES], &w[D_CTX], &s[QKV], &s[PROBS],
                          active ? &s[DROPPED] : NULL);
    zero(&w[D_PART]);
    o->linear_backward(&w[D_PART], &p->in_w->grad, &p->in_b->grad, &w[D_QKV], x, &p->in_w->value);
    join_partial(p, o, din, &w[D_PART]);
}

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
                                      .to_device = to_device};

Block *tp_make_encoder(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                       const char *name) {
    TensorParallel *tp = ctx;
    const int t = tp->t, D = c->d_model, F = c->d_ff;
    Encoder *p = xcalloc(1, sizeof *p);
    *p = (Encoder){.tp = tp, .D = D, .H = c->heads, .F = F, .Dl = D / t, .Hl = c->heads / t,
                   .Fl = F / t, .dropout = c->dropout};
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
