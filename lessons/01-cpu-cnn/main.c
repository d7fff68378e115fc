/* Lesson 01: train the simple CNN on the CPU.
 *
 *   train --dataset fashion-mnist --epochs 1
 *
 * Prints one line per epoch (train loss, test loss, test accuracy, seconds,
 * images/s) and, with --metrics FILE, writes the same as one JSON object per line. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "lesson.h"

typedef struct {
    const char *dataset, *data_dir, *metrics, *conv;
    int epochs, batch_size, seed, threads, train_limit, test_limit;
    float lr;
} Config;

static Config parse_args(int argc, char **argv) {
    Config c = {.dataset = "fashion-mnist", .conv = "library", .epochs = 1, .batch_size = 100,
                .seed = 42, .threads = omp_get_max_threads(), .lr = 1e-3f};
    ArgSpec specs[] = {
        {"dataset", ARG_CHOICE, &c.dataset, "data set", "fashion-mnist|mnist|cifar10|synthetic|folder"},
        {"data", ARG_STRING, &c.data_dir, "directory with the data set files", NULL},
        {"epochs", ARG_INT, &c.epochs, "passes over the training set", NULL},
        {"batch-size", ARG_INT, &c.batch_size, "images per training step", NULL},
        {"lr", ARG_FLOAT, &c.lr, "Adam learning rate", NULL},
        {"seed", ARG_INT, &c.seed, "seed of the weights and the shuffling", NULL},
        {"threads", ARG_INT, &c.threads, "OpenMP threads", NULL},
        {"conv", ARG_CHOICE, &c.conv,
         "convolution: the library's, or your loops (TODO 1.1, 1.2)", "library|loops"},
        {"train-limit", ARG_INT, &c.train_limit, "use only the first N training images (0: all)", NULL},
        {"test-limit", ARG_INT, &c.test_limit, "use only the first N test images (0: all)", NULL},
        {"metrics", ARG_STRING, &c.metrics, "write one JSON object per epoch to this file", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Lesson 01: train the simple CNN (conv 50, conv 75, fc 50) on the CPU with Adam.");
    if (c.epochs < 1) fatal("--epochs must be at least 1, got %d", c.epochs);
    if (c.batch_size < 1) fatal("--batch-size must be at least 1, got %d", c.batch_size);
    if (c.threads < 1 || c.threads > 256) fatal("--threads must be 1 to 256, got %d", c.threads);
    if (!(c.lr > 0.0f) || !isfinite(c.lr)) fatal("--lr must be a positive number, got %g", (double)c.lr);
    if (c.train_limit < 0 || c.test_limit < 0) fatal("--train-limit and --test-limit must be >= 0");
    return c;
}

int main(int argc, char **argv) {
    Config cfg = parse_args(argc, argv);
    omp_set_num_threads(cfg.threads);

    Dataset train, test;
    dataset_load(cfg.dataset, cfg.data_dir, &train, &test);
    dataset_truncate(&train, cfg.train_limit);
    dataset_truncate(&test, cfg.test_limit);
    if (train.height < 16 || train.width < 16)
        fatal("%s images are %dx%d; the CNN needs at least 16x16 (two 5x5 convolutions and two "
              "poolings)", train.name, train.height, train.width);
    if (cfg.batch_size > train.count) cfg.batch_size = train.count;

    Rng rng;
    rng_seed(&rng, (uint64_t)cfg.seed, 0);
    Cnn model;
    cnn_init(&model, train.channels, train.height, train.width, train.num_classes, cfg.batch_size,
             &rng);
    /* your max-pool always; your convolution with --conv loops */
    model.layers.pool_forward = lesson_maxpool2d_forward;
    model.layers.pool_backward = lesson_maxpool2d_backward;
    if (strcmp(cfg.conv, "loops") == 0) {
        model.layers.conv_forward = lesson_conv2d_forward;
        model.layers.conv_backward = lesson_conv2d_backward;
    }
    Adam opt;
    adam_init(&opt, &model.params, cfg.lr);
    Sampler sampler;
    sampler_init(&sampler, train.count, true, (uint64_t)cfg.seed);
    Batch batch;
    batch_init(&batch, cfg.batch_size, &train);
    MetricsFile *metrics = metrics_open(cfg.metrics);

    print0("data: %s, %d training and %d test images of %dx%dx%d (%s)\n", train.name, train.count,
           test.count, train.channels, train.height, train.width, train.source);
    print0("model: simple CNN, %lld parameters; Adam lr %g, batch %d, %d threads, %s convolution\n",
           (long long)params_count(&model.params), (double)cfg.lr, cfg.batch_size, cfg.threads,
           cfg.conv);
    print0("%5s  %10s  %9s  %13s  %8s  %9s\n", "epoch", "train loss", "test loss", "test accuracy",
           "seconds", "images/s");
    for (int epoch = 1; epoch <= cfg.epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch); /* a new shuffle every epoch */
        double t0 = now_seconds();
        EpochResult tr = train_epoch(&model, &opt, &train, &sampler, &batch);
        double seconds = now_seconds() - t0;
        EpochResult ev = evaluate(&model, &test, &batch);
        double rate = tr.examples / seconds;
        print0("%5d  %10.4f  %9.4f  %13.4f  %8.1f  %9.0f\n", epoch, tr.loss, ev.loss, ev.accuracy,
               seconds, rate);
        metrics_begin(metrics);
        metrics_int(metrics, "epoch", epoch);
        metrics_num(metrics, "train_loss", tr.loss);
        metrics_num(metrics, "test_loss", ev.loss);
        metrics_num(metrics, "test_accuracy", ev.accuracy);
        metrics_num(metrics, "seconds", seconds);
        metrics_num(metrics, "samples_per_s", rate);
        metrics_end(metrics);
    }

    metrics_close(metrics);
    batch_free(&batch);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free(&model);
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
