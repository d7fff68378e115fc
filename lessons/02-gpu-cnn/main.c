/* Lesson 02: the CNN of lesson 01, trained on the GPU, and on the CPU for comparison.
 *
 *   train --device cuda --compare --dataset fashion-mnist --epochs 1
 *
 * One line per epoch and device; with --compare (or --device cpu and cuda both
 * run) a side-by-side table: seconds per epoch, images/s, speed-up. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "core/trace.h"
#include "cuda/device.h"
#include "layers/conv2d.h"
#include "lesson.h"
#include "train/options.h"
#include "train/run_trace.h"

typedef struct {
    TrainOptions train; /* the options every lesson shares (lib/train/options.h) */
    const char *device;
    int compare;
} Config;

typedef struct {
    const char *device;
    double seconds, rate, test_loss, test_accuracy; /* per epoch, averaged */
} Summary;

static Config parse_args(int argc, char **argv) {
    Config c = {.train = train_options_defaults(), .device = "cuda"};
    ArgSpec specs[TRAIN_OPTION_SPECS + 2] = {
        {"device", ARG_CHOICE, &c.device, "where to train", "cpu|cuda"},
        {"compare", ARG_FLAG, &c.compare, "with --device cuda: train on the CPU too, side by side", NULL},
    };
    int n = 2 + train_options_specs(&c.train, specs + 2);
    args_parse(argc, argv, specs, n,
               "Lesson 02: train the simple CNN on the GPU (and on the CPU with --compare).");
    train_options_check(&c.train);
    return c;
}

static void report(MetricsFile *mf, Summary *s, const char *device, int epoch, EpochResult tr,
                   EpochResult ev, double seconds) {
    double rate = tr.examples / seconds;
    print0("%-6s %5d  %10.4f  %9.4f  %13.4f  %8.2f  %9.0f\n", device, epoch, tr.loss, ev.loss,
           ev.accuracy, seconds, rate);
    s->device = device;
    s->seconds += seconds, s->rate += rate, s->test_loss = ev.loss, s->test_accuracy = ev.accuracy;
    metrics_epoch(mf, device, epoch, tr.loss, &ev, seconds, rate);
}

static Summary run_cpu(const TrainOptions *c, const Dataset *train, const Dataset *test,
                       MetricsFile *mf) {
    Summary s = {0};
    Rng rng;
    rng_seed(&rng, (uint64_t)c->seed, 0);
    Cnn model;
    cnn_init(&model, train->channels, train->height, train->width, train->num_classes, c->batch_size, &rng);
    Adam opt;
    adam_init(&opt, &model.params, c->lr);
    Sampler sampler;
    sampler_init(&sampler, train->count, true, (uint64_t)c->seed);
    Batch b;
    batch_init(&b, c->batch_size, train);
    trace_begin("CPU run", TRACE_OTHER); /* with --trace (core/trace.h) */
    BlockTrace *bt = block_trace_attach(&model.blocks);
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch);
        double t0 = now_seconds();
        EpochResult tr = cnn_train_epoch(&model, &opt, train, &sampler, &b); /* lesson 01's */
        double seconds = now_seconds() - t0;
        report(mf, &s, "cpu", epoch, tr, cnn_evaluate(&model, test, &b), seconds);
    }
    block_trace_detach(bt);
    trace_end("CPU run");
    batch_free(&b);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free(&model);
    return s;
}

