/* Given: the program's two mixed-precision modes, which run your TODOs 10.7-10.9.
 *
 *   train --precision-demo [--values 1000000]
 *       rounding to nearest even against truncation over many values (the mean error:
 *       a bias, or none), the master-weights case (an update below half a bf16 step),
 *       the float16 loss scale over a scripted run (overflows, a NaN, growth)
 *   train --compare-precision [--device cpu|cuda] [--steps 6] [lm options]
 *       lesson 04's transformer trained a few steps in float32, then in bfloat16 (float32
 *       master weights): tokens/s, loss, bytes, MFU (on a GPU: against its bf16 tensor
 *       peak, the one denominator for both rows) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/gpu_peak.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "lesson.h"
#include "models/transformer.h"
#include "train/clip.h"
#include "train/lm_options.h"
#include "train/mixed_precision.h"
#include "train/precision_gpu.h"

/* ---------------------------------------------------------------- --precision-demo */

/* RNE (your TODO 10.7) and truncation over `count` values (1 + u) 2^e, e in [-20, 20]:
 * the mean relative error is the bias; the sum of all of them shows where it goes. */
static void demo_rounding(int64_t count) {
    Rng rng;
    rng_seed(&rng, 10, 7);
    double mean[2] = {0, 0}, mean_abs[2] = {0, 0}, sum = 0, sum16[2] = {0, 0};
    for (int64_t i = 0; i < count; i++) {
        const float x = ldexpf(1.0f + rng_uniform(&rng), (int)rng_below(&rng, 41) - 20);
        const float rounded[2] = {lesson_f32_from_bf16(lesson_bf16_from_f32(x)),
                                  dtype_f32_of_bits(dtype_bits_of_f32(x) & 0xffff0000u)}; /* cut */
        sum += x;
        for (int k = 0; k < 2; k++) {
            const double rel = ((double)rounded[k] - x) / x;
            mean[k] += rel / (double)count, mean_abs[k] += fabs(rel) / (double)count;
            sum16[k] += rounded[k];
        }
    }
    print0("bfloat16 rounding of %lld values (1 + u) 2^e, relative errors (a bf16 step is 2^-7 = "
           "0.0078 of [1, 2)):\n", (long long)count);
    const char *names[2] = {"round to nearest even (yours)", "truncation (low 16 bits cut)"};
    for (int k = 0; k < 2; k++)
        print0("  %-30s mean error %+.6f (bias), mean |error| %.6f, their sum off by %+.4f%%\n",
               names[k], mean[k], mean_abs[k], 100.0 * (sum16[k] - sum) / sum);
}

/* The docs' case: SGD, lr 1e-3, gradient 1, on weights in [1, 2), 100 steps: bf16 weights
 * alone, and your master step (TODO 10.8). */
static void demo_master(void) {
    enum { N = 64, STEPS = 100 };
    const float lr = 1e-3f;
    float master[N], grad[N], start[N];
    uint16_t work[N], alone[N];
    for (int k = 0; k < N; k++) {
        start[k] = 1.0f + (float)k / N; /* 1, 1.015625, ... exact in bf16 */
        grad[k] = 1.0f;
        master[k] = start[k];
        work[k] = alone[k] = lesson_bf16_from_f32(start[k]);
    }
    int first_move = 0, lost = 0;
    for (int s = 1; s <= STEPS; s++) {
        for (int k = 0; k < N; k++) { /* bf16 only: the update rounded away */
            const uint16_t next = lesson_bf16_from_f32(lesson_f32_from_bf16(alone[k]) - lr * grad[k]);
            lost += next == alone[k];
            alone[k] = next;
        }
        const uint16_t before = work[23];
        lesson_master_step(master, work, grad, N, lr);
        if (!first_move && work[23] != before) first_move = s;
    }
    print0("master weights: SGD lr %g, gradient 1, %d weights in [1, 2), %d steps (each update is "
           "below half a bf16 step):\n", (double)lr, N, STEPS);
    print0("  bf16 weights alone: %d of %d updates rounded away; w[23] stays %.7g\n", lost,
           N * STEPS, (double)lesson_f32_from_bf16(alone[23]));
    print0("  float32 master: w[23] %.7g -> %.7g (%.7g by the rule, in double); its bf16 copy "
           "%.7g, first moved at step %d\n", (double)start[23], (double)master[23],
           (double)start[23] - STEPS * 1e-3, (double)lesson_f32_from_bf16(work[23]), first_move);
}

