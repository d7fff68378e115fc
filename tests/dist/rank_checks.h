/* The checks of a program that mpirun starts as several ranks (tests/dist/): every
 * rank runs every check; a check passes when it passes on all ranks, and rank 0 prints
 * one line per check and, at the end, "N passed, M failed". (The check framework's
 * fork per check does not mix with MPI, so the checks run one after the other.) */
#ifndef TESTS_DIST_RANK_CHECKS_H
#define TESTS_DIST_RANK_CHECKS_H

#include <stdbool.h>
#include <stdio.h>

#include "dist/dist.h"

static Dist *g_dist;
static int g_passed, g_failed;

static inline void run(const char *name, bool (*check)(Dist *)) {
    bool ok = check(g_dist);
    double failed = dist_sum_double(g_dist, ok ? 0 : 1);
    if (failed == 0) g_passed++;
    else g_failed++;
    if (g_dist->rank == 0) {
        printf("%s  %s (%d ranks)%s\n", failed == 0 ? "PASS" : "FAIL", name, g_dist->world_size,
               failed == 0 ? "" : ": see the ranks' messages above");
        fflush(stdout);
    }
}

/* Rank 0's last line; the exit status of the program. */
static inline int rank_checks_end(void) {
    if (g_dist->rank == 0) printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

#endif
