/* The fused forwards (layers/add_layernorm.h, layers/relu_dropout.h) against their
 * definition, the separate layers called in order: the same bits in float32, bfloat16
 * and float16 (r, y, mean, rstd; out, the mask, the Rng's state after). Then the
 * encoder layer inside the whole transformer: with the fused entries it gives the
 * unfused path's loss and gradients bit for bit (dropout off and on, each dtype), and a
 * layer norm or ReLU swapped into the table (as lesson 04's --ops mine does) is still
 * the one called. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "layers/add.h"
#include "layers/add_layernorm.h"
#include "layers/dropout.h"
#include "layers/layer_ops.h"
#include "layers/layernorm.h"
#include "layers/relu.h"
#include "layers/relu_dropout.h"
#include "models/transformer.h"

static const DType DTYPES[3] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};

/* A [rows, cols] tensor of dt: uniform in [lo, hi) rounded to dt (cols 0: [rows]). */
static Tensor rnd(DType dt, uint64_t seed, float lo, float hi, int rows, int cols) {
    Tensor f = cols ? tensor_zeros(2, rows, cols) : tensor_zeros(1, rows);
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int64_t i = 0; i < f.size; i++) f.data[i] = lo + (hi - lo) * rng_uniform(&rng);
    Tensor t = cols ? tensor_zeros_typed(DEVICE_CPU, dt, 2, rows, cols)
                    : tensor_zeros_typed(DEVICE_CPU, dt, 1, rows);
    tensor_convert(&t, &f);
    tensor_free(&f);
    return t;
}

static Tensor like(const Tensor *t) {
    return tensor_zeros_typed(DEVICE_CPU, t->dtype, t->ndim, t->shape[0], t->shape[1],
                              t->shape[2], t->shape[3]);
}

static bool same_bits(const char *what, DType dt, const Tensor *a, const Tensor *b) {
    return expect_true(a->size == b->size && memcmp(a->raw, b->raw, tensor_bytes(a)) == 0,
                       "%s (%s): not the same bits", what, dtype_name(dt));
}

static int check_add_layernorm(void) {
    static const int cases[][2] = {{1, 1}, {5, 37}, {33, 64}, {7, 200}};
    bool ok = true;
    for (int d = 0; d < 3; d++)
        for (int c = 0; c < 4; c++) {
            const DType dt = DTYPES[d];
            const int N = cases[c][0], D = cases[c][1];
            const uint64_t s = 100 * (uint64_t)d + 10 * (uint64_t)c;
            Tensor a = rnd(dt, s, -1, 3, N, D), b = rnd(dt, s + 1, -2, 1, N, D);
            Tensor g = rnd(dt, s + 2, 0.5f, 1.5f, D, 0), be = rnd(dt, s + 3, -1, 1, D, 0);
            Tensor r1 = like(&a), y1 = like(&a), r2 = like(&a), y2 = like(&a);
            Tensor m1 = tensor_zeros(1, N), s1 = tensor_zeros(1, N), m2 = tensor_zeros(1, N),
                   s2 = tensor_zeros(1, N);
            add_forward(&r1, &a, &b);
            layernorm_forward(&y1, &m1, &s1, &r1, &g, &be, LAYERNORM_EPS);
            add_layernorm_forward(&r2, &y2, &m2, &s2, &a, &b, &g, &be, LAYERNORM_EPS);
            ok = same_bits("r", dt, &r2, &r1) && same_bits("y", dt, &y2, &y1) &&
                 same_bits("mean", dt, &m2, &m1) && same_bits("rstd", dt, &s2, &s1) && ok;
            /* in place: r is b (as r2 = y1 + f may be written over f) */
            Tensor b2 = like(&b);
            tensor_copy(&b2, &b);
            add_layernorm_forward(&b2, &y2, &m2, &s2, &a, &b2, &g, &be, LAYERNORM_EPS);
            ok = same_bits("r in place of b", dt, &b2, &r1) && same_bits("y, r in place", dt, &y2, &y1) && ok;
            FREE_ALL(&a, &b, &g, &be, &r1, &y1, &r2, &y2, &m1, &s1, &m2, &s2, &b2);
        }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_relu_dropout(void) {
    static const float ps[] = {0.0f, 0.1f, 0.5f, 1.0f};
    bool ok = true;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 4; k++)
            for (int training = 0; training < 2; training++) {
                const DType dt = DTYPES[d];
                const float p = ps[k];
                Tensor in = rnd(dt, 7 + (uint64_t)k, -1, 1, 13, 29), o1 = like(&in), o2 = like(&in);
                Tensor k1 = tensor_zeros(2, 13, 29), k2 = tensor_zeros(2, 13, 29);
                Rng r1, r2;
                rng_seed(&r1, 99, 0);
                rng_seed(&r2, 99, 0);
                relu_forward(&o1, &in);
                dropout_forward(&o1, &k1, &o1, p, training, &r1);
                relu_dropout_forward(&o2, &k2, &in, p, training, &r2);
                ok = same_bits("out", dt, &o2, &o1) && same_bits("mask", dt, &k2, &k1) &&
                     expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng's state after (%s, p %g)",
                                 dtype_name(dt), (double)p) && ok;
                /* in place (out is in), a fresh Rng of the same seed */
                Tensor io = like(&in), k3 = tensor_zeros(2, 13, 29);
                tensor_copy(&io, &in);
                rng_seed(&r2, 99, 0);
                relu_dropout_forward(&io, &k3, &io, p, training, &r2);
                ok = same_bits("out in place", dt, &io, &o1) && same_bits("mask in place", dt, &k3, &k1) && ok;
                FREE_ALL(&io, &k3);
                FREE_ALL(&in, &o1, &o2, &k1, &k2);
            }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ inside the encoder */