/* float16 loss scaling over 12 scripted steps (your TODO 10.9): 4,096 gradients in
 * [1e-9, 1e-2) and one of 1.5 (so S = 65536 overflows float16's 65504), each scaled by S,
 * rounded to float16 (the backward's output), back to float32, then unscaled; step 8's
 * has a NaN (0 x inf somewhere). Growth after 3 clean steps (GradScaler's 2,000, shortened). */
static void demo_scaling(void) {
    enum { N = 4096, STEPS = 12, NAN_STEP = 8 };
    static float g_true[N], g[N];
    Rng rng;
    rng_seed(&rng, 10, 8);
    for (int k = 0; k < N; k++) g_true[k] = expf(logf(1e-9f) + rng_uniform(&rng) * logf(1e7f));
    g_true[0] = 1.5f;
    int zeros_unscaled = 0;
    for (int k = 0; k < N; k++) zeros_unscaled += dtype_f16_from_f32(g_true[k]) == 0;
    print0("float16 loss scaling: %d gradients in [1e-9, 1e-2) and one of 1.5; unscaled (S = 1) "
           "%d of them are 0 in float16\n", N, zeros_unscaled);
    print0("  %4s %8s %12s %8s %8s %13s\n", "step", "S", "1.5 S (fp16)", "inf/NaN", "step", "0 in fp16");
    LossScaler ls;
    loss_scale_init_with(&ls, 65536.0f, 2.0f, 0.5f, 3);
    for (int s = 1; s <= STEPS; s++) {
        const float S = ls.scale;
        int zeros = 0;
        for (int k = 0; k < N; k++) {
            const uint16_t h = dtype_f16_from_f32(g_true[k] * S);
            zeros += h == 0;
            g[k] = dtype_f32_from_f16(h);
        }
        if (s == NAN_STEP) g[17] = NAN;
        const float big = g[0];
        const bool found = lesson_unscale(g, N, S);
        lesson_scale_update(&ls, found);
        char note[48] = ""; /* the reader's clue to the skip the overflow does not explain */
        if (s == NAN_STEP) snprintf(note, sizeof note, "   (a NaN planted at step %d)", s);
        print0("  %4d %8g %12g %8s %8s %13d%s\n", s, (double)S, (double)big, found ? "yes" : "no",
               found ? "skipped" : "taken", zeros, note);
    }
    print0("  %lld steps taken, %lld skipped, S now %g\n", (long long)ls.steps_taken,
           (long long)ls.steps_skipped, (double)ls.scale);
}

/* ---------------------------------------------------------------- --compare-precision */

typedef struct {
    const char *name;
    double tokens_per_s, train_loss, valid_loss, weight_bytes, activation_bytes, mfu;
} Row;

/* Batch i of `data` (get_batch at row i T, wrapped), as the model's batch-major rows. */
static void batch_rows(const TextBatches *data, int64_t i, int T, int *tokens, int *targets) {
    const int64_t starts = (data->rows - 1) / T;
    const TextBatch b = text_get_batch(data, (i % starts) * T, T);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < b.cols; c++)
            tokens[c * T + t] = b.input[t * b.cols + c], targets[c * T + t] = b.target[t * b.cols + c];
}

typedef struct {
    const TransformerConfig *cfg;
    const TextBatches *train, *valid;
    int B, T, steps, seed;
    Device device;
    double peak; /* FLOP/s for the MFU (0: none) */
} Compare;

/* On the GPU, the tokens are copied into device memory first. */
static const int *on_device(const Compare *c, const int *host, int *dev, size_t n) {
    if (c->device == DEVICE_CPU) return host;
    cuda_copy_to_device(dev, host, n * sizeof(int));
    return dev;
}

static void wait_for(Device d) {
    if (d != DEVICE_CPU) cuda_sync();
}

/* c->steps timed steps (after one untimed) of lesson 04's step: forward, loss, backward,
 * clip 0.5, SGD lr 5; in bf16 the working copy refreshed after each (mixed_precision.h). */
