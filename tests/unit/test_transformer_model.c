/* lib/models/transformer: the tutorial's TransformerModel as one model.
 *
 *  - against PyTorch 1.13 (tests/reference/transformer_reference.h, the 2-layer model
 *    with dropout 0): parameters loaded by name, then hidden states, logits, loss and
 *    every gradient; tolerances as in test_layers_transformer_reference.c (2e-6
 *    absolute + 1e-5 relative: float32 sums in other orders);
 *  - split into two stages at every cut, with dropout on: the same loss and the same
 *    gradients, bit for bit (the same operations in the same order, each block drawing
 *    its dropout masks from its own stream), which is what lesson 07 relies on;
 *  - the same seed gives the same run twice, another seed another one; evaluation draws
 *    no dropout; a bad configuration or a bad block range is a clear error;
 *  - the parameter count of the seed's model, 77,879,406 with 28,782 words;
 *  - a shorter batch (transformer_set_seq_len, get_batch's last one) gives what a model
 *    built for that length gives, bit for bit, and a longer one is refused;
 *  - the activation bytes as allocated equal the count from the shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "models/encoder_block.h"
#include "models/transformer.h"
#include "reference/transformer_reference.h"

#define REF_ATOL 2e-6f
#define REF_RTOL 1e-5f

static TransformerConfig ref_config(float dropout) {
    return (TransformerConfig){.vocab = TF_REF_MODEL_V, .d_model = TF_REF_MODEL_D,
                               .heads = TF_REF_MODEL_H, .d_ff = TF_REF_MODEL_HID,
                               .layers = TF_REF_MODEL_LAYERS, .max_len = 64, .dropout = dropout};
}

/* Block k's output in the model's own activations (the embedding's, a layer's, the logits). */
static const Tensor *output_of(Transformer *m, int k) { return &blocks_saved(&m->blocks, &m->blocks.acts, k)[0]; }

static int check_against_pytorch(void) {
    const TransformerConfig c = ref_config(0.0f);
    Transformer m;
    transformer_init(&m, &c, TF_REF_MODEL_B, TF_REF_MODEL_T, 1);
    bool ok = expect_true(m.params.count == TF_REF_MODEL_PARAMS, "%d parameters, PyTorch has %d",
                          m.params.count, TF_REF_MODEL_PARAMS);
    for (int i = 0; ok && i < TF_REF_MODEL_PARAMS; i++) {
        const TfRefParam *r = &TF_REF_MODEL_PARAM[i];
        Param *p = params_find(&m.params, r->name);
        ok = expect_true(p != NULL, "no parameter named %s", r->name) &&
             expect_true(p->value.size == (int64_t)r->shape[0] * (r->ndim == 2 ? r->shape[1] : 1),
                         "%s has %lld values", r->name, (long long)p->value.size);
        if (ok) memcpy(p->value.data, r->value, sizeof(float) * (size_t)p->value.size);
    }
    if (!ok) return CHECK_FAIL;
    params_zero_grad(&m.params);
    const float loss = transformer_forward_backward(&m, TF_REF_MODEL_TOKENS, TF_REF_MODEL_TARGETS);
    const int64_t ND = (int64_t)m.N * c.d_model;
    ok = expect_close("hidden state after the positions", output_of(&m, 0)->data, TF_REF_MODEL_HIDDEN, ND,
                      REF_ATOL, REF_RTOL);
    for (int l = 0; l < c.layers; l++) {
        char what[64];
        snprintf(what, sizeof what, "hidden state after layer %d", l);
        ok = expect_close(what, output_of(&m, l + 1)->data, TF_REF_MODEL_HIDDEN + (l + 1) * ND, ND,
                          REF_ATOL, REF_RTOL) && ok;
    }
    ok = expect_close("logits", transformer_logits(&m)->data, TF_REF_MODEL_LOGITS, transformer_logits(&m)->size, REF_ATOL,
                      REF_RTOL) && ok;
    ok = expect_true(fabsf(loss - TF_REF_MODEL_LOSS) <= 1e-5f * TF_REF_MODEL_LOSS,
                     "loss %.9g, PyTorch %.9g", loss, TF_REF_MODEL_LOSS) && ok;
    for (int i = 0; i < TF_REF_MODEL_PARAMS; i++) {
        const TfRefParam *r = &TF_REF_MODEL_PARAM[i];
        Param *p = params_find(&m.params, r->name);
        ok = expect_close(r->name, p->grad.data, r->grad, p->grad.size, REF_ATOL, REF_RTOL) && ok;
    }
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Random tokens and targets for B x T positions of a V-word vocabulary. */
static void random_tokens(int *tokens, int *targets, int n, int V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int i = 0; i < n; i++) tokens[i] = (int)rng_below(&rng, (uint32_t)V);
    for (int i = 0; i < n; i++) targets[i] = (int)rng_below(&rng, (uint32_t)V);
}

