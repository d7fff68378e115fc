/* The transformer's precision per run (issue 28): lib/models' blocks in float32, bf16
 * and fp16, lib/train/mixed_precision, the GPU peak table (lib/core/gpu_peak).
 *
 * The references:
 *  - the fused (flash) attention against the unfused layer inside the whole model, in
 *    float32, dropout on (the same masks by construction): the same loss and gradients
 *    within float32 sums taken in another order;
 *  - a bfloat16 model against the float32 one with the same weights: bf16 keeps 8
 *    significant bits (unit roundoff u = 2^-9), every stored activation is rounded once,
 *    so each value carries a relative error of a few u per layer it went through. The
 *    tolerances below are stated from u: the loss within 8u relative (1.6 %), each
 *    parameter gradient within 64u (12.5 %) in relative L2 norm (a gradient is a sum of
 *    products of rounded activations and rounded gradients, over a few layers). These
 *    are bounds chosen from u, not derived term by term: measured, the loss is 0.008 %
 *    off and the worst gradient 4.8 %, well inside them;
 *  - master weights: an SGD learning rate so small that each update is below a quarter
 *    of a bfloat16 step of every weight: a bf16-only model would not move at all; the
 *    float32 master moves by exactly lr g (SGD's rule), and the working copy is the
 *    master rounded (tensor_convert) after every step, so it changes once the master
 *    crosses half a bf16 step;
 *  - fp16 loss scaling: a scale of 2^40 overflows float16's 65504 in the loss gradient,
 *    so steps are skipped (counted), the scale halved each time, the weights untouched,
 *    until it fits; then steps are taken;
 *  - fp16's scaled loss gradient: S inside the cross-entropy, the 16-bit dlogits the
 *    float32 path's bits (round(S x gradient)), and no float32 [N, V] buffer for it;
 *  - refusals (a CNN in bf16, a 16-bit list without a working copy) end with a message;
 *  - the activation bytes of a bf16 model as allocated equal the count from its shapes;
 *  - the tensor-core peak table against the vendors' published peaks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/gpu_peak.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "models/encoder_block.h"
#include "models/transformer.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

enum { B = 3, T = 9, N = B * T };
static const double U = 1.0 / 512; /* bfloat16's unit roundoff, 2^-9 */

static TransformerConfig small(float dropout, bool fused) {
    return (TransformerConfig){.vocab = 53, .d_model = 16, .heads = 2, .d_ff = 24, .layers = 2,
                               .max_len = 32, .dropout = dropout, .fused_attention = fused};
}

static void random_tokens(int *tokens, int *targets, int n, int V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int i = 0; i < n; i++) tokens[i] = (int)rng_below(&rng, (uint32_t)V);
    for (int i = 0; i < n; i++) targets[i] = (int)rng_below(&rng, (uint32_t)V);
}

/* One forward and backward of a fresh model (seed 42) in `dtype`; its gradients into grads. */
static float one_step(const TransformerConfig *c, DType dtype, const int *tokens, const int *targets,
                      float *grads) {
    Transformer m;
    transformer_init(&m, c, B, T, 42);
    transformer_set_precision(&m, dtype);
    params_zero_grad(&m.params);
    const float loss = transformer_forward_backward(&m, tokens, targets);
    memcpy(grads, m.params.grads.data, sizeof(float) * (size_t)m.params.total);
    transformer_free(&m);
    return loss;
}

