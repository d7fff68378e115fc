#include "conv_block.h"

#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "layers/conv_pool_relu.h"

enum { POOL = 2 };

typedef struct {
    int Cin, H, W, Cout, K, OH, OW, PH, PW; /* input, convolution output, pooled */
    bool first;
    Param *w, *b;
} Conv;

/* scratch: the convolution's and the pool's outputs, and their gradients */
enum { CONV, POOLED, D_POOL, D_CONV, SCRATCH };

static int saved(const Block *b, int B, int T, Tensor *s) {
    const Conv *c = b->state;
    const int N = B * T;
    s[CONV_OUT] = block_shape(4, N, c->Cout, c->PH, c->PW);
    s[CONV_ARGMAX] = block_shape(1, N * c->Cout * c->PH * c->PW);
    return CONV_SAVED;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    const Conv *c = b->state;
    *shape = block_shape(4, B * T, c->Cin, c->H, c->W);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Conv *c = b->state;
    const int N = B * T;
    s[CONV] = s[D_CONV] = block_shape(4, N, c->Cout, c->OH, c->OW);
    s[POOLED] = s[D_POOL] = block_shape(4, N, c->Cout, c->PH, c->PW);
    return SCRATCH;
}

/* The fused first block: on the CPU, with the library's own three layers in the table. */
static bool fused(const Conv *c, const BlockCall *call, bool backward) {
    const LayerOps *l = call->ops, *cpu = layer_ops(DEVICE_CPU);
    if (!c->first || call->device != DEVICE_CPU) return false;
    if (backward)
        return !call->din && l->conv2d_backward == cpu->conv2d_backward &&
               l->maxpool2d_backward == cpu->maxpool2d_backward && l->relu_backward == cpu->relu_backward;
    return l->conv2d_forward == cpu->conv2d_forward &&
           l->maxpool2d_forward == cpu->maxpool2d_forward && l->relu_forward == cpu->relu_forward;
}

static void forward(Block *b, const BlockCall *call) {
    const Conv *c = b->state;
    const LayerOps *o = call->ops;
    Tensor *w = call->work, *out = &call->saved[CONV_OUT];
    int *argmax = (int *)call->saved[CONV_ARGMAX].data;
    if (fused(c, call, false)) {
        conv_pool_relu_forward(&w[POOLED], argmax, out, call->in, &c->w->value, &c->b->value);
        return;
    }
    o->conv2d_forward(&w[CONV], call->in, &c->w->value, &c->b->value, 1, 0);
    o->maxpool2d_forward(&w[POOLED], argmax, &w[CONV], POOL, POOL);
    o->relu_forward(out, &w[POOLED]);
}

static void backward(Block *b, const BlockCall *call) {
    const Conv *c = b->state;
    const LayerOps *o = call->ops;
    Tensor *w = call->work;
    const Tensor *out = &call->saved[CONV_OUT];
    const int *argmax = (const int *)call->saved[CONV_ARGMAX].data;
    if (fused(c, call, true)) {
        conv_pool_relu_backward(&c->w->grad, &c->b->grad, call->dout, out, argmax, call->in, &c->w->value);
        return;
    }
    tensor_fill(&w[D_POOL], 0.0f); /* the layers add (+=) into their gradients */
    tensor_fill(&w[D_CONV], 0.0f);
    o->relu_backward(&w[D_POOL], call->dout, out);
    o->maxpool2d_backward(&w[D_CONV], &w[D_POOL], argmax);
    /* a first block's input is data: din NULL skips its gradient */
    o->conv2d_backward(call->din, &c->w->grad, &c->b->grad, &w[D_CONV], call->in, &c->w->value, 1, 0);
}

static double flops(const Block *b, int T) {
    (void)T;
    const Conv *c = b->state; /* every output value is a dot product of length Cin K K */
    return 2.0 * ((double)c->Cout * c->OH * c->OW) * ((double)c->Cin * c->K * c->K);
}

/* PyTorch's default for Conv2d: kaiming_uniform(a = sqrt(5)) for the weight, which is
 * uniform in +-1/sqrt(fan_in), and the same bound for the bias. */
static void init(Block *b, Rng *rng) {
    Conv *c = b->state;
    const float bound = 1.0f / sqrtf((float)(c->Cin * c->K * c->K));
    param_uniform(c->w, bound, rng);
    param_uniform(c->b, bound, rng);
}

static const BlockType CONV_BLOCK = {.kind = "conv-pool-relu", .saved = saved, .input = input,
                                     .scratch = scratch, .forward = forward, .backward = backward,
                                     .flops = flops, .init = init};

Block *conv_block_add(BlockList *l, const char *prefix, int in_channels, int height, int width,
                      int out_channels, int kernel, bool first) {
    Conv *c = xcalloc(1, sizeof *c);
    *c = (Conv){.Cin = in_channels, .H = height, .W = width, .Cout = out_channels, .K = kernel,
                .OH = height - kernel + 1, .OW = width - kernel + 1, .first = first};
    c->PH = c->OH / POOL, c->PW = c->OW / POOL;
    CHECK(c->PH >= 1 && c->PW >= 1, "a %dx%d convolution and 2x2 pool of %dx%d images", kernel,
          kernel, height, width);
    const int first_param = l->params->count;
    char name[PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    c->w = params_add(l->params, name, 4, (int[]){out_channels, in_channels, kernel, kernel});
    snprintf(name, sizeof name, "%s.bias", prefix);
    c->b = params_add(l->params, name, 1, (int[]){out_channels});
    return blocks_add(l, &CONV_BLOCK, c, prefix, first_param);
}
