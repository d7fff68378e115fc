/* make bench-trace, part 1: what one range of a trace costs the host (core/trace.h): a
 * trace_begin and its trace_end, recorded into memory, timed over many ranges, best of
 * several rounds; and one step's memory counter sample. Prints
 *   range_ns <ns per range>
 *   sample_ns <ns per counter sample>
 * which run-bench-trace.sh multiplies by a step's ranges (counted in a real trace). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/timer.h"
#include "core/trace.h"

enum { RANGES = 100000, SAMPLES = 2000, ROUNDS = 5 };

int main(void) {
    char path[] = "/tmp/bench_trace_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    double best_range = 1e30, best_sample = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        trace_open(path, &(TraceOptions){.max_events = RANGES + SAMPLES + 1});
        double t0 = now_seconds();
        for (int i = 0; i < RANGES; i++) {
            trace_begin("layer 0 backward", TRACE_COMPUTE);
            trace_end("layer 0 backward");
        }
        const double range = (now_seconds() - t0) / RANGES;
        t0 = now_seconds();
        for (int i = 0; i < SAMPLES; i++) trace_sample_counters();
        const double sample = (now_seconds() - t0) / SAMPLES;
        trace_close();
        best_range = range < best_range ? range : best_range;
        best_sample = sample < best_sample ? sample : best_sample;
    }
    unlink(path);
    printf("range_ns %.1f\nsample_ns %.1f\n", best_range * 1e9, best_sample * 1e9);
    return 0;
}