static int check_fused_float32(void) {
    int tokens[N], targets[N];
    bool ok = true;
    for (int d = 0; d < 2 && ok; d++) {
        const float p = d ? 0.2f : 0.0f;
        const TransformerConfig plain = small(p, false), fused = small(p, true);
        random_tokens(tokens, targets, N, plain.vocab, 7);
        const int64_t n = transformer_param_count(&plain);
        float *a = xcalloc((size_t)n, sizeof(float)), *b = xcalloc((size_t)n, sizeof(float));
        const float la = one_step(&plain, DTYPE_F32, tokens, targets, a);
        const float lb = one_step(&fused, DTYPE_F32, tokens, targets, b);
        check_show("dropout %.1f: loss unfused %.9g, fused %.9g", (double)p, (double)la, (double)lb);
        ok = expect_true(fabsf(la - lb) <= 1e-5f * la, "dropout %.1f: loss unfused %.9g, fused %.9g",
                         (double)p, (double)la, (double)lb) &&
             expect_close("gradients fused against unfused", b, a, n, 1e-5f, 1e-4f);
        xfree(a), xfree(b);
    }
    Transformer m; /* the fused model keeps lse [B, H, T], not the weights [B, H, T, T] */
    const TransformerConfig fused = small(0.2f, true);
    transformer_init(&m, &fused, B, T, 1);
    const Tensor *lse = &blocks_saved(&m.blocks, &m.blocks.acts, 1)[ENCODER_LSE];
    ok = ok && expect_true(m.blocks.acts.saved_count[1] == ENCODER_SAVED_FUSED && lse->ndim == 3 &&
                               lse->shape[2] == T && lse->dtype == DTYPE_F32,
                           "the fused layer saves %d tensors, lse of %d dimensions", m.blocks.acts.saved_count[1],
                           lse->ndim);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The relative L2 distance of got from want over n values. */
static double rel_l2(const float *got, const float *want, int64_t n) {
    double d = 0, w = 0;
    for (int64_t i = 0; i < n; i++) d += ((double)got[i] - want[i]) * ((double)got[i] - want[i]), w += (double)want[i] * want[i];
    return w > 0 ? sqrt(d / w) : sqrt(d);
}

static int check_bf16_against_f32(void) {
    const TransformerConfig c = small(0.1f, false);
    int tokens[N], targets[N];
    random_tokens(tokens, targets, N, c.vocab, 11);
    const int64_t n = transformer_param_count(&c);
    float *want = xcalloc((size_t)n, sizeof(float)), *got = xcalloc((size_t)n, sizeof(float));
    const float l32 = one_step(&c, DTYPE_F32, tokens, targets, want);
    const float l16 = one_step(&c, DTYPE_BF16, tokens, targets, got);
    bool ok = expect_true(fabs((double)l16 - l32) <= 8 * U * l32, "loss bf16 %.6g, float32 %.6g: "
                          "more than 8u = %.2g%% apart", (double)l16, (double)l32, 800 * U);
    check_show("loss bf16 %.6g, float32 %.6g (%.3f%%, tolerance %.2f%%)", (double)l16, (double)l32,
               100 * fabs((double)l16 - l32) / l32, 800 * U);
    Transformer m; /* the parameters' names and places */
    transformer_init(&m, &c, B, T, 42);
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m.params.count; i++) {
        const Param *p = m.params.items[i];
        const double e = rel_l2(got + p->offset, want + p->offset, p->grad.size);
        if (e > worst) worst = e, worst_name = p->name;
        ok = expect_true(e <= 64 * U, "the gradient of %s in bf16 is %.3g (relative L2) from "
                         "float32's: more than 64u = %.3g", p->name, e, 64 * U) && ok;
    }
    check_show("gradients: worst relative L2 distance %.4f (%s), tolerance %.4f", worst, worst_name, 64 * U);
    transformer_free(&m);
    xfree(want), xfree(got);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The smallest positive gap between w and its bfloat16 neighbours (one bf16 step). */
static double bf16_step(float w) {
    const float a = fabsf(w);
    if (a == 0.0f) return 0.0;
    int e;
    frexpf(a, &e); /* a in [2^(e-1), 2^e): 8 significant bits, a step of 2^(e-8) */
    return ldexp(1.0, e - 8);
}

/* The model of these checks without dropout at dtype, and a batch for it from seed. */
static TransformerConfig tiny_model(Transformer *m, DType dtype, int *tokens, int *targets,
                                   uint64_t seed) {
    const TransformerConfig c = small(0.0f, false);
    random_tokens(tokens, targets, N, c.vocab, seed);
    transformer_init(m, &c, B, T, 42);
    transformer_set_precision(m, dtype);
    return c;
}

static int check_master_weights(void) {
    int tokens[N], targets[N];
    Transformer m;
    tiny_model(&m, DTYPE_BF16, tokens, targets, 13);
    MixedPrecision mp;
    mixed_precision_init(&mp, DTYPE_BF16, &m.blocks, &m.params);
    params_zero_grad(&m.params);
    transformer_forward_backward(&m, tokens, targets);
    const int64_t n = m.params.total;
    /* lr: every update at most a quarter of its weight's bf16 step (weights of 0, the biases
     * that start there, left out: any update moves those) */
    double lr = 1.0;
    for (int64_t i = 0; i < n; i++) {
        const double g = fabs((double)m.params.grads.data[i]), s = bf16_step(m.params.values.data[i]);
        if (g > 0 && s > 0 && 0.25 * s / g < lr) lr = 0.25 * s / g;
    }
    float *start = xmalloc(sizeof(float) * (size_t)n);
    memcpy(start, m.params.values.data, sizeof(float) * (size_t)n);
    Tensor start16 = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, (int)n), want16 = tensor_zeros_like(&start16);
    tensor_copy(&start16, &m.params.working);
    Sgd sgd;
    sgd_init(&sgd, &m.params, (float)lr, 0.0f, 0.0f);
    int64_t lost = 0, nonzero = 0, moved = 0, rule_moves = 0, follows = 0, changed = 0;
    for (int64_t i = 0; i < n; i++) { /* a bf16-only step: round(w16 - lr g) */
        const float w16 = dtype_f32_from_bf16(start16.bits16[i]);
        const float g = m.params.grads.data[i];
        if (g == 0.0f || start[i] == 0.0f) continue;
        nonzero++;
        lost += dtype_bf16_from_f32(w16 - (float)lr * g) == start16.bits16[i];
    }
    bool ok = true;
    const int steps = 8;
    for (int k = 1; k <= steps && ok; k++) { /* the same gradient each step */
        sgd_step(&sgd, &m.params);
        mixed_precision_step_done(&mp);
        tensor_convert(&want16, &m.params.values);
        ok = expect_true(memcmp(want16.bits16, m.params.working.bits16, 2 * (size_t)n) == 0,
                         "step %d: the working copy is not the master rounded", k);
    }
    for (int64_t i = 0; i < n && ok; i++) {
        const float g = m.params.grads.data[i];
        if (g == 0.0f || start[i] == 0.0f) continue;
        float w = start[i]; /* SGD's rule, step by step in float32 */
        for (int k = 0; k < steps; k++) w -= (float)lr * g;
        moved += m.params.values.data[i] != start[i];
        rule_moves += w != start[i]; /* an update below half a float32 step is lost there too */
        follows += m.params.values.data[i] == w;
        changed += m.params.working.bits16[i] != start16.bits16[i];
    }
    check_show("lr %.3g: a bf16-only step loses %lld of %lld updates; after %d steps the master moved "
               "%lld (SGD's rule in float32: %lld, its values: %lld), the bf16 copy changed %lld", lr,
               (long long)lost, (long long)nonzero, steps, (long long)moved, (long long)rule_moves,
               (long long)follows, (long long)changed);
    ok = ok && expect_true(lost == nonzero, "a bf16-only step keeps %lld of %lld updates",
                           (long long)(nonzero - lost), (long long)nonzero) &&
         expect_true(moved == rule_moves && follows == nonzero && moved > nonzero / 2,
                     "the float32 master moved %lld (SGD's rule: %lld) and equals SGD's values "
                     "%lld of %lld", (long long)moved, (long long)rule_moves, (long long)follows,
                     (long long)nonzero) &&
         expect_true(changed > 0 && changed < nonzero, "the bf16 copy changed %lld of %lld "
                     "(crossing half a step in 8 quarter steps: some, not all)", (long long)changed,
                     (long long)nonzero);
    sgd_free(&sgd);
    mixed_precision_free(&mp);
    tensor_free(&start16), tensor_free(&want16);
    xfree(start);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* bf16, then float32 for a few steps, then bf16 again: the working copy kept from the
 * first bf16 run must be the trained values rounded, not what they were back then. */
static int check_toggle(void) {
    int tokens[N], targets[N];
    Transformer m;
    tiny_model(&m, DTYPE_BF16, tokens, targets, 17);
    transformer_set_precision(&m, DTYPE_F32);
    Sgd sgd;
    sgd_init(&sgd, &m.params, 0.5f, 0.0f, 0.0f);
    for (int k = 0; k < 3; k++) {
        params_zero_grad(&m.params);
        transformer_forward_backward(&m, tokens, targets);
        sgd_step(&sgd, &m.params);
    }
    transformer_set_precision(&m, DTYPE_BF16);
    Tensor want = tensor_zeros_like(&m.params.working);
    tensor_convert(&want, &m.params.values);
    const bool ok = expect_true(memcmp(want.bits16, m.params.working.bits16,
                                       2 * (size_t)m.params.total) == 0,
                                "back in bf16 after float32 steps: the working copy is stale");
    tensor_free(&want);
    sgd_free(&sgd);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_fp16_scaling(void) {
    int tokens[N], targets[N];
    Transformer m;
    tiny_model(&m, DTYPE_F16, tokens, targets, 17);
    MixedPrecision mp; /* 2^40: the loss gradient (about 1/N) times it overflows 65504 */
    mixed_precision_init_scaled(&mp, DTYPE_F16, &m.blocks, &m.params, ldexpf(1.0f, 40), 2000);
    mixed_precision_unscale_after_backward(&mp); /* as lesson 04 runs it */
    Sgd sgd;
    sgd_init(&sgd, &m.params, 0.1f, 0.0f, 0.0f);
    float *before = xmalloc(sizeof(float) * (size_t)m.params.total);
    bool ok = true;
    int skipped = 0, taken = 0;
    float first = 0, last = 0;
    for (int k = 0; k < 40 && ok; k++) {
        memcpy(before, m.params.values.data, sizeof(float) * (size_t)m.params.total);
        const float scale = mixed_precision_scale(&mp);
        params_zero_grad(&m.params);
        const float loss = transformer_forward_backward(&m, tokens, targets);
        if (k == 0) first = loss;
        last = loss;
        const bool step = mixed_precision_should_step(&mp);
        if (step) sgd_step(&sgd, &m.params);
        mixed_precision_step_done(&mp);
        if (!step) {
            skipped++;
            ok = expect_true(memcmp(before, m.params.values.data, sizeof(float) * (size_t)m.params.total) == 0,
                             "a skipped step changed the weights") &&
                 expect_true(mixed_precision_scale(&mp) == scale / 2, "after a skip the scale is %g, "
                             "expected %g", (double)mixed_precision_scale(&mp), (double)scale / 2) &&
                 expect_true(taken == 0, "a step skipped after one was taken at scale %g", (double)scale);
        } else {
            taken++;
        }
    }
    check_show("scale 2^40 -> 2^%d after %d skips (counted %lld), %d steps taken, loss %.4f -> %.4f",
               (int)log2f(mixed_precision_scale(&mp)), skipped, (long long)mixed_precision_skipped(&mp),
               taken, (double)first, (double)last);
    ok = ok && expect_true(skipped >= 20 && mixed_precision_skipped(&mp) == skipped,
                           "%d skips, %lld counted (2^40 needs at least 20 halvings to fit 65504)",
                           skipped, (long long)mixed_precision_skipped(&mp)) &&
         expect_true(taken > 0 && last < first, "%d steps taken, loss %g -> %g", taken,
                     (double)first, (double)last);
    xfree(before);
    sgd_free(&sgd);
    mixed_precision_free(&mp);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* fp16's scaled loss gradient (GradScaler's 65536) through the model's loss: the 16-bit
 * dlogits is round(S x the float32 gradient of the logits read exactly), written by the
 * cross-entropy from the 16-bit logits, with no float32 [N, V] buffer (the list's dloss32
 * stays empty). The definition, computed here: the logits converted, the float32 layer
 * with S = 1, times S (a power of two: exact for every entry above float32's subnormals,
 * asserted), rounded once: the bits of the float32 path this replaced, and of the layer
 * given S. The pipeline's blocks_loss_f32 still gives those float32 values (in dloss32). */
static int check_fp16_loss_in_place(void) {
    int tokens[N], targets[N];
    Transformer m;
    const TransformerConfig c = tiny_model(&m, DTYPE_F16, tokens, targets, 23);
    MixedPrecision mp;
    mixed_precision_init(&mp, DTYPE_F16, &m.blocks, &m.params);
    const float S = m.blocks.loss_scale;
    params_zero_grad(&m.params);
    const float loss = transformer_forward_backward(&m, tokens, targets);
    const Tensor *logits = transformer_logits(&m);
    bool ok = expect_true(S == 65536.0f, "loss scale %g, expected GradScaler's 65536", (double)S) &&
              expect_true(m.blocks.dloss32.raw == NULL && m.blocks.dloss32.size == 0,
                          "a float32 loss buffer of %lld floats after an fp16 step",
                          (long long)m.blocks.dloss32.size) &&
              expect_true(m.dlogits.dtype == DTYPE_F16 && logits->dtype == DTYPE_F16 &&
                          m.dlogits.size == (int64_t)N * c.vocab, "dlogits: %s, %lld entries",
                          dtype_name(m.dlogits.dtype), (long long)m.dlogits.size);
    Tensor x = tensor_zeros(2, N, c.vocab), g = tensor_zeros(2, N, c.vocab);
    Tensor gs = tensor_zeros(2, N, c.vocab), want = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, N, c.vocab);
    tensor_convert(&x, logits);
    const float want_loss = softmax_cross_entropy_fast_store(&g, &x, targets, 1.0f);
    int64_t tiny = 0, kept = 0;
    for (int64_t i = 0; i < g.size; i++) {
        tiny += g.data[i] != 0.0f && fabsf(g.data[i]) < 0x1p-126f;
        gs.data[i] = S * g.data[i];
        kept += fabsf(g.data[i]) < 0x1p-25f && gs.data[i] != 0.0f; /* 0 in fp16 unscaled */
    }
    tensor_convert(&want, &gs);
    ok = ok && expect_true(tiny == 0, "%lld float32 gradients below 2^-126", (long long)tiny) &&
         expect_true(dtype_bits_of_f32(loss) == dtype_bits_of_f32(want_loss),
                     "loss %.9g, the float32 layer on the converted logits %.9g", (double)loss,
                     (double)want_loss) &&
         expect_true(memcmp(m.dlogits.bits16, want.bits16, sizeof(uint16_t) * (size_t)want.size) == 0,
                     "dlogits is not round(S x the float32 gradient) bit for bit");
    Tensor direct = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, N, c.vocab);
    softmax_cross_entropy_fast_store(&direct, logits, targets, S);
    ok = ok && expect_true(memcmp(direct.bits16, want.bits16, sizeof(uint16_t) * (size_t)want.size) == 0,
                           "the layer given S on the fp16 logits differs from the definition");
    /* the pipeline's float32 loss gradient: the same values before their rounding */
    Tensor g32 = blocks_dloss_f32(&m.blocks);
    const float loss32 = blocks_loss_f32(&m.blocks, logits, targets, &g32);
    ok = ok && expect_true(loss32 == loss && memcmp(g32.data, gs.data, sizeof(float) * (size_t)gs.size) == 0,
                           "blocks_loss_f32: loss %.9g (%.9g), or its float32 gradient is not S x "
                           "the layer's", (double)loss32, (double)loss) &&
         expect_true(m.blocks.dloss32.size == 2 * m.blocks.dloss.size,
                     "the pipeline's float32 buffers: %lld floats", (long long)m.blocks.dloss32.size);
    check_show("%lld of %lld dlogits entries would be 0 in float16 unscaled and are kept; no "
               "float32 [N, V] buffer until blocks_loss_f32", (long long)kept, (long long)want.size);
    FREE_ALL(&x, &g, &gs, &want, &direct);
    mixed_precision_free(&mp);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void cnn_in_bf16(void *arg) {
    (void)arg;
    Cnn m;
    Rng rng;
    rng_seed(&rng, 1, 0);
    cnn_init(&m, 1, 28, 28, 10, 100, &rng);
    blocks_set_precision(&m.blocks, DTYPE_BF16);
}

static void no_working_copy(void *arg) {
    (void)arg;
    const TransformerConfig c = small(0.0f, false);
    Transformer m;
    transformer_init(&m, &c, B, T, 1);
    blocks_set_precision(&m.blocks, DTYPE_BF16); /* the blocks only: no params_set_working */
    int tokens[N] = {0};
    transformer_forward(&m, 0, m.last, tokens, NULL);
}

static int check_refusals(void) {
    ChildResult r;
    run_child(cnn_in_bf16, NULL, &r);
    bool ok = expect_exit("a CNN in bfloat16", &r, 1, "runs in float32 only", "bfloat16", (const char *)NULL);
    run_child(no_working_copy, NULL, &r);
    ok = expect_exit("a bf16 list without a working copy", &r, 1, "params_set_working",
                     (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_bytes(void) {
    const TransformerConfig c = small(0.1f, false);
    const int blocks = transformer_block_count(&c);
    Transformer m;
    transformer_init(&m, &c, B, T, 1);
    const double f32 = (double)transformer_activation_bytes(&m);
    transformer_set_precision(&m, DTYPE_BF16);
    const double bf16 = (double)transformer_activation_bytes(&m);
    const double counted = transformer_activation_bytes_per_token(&c, T, 0, blocks, DTYPE_BF16) * N;
    check_show("activations: float32 %.0f bytes, bf16 %.0f as allocated, %.0f counted", f32, bf16, counted);
    bool ok = expect_true(bf16 == counted, "bf16: %.0f bytes allocated, %.0f counted", bf16, counted) &&
              expect_true(bf16 < f32, "bf16 activations take %.0f bytes, float32 %.0f", bf16, f32);
    transformer_free(&m);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_peak(void) {
    const struct { const char *name; int major, minor, sms; double ghz, tflops; DType dtype; } gpus[] = {
        {"V100 fp16", 7, 0, 80, 1.53, 125, DTYPE_F16},  {"A100 bf16", 8, 0, 108, 1.41, 312, DTYPE_BF16},
        {"A40 bf16", 8, 6, 84, 1.74, 149.7, DTYPE_BF16}, {"L40S bf16", 8, 9, 142, 2.52, 362, DTYPE_BF16},
        {"H100 SXM bf16", 9, 0, 132, 1.83, 989, DTYPE_BF16},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        const double got = gpu_tensor_peak_flops(gpus[i].major, gpus[i].minor, gpus[i].sms,
                                                 (int)(gpus[i].ghz * 1e6), gpus[i].dtype) / 1e12;
        ok = expect_true(fabs(got - gpus[i].tflops) <= 0.015 * gpus[i].tflops, "%s: %.1f TFLOP/s "
                         "by the formula, %.1f published", gpus[i].name, got, gpus[i].tflops) && ok;
    }
    ok = expect_true(!gpu_supports_precision(7, 5, DTYPE_BF16) && gpu_supports_precision(7, 0, DTYPE_F16) &&
                         !gpu_supports_precision(6, 1, DTYPE_F16) && gpu_supports_precision(8, 0, DTYPE_BF16) &&
                         gpu_tensor_peak_flops(7, 5, 40, 1590000, DTYPE_BF16) == 0,
                     "bf16 from 8.0, fp16 from 7.0") && ok;
    /* float32 on the FP32 lanes: NVIDIA's published 67 (H100 SXM) and 19.5 (A100) */
    const double h100 = gpu_fp32_peak_flops(9, 0, 132, 1980000) / 1e12, a100 = gpu_fp32_peak_flops(8, 0, 108, 1410000) / 1e12;
    ok = expect_true(fabs(h100 - 66.9) < 0.1 && fabs(a100 - 19.5) < 0.1 && gpu_fp32_peak_flops(9, 0, 132, 0) == 0 &&
                         gpu_fp32_peak_flops(5, 2, 24, 1000000) == 0,
                     "float32 peaks: H100 %.1f TFLOP/s (67 published), A100 %.1f (19.5); unknown clock or "
                     "architecture 0", h100, a100) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("transformer precision");
    check_run(NULL, "float32: the fused attention inside the model = the unfused one (dropout 0 and 0.2), to float32 sums", check_fused_float32, 60);
    check_run(NULL, "bf16 forward and backward against float32: loss within 8u, each gradient within 64u (u = 2^-9)", check_bf16_against_f32, 60);
    check_run(NULL, "master weights: an lr a bf16-only step loses moves the float32 master by SGD's rule; the bf16 copy follows", check_master_weights, 60);
    check_run(NULL, "bf16, float32 steps, bf16 again: the working copy is the trained values rounded", check_toggle, 60);
    check_run(NULL, "fp16 loss scaling: 2^40 overflows, steps skipped and counted, scale halved, weights kept; then training", check_fp16_scaling, 60);
    check_run(NULL, "fp16 loss scaled inside the cross-entropy: dlogits = round(S x float32 gradient) bit for bit, no float32 [N, V] buffer", check_fp16_loss_in_place, 60);
    check_run(NULL, "a CNN in bf16 and a bf16 model without a working copy stop with a message", check_refusals, 30);
    check_run(NULL, "bf16 activation bytes as allocated equal the count from the shapes, fewer than float32's", check_bytes, 30);
    check_run(NULL, "the dense tensor-core peak against V100, A100, A40, L40S and H100's published numbers; the FP32 peak against H100 and A100", check_peak, 10);
    return check_end();
}
