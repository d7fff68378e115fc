/* The least largest stage cost of `blocks` blocks cut into `stages` contiguous stages,
 * by trying every way of choosing stages - 1 cuts among the blocks - 1 places (small
 * cases only): the reference for lesson 07's partition (tests/dist/test_pipeline.c,
 * tests/graders/grade07.c). */
#ifndef TESTS_FRAMEWORK_PARTITION_BRUTE_H
#define TESTS_FRAMEWORK_PARTITION_BRUTE_H

#include <math.h>

static inline double partition_brute_force(const double *costs, int blocks, int stages) {
    double best = INFINITY;
    for (int mask = 0; mask < 1 << (blocks - 1); mask++) {
        if (__builtin_popcount((unsigned)mask) != stages - 1) continue;
        double worst = 0, c = 0;
        for (int k = 0; k < blocks; k++) {
            c += costs[k];
            if (k == blocks - 1 || (mask >> k & 1)) worst = fmax(worst, c), c = 0;
        }
        best = fmin(best, worst);
    }
    return best;
}

#endif
