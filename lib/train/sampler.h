/* Samplers: the order in which a training epoch visits the examples.
 *
 * A sequential sampler visits 0..n-1 (for evaluation). A random sampler visits a
 * fresh permutation each epoch, drawn from (seed, epoch) alone: call
 * sampler_set_epoch() before each epoch, as with PyTorch's samplers, and any
 * process (a resumed job, another rank) can rebuild the same order. */
#ifndef TRAIN_SAMPLER_H
#define TRAIN_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int count;        /* examples in the data set */
    bool shuffle;
    uint64_t seed;
    int epoch;
    int position;     /* next index into order */
    int *order;       /* [count] */
} Sampler;

void sampler_init(Sampler *s, int count, bool shuffle, uint64_t seed);
void sampler_set_epoch(Sampler *s, int epoch); /* rebuilds the order and rewinds */
/* Puts the sampler where a checkpoint left it: the order of `epoch`, with `position`
 * examples of it already visited (0..count). A resumed run then sees the same
 * batches as one that never stopped. */
void sampler_restore(Sampler *s, int epoch, int position);
/* Writes up to batch indices; returns how many (0 when the epoch is done). */
int sampler_next(Sampler *s, int *indices, int batch);
void sampler_free(Sampler *s);

#endif
