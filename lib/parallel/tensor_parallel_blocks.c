/* The transformer's blocks cut over a tensor group (tensor_parallel.h): the embedding
 * and the decoder by words, each encoder layer by heads and feed-forward columns. Each
 * mirrors its unsplit twin in lib/models (the same passes in the same order, the same
 * names, the same draws); what differs is marked f, g, or "a window". In 16 bits they
 * run as their twins do (block_param: the weights' working copy; activations and their
 * gradients in the list's dtype), and the sums over the group stay float32 until their
 * one rounding (tensor_parallel_sums.c). */
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/positional.h"
#include "parallel/tensor_parallel.h"
#include "parallel/tensor_parallel_slices.h"

/* ---------------------------------------------------------------- embedding */

typedef struct {
    TensorParallel *tp;
    int D, max_len;
    float dropout;
    Param *table; /* [Vp/t, D]: rows tp->words of the padded vocabulary */
    Tensor pe;    /* [max_len, D] */
} Embed;

/* saved: x [N, D] its output (the list's dtype), its dropout mask [N, D] (float32) */
static int embed_saved(const Block *b, int B, int T, Tensor *s) {
    const int D = ((const Embed *)b->state)->D;
    s[0] = block_shape_typed(b->dtype, 2, B * T, D);
    s[1] = block_shape(2, B * T, D);
    return 2;
}

static void embed_input(const Block *b, int B, int T, Tensor *shape) {
    (void)b, (void)B, (void)T;
    *shape = (Tensor){.ndim = 0}; /* the batch's ids */
}

/* scratch: the gradient before the dropout [N, D] (the list's dtype); in 16 bits x's
 * float32 copy [N D] for g */
static int embed_scratch(const Block *b, int B, int T, Tensor *s) {
    const int D = ((const Embed *)b->state)->D;
    s[0] = block_shape_typed(b->dtype, 2, B * T, D);
    if (b->dtype == DTYPE_F32) return 1;
    s[1] = block_shape(1, B * T * D);
    return 2;
}

static void embed_forward(Block *b, const BlockCall *c) {
    const Embed *e = b->state;
    TensorParallel *tp = e->tp;
    Tensor *x = &c->saved[0];
    c->ops->embedding_forward_rows(x, c->ids, block_param(b, e->table), sqrtf((float)e->D),
                                   tp->words.start, tp->vocab); /* others' words: 0 */
    /* g in float32, as every sum over the group (one rank's row plus zeros: exact, and
     * the bytes of a float32 run) */
    Tensor x32 = tp_as_f32(x, &c->work[1]);
    tp->ops.g(tp, &x32, BLOCK_FORWARD);
    tp_store(x, &x32);
    c->ops->positional_forward(x, x, &e->pe, c->T);
    c->ops->dropout_forward(x, &c->saved[1], x, e->dropout, c->training, c->rng);
}

static void embed_backward(Block *b, const BlockCall *c) {
    const Embed *e = b->state;
    TensorParallel *tp = e->tp;
    Tensor *dx = &c->work[0];
    tensor_fill(dx, 0.0f);
    c->ops->dropout_backward(dx, c->dout, dropout_active(e->dropout, c->training) ? &c->saved[1] : NULL);
    tp->ops.g(tp, dx, BLOCK_BACKWARD);
    c->ops->embedding_backward_rows(&e->table->grad, dx, c->ids, sqrtf((float)e->D),
                                    tp->words.start, tp->vocab);
}

static double embed_flops(const Block *b, int T) {
    (void)T;
    return 2.0 * ((const Embed *)b->state)->D;
}

static void embed_init(Block *b, Rng *rng) {
    Embed *e = b->state;
    tp_draw_slice(e->tp, e->table, TP_WORDS, e->tp->vocab, e->D, 0.1f, rng);
    e->pe = tensor_zeros(2, e->max_len, e->D);
    positional_table_fill(&e->pe);
}

static void embed_to_device(Block *b, Device device) {
    Embed *e = b->state;
    Tensor pe = tensor_to(&e->pe, device);
    tensor_free(&e->pe);
    e->pe = pe;
    tp_zeros_to(e->tp, device);
}

static void embed_free(Block *b) {
    Embed *e = b->state;
    tensor_free(&e->pe);
    xfree(e);
}

static const BlockType TP_EMBED = {.kind = "embedding (by words)", .saved = embed_saved,
                                    .input = embed_input, .scratch = embed_scratch,
                                    .forward = embed_forward, .backward = embed_backward,
                                    .flops = embed_flops, .init = embed_init,
                                    .to_device = embed_to_device, .free = embed_free,
                                    .sixteen_bit = true};