#ifdef HAVE_CUDA
static Summary run_gpu(const TrainOptions *c, const Dataset *train, const Dataset *test,
                       MetricsFile *mf) {
    Summary s = {0};
    Rng rng;
    rng_seed(&rng, (uint64_t)c->seed, 0); /* the same weights as the CPU run */
    Cnn model;
    cnn_init(&model, train->channels, train->height, train->width, train->num_classes, c->batch_size, &rng);
    cnn_to_device(&model, DEVICE_CUDA);  /* copy the model once */
    model.layers = lesson_layers();      /* with your kernels */
    Adam opt;
    adam_init(&opt, &model.params, c->lr); /* its state lands on the GPU too */
    Sampler sampler;
    sampler_init(&sampler, train->count, true, (uint64_t)c->seed);
    Batch b;
    batch_init(&b, c->batch_size, train);
    Batch eval; /* the library's upload, for the given evaluation */
    batch_init(&eval, c->batch_size, test);
    batch_to_device(&eval, DEVICE_CUDA);
    DeviceBatch d;
    lesson_device_batch_init(&d, c->batch_size, train->channels * train->height * train->width);
    trace_begin("GPU run", TRACE_OTHER);
    BlockTrace *bt = block_trace_attach(&model.blocks);
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch);
        double t0 = now_seconds();
        EpochResult tr = train_epoch_gpu(&model, &opt, train, &sampler, &b, &d);
        char where[32];
        snprintf(where, sizeof where, "epoch %d", epoch);
        train_stop_if_diverged(tr.loss, where, c->lr);
        double seconds = now_seconds() - t0;
        report(mf, &s, "cuda", epoch, tr, cnn_evaluate(&model, test, &eval), seconds);
    }
    block_trace_detach(bt);
    trace_end("GPU run");
    lesson_device_batch_free(&d);
    batch_free(&eval);
    batch_free(&b);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free(&model);
    cuda_conv2d_release_workspace();
    return s;
}
#endif

int main(int argc, char **argv) {
    Config opts = parse_args(argc, argv);
    TrainOptions cfg = opts.train;
    omp_set_num_threads(cfg.threads);
    const bool on_gpu = strcmp(opts.device, "cuda") == 0;
    if (on_gpu) cuda_require(); /* fails here, clearly, before any work */

    Dataset train, test;
    train_options_load_data(&cfg, &train, &test);
    if (cfg.batch_size > train.count) cfg.batch_size = train.count;
    MetricsFile *mf = metrics_open(cfg.metrics);
    RunTrace trace; /* --trace FILE: both runs, each block's forward and backward */
    run_trace_start(&trace, cfg.trace);

    print0("data: %s, %d training and %d test images of %dx%dx%d\n", train.name, train.count,
           test.count, train.channels, train.height, train.width);
    if (on_gpu) {
        CudaDeviceInfo g;
        cuda_device_info(cuda_current_device(), &g);
        print0("GPU %d: %s, compute capability %d.%d, %d multiprocessors\n", cuda_current_device(),
               g.name, g.major, g.minor, g.multiprocessors);
    }
    print0("model: simple CNN; Adam lr %g, batch %d; CPU run with %d thread%s\n", (double)cfg.lr,
           cfg.batch_size, cfg.threads, cfg.threads == 1 ? "" : "s");
    print0("%-6s %5s  %10s  %9s  %13s  %8s  %9s\n", "device", "epoch", "train loss", "test loss",
           "test accuracy", "seconds", "images/s");
    Summary rows[2];
    int nrows = 0;
    if (!on_gpu || opts.compare) rows[nrows++] = run_cpu(&cfg, &train, &test, mf);
#ifdef HAVE_CUDA
    if (on_gpu) rows[nrows++] = run_gpu(&cfg, &train, &test, mf);
#endif
    if (nrows == 2) {
        print0("\n%-6s  %16s  %9s  %13s  %8s\n", "device", "seconds / epoch", "images/s",
               "test accuracy", "speed-up");
        for (int i = 0; i < 2; i++)
            print0("%-6s  %16.2f  %9.0f  %13.4f  %7.1fx\n", rows[i].device,
                   rows[i].seconds / cfg.epochs, rows[i].rate / cfg.epochs, rows[i].test_accuracy,
                   rows[0].seconds / rows[i].seconds);
    }
    run_trace_finish(&trace);
    metrics_close(mf);
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
