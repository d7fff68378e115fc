#include "core/machine.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"

/* ---------------------------------------------------------------- FMA peak */
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

double machine_fma_peak_gflops(int threads) {
    CHECK(threads >= 1, "machine_fma_peak_gflops on %d threads", threads);
    const long iterations = 20 * 1000 * 1000;
    volatile double sink = 0;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        int team = 0; /* the threads that ran: fewer than asked under OMP_THREAD_LIMIT or OMP_DYNAMIC */
        double t0 = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink, team)
        {
            sink += fma_loop(iterations);
            team++;
        }
        double dt = now_seconds() - t0;
        double flops = 2.0 * VEC_FLOATS * CHAINS * (double)iterations * team;
        if (flops / dt > best) best = flops / dt;
    }
    (void)sink;
    return best / 1e9;
}

double machine_settle_peak_gflops(int threads, double before, double *one_core) {
    double peak = machine_fma_peak_gflops(threads);
    if (before > peak) peak = before;
    *one_core = threads > 1 ? machine_fma_peak_gflops(1) : peak;
    const double suspect = 0.6;
    if (peak < suspect * threads * *one_core)
        fprintf(stderr, "warning: the FMA peak on %d threads (%.1f GFLOP/s) is under %.1f x %d x one "
                "core's (%.1f): cores were busy while it was measured, so the share of it is not "
                "meaningful; run again\n", threads, peak, suspect, threads, *one_core);
    return peak;
}

/* ---------------------------------------------------------------- STREAM triad */
/* Thread t's piece of n: the same on every call, so the thread that first touched a
 * page (and got it on its own memory node) is the one that streams it later. */
static void piece(int64_t n, int threads, int t, int64_t *lo, int64_t *hi) {
    *lo = n * t / threads;
    *hi = n * (t + 1) / threads;
}

void machine_triad(float *a, const float *b, const float *c, float s, int64_t n, int threads) {
#pragma omp parallel num_threads(threads)
    {
        int64_t lo, hi;
        piece(n, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
        for (int64_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
    }
}

/* The last-level cache of cpu0 in bytes (sysfs: the highest cache index), 0 if unknown. */
static int64_t last_level_cache_bytes(void) {
    int64_t best = 0;
    for (int index = 0; index < 8; index++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long long value = 0;
        char unit = 0;
        if (fscanf(f, "%lld%c", &value, &unit) >= 1) {
            int64_t bytes = value * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
            if (bytes > best) best = bytes;
        }
        fclose(f);
    }
    return best;
}

int64_t machine_triad_array_bytes(void) {
    const int64_t MiB = 1 << 20;
    int64_t llc = last_level_cache_bytes();
    int64_t bytes = 4 * (llc > 0 ? llc : 32 * MiB);
    if (bytes < 32 * MiB) bytes = 32 * MiB;
    if (bytes > 256 * MiB) bytes = 256 * MiB;
    return bytes;
}

double machine_triad_gbs(int threads, int64_t array_bytes) {
    CHECK(threads >= 1, "machine_triad_gbs on %d threads", threads);
    if (array_bytes <= 0) array_bytes = machine_triad_array_bytes();
    const int64_t n = array_bytes / (int64_t)sizeof(float);
    CHECK(n >= threads, "a triad of %lld elements on %d threads", (long long)n, threads);
    /* [n] each, not zeroed here: each thread touches its own piece first */
    float *a = xmalloc((size_t)n * sizeof(float)), *b = xmalloc((size_t)n * sizeof(float)),
          *c = xmalloc((size_t)n * sizeof(float));
#pragma omp parallel num_threads(threads)
    {
        int64_t lo, hi;
        piece(n, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
        for (int64_t i = lo; i < hi; i++) {
            a[i] = 0.0f;
            b[i] = 1.0f;
            c[i] = 2.0f;
        }
    }
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now_seconds();
        machine_triad(a, b, c, 3.0f, n, threads);
        const double dt = now_seconds() - t0;
        if (dt < best) best = dt;
    }
    /* 1 + 3 x 2 = 7 everywhere: a triad the compiler skipped or cut short shows here */
    CHECK(a[0] == 7.0f && a[n / 2] == 7.0f && a[n - 1] == 7.0f, "the triad wrote %g, not 7",
          (double)a[n - 1]);
    xfree(a);
    xfree(b);
    xfree(c);
    return 3.0 * (double)sizeof(float) * (double)n / best / 1e9;
}

/* ---------------------------------------------------------------- both */
MachineRoof machine_measure(int threads) {
    MachineRoof m = {.threads = threads};
    snprintf(m.device, sizeof m.device, "cpu");
    m.peak_gflops = machine_fma_peak_gflops(threads);
    m.bandwidth_gbs = machine_triad_gbs(threads, 0);
    return m;
}

double machine_ridge(const MachineRoof *m) {
    CHECK(m->bandwidth_gbs > 0, "a machine with bandwidth %g GB/s has no ridge", m->bandwidth_gbs);
    return m->peak_gflops / m->bandwidth_gbs;
}