/* A slightly bigger model than the reference, dropout on: one step of the whole model
 * against two stages cut at block k, run one after the other as a pipeline would. */
static int check_split(void) {
    const TransformerConfig c = {.vocab = 37, .d_model = 16, .heads = 4, .d_ff = 24, .layers = 3,
                                 .max_len = 32, .dropout = 0.2f};
    enum { B = 3, T = 7, N = B * T };
    int tokens[N], targets[N];
    random_tokens(tokens, targets, N, c.vocab, 5);
    const int blocks = transformer_block_count(&c);
    Transformer whole;
    transformer_init(&whole, &c, B, T, 42);
    params_zero_grad(&whole.params);
    const float want = transformer_forward_backward(&whole, tokens, targets);
    bool ok = expect_true(isfinite(want) && want > 0, "the whole model's loss is %g", want);
    for (int cut = 1; ok && cut < blocks; cut++) {
        Transformer a, b;
        transformer_init_blocks(&a, &c, B, T, 42, 0, cut);
        transformer_init_blocks(&b, &c, B, T, 42, cut, blocks);
        params_zero_grad(&a.params);
        params_zero_grad(&b.params);
        const Tensor *mid = transformer_forward(&a, 0, cut, tokens, NULL);
        Tensor x = tensor_zeros(2, N, c.d_model); /* what a send and a receive would carry */
        tensor_copy(&x, mid);
        transformer_forward(&b, cut, blocks, NULL, &x);
        const float got = transformer_loss_grad(&b, targets);
        Tensor dx = tensor_zeros(2, N, c.d_model);
        transformer_backward(&b, cut, blocks, &b.dlogits, &x, &dx);
        transformer_backward(&a, 0, cut, &dx, NULL, NULL);
        ok = expect_true(got == want, "cut at block %d: loss %.9g, the whole model %.9g", cut,
                         (double)got, (double)want);
        for (int s = 0; s < 2 && ok; s++) {
            Transformer *stage = s ? &b : &a;
            for (int i = 0; ok && i < stage->params.count; i++) {
                const Param *p = stage->params.items[i];
                const Param *q = params_find(&whole.params, p->name);
                ok = expect_true(q && memcmp(p->value.data, q->value.data, sizeof(float) * (size_t)p->value.size) == 0,
                                 "cut at block %d: %s starts with other values", cut, p->name) &&
                     expect_true(memcmp(p->grad.data, q->grad.data, sizeof(float) * (size_t)p->grad.size) == 0,
                                 "cut at block %d: the gradient of %s differs from the whole "
                                 "model's", cut, p->name);
            }
        }
        ok = ok && expect_true(a.params.count + b.params.count == whole.params.count,
                               "cut at block %d: the stages hold %d + %d parameters of %d", cut,
                               a.params.count, b.params.count, whole.params.count);
        tensor_free(&x);
        tensor_free(&dx);
        transformer_free(&a);
        transformer_free(&b);
    }
    transformer_free(&whole);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* One training loss of a fresh model of this seed, with dropout on or off. */
static float one_loss(uint64_t seed, bool training, const int *tokens, const int *targets) {
    const TransformerConfig c = {.vocab = 23, .d_model = 8, .heads = 2, .d_ff = 12, .layers = 2,
                                 .max_len = 16, .dropout = 0.3f};
    Transformer m;
    transformer_init(&m, &c, 2, 6, seed);
    if (!training) transformer_eval(&m);
    params_zero_grad(&m.params);
    float loss = transformer_forward_backward(&m, tokens, targets);
    transformer_free(&m);
    return loss;
}

static int check_reproducible(void) {
    int tokens[12], targets[12];
    random_tokens(tokens, targets, 12, 23, 9);
    const float a = one_loss(7, true, tokens, targets), b = one_loss(7, true, tokens, targets);
    const float other = one_loss(8, true, tokens, targets);
    const float eval = one_loss(7, false, tokens, targets);
    bool ok = expect_true(a == b, "the same seed gave losses %.9g and %.9g", (double)a, (double)b) &&
              expect_true(other != a, "seeds 7 and 8 gave the same loss %.9g", (double)a) &&
              expect_true(eval != a, "evaluation (no dropout) gave the training loss %.9g", (double)a);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void bad_heads(void *arg) {
    (void)arg;
    TransformerConfig c = transformer_config_tutorial(100);
    c.heads = 3; /* 200 is not a multiple of 3 */
    Transformer m;
    transformer_init(&m, &c, 2, 4, 1);
}
static void bad_range(void *arg) {
    (void)arg;
    TransformerConfig c = transformer_config_tutorial(100);
    Transformer m;
    transformer_init_blocks(&m, &c, 2, 4, 1, 3, 2);
}

static int check_errors_and_sizes(void) {
    ChildResult r;
    run_child(bad_heads, NULL, &r);
    bool ok = expect_exit("3 heads for width 200", &r, 1, "3 heads do not divide", (const char *)NULL);
    run_child(bad_range, NULL, &r);
    ok = ok && expect_exit("blocks [3, 2)", &r, 1, "not a range", (const char *)NULL);
    const TransformerConfig seed = transformer_config_seed(28782);
    ok = ok && expect_true(transformer_param_count(&seed) == 77879406,
                           "the seed's model has %lld parameters, expected 77,879,406",
                           (long long)transformer_param_count(&seed));
    const TransformerConfig small = {.vocab = 50, .d_model = 12, .heads = 3, .d_ff = 20,
                                     .layers = 3, .max_len = 8, .dropout = 0.1f};
    Transformer m;
    transformer_init(&m, &small, 1, 4, 3);
    ok = ok && expect_true(params_count(&m.params) == transformer_param_count(&small),
                           "a model holds %lld parameters, transformer_param_count says %lld",
                           (long long)params_count(&m.params),
                           (long long)transformer_param_count(&small));
    /* the tutorial's initialisation: embedding within +-0.1, norms 1 and 0, decoder bias 0 */
    bool in_range = true;
    const Param *emb = params_find(&m.params, "embedding.weight");
    for (int64_t i = 0; i < emb->value.size; i++) in_range = in_range && fabsf(emb->value.data[i]) <= 0.1f;
    const Param *n1 = params_find(&m.params, "transformer_encoder.layers.1.norm1.weight");
    const Param *bias = params_find(&m.params, "linear.bias");
    ok = ok && expect_true(in_range, "an embedding weight outside +-0.1") &&
         expect_true(n1 && n1->value.data[0] == 1.0f, "norm1.weight does not start at 1") &&
         expect_true(bias->value.data[0] == 0.0f, "the decoder's bias does not start at 0");
    /* each block declared its own parameters: 1, 12 per layer, 2 */
    for (int k = 0; ok && k < m.blocks.count; k++) {
        const int want = k == 0 ? 1 : k <= small.layers ? 12 : 2;
        ok = expect_true(m.blocks.items[k].params == want, "block %d holds %d parameters, not %d",
                         k, m.blocks.items[k].params, want);
    }
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Loss and gradients of one step of a model built for T tokens, run at seq_len. */
static float step_at(const TransformerConfig *c, int B, int T, int seq_len, const int *tokens,
                     const int *targets, float *grads) {
    Transformer m;
    transformer_init(&m, c, B, T, 11);
    if (seq_len != T) transformer_set_seq_len(&m, seq_len);
    params_zero_grad(&m.params);
    const float loss = transformer_forward_backward(&m, tokens, targets);
    memcpy(grads, m.params.grads.data, sizeof(float) * (size_t)m.params.total);
    transformer_free(&m);
    return loss;
}

static void too_long(void *arg) {
    Transformer *m = arg;
    transformer_set_seq_len(m, m->T_max + 1);
}

static int check_shorter_batch(void) {
    const TransformerConfig c = {.vocab = 29, .d_model = 12, .heads = 3, .d_ff = 16, .layers = 2,
                                 .max_len = 16, .dropout = 0.25f};
    enum { B = 2, T = 9, SHORT = 5 };
    int tokens[B * SHORT], targets[B * SHORT];
    random_tokens(tokens, targets, B * SHORT, c.vocab, 3);
    const int64_t total = transformer_param_count(&c);
    float *want = xcalloc((size_t)total, sizeof(float)), *got = xcalloc((size_t)total, sizeof(float));
    const float a = step_at(&c, B, SHORT, SHORT, tokens, targets, want);
    const float b = step_at(&c, B, T, SHORT, tokens, targets, got);
    bool ok = expect_true(a == b, "built for %d tokens and run at %d: loss %.9g, built for %d: %.9g",
                          T, SHORT, (double)b, SHORT, (double)a) &&
              expect_true(memcmp(want, got, sizeof(float) * (size_t)total) == 0,
                          "built for %d tokens and run at %d: other gradients than a model "
                          "built for %d", T, SHORT, SHORT);
    Transformer m;
    transformer_init(&m, &c, B, T, 1);
    int all[B * T] = {0};
    transformer_set_seq_len(&m, 3);
    transformer_forward(&m, 0, m.last, all, NULL);
    const Tensor *probs = &blocks_saved(&m.blocks, &m.blocks.acts, 1)[ENCODER_PROBS];
    ok = ok && expect_true(probs->shape[2] == 3 && probs->shape[3] == 3 && transformer_logits(&m)->shape[0] == B * 3,
                           "at 3 tokens: attention [%d, %d] per head, %d rows of logits", probs->shape[2],
                           probs->shape[3], transformer_logits(&m)->shape[0]);
    transformer_set_seq_len(&m, T); /* back to the full length */
    transformer_forward(&m, 0, m.last, all, NULL);
    ok = ok && expect_true(m.N == B * T && probs->shape[3] == T && m.dlogits.shape[0] == B * T,
                           "after growing back to %d tokens: %d rows", T, m.N);
    ChildResult r;
    run_child(too_long, &m, &r);
    ok = ok && expect_exit("a batch longer than the model's", &r, 1, "built for 1 to 9",
                           (const char *)NULL);
    transformer_free(&m);
    xfree(want);
    xfree(got);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_activation_bytes(void) {
    const TransformerConfig c = {.vocab = 41, .d_model = 16, .heads = 4, .d_ff = 24, .layers = 3,
                                 .max_len = 32, .dropout = 0.1f};
    enum { B = 3, T = 10 };
    bool ok = true;
    const int blocks = transformer_block_count(&c);
    /* per token: the embedding's output and mask 2D; a layer's qkv 3D, attention
     * probabilities and their dropped copy 2 H T, ctx, a's mask, r1, y1, f's mask, r2, out
     * 7D, h and its mask 2F, two means and two deviations 4; the logits V */
    const double D = c.d_model, H = c.heads, F = c.d_ff, V = c.vocab;
    const double per_layer = 3 * D + 2 * H * T + 7 * D + 2 * F + 4;
    for (int first = 0; ok && first < blocks; first++) {
        double floats = 0;
        for (int k = first; k < blocks; k++) floats += k == 0 ? 2 * D : k <= c.layers ? per_layer : V;
        Transformer m;
        transformer_init_blocks(&m, &c, B, T, 1, first, blocks);
        const double counted = transformer_activation_floats_per_token(&c, T, first, blocks);
        const int64_t got = transformer_activation_bytes(&m);
        ok = expect_true((double)got == floats * 4.0 * B * T,
                         "blocks [%d, %d): %lld bytes of activations allocated, %.0f by the formula",
                         first, blocks, (long long)got, floats * 4.0 * B * T) &&
             expect_true(counted == floats, "blocks [%d, %d): %.1f floats per token counted, %.1f "
                         "by the formula", first, blocks, counted, floats);
        transformer_free(&m);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("transformer model");
    check_run(NULL, "the tutorial's TransformerModel vs PyTorch 1.13: hidden states, logits, loss, every gradient", check_against_pytorch, 30);
    check_run(NULL, "split into two stages at every cut, dropout on: the same loss and gradients, bit for bit", check_split, 60);
    check_run(NULL, "the same seed twice, another seed, evaluation without dropout", check_reproducible, 30);
    check_run(NULL, "bad heads or block ranges stop with a message; parameter counts; initialisation", check_errors_and_sizes, 30);
    check_run(NULL, "a shorter last batch gives what a model of that length gives, bit for bit", check_shorter_batch, 30);
    check_run(NULL, "activation bytes as allocated equal the count from the shapes", check_activation_bytes, 30);
    return check_end();
}
