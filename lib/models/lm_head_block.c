#include "lm_head_block.h"

#include <stdio.h>

#include "core/check.h"
#include "layers/softmax_xent.h"

typedef struct {
    int D, V;
    Param *w, *b; /* [V, D], [V] */
} Head;

static int saved(const Block *b, int B, int T, Tensor *s) {
    s[0] = block_shape_typed(b->dtype, 2, B * T, ((const Head *)b->state)->V); /* the logits */
    return 1;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape_typed(b->dtype, 2, B * T, ((const Head *)b->state)->D);
}

static void forward(Block *b, const BlockCall *c) {
    const Head *h = b->state;
    c->ops->linear_forward(&c->saved[0], c->in, block_param(b, h->w), block_param(b, h->b));
}

static void backward(Block *b, const BlockCall *c) {
    const Head *h = b->state;
    c->ops->linear_backward(c->din, &h->w->grad, &h->b->grad, c->dout, c->in, block_param(b, h->w));
}

static double flops(const Block *b, int T) {
    (void)T;
    const Head *h = b->state;
    return 2.0 * h->D * h->V;
}

static void init(Block *b, Rng *rng) {
    param_uniform(((Head *)b->state)->w, 0.1f, rng); /* the bias stays 0 */
}

static const BlockType HEAD = {.kind = "decoder", .saved = saved, .input = input,
                                .forward = forward, .backward = backward, .flops = flops,
                                .init = init, .sixteen_bit = true};

Block *lm_head_block_add(BlockList *l, const char *prefix, int d_model, int vocab) {
    Head *h = xcalloc(1, sizeof *h);
    *h = (Head){.D = d_model, .V = vocab};
    const int first = l->params->count;
    char name[PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    h->w = params_add(l->params, name, 2, (int[]){vocab, d_model});
    snprintf(name, sizeof name, "%s.bias", prefix);
    h->b = params_add(l->params, name, 1, (int[]){vocab});
    return blocks_add(l, &HEAD, h, "decoder", first);
}

float lm_head_loss(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
                   Tensor *dlogits) {
    return lm_head_loss_scaled(ctx, ops, logits, targets, dlogits, 1.0f);
}

float lm_head_loss_scaled(void *ctx, const LayerOps *ops, const Tensor *logits,
                          const int *targets, Tensor *dlogits, float scale) {
    (void)ctx;
    if (!dlogits) return ops->softmax_cross_entropy_fast(NULL, logits, targets, 1.0f);
    CHECK_SAME_SHAPE(dlogits, logits);
    /* the library's CPU loss can store its gradient (the same bits as adding it to
     * zeros): no zeroing pass over the [N, V] logits' gradient first */
    if (ops->softmax_cross_entropy_fast == softmax_cross_entropy_fast)
        return softmax_cross_entropy_fast_store(dlogits, logits, targets, scale);
    tensor_fill(dlogits, 0.0f);
    return ops->softmax_cross_entropy_fast(dlogits, logits, targets, scale);
}
