/* Wall-clock time for measuring steps and epochs (monotonic: never jumps back). */
#ifndef CORE_TIMER_H
#define CORE_TIMER_H

#include <time.h>

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
