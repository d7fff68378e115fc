#include "embed_block.h"

#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/positional.h"

typedef struct {
    int V, D, max_len;
    float dropout;
    Param *table; /* [V, D] */
    Tensor pe;    /* [max_len, D] float32 in every precision: a fixed table, not a parameter */
} Embed;

enum { X, MASK, SAVED };  /* x [N, D] its output (the list's dtype), the dropout mask [N, D]
                           * (float32) */
enum { D_X, SCRATCH };    /* the gradient before the dropout [N, D] (the list's dtype) */

static int saved(const Block *b, int B, int T, Tensor *s) {
    const Embed *e = b->state;
    s[X] = block_shape_typed(b->dtype, 2, B * T, e->D);
    s[MASK] = block_shape(2, B * T, e->D);
    return SAVED;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    (void)b, (void)B, (void)T;
    *shape = (Tensor){.ndim = 0}; /* the batch's ids */
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    s[D_X] = block_shape_typed(b->dtype, 2, B * T, ((const Embed *)b->state)->D);
    return SCRATCH;
}

static void forward(Block *b, const BlockCall *c) {
    const Embed *e = b->state;
    const LayerOps *o = c->ops;
    Tensor *x = &c->saved[X];
    o->embedding_forward(x, c->ids, block_param(b, e->table), sqrtf((float)e->D));
    o->positional_forward(x, x, &e->pe, c->T);
    o->dropout_forward(x, &c->saved[MASK], x, e->dropout, c->training, c->rng);
}

static void backward(Block *b, const BlockCall *c) {
    const Embed *e = b->state;
    /* the positions have no parameters: the gradient goes through the dropout to the table */
    Tensor *dx = &c->work[D_X];
    tensor_fill(dx, 0.0f);
    c->ops->dropout_backward(dx, c->dout, dropout_active(e->dropout, c->training) ? &c->saved[MASK] : NULL);
    c->ops->embedding_backward(&e->table->grad, dx, c->ids, sqrtf((float)e->D));
}

static double flops(const Block *b, int T) {
    (void)T;
    return 2.0 * ((const Embed *)b->state)->D; /* a lookup and the positions: next to nothing */
}

static void init(Block *b, Rng *rng) {
    Embed *e = b->state;
    param_uniform(e->table, 0.1f, rng);
    e->pe = tensor_zeros(2, e->max_len, e->D);
    positional_table_fill(&e->pe);
}

static void to_device(Block *b, Device device) {
    Embed *e = b->state;
    Tensor pe = tensor_to(&e->pe, device);
    tensor_free(&e->pe);
    e->pe = pe;
}

static void free_state(Block *b) {
    Embed *e = b->state;
    tensor_free(&e->pe);
    xfree(e);
}

static const BlockType EMBED = {.kind = "embedding", .saved = saved, .input = input,
                                 .scratch = scratch, .forward = forward, .backward = backward,
                                 .flops = flops, .init = init, .to_device = to_device,
                                 .free = free_state, .sixteen_bit = true};

Block *embed_block_add(BlockList *l, const char *prefix, int vocab, int d_model, int max_len,
                       float dropout) {
    Embed *e = xcalloc(1, sizeof *e);
    *e = (Embed){.V = vocab, .D = d_model, .max_len = max_len, .dropout = dropout};
    const int first = l->params->count;
    char name[PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    e->table = params_add(l->params, name, 2, (int[]){vocab, d_model});
    return blocks_add(l, &EMBED, e, "embedding", first);
}

Tensor *embed_block_positions(Block *b) {
    CHECK(b->type == &EMBED, "block '%s' is not an embedding", b->name);
    return &((Embed *)b->state)->pe;
}