static Row compare_run(const Compare *c, DType dtype) {
    const int N = c->B * c->T;
    Row row = {.name = dtype_name(dtype)};
    Transformer m;
    transformer_init(&m, c->cfg, c->B, c->T, (uint64_t)c->seed);
    transformer_set_precision(&m, dtype);
    if (c->device != DEVICE_CPU) transformer_to_device(&m, c->device);
    MixedPrecision mp;
    mixed_precision_init(&mp, dtype, &m.blocks, &m.params);
    Sgd opt;
    sgd_init(&opt, &m.params, 5.0f, 0.0f, 0.0f);
    int *tokens = xcalloc((size_t)N, sizeof(int)), *targets = xcalloc((size_t)N, sizeof(int));
    int *dev_tokens = NULL, *dev_targets = NULL;
    if (c->device != DEVICE_CPU) {
        dev_tokens = cuda_malloc((size_t)N * sizeof(int));
        dev_targets = cuda_malloc((size_t)N * sizeof(int));
    }
    double seconds = 0, loss_sum = 0;
    for (int s = 0; s <= c->steps; s++) { /* step 0: untimed (first touches, caches) */
        batch_rows(c->train, s, c->T, tokens, targets);
        const int *x = on_device(c, tokens, dev_tokens, (size_t)N);
        const int *y = on_device(c, targets, dev_targets, (size_t)N);
        wait_for(c->device);
        const double t0 = now_seconds();
        params_zero_grad(&m.params);
        const float loss = transformer_forward_backward(&m, x, y);
        mixed_precision_unscale(&mp);
        clip_grad_norm(&m.params, 0.5f);
        if (mixed_precision_should_step(&mp)) sgd_step(&opt, &m.params);
        mixed_precision_step_done(&mp);
        wait_for(c->device);
        if (s > 0) seconds += now_seconds() - t0, loss_sum += loss;
        if (!isfinite(loss)) fatal("%s: the loss is %g at step %d", row.name, (double)loss, s);
    }
    row.tokens_per_s = (double)c->steps * N / seconds;
    row.train_loss = loss_sum / c->steps;
    const int64_t valid_batches = lm_full_batches(c->valid, c->T) < 4 ? lm_full_batches(c->valid, c->T) : 4;
    transformer_eval(&m);
    double vsum = 0;
    for (int64_t i = 0; i < valid_batches; i++) {
        batch_rows(c->valid, i, c->T, tokens, targets);
        transformer_forward(&m, 0, transformer_block_count(c->cfg),
                            on_device(c, tokens, dev_tokens, (size_t)N), NULL);
        vsum += transformer_loss(&m, on_device(c, targets, dev_targets, (size_t)N));
    }
    row.valid_loss = valid_batches > 0 ? vsum / (double)valid_batches : NAN;
    const int64_t P = params_count(&m.params);
    row.weight_bytes = (double)P * (4 + 4) + (m.params.working.raw ? (double)P * dtype_size(dtype) : 0);
    row.activation_bytes = (double)transformer_activation_bytes(&m);
    double costs[64] = {0}, flops = 0;
    transformer_block_costs(c->cfg, c->T, costs);
    for (int k = 0; k < transformer_block_count(c->cfg); k++) flops += 3 * costs[k];
    row.mfu = c->peak > 0 ? flops * row.tokens_per_s / c->peak : 0;
    if (dev_tokens) cuda_free(dev_tokens), cuda_free(dev_targets);
    xfree(tokens);
    xfree(targets);
    sgd_free(&opt);
    mixed_precision_free(&mp);
    transformer_free(&m);
    return row;
}

