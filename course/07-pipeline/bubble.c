/* TODO 7.6: the bubble, measured and expected.
 *
 * With p stages of equal cost and m micro-batches, a stage is busy for m forward and
 * m backward slots of a step that lasts m + p - 1 of each: the first micro-batch takes
 * p - 1 slots to reach the last stage, and the last gradient p - 1 to come back. The
 * idle share, (p - 1) / (m + p - 1), is the same for GPipe and 1F1B; more
 * micro-batches shrink it. The library records how long each rank computed in the
 * step (busy) and how long the step took from the common start to the last rank's
 * end (seconds). */
#include "lesson.h"

double lesson_bubble_fraction(const double *busy, int ranks, double seconds) {
#ifdef SOLUTION
    if (!(seconds > 0)) return 0;
    double idle = 0;
    for (int r = 0; r < ranks; r++) idle += (seconds - busy[r]) / seconds;
    return idle / ranks;
#else
    /* TODO 7.6: each rank was idle for seconds - busy[r] of the step: return the mean
     * over the ranks of that share of the step (0 when seconds is not positive). */
    TODO_STOP("7.6");
#endif
}

double lesson_bubble_formula(int stages, int micro) {
#ifdef SOLUTION
    return (double)(stages - 1) / (double)(micro + stages - 1);
#else
    /* TODO 7.6: (p - 1) / (m + p - 1), in double. */
    TODO_STOP("7.6");
#endif
}