static Block *make_embedding(void *ctx, BlockList *l, const TransformerConfig *c) {
    TensorParallel *tp = ctx;
    Embed *e = xcalloc(1, sizeof *e);
    *e = (Embed){.tp = tp, .D = c->d_model, .max_len = c->max_len, .dropout = c->dropout};
    const int first = l->params->count;
    e->table = tp_declare(tp, l->params, "embedding.weight", TP_WORDS, 2,
                          (int[]){tp->words.count, c->d_model});
    return blocks_add(l, &TP_EMBED, e, "embedding", first);
}

/* ---------------------------------------------------------------- decoder */

typedef struct {
    TensorParallel *tp;
    int D;
    Param *w, *b; /* [Vp/t, D], [Vp/t]: this rank's words */
} Head;

static int head_saved(const Block *b, int B, int T, Tensor *s) {
    const Head *h = b->state;
    s[0] = block_shape_typed(b->dtype, 2, B * T, h->tp->words.count); /* its logits */
    return 1;
}

static void head_input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape_typed(b->dtype, 2, B * T, ((const Head *)b->state)->D);
}

/* scratch: its share of din, then the group's sum [N, D] (float32 always); in 16 bits the
 * float32 operands of the backward (TpF32): x [N D], g [N Vp/t], w [Vp/t D] */
enum { H_PART, H_X32, H_G32, H_W32, H_SCRATCH16 };

static int head_scratch(const Block *b, int B, int T, Tensor *s) {
    const Head *h = b->state;
    const int N = B * T, V = h->tp->words.count;
    s[H_PART] = block_shape(2, N, h->D);
    if (b->dtype == DTYPE_F32) return 1;
    s[H_X32] = block_shape(1, N * h->D);
    s[H_G32] = block_shape(1, N * V);
    s[H_W32] = block_shape(1, V * h->D);
    return H_SCRATCH16;
}

static void head_forward(Block *b, const BlockCall *c) {
    const Head *h = b->state;
    h->tp->ops.f(h->tp, (Tensor *)c->in, BLOCK_FORWARD);
    /* column-parallel: each logit is a whole sum, rounded once as the unsplit layer's */
    c->ops->linear_forward(&c->saved[0], c->in, block_param(b, h->w), block_param(b, h->b));
}

static void head_backward(Block *b, const BlockCall *c) {
    const Head *h = b->state;
    TpF32 sums = {.part = c->work[H_PART]};
    if (b->dtype != DTYPE_F32)
        sums.x = c->work[H_X32], sums.g = c->work[H_G32], sums.w = c->work[H_W32];
    /* the words of every rank: din += the group's sum */
    tp_column_backward(h->tp, c->ops, c->din, &h->w->grad, &h->b->grad, c->dout, c->in,
                       block_param(b, h->w), &sums);
}

static double head_flops(const Block *b, int T) {
    (void)T;
    const Head *h = b->state;
    return 2.0 * h->D * h->tp->words.count;
}

static void head_init(Block *b, Rng *rng) {
    Head *h = b->state;
    tp_draw_slice(h->tp, h->w, TP_WORDS, h->tp->vocab, h->D, 0.1f, rng); /* the bias stays 0 */
}

static void head_to_device(Block *b, Device device) { tp_zeros_to(((Head *)b->state)->tp, device); }

static const BlockType TP_HEAD = {.kind = "decoder (by words)", .saved = head_saved,
                                   .input = head_input, .scratch = head_scratch,
                                   .forward = head_forward, .backward = head_backward,
                                   .flops = head_flops, .init = head_init,
                                   .to_device = head_to_device, .sixteen_bit = true};

static Block *make_decoder(void *ctx, BlockList *l, const TransformerConfig *c) {
    TensorParallel *tp = ctx;
    Head *h = xcalloc(1, sizeof *h);
    *h = (Head){.tp = tp, .D = c->d_model};
    const int first = l->params->count;
    h->w = tp_declare(tp, l->params, "linear.weight", TP_WORDS, 2, (int[]){tp->words.count, c->d_model});
    h->b = tp_declare(tp, l->params, "linear.bias", TP_WORDS, 1, (int[]){tp->words.count});
    l->loss = tp_loss;
    l->loss_scaled = tp_loss_scaled; /* fp16: S before the one rounding */
    l->loss_ctx = tp;
    return blocks_add(l, &TP_HEAD, h, "decoder", first);
}

TransformerBlockMakers tensor_parallel_makers(TensorParallel *tp) {
    /* the words this rank holds, cut as the table's shard cuts every other dimension (a
     * lesson's may have replaced the library's since tensor_parallel_init) */
    tp->words = tp->ops.shard(tp->vocab_padded, tp->t, tp->rank);
    return (TransformerBlockMakers){make_embedding, tp_make_encoder, make_decoder, tp};
}
