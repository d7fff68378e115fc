/* Grader of lesson 00. TODO 0.1 and 0.2 are host code and are checked everywhere;
 * TODO 0.3 and 0.4 need a GPU and SKIP without one (never PASS).
 * Run with `make check-lesson 0` (your code) or `make check-lesson 0 SOLUTION=1`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "framework/check.h"
#include "gpu/gpu_check.h"
#include "lesson.h"

/* ---------------------------------------------------------------- TODO 0.1 */

static int check_blocks(void) {
    static const int64_t ns[] = {1, 255, 256, 257, 1000, 65536, 1000003, 3000000000LL};
    static const int threads[] = {256, 32, 1024, 128};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            int64_t n = ns[i];
            int t = threads[j], b = lesson_blocks(n, t);
            if (!expect_true((int64_t)b * t >= n, "n = %lld, %d threads: %d blocks = %lld threads, "
                             "too few: the last elements get no thread (round up)",
                             (long long)n, t, b, (long long)b * t) ||
                !expect_true((int64_t)(b - 1) * t < n, "n = %lld, %d threads: %d blocks, the last "
                             "one has no work (round up, not n / threads + 1)", (long long)n, t, b))
                return CHECK_FAIL;
        }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 0.2 */

static int check_bandwidth(void) {
    /* the definition, for a few clocks and buses (HBM3 and GDDR-like) */
    static const int clocks[] = {2619000, 1593000, 9501000}, buses[] = {5120, 5120, 384};
    for (int i = 0; i < 3; i++) {
        float got = (float)lesson_peak_bandwidth_gbs(clocks[i], buses[i]);
        float want = (float)(2.0 * clocks[i] * 1000.0 * buses[i] / 8.0 / 1e9);
        if (!expect_close("peak GB/s", &got, &want, 1, 0, 1e-6f)) {
            printf("memory clock %d kHz, bus %d bits: 2 transfers per clock x (bits / 8) bytes, "
                   "in 1e9 bytes/s\n", clocks[i], buses[i]);
            return CHECK_FAIL;
        }
    }
    float got = (float)lesson_bandwidth_gbs(3000000000ULL, 1.5), want = 2.0f;
    if (!expect_close("3 GB in 1.5 s, in GB/s", &got, &want, 1, 0, 1e-6f)) return CHECK_FAIL;
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 0.3, 0.4 */

#ifdef HAVE_CUDA
static int vector_add_case(int n) {
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *c = malloc((size_t)n * 4);
    fill_uniform(a, n, 1, -1, 1);
    fill_uniform(b, n, 2, -1, 1);
    for (int i = 0; i < n; i++) c[i] = NAN; /* every element must be written */
    lesson_vector_add_gpu(c, a, b, n);
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) {
            printf("n = %d: c[%d] is %g, expected %g%s\n", n, i, (double)c[i], (double)(a[i] + b[i]),
                   isnan(c[i]) ? " (never written: enough blocks? copied back?)" : "");
            return CHECK_FAIL;
        }
    free(a), free(b), free(c);
    return CHECK_PASS;
}

static int check_vector_add(void) {
    REQUIRE_GPU();
    return vector_add_case(1000003);
}

static int check_vector_add_edges(void) {
    REQUIRE_GPU();
    static const int ns[] = {1, 255, 256, 257};
    for (int i = 0; i < 4; i++)
        if (vector_add_case(ns[i]) != CHECK_PASS) {
            printf("hint: the last block runs past n: test i < n in the kernel\n");
            return CHECK_FAIL;
        }
    return CHECK_PASS;
}
#endif /* HAVE_CUDA */

int main(void) {
    check_begin("lesson 00: hello-gpu");
    check_run("TODO 0.1", "blocks for n elements: every element a thread, no empty block", check_blocks, 20);
    check_run("TODO 0.2", "peak bandwidth from memory clock and bus width; measured GB/s", check_bandwidth, 20);
    check_run("TODO 0.3", "vector add on the GPU: 1,000,003 elements match the CPU", GPU_CHECK(check_vector_add), 60);
    check_run("TODO 0.4", "vector add for n = 1, 255, 256, 257 (the last, partial block)", GPU_CHECK(check_vector_add_edges), 60);
    return check_end();
}
