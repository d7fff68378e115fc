/* Lesson 01: train the simple CNN on the CPU.
 *
 *   train --dataset fashion-mnist --epochs 1
 *
 * Prints one line per epoch (train loss, test loss, test accuracy, seconds,
 * images/s) and, with --metrics FILE, writes the same as one JSON object per line. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "core/trace.h"
#include "lesson.h"
#include "train/checkpoint.h"
#include "train/options.h"
#include "train/run_trace.h"

/* The options every lesson shares (lib/train/options.h), --conv and --pool. */
static TrainOptions parse_args(int argc, char **argv, const char **conv, const char **pool) {
    TrainOptions c = train_options_defaults();
    *conv = "library";
    *pool = "library";
    ArgSpec specs[TRAIN_OPTION_SPECS + 2];
    int n = train_options_specs(&c, specs);
    specs[n++] = (ArgSpec){"conv", ARG_CHOICE, conv,
                           "convolution: the library's, or your loops (TODO 1.1, 1.2)", "library|loops"};
    specs[n++] = (ArgSpec){"pool", ARG_CHOICE, pool,
                           "max-pool: the library's (the first block fused), or yours (TODO 1.3)",
                           "library|mine"};
    args_parse(argc, argv, specs, n,
               "Lesson 01: train the simple CNN (conv 50, conv 75, fc 50) on the CPU with Adam.");
    train_options_check(&c);
    return c;
}

int main(int argc, char **argv) {
    const char *conv, *pool;
    TrainOptions cfg = parse_args(argc, argv, &conv, &pool);
    omp_set_num_threads(cfg.threads);

    Dataset train, test;
    train_options_load_data(&cfg, &train, &test);
    if (cfg.batch_size > train.count) cfg.batch_size = train.count;

    Rng rng;
    rng_seed(&rng, (uint64_t)cfg.seed, 0);
    Cnn model;
    cnn_init(&model, train.channels, train.height, train.width, train.num_classes, cfg.batch_size,
             &rng);
    /* your max-pool with --pool mine, your convolution with --conv loops. With the
     * library's three layers in the table (convolution, max-pool, ReLU), the model runs
     * the first block fused (lib/layers/conv_pool_relu.h); with either of yours it runs
     * the layers one by one. */
    if (strcmp(pool, "mine") == 0) {
        model.layers.maxpool2d_forward = lesson_maxpool2d_forward;
        model.layers.maxpool2d_backward = lesson_maxpool2d_backward;
    }
    if (strcmp(conv, "loops") == 0) {
        model.layers.conv2d_forward = lesson_conv2d_forward;
        model.layers.conv2d_backward = lesson_conv2d_backward;
    }
    Adam opt;
    adam_init(&opt, &model.params, cfg.lr);
    Sampler sampler;
    sampler_init(&sampler, train.count, true, (uint64_t)cfg.seed);
    Batch batch;
    batch_init(&batch, cfg.batch_size, &train);
    MetricsFile *metrics = metrics_open(cfg.metrics);
    RunTrace trace; /* --trace FILE: each block's forward and backward (core/trace.h) */
    run_trace_start(&trace, cfg.trace);
    run_trace_blocks(&trace, &model.blocks);

    print0("data: %s, %d training and %d test images of %dx%dx%d (%s)\n", train.name, train.count,
           test.count, train.channels, train.height, train.width, train.source);
    print0("model: simple CNN, %lld parameters; Adam lr %g, batch %d, %d thread%s, %s convolution, "
           "%s max-pool\n", (long long)params_count(&model.params), (double)cfg.lr, cfg.batch_size,
           cfg.threads, cfg.threads == 1 ? "" : "s", conv,
           strcmp(pool, "mine") == 0 ? "your" : "library");
    print0("%5s  %10s  %9s  %13s  %8s  %9s\n", "epoch", "train loss", "test loss", "test accuracy",
           "seconds", "images/s");
    for (int epoch = 1; epoch <= cfg.epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch); /* a new shuffle every epoch */
        double t0 = now_seconds();
        trace_begin("train epoch", TRACE_OTHER); /* with --trace: the blocks' ranges inside */
        EpochResult tr = train_epoch(&model, &opt, &train, &sampler, &batch);
        trace_end("train epoch");
        trace_sample_counters(); /* the memory counter: your loop has no step ranges for it */
        char where[32];
        snprintf(where, sizeof where, "epoch %d", epoch);
        train_stop_if_diverged(tr.loss, where, cfg.lr);
        double seconds = now_seconds() - t0;
        trace_begin("evaluate", TRACE_OTHER);
        EpochResult ev = evaluate(&model, &test, &batch);
        trace_end("evaluate");
        double rate = tr.examples / seconds;
        print0("%5d  %10.4f  %9.4f  %13.4f  %8.1f  %9.0f\n", epoch, tr.loss, ev.loss, ev.accuracy,
               seconds, rate);
        metrics_epoch(metrics, NULL, epoch, tr.loss, &ev, seconds, rate);
    }

    /* a hash of every parameter's bytes: the same run elsewhere (in a container image,
     * lesson 11) must end with the same one */
    print0("parameter digest: %016llx\n", (unsigned long long)params_digest(&model.params));
    run_trace_finish(&trace);
    metrics_close(metrics);
    batch_free(&batch);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free(&model);
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
