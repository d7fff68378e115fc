/* Seeded random numbers: PCG32 (O'Neill), small state, many independent streams.
 *
 * Every random choice in the toolkit (weight init, shuffling, dropout, synthetic
 * data) takes an explicit Rng, so a run is reproduced by its seed, each rank can
 * use its own stream, and a checkpoint can save the whole state (two integers). */
#ifndef CORE_RNG_H
#define CORE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;
    uint64_t inc; /* odd; selects the stream */
} Rng;

void rng_seed(Rng *rng, uint64_t seed, uint64_t stream);
uint32_t rng_u32(Rng *rng);
uint32_t rng_below(Rng *rng, uint32_t n);          /* uniform in [0, n), unbiased */
float rng_uniform(Rng *rng);                        /* uniform in [0, 1) */
float rng_uniform_range(Rng *rng, float lo, float hi);
float rng_normal(Rng *rng);                         /* mean 0, standard deviation 1 */
void rng_permutation(Rng *rng, int *out, int n);    /* a uniform random order of 0..n-1 */

#endif
