/* Unit tests of lib/core/machine: the triad computes STREAM's a = b + s c on every
 * element for any split over threads; the measurements come out in a sane range (the
 * numbers themselves depend on the machine and its load: only their range is checked). */
#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/machine.h"
#include "framework/check.h"

/* a[i] = b[i] + s c[i] for n = 1001 on 1, 2 and 3 threads: every element written (a is
 * set to NaN first), none beyond n (a guard element stays). Whole numbers: exact in
 * float32 with or without a fused multiply-add. */
static int check_triad_values(void) {
    enum { N = 1001 };
    float a[N + 1], b[N], c[N];
    bool ok = true;
    for (int threads = 1; threads <= 3 && ok; threads++) {
        for (int i = 0; i < N; i++) {
            a[i] = NAN;
            b[i] = (float)(i % 17);
            c[i] = (float)(i % 5) - 2.0f;
        }
        a[N] = -123.0f;
        machine_triad(a, b, c, 3.0f, N, threads);
        for (int i = 0; i < N && ok; i++) {
            const float want = (float)(i % 17) + 3.0f * ((float)(i % 5) - 2.0f);
            ok = expect_true(a[i] == want, "%d threads: a[%d] = %g, want b + 3 c = %g", threads, i,
                             (double)a[i], (double)want);
        }
        ok = ok && expect_true(a[N] == -123.0f, "%d threads: the element after n was written", threads);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 1 MB arrays: a bandwidth above 0.1 GB/s and below 100 TB/s (a triad timed wrong, or
 * optimised away, falls outside). */
static int check_triad_bandwidth(void) {
    const double gbs = machine_triad_gbs(2, 1 << 20);
    check_show("triad on 2 threads, 3 x 1 MB arrays (caches): %.1f GB/s", gbs);
    return expect_true(isfinite(gbs) && gbs > 0.1 && gbs < 1e5, "triad bandwidth %g GB/s", gbs)
               ? CHECK_PASS
               : CHECK_FAIL;
}

static int check_array_size(void) {
    const long long bytes = (long long)machine_triad_array_bytes(), MiB = 1 << 20;
    check_show("triad arrays of %lld MiB each", bytes / MiB);
    return expect_true(bytes >= 32 * MiB && bytes <= 256 * MiB && bytes % sizeof(float) == 0,
                       "triad arrays of %lld bytes: want 32-256 MiB of whole floats", bytes)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* One core's FMA peak between 0.5 and 2,000 GFLOP/s (a 5 GHz core with two 512-bit FMA
 * units reaches 320). */
static int check_peak(void) {
    const double one = machine_fma_peak_gflops(1);
    check_show("FMA peak, 1 thread: %.1f GFLOP/s", one);
    return expect_true(isfinite(one) && one > 0.5 && one < 2000, "FMA peak of one core %g GFLOP/s",
                       one)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* The ridge is peak / bandwidth: 100 GFLOP/s over 25 GB/s is 4 FLOP a byte. */
static int check_ridge(void) {
    const MachineRoof m = {.device = "cpu", .threads = 1, .peak_gflops = 100, .bandwidth_gbs = 25};
    return expect_true(machine_ridge(&m) == 4.0, "ridge of 100 GFLOP/s, 25 GB/s: %g, want 4",
                       machine_ridge(&m))
               ? CHECK_PASS
               : CHECK_FAIL;
}

static int check_measure(void) {
    const MachineRoof m = machine_measure(1);
    check_show("1 thread: peak %.1f GFLOP/s, triad %.1f GB/s, ridge %.1f FLOP/B", m.peak_gflops,
               m.bandwidth_gbs, machine_ridge(&m));
    bool ok = expect_true(strcmp(m.device, "cpu") == 0 && m.threads == 1, "device %s, %d threads",
                          m.device, m.threads);
    ok = ok && expect_true(m.peak_gflops > 0.5 && m.bandwidth_gbs > 0.1 && m.bandwidth_gbs < 1e5,
                           "peak %g GFLOP/s, bandwidth %g GB/s", m.peak_gflops, m.bandwidth_gbs);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: machine");
    check_run(NULL, "machine: the triad a = b + 3 c on 1001 elements, 1-3 threads, every element once", check_triad_values, 10);
    check_run(NULL, "machine: triad bandwidth of small arrays in a sane range", check_triad_bandwidth, 20);
    check_run(NULL, "machine: triad arrays of 32-256 MiB", check_array_size, 10);
    check_run(NULL, "machine: one core's FMA peak in a sane range", check_peak, 20);
    check_run(NULL, "machine: ridge = peak / bandwidth", check_ridge, 10);
    check_run(NULL, "machine: machine_measure on 1 thread: cpu, peak and bandwidth", check_measure, 30);
    return check_end();
}
