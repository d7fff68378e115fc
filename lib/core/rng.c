#include "rng.h"

#include <math.h>

#include "check.h"

void rng_seed(Rng *rng, uint64_t seed, uint64_t stream) {
    rng->state = 0;
    rng->inc = (stream << 1u) | 1u;
    rng_u32(rng);
    rng->state += seed;
    rng_u32(rng);
}

uint32_t rng_u32(Rng *rng) {
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

uint32_t rng_below(Rng *rng, uint32_t n) {
    CHECK(n > 0, "rng_below(0): no integer lies in [0, 0)");
    /* Rejection removes the bias of a plain modulo (Lemire's threshold). */
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t r = rng_u32(rng);
        if (r >= threshold) return r % n;
    }
}

float rng_uniform(Rng *rng) { return (float)(rng_u32(rng) >> 8) * (1.0f / 16777216.0f); }

float rng_uniform_range(Rng *rng, float lo, float hi) {
    return lo + (hi - lo) * rng_uniform(rng);
}

float rng_normal(Rng *rng) {
    /* Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
    double u1 = 1.0 - (double)rng_uniform(rng);
    double u2 = (double)rng_uniform(rng);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void rng_permutation(Rng *rng, int *out, int n) {
    for (int i = 0; i < n; i++) out[i] = i;
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)rng_below(rng, (uint32_t)i + 1);
        int tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
}
