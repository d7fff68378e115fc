#include "options.h"

#include <math.h>
#include <omp.h>

#include "core/check.h"

TrainOptions train_options_defaults(void) {
    TrainOptions o = {.dataset = "fashion-mnist", .epochs = 1, .batch_size = 100, .seed = 42,
                      .threads = omp_get_max_threads(), .lr = 1e-3f};
    return o;
}

int train_options_specs(TrainOptions *o, ArgSpec *specs) {
    const ArgSpec shared[TRAIN_OPTION_SPECS] = {
        {"dataset", ARG_CHOICE, &o->dataset, "data set", "fashion-mnist|mnist|cifar10|synthetic|folder"},
        {"data", ARG_STRING, &o->data_dir, "directory with the data set files", NULL},
        {"epochs", ARG_INT, &o->epochs, "passes over the training set", NULL},
        {"batch-size", ARG_INT, &o->batch_size, "images per training step", NULL},
        {"lr", ARG_FLOAT, &o->lr, "Adam learning rate", NULL},
        {"seed", ARG_INT, &o->seed, "seed of the weights and the shuffling", NULL},
        {"threads", ARG_INT, &o->threads, "OpenMP threads", NULL},
        {"train-limit", ARG_INT, &o->train_limit, "use only the first N training images (0: all)", NULL},
        {"test-limit", ARG_INT, &o->test_limit, "use only the first N test images (0: all)", NULL},
        {"metrics", ARG_STRING, &o->metrics, "write one JSON object per epoch to this file", NULL},
        {"trace", ARG_STRING, &o->trace, "where the time goes: write Chrome's trace format to FILE (make trace)", NULL},
        {"max-image-pixels", ARG_INT, &o->max_image_pixels, "image folders: refuse images of more pixels (0: 4096x4096)", NULL},
    };
    for (int i = 0; i < TRAIN_OPTION_SPECS; i++) specs[i] = shared[i];
    return TRAIN_OPTION_SPECS;
}

void train_options_check(const TrainOptions *o) {
    if (o->epochs < 1) fatal("--epochs must be at least 1, got %d", o->epochs);
    if (o->batch_size < 1) fatal("--batch-size must be at least 1, got %d", o->batch_size);
    if (o->threads < 1 || o->threads > 256) fatal("--threads must be 1 to 256, got %d", o->threads);
    if (!(o->lr > 0.0f) || !isfinite(o->lr))
        fatal("--lr must be a positive number, got %g", (double)o->lr);
    if (o->train_limit < 0 || o->test_limit < 0) fatal("--train-limit and --test-limit must be >= 0");
    if (o->max_image_pixels < 0) fatal("--max-image-pixels must be >= 0, got %d", o->max_image_pixels);
}

void train_options_load_data(const TrainOptions *o, Dataset *train, Dataset *test) {
    DatasetOptions d = {.max_image_pixels = o->max_image_pixels};
    dataset_load_with(o->dataset, o->data_dir, &d, train, test);
    dataset_truncate(train, o->train_limit);
    dataset_truncate(test, o->test_limit);
    if (train->height < 16 || train->width < 16)
        fatal("%s images are %dx%d; the CNN needs at least 16x16 (two 5x5 convolutions and two "
              "poolings)", train->name, train->height, train->width);
}
