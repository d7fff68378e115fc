/* Lesson 02: the CNN of lesson 01, trained on the GPU, and on the CPU for comparison.
 *
 *   train --device cuda --compare --dataset fashion-mnist --epochs 1
 *
 * One line per epoch and device; with --compare (or --device cpu and cuda both
 * run) a side-by-side table: seconds per epoch, images/s, speed-up. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "cuda/gpu.h"
#include "lesson.h"

typedef struct {
    const char *dataset, *data_dir, *metrics, *device;
    int epochs, batch_size, seed, threads, train_limit, test_limit, compare;
    float lr;
} Config;

typedef struct {
    const char *device;
    double seconds, rate, test_loss, test_accuracy; /* per epoch, averaged */
} Summary;

static Config parse_args(int argc, char **argv) {
    Config c = {.dataset = "fashion-mnist", .device = "cuda", .epochs = 1, .batch_size = 100,
                .seed = 42, .threads = omp_get_max_threads(), .lr = 1e-3f};
    ArgSpec specs[] = {
        {"device", ARG_CHOICE, &c.device, "where to train", "cpu|cuda"},
        {"compare", ARG_FLAG, &c.compare, "with --device cuda: train on the CPU too, side by side", NULL},
        {"dataset", ARG_CHOICE, &c.dataset, "data set", "fashion-mnist|mnist|cifar10|synthetic|folder"},
        {"data", ARG_STRING, &c.data_dir, "directory with the data set files", NULL},
        {"epochs", ARG_INT, &c.epochs, "passes over the training set", NULL},
        {"batch-size", ARG_INT, &c.batch_size, "images per training step", NULL},
        {"lr", ARG_FLOAT, &c.lr, "Adam learning rate", NULL},
        {"seed", ARG_INT, &c.seed, "seed of the weights and the shuffling", NULL},
        {"threads", ARG_INT, &c.threads, "OpenMP threads of the CPU run", NULL},
        {"train-limit", ARG_INT, &c.train_limit, "use only the first N training images (0: all)", NULL},
        {"test-limit", ARG_INT, &c.test_limit, "use only the first N test images (0: all)", NULL},
        {"metrics", ARG_STRING, &c.metrics, "write one JSON object per epoch and device to this file", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Lesson 02: train the simple CNN on the GPU (and on the CPU with --compare).");
    if (c.epochs < 1) fatal("--epochs must be at least 1, got %d", c.epochs);
    if (c.batch_size < 1) fatal("--batch-size must be at least 1, got %d", c.batch_size);
    if (c.threads < 1 || c.threads > 256) fatal("--threads must be 1 to 256, got %d", c.threads);
    if (!(c.lr > 0.0f) || !isfinite(c.lr)) fatal("--lr must be a positive number, got %g", (double)c.lr);
    if (c.train_limit < 0 || c.test_limit < 0) fatal("--train-limit and --test-limit must be >= 0");
    return c;
}

static void report(MetricsFile *mf, Summary *s, const char *device, int epoch, EpochResult tr,
                   EpochResult ev, double seconds) {
    double rate = tr.examples / seconds;
    print0("%-6s %5d  %10.4f  %9.4f  %13.4f  %8.2f  %9.0f\n", device, epoch, tr.loss, ev.loss,
           ev.accuracy, seconds, rate);
    s->device = device;
    s->seconds += seconds, s->rate += rate, s->test_loss = ev.loss, s->test_accuracy = ev.accuracy;
    metrics_begin(mf);
    metrics_str(mf, "device", device);
    metrics_int(mf, "epoch", epoch);
    metrics_num(mf, "train_loss", tr.loss);
    metrics_num(mf, "test_loss", ev.loss);
    metrics_num(mf, "test_accuracy", ev.accuracy);
    metrics_num(mf, "seconds", seconds);
    metrics_num(mf, "samples_per_s", rate);
    metrics_end(mf);
}

static Summary run_cpu(const Config *c, const Dataset *train, const Dataset *test, MetricsFile *mf) {
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
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch);
        double t0 = now_seconds();
        EpochResult tr = train_epoch_cpu(&model, &opt, train, &sampler, &b);
        double seconds = now_seconds() - t0;
        report(mf, &s, "cpu", epoch, tr, evaluate_cpu(&model, test, &b), seconds);
    }
    batch_free(&b);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free(&model);
    return s;
}

#ifdef HAVE_CUDA
static Summary run_gpu(const Config *c, const Dataset *train, const Dataset *test, MetricsFile *mf) {
    Summary s = {0};
    Rng rng;
    rng_seed(&rng, (uint64_t)c->seed, 0); /* the same weights as the CPU run */
    Cnn model;
    cnn_init(&model, train->channels, train->height, train->width, train->num_classes, c->batch_size, &rng);
    cnn_to_device(&model);               /* copy the model once */
    Adam opt;
    adam_init(&opt, &model.params, c->lr); /* its state lands on the GPU too */
    Sampler sampler;
    sampler_init(&sampler, train->count, true, (uint64_t)c->seed);
    Batch b;
    batch_init(&b, c->batch_size, train);
    DeviceBatch d;
    lesson_device_batch_init(&d, c->batch_size, train->channels * train->height * train->width);
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        sampler_set_epoch(&sampler, epoch);
        double t0 = now_seconds();
        EpochResult tr = train_epoch_gpu(&model, &opt, train, &sampler, &b, &d);
        double seconds = now_seconds() - t0;
        report(mf, &s, "cuda", epoch, tr, evaluate_gpu(&model, test, &b, &d), seconds);
    }
    lesson_device_batch_free(&d);
    batch_free(&b);
    sampler_free(&sampler);
    adam_free(&opt);
    cnn_free_cuda(&model);
    cuda_conv2d_release_workspace();
    return s;
}
#endif

int main(int argc, char **argv) {
    Config cfg = parse_args(argc, argv);
    omp_set_num_threads(cfg.threads);
    const bool on_gpu = strcmp(cfg.device, "cuda") == 0;
    if (on_gpu) gpu_require(); /* fails here, clearly, before any work */

    Dataset train, test;
    dataset_load(cfg.dataset, cfg.data_dir, &train, &test);
    dataset_truncate(&train, cfg.train_limit);
    dataset_truncate(&test, cfg.test_limit);
    if (train.height < 16 || train.width < 16)
        fatal("%s images are %dx%d; the CNN needs at least 16x16", train.name, train.height, train.width);
    if (cfg.batch_size > train.count) cfg.batch_size = train.count;
    MetricsFile *mf = metrics_open(cfg.metrics);

    print0("data: %s, %d training and %d test images of %dx%dx%d\n", train.name, train.count,
           test.count, train.channels, train.height, train.width);
    if (on_gpu) {
        GpuInfo g;
        gpu_device_info(gpu_current_device(), &g);
        print0("GPU %d: %s, compute capability %d.%d, %d multiprocessors\n", gpu_current_device(),
               g.name, g.major, g.minor, g.multiprocessors);
    }
    print0("model: simple CNN; Adam lr %g, batch %d; CPU run with %d threads\n", (double)cfg.lr,
           cfg.batch_size, cfg.threads);
    print0("%-6s %5s  %10s  %9s  %13s  %8s  %9s\n", "device", "epoch", "train loss", "test loss",
           "test accuracy", "seconds", "images/s");
    Summary rows[2];
    int nrows = 0;
    if (!on_gpu || cfg.compare) rows[nrows++] = run_cpu(&cfg, &train, &test, mf);
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
    metrics_close(mf);
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