static void compare_precision(const LmOptions *lm, const char *dataset, const char *data,
                              const char *device, int batch, int steps, int seed) {
    const bool gpu = strcmp(device, "cuda") == 0;
    if (gpu) cuda_require(); /* fails here, clearly, in a build without CUDA or no GPU */
    TextCorpus corpus;
    TextBatches train, valid;
    lm_load_text(lm, dataset, data, batch, &corpus, &train, &valid);
    const TransformerConfig cfg = lm_model_config(lm, "tutorial", corpus.vocab.count);
    if (transformer_block_count(&cfg) > 64) fatal("--layers %d: at most 62 here", cfg.layers);
    Compare c = {.cfg = &cfg, .train = &train, .valid = &valid, .B = batch, .T = lm->bptt,
                 .steps = steps, .seed = seed, .device = gpu ? DEVICE_CUDA : DEVICE_CPU};
    print0("model: lesson 04's transformer, %lld parameters (width %d, %d layers, vocabulary %d), "
           "batch %d x %d, SGD lr 5, clip 0.5, %d timed steps each, on the %s\n",
           (long long)transformer_param_count(&cfg), cfg.d_model, cfg.layers, cfg.vocab, batch,
           lm->bptt, steps, gpu ? "GPU" : "CPU");
    if (gpu) {
        precision_require_gpu(NULL, DTYPE_BF16, "bf16", "--device cpu"); /* tensor cores from 8.0 */
        CudaDeviceInfo g;
        cuda_device_info(cuda_current_device(), &g);
        c.peak = gpu_tensor_peak_flops(g.major, g.minor, g.multiprocessors, g.clock_khz, DTYPE_BF16);
        print0("GPU: %s, bf16 dense tensor peak %.0f TFLOP/s (both rows' MFU against it)\n", g.name,
               c.peak / 1e12);
    }
    const Row rows[2] = {compare_run(&c, DTYPE_F32), compare_run(&c, DTYPE_BF16)};
    print0("%-9s %10s %10s %10s %13s %13s %7s\n", "precision", "tokens/s", "train loss",
           "valid loss", "weights MB", "activations MB", "MFU");
    for (int k = 0; k < 2; k++) {
        char mfu[16] = "-";
        if (rows[k].mfu > 0) snprintf(mfu, sizeof mfu, "%.2f%%", 100 * rows[k].mfu);
        print0("%-9s %10.0f %10.4f %10.4f %13.2f %13.2f %7s\n", rows[k].name, rows[k].tokens_per_s,
               rows[k].train_loss, rows[k].valid_loss, rows[k].weight_bytes / 1e6,
               rows[k].activation_bytes / 1e6, mfu);
    }
    print0("bf16 / fp32: %.2fx the tokens/s, %.2fx the activation bytes; weights: float32 values "
           "and gradients, plus the bf16 working copy%s\n",
           rows[1].tokens_per_s / rows[0].tokens_per_s, rows[1].activation_bytes / rows[0].activation_bytes,
           gpu ? "" : " (on the CPU bf16 is converted, not computed natively: no speed-up expected)");
    text_batches_free(&train);
    text_batches_free(&valid);
    text_free(&corpus);
}

/* ---------------------------------------------------------------- the mode */

int precision_main(int argc, char **argv) {
    int demo = 0, compare = 0, values = 1000000, batch = 20, steps = 6, seed = 42,
        threads = omp_get_max_threads();
    const char *dataset = "auto", *data = "", *device = "cpu";
    LmOptions lm = lm_options_defaults();
    enum { OWN = 10 };
    ArgSpec specs[OWN + LM_OPTION_SPECS] = {
        {"precision-demo", ARG_FLAG, &demo, "rounding, master weights and loss scaling, shown with your TODOs 10.7-10.9", NULL},
        {"compare-precision", ARG_FLAG, &compare, "lesson 04's model a few steps in float32, then bfloat16", NULL},
        {"values", ARG_INT, &values, "--precision-demo: values rounded", NULL},
        {"dataset", ARG_CHOICE, &dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"device", ARG_CHOICE, &device, "where --compare-precision trains", "cpu|cuda"},
        {"batch-size", ARG_INT, &batch, "sequences per step", NULL},
        {"steps", ARG_INT, &steps, "timed steps of each precision", NULL},
        {"seed", ARG_INT, &seed, "seed of the weights", NULL},
        {"threads", ARG_INT, &threads, "OpenMP threads", NULL},
    };
    const int n = OWN + lm_options_specs(&lm, specs + OWN);
    args_parse(argc, argv, specs, n, "Lesson 10's mixed-precision modes: --precision-demo or --compare-precision.");
    lm_options_check(&lm);
    if (demo == compare) fatal("give one of --precision-demo and --compare-precision");
    if (values < 1 || batch < 1 || steps < 1 || threads < 1)
        fatal("--values, --batch-size, --steps and --threads must be positive");
    omp_set_num_threads(threads);
    if (demo) {
        demo_rounding(values);
        demo_master();
        demo_scaling();
    } else {
        compare_precision(&lm, dataset, data[0] ? data : NULL, device, batch, steps, seed);
    }
    return 0;
}