enum { B = 3, T = 9, N = B * T };

static int norm_calls, relu_calls;

static void counting_layernorm(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                               const Tensor *gamma, const Tensor *beta, float eps) {
    norm_calls++;
    layernorm_forward(out, mean, rstd, in, gamma, beta, eps);
}

static void counting_relu(Tensor *out, const Tensor *in) {
    relu_calls++;
    relu_forward(out, in);
}

typedef enum { FUSED, UNFUSED, OWN_NORM, OWN_RELU } Table;

/* One forward and backward of a fresh model (seed 42) in dt with the table's entries as
 * `table` says; its loss, and its gradients into grads. */
static float one_step(float dropout, DType dt, Table table, const int *tokens, const int *targets,
                      float *grads, bool *fused) {
    const TransformerConfig c = {.vocab = 41, .d_model = 16, .heads = 2, .d_ff = 24, .layers = 2,
                                 .max_len = 32, .dropout = dropout};
    Transformer m;
    transformer_init(&m, &c, B, T, 42);
    transformer_set_precision(&m, dt);
    if (table == UNFUSED) m.layers.add_layernorm_forward = NULL, m.layers.relu_dropout_forward = NULL;
    if (table == OWN_NORM) m.layers.layernorm_forward = counting_layernorm;
    if (table == OWN_RELU) m.layers.relu_forward = counting_relu;
    fused[0] = layer_ops_fuse_add_layernorm(&m.layers);
    fused[1] = layer_ops_fuse_relu_dropout(&m.layers);
    params_zero_grad(&m.params);
    const float loss = transformer_forward_backward(&m, tokens, targets);
    memcpy(grads, m.params.grads.data, sizeof(float) * (size_t)m.params.total);
    transformer_free(&m);
    return loss;
}

static int check_encoder(void) {
    int tokens[N], targets[N];
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int i = 0; i < N; i++) tokens[i] = (int)rng_below(&rng, 41), targets[i] = (int)rng_below(&rng, 41);
    const TransformerConfig c = {.vocab = 41, .d_model = 16, .heads = 2, .d_ff = 24, .layers = 2,
                                 .max_len = 32};
    const int64_t n = transformer_param_count(&c);
    float *want = xcalloc((size_t)n, sizeof(float)), *got = xcalloc((size_t)n, sizeof(float));
    bool ok = true;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 2; k++) {
            const DType dt = DTYPES[d];
            const float p = k ? 0.2f : 0.0f;
            bool fused[2];
            const float lw = one_step(p, dt, UNFUSED, tokens, targets, want, fused);
            ok = expect_true(!fused[0] && !fused[1], "no fused entries: the separate layers") && ok;
            const float lf = one_step(p, dt, FUSED, tokens, targets, got, fused);
            ok = expect_true(fused[0] && fused[1], "the library's table fuses (%s)", dtype_name(dt)) &&
                 expect_true(memcmp(&lw, &lf, sizeof lw) == 0, "%s, dropout %g: loss %.9g fused, %.9g "
                             "unfused", dtype_name(dt), (double)p, (double)lf, (double)lw) &&
                 expect_true(memcmp(want, got, sizeof(float) * (size_t)n) == 0, "%s, dropout %g: the "
                             "gradients differ", dtype_name(dt), (double)p) && ok;
            norm_calls = relu_calls = 0;
            const float ln = one_step(p, dt, OWN_NORM, tokens, targets, got, fused);
            ok = expect_true(!fused[0] && fused[1], "a layer norm swapped in: add + norm unfused") &&
                 expect_true(norm_calls == 2 * c.layers, "the swapped-in layer norm called %d times, "
                             "want %d", norm_calls, 2 * c.layers) &&
                 expect_true(memcmp(&lw, &ln, sizeof lw) == 0 &&
                             memcmp(want, got, sizeof(float) * (size_t)n) == 0,
                             "%s: the swapped-in (same) layer norm changed the results", dtype_name(dt)) && ok;
            const float lr = one_step(p, dt, OWN_RELU, tokens, targets, got, fused);
            ok = expect_true(fused[0] && !fused[1], "a ReLU swapped in: relu + dropout unfused") &&
                 expect_true(relu_calls == c.layers, "the swapped-in ReLU called %d times, want %d",
                             relu_calls, c.layers) &&
                 expect_true(memcmp(&lw, &lr, sizeof lw) == 0 &&
                             memcmp(want, got, sizeof(float) * (size_t)n) == 0,
                             "%s: the swapped-in (same) ReLU changed the results", dtype_name(dt)) && ok;
        }
    free(want);
    free(got);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("fused forwards");
    check_run(NULL, "add + layer norm fused = add then layer norm, the same bits (f32, bf16, fp16; r in place)", check_add_layernorm, 30);
    check_run(NULL, "relu + dropout fused = relu then dropout: out, mask and the Rng the same (f32, bf16, fp16; in place)", check_relu_dropout, 30);
    check_run(NULL, "the encoder fused = unfused: loss and gradients bit for bit (f32, bf16, fp16, dropout 0 and 0.2); a swapped-in layer norm or ReLU is called", check_encoder, 60);
    return check_end();
}
