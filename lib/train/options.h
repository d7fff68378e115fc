/* The command-line options every image-classification lesson shares:
 *
 *   typedef struct { TrainOptions train; int compare; } Config;
 *   Config c = {.train = train_options_defaults()};
 *   ArgSpec specs[TRAIN_OPTION_SPECS + 2];
 *   int n = train_options_specs(&c.train, specs);
 *   specs[n++] = (ArgSpec){"compare", ARG_FLAG, &c.compare, "...", NULL};
 *   args_parse(argc, argv, specs, n, "what the program does");
 *   train_options_check(&c.train);
 */
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include "core/args.h"
#include "data/dataset.h"

enum { TRAIN_OPTION_SPECS = 12 };

typedef struct {
    const char *dataset, *data_dir, *metrics, *trace;
    int epochs, batch_size, seed, threads, train_limit, test_limit;
    int max_image_pixels; /* image folders: the largest image accepted (0: the default) */
    float lr;
} TrainOptions;

/* Fashion-MNIST, 1 epoch, batch 100, seed 42, every core, Adam lr 1e-3 (the seeds'). */
TrainOptions train_options_defaults(void);
/* Writes the TRAIN_OPTION_SPECS shared options into specs; returns their count. */
int train_options_specs(TrainOptions *o, ArgSpec *specs);
/* A value out of range is a user error (exit 1) that names the option. */
void train_options_check(const TrainOptions *o);
/* The chosen data set, cut to --train-limit / --test-limit; stops with a message when
 * its images are smaller than the CNN's 16x16 (two 5x5 convolutions, two poolings). */
void train_options_load_data(const TrainOptions *o, Dataset *train, Dataset *test);

#endif
