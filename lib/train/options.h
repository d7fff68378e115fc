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

enum { TRAIN_OPTION_SPECS = 10 };

typedef struct {
    const char *dataset, *data_dir, *metrics;
    int epochs, batch_size, seed, threads, train_limit, test_limit;
    float lr;
} TrainOptions;

/* Fashion-MNIST, 1 epoch, batch 100, seed 42, every core, Adam lr 1e-3 (the seeds'). */
TrainOptions train_options_defaults(void);
/* Writes the TRAIN_OPTION_SPECS shared options into specs; returns their count. */
int train_options_specs(TrainOptions *o, ArgSpec *specs);
/* A value out of range is a user error (exit 1) that names the option. */
void train_options_check(const TrainOptions *o);

#endif
