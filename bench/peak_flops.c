#include "peak_flops.h"

#include <omp.h>
#include <stdio.h>

#include "core/timer.h"

#if defined(__AVX512F__)
#define VEC_FLOATS 16
#elif defined(__AVX__)
#define VEC_FLOATS 8
#else
#define VEC_FLOATS 4
#endif

typedef float vec __attribute__((vector_size(VEC_FLOATS * sizeof(float))));
enum { CHAINS = 12 }; /* enough independent chains to cover FMA latency x units */

static double fma_loop(long iterations) {
    vec acc[CHAINS];
    vec mul, add;
    for (int j = 0; j < VEC_FLOATS; j++) {
        mul[j] = 0.999999f;
        add[j] = 1e-7f;
    }
    for (int c = 0; c < CHAINS; c++) acc[c] = add * (float)c;
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * mul + add;
    float sink = 0;
    for (int c = 0; c < CHAINS; c++) sink += acc[c][0];
    return (double)sink;
}

double measure_peak_gflops(int threads) {
    const long iterations = 20 * 1000 * 1000;
    volatile double sink = 0;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += fma_loop(iterations);
        double dt = now_seconds() - t0;
        double flops = 2.0 * VEC_FLOATS * CHAINS * (double)iterations * threads;
        if (flops / dt > best) best = flops / dt;
    }
    (void)sink;
    return best / 1e9;
}

double settle_peak_gflops(int threads, double before, double *one_core) {
    double peak = measure_peak_gflops(threads);
    if (before > peak) peak = before;
    *one_core = threads > 1 ? measure_peak_gflops(1) : peak;
    const double suspect = 0.6;
    if (peak < suspect * threads * *one_core)
        fprintf(stderr, "warning: the FMA peak on %d threads (%.1f GFLOP/s) is under %.1f x %d x one "
                "core's (%.1f): cores were busy while it was measured, so the share of it is not "
                "meaningful; run again\n", threads, peak, suspect, threads, *one_core);
    return peak;
}
