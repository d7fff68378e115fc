/* Samplers: the order in which a training epoch visits the examples.
 *
 * A sequential sampler visits 0..n-1 (for evaluation). A random sampler visits a
 * fresh permutation each epoch, drawn from (seed, epoch) alone: call
 * sampler_set_epoch() before each epoch, as with PyTorch's samplers, and any
 * process (a resumed job, another rank) can rebuild the same order.
 *
 * A distributed sampler (PyTorch's DistributedSampler) gives each of num_replicas
 * ranks its share of that order: rank r takes positions r, r + num_replicas, ... .
 * Without drop_last the order is first padded by repeating its first indices up to a
 * multiple of num_replicas (every rank then takes the same number of steps); with
 * drop_last the tail that does not divide evenly is left out. The permutation is the
 * same on every rank, so together the ranks visit every example once per epoch (and
 * with one replica it is exactly the plain sampler's order). */
#ifndef TRAIN_SAMPLER_H
#define TRAIN_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int count;        /* examples in the data set */
    bool shuffle;
    uint64_t seed;
    int epoch;
    int num_replicas, rank; /* 1 and 0 unless distributed */
    bool drop_last;
    int num_samples;  /* this rank's share of an epoch: the length of order */
    int position;     /* next index into order */
    int *order;       /* [num_samples] */
} Sampler;

void sampler_init(Sampler *s, int count, bool shuffle, uint64_t seed);
/* PyTorch's DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last). */
void sampler_init_distributed(Sampler *s, int count, bool shuffle, uint64_t seed,
                              int num_replicas, int rank, bool drop_last);
void sampler_set_epoch(Sampler *s, int epoch); /* rebuilds the order and rewinds */
/* Puts the sampler where a checkpoint left it: the order of `epoch`, with `position`
 * examples of it already visited (0..num_samples). A resumed run then sees the same
 * batches as one that never stopped. */
void sampler_restore(Sampler *s, int epoch, int position);
/* Writes up to batch indices; returns how many (0 when the epoch is done). */
int sampler_next(Sampler *s, int *indices, int batch);
void sampler_free(Sampler *s);

#endif
