#include "mlp_block.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "layers/linear_small.h"
#include "layers/tanh.h"

void orthogonal_init(float *w, int rows, int cols, float gain, Rng *rng) {
    CHECK(rows > 0 && cols > 0, "orthogonal_init: a %d x %d matrix", rows, cols);
    /* QR of a tall Gaussian matrix m [tall, wide] (w's transpose when w is wide); Gram-Schmidt
     * gives R a positive diagonal, which is PyTorch's q * sign(diag(r)) */
    const bool wide = rows < cols;
    const int tall = wide ? cols : rows, narrow = wide ? rows : cols;
    double *m = xcalloc((size_t)tall * narrow, sizeof *m); /* column j: m[j * tall ...] */
    for (int r = 0; r < rows; r++) /* drawn in w's row-major order, as PyTorch fills it */
        for (int c = 0; c < cols; c++) {
            const double g = rng_normal(rng);
            if (wide) m[(size_t)r * tall + c] = g; /* column r of w^T */
            else m[(size_t)c * tall + r] = g;      /* column c of w */
        }
    for (int j = 0; j < narrow; j++) {
        double *q = m + (size_t)j * tall;
        for (int pass = 0; pass < 2; pass++) /* twice: orthogonal to float precision */
            for (int i = 0; i < j; i++) {
                const double *qi = m + (size_t)i * tall;
                double dot = 0;
                for (int k = 0; k < tall; k++) dot += qi[k] * q[k];
                for (int k = 0; k < tall; k++) q[k] -= dot * qi[k];
            }
        double norm = 0;
        for (int k = 0; k < tall; k++) norm += q[k] * q[k];
        norm = sqrt(norm);
        CHECK(norm > 1e-12, "orthogonal_init: a degenerate Gaussian draw (column %d)", j);
        for (int k = 0; k < tall; k++) q[k] /= norm;
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            w[(size_t)r * cols + c] = (float)(gain * (wide ? m[(size_t)r * tall + c] : m[(size_t)c * tall + r]));
    xfree(m);
}

/* ---------------------------------------------------------------- the block */

typedef struct {
    int in, out;
    bool tanh;
    float gain;
    Param *w, *b; /* [out, in], [out] */
    float *wt;    /* [in, out] W^T */
} Layer;

enum { DZ, SCRATCH }; /* with a tanh: the gradient before it */

static int saved(const Block *b, int B, int T, Tensor *s) {
    s[0] = block_shape(2, B * T, ((const Layer *)b->state)->out);
    return 1;
}

static void input(const Block *b, int B, int T, Tensor *shape) {
    *shape = block_shape(2, B * T, ((const Layer *)b->state)->in);
}

static int scratch(const Block *b, int B, int T, Tensor *s) {
    const Layer *l = b->state;
    if (!l->tanh) return 0;
    s[DZ] = block_shape(2, B * T, l->out);
    return SCRATCH;
}

static void forward(Block *b, const BlockCall *c) {
    const Layer *l = b->state;
    const int n = c->B * c->T;
    float *y = c->saved[0].data;
    linear_small_forward_t(y, c->in->data, l->w->value.data, l->wt, l->b->value.data, n, l->in, l->out);
    if (l->tanh) tanh_values(y, y, (int64_t)n * l->out);
}

static void backward(Block *b, const BlockCall *c) {
    const Layer *l = b->state;
    const int n = c->B * c->T;
    const float *g = c->dout->data;
    if (l->tanh) { /* dz = dL/d(the linear's output) */
        float *dz = c->work[DZ].data;
        memset(dz, 0, (size_t)n * l->out * sizeof(float));
        tanh_backward_values(dz, g, c->saved[0].data, (int64_t)n * l->out);
        g = dz;
    }
    linear_small_backward(c->din ? c->din->data : NULL, l->w->grad.data, l->b->grad.data, g,
                          c->in->data, l->w->value.data, n, l->in, l->out);
}

static double flops(const Block *b, int T) {
    (void)T;
    const Layer *l = b->state;
    return 2.0 * l->in * l->out;
}

static void init(Block *b, Rng *rng) {
    Layer *l = b->state;
    orthogonal_init(l->w->value.data, l->out, l->in, l->gain, rng);
    tensor_fill(&l->b->value, 0.0f);
}

static void free_state(Block *b) {
    Layer *l = b->state;
    xfree(l->wt);
    xfree(l);
}

static const BlockType MLP_LAYER = {.kind = "mlp layer", .saved = saved, .input = input,
                                     .scratch = scratch, .forward = forward, .backward = backward,
                                     .flops = flops, .init = init, .free = free_state};

Block *mlp_block_add(BlockList *l, const char *prefix, int in, int out, bool tanh, float gain) {
    CHECK(l->device == DEVICE_CPU, "PPO's networks run on the CPU");
    Layer *s = xcalloc(1, sizeof *s);
    *s = (Layer){.in = in, .out = out, .tanh = tanh, .gain = gain};
    s->wt = xcalloc((size_t)in * out, sizeof(float));
    const int first = l->params->count;
    char name[PARAM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weight", prefix);
    s->w = params_add(l->params, name, 2, (int[]){out, in});
    snprintf(name, sizeof name, "%s.bias", prefix);
    s->b = params_add(l->params, name, 1, (int[]){out});
    return blocks_add(l, &MLP_LAYER, s, prefix, first);
}

void mlp_block_transpose(Block *b) {
    CHECK(b->type == &MLP_LAYER, "block '%s' is not an MLP layer", b->name);
    const Layer *l = b->state;
    linear_small_transpose(l->wt, l->w->value.data, l->in, l->out);
}
