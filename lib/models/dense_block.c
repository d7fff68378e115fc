#include "dense_block.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"

typedef struct {
    Tensor sample; /* one input row's shape */
    int in, out;   /* in: the row flattened */
    bool relu;
    Param *w, *b;  /* [out, in], [out] */
} Dense;

enum { PRE, D_PRE, SCRATCH }; /* with a ReLU: its input, and that input's gradient */

static int saved(const Block *b, int B, int T, Tensor *s) {
    s[0] = block_shape(2, B * T, ((const Dense *)b->state)->out);
    return 1;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    const Dense *d = b->state;
    *shape = (Tensor){.ndim = d->sample.ndim + 1, .shape = {B * T}, .size = (int64_t)B * T * d->in};
    memcpy(shape->shape + 1, d->sample.shape, sizeof(int) * (size_t)d->sample.ndim);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Dense *d = b->state;
    if (!d->relu) return 0;
    s[PRE] = s[D_PRE] = block_shape(2, B * T, d->out);
    return SCRATCH;
}

/* A tensor of rows viewed as [rows, features]. */
static Tensor flat(const Tensor *t, int in) { return tensor_view(t, 2, t->shape[0], in); }

static void forward(Block *b, const BlockCall *c) {
    const Dense *d = b->state;
    const Tensor x = flat(c->in, d->in);
    Tensor *y = d->relu ? &c->work[PRE] : &c->saved[0];
    c->ops->linear_forward(y, &x, &d->w->value, &d->b->value);
    if (d->relu) c->ops->relu_forward(&c->saved[0], y);
}

static void backward(Block *b, const BlockCall *c) {
    const Dense *d = b->state;
    const Tensor x = flat(c->in, d->in);
    const Tensor *g = c->dout;
    if (d->relu) {
        tensor_fill(&c->work[D_PRE], 0.0f); /* the layer adds (+=) into it */
        c->ops->relu_backward(&c->work[D_PRE], c->dout, &c->saved[0]);
        g = &c->work[D_PRE];
    }
    Tensor dx;
    if (c->din) dx = flat(c->din, d->in);
    c->ops->linear_backward(c->din ? &dx : NULL, &d->w->grad, &d->b->grad, g, &x, &d->w->value);
}

static double flops(const Block *b, int T) {
    (void)T;
    return 2.0 * (double)((const Dense *)b->state)->w->value.size;
}

static void init(Block *b, Rng *rng) {
    Dense *d = b->state;
    const float bound = 1.0f / sqrtf((float)d->in);
    param_uniform(d->w, bound, rng);
    param_uniform(d->b, bound, rng);
}

static const BlockType DENSE = {.kind = "dense", .saved = saved, .input = input,
                                 .scratch = scratch, .forward = forward, .backward = backward,
                                 .flops = flops, .init = init};

Block *dense_block_add(BlockList *l, const char *prefix, Tensor sample, int out, bool relu) {
    CHECK(sample.ndim >= 1 && sample.ndim < TENSOR_MAX_DIMS && out >= 1,
          "a dense block of %d features from rows of %d dimensions", out, sample.ndim);
    Dense *d = xcalloc(1, sizeof *d);
    *d = (Dense){.sample = sample, .in = (int)sample.size, .out = out, .relu = relu};
    const int first = l->params->count;
    char name[PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    d->w = params_add(l->params, name, 2, (int[]){out, d->in});
    snprintf(name, sizeof name, "%s.bias", prefix);
    d->b = params_add(l->params, name, 1, (int[]){out});
    return blocks_add(l, &DENSE, d, prefix, first);
}
