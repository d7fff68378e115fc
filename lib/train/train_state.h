/* Where a training loop is, beyond model and optimiser: what a checkpoint needs to
 * continue a run exactly (epoch, step, RNG, sampler position, running sums, best). */
#ifndef TRAIN_TRAIN_STATE_H
#define TRAIN_TRAIN_STATE_H

#include <stdint.h>

#include "data/dataset.h"
#include "train/checkpoint.h"

typedef struct {
    int64_t epoch;            /* the epoch in progress, from 1 */
    int64_t step;             /* steps done in that epoch */
    int64_t global_step;      /* steps done in all epochs */
    uint64_t rng_state, rng_inc; /* the training Rng (augmentation, dropout) */
    uint64_t sampler_seed;    /* the sampler's order is rebuilt from seed and epoch */
    int64_t sampler_epoch, sampler_position, sampler_count;
    double loss_sum;          /* running sums of the epoch in progress, so its */
    int64_t examples;         /* printed mean loss covers every step */
    double best_metric;       /* best evaluation so far (-INFINITY: none yet) */
    int64_t best_epoch;
} TrainState;

/* train.epoch, train.step, ..., rng.state, sampler.position, best.metric ... */
void ckpt_add_train_state(Checkpoint *c, TrainState *s);

/* What a run trained on, in 64 bits: the sizes, and the first 64 examples' pixels and
 * labels. Saved as "data.fingerprint", it tells a resume that the data changed
 * (another --dataset, --data or --train-limit of the same shapes) when the sizes
 * alone cannot. */
uint64_t train_data_fingerprint(const Dataset *d);

#endif
