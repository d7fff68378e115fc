/* Unit tests of lib/core/rng: the same seed gives the same numbers, seeds and streams
 * differ; rng_below, rng_uniform, rng_permutation and rng_normal have the right
 * distributions (chi-square and moment checks with fixed seeds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "framework/check.h"

static int check_rng_reproducible(void) {
    Rng a, b, c, d, e;
    rng_seed(&a, 42, 0);
    rng_seed(&b, 42, 0);
    rng_seed(&c, 43, 0);
    rng_seed(&d, 42, 1);
    rng_seed(&e, 42, 2);
    bool ok = true;
    int same_c = 0, same_d = 0, same_e = 0, same_de = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t x = rng_u32(&a), y = rng_u32(&b);
        uint32_t zc = rng_u32(&c), zd = rng_u32(&d), ze = rng_u32(&e);
        if (x != y) {
            ok = expect_true(false, "same seed and stream differ at draw %d", i);
            break;
        }
        same_c += x == zc;
        same_d += x == zd;
        same_e += x == ze;
        same_de += zd == ze;
    }
    ok = ok && expect_true(same_c < 5 && same_d < 5 && same_e < 5 && same_de < 5,
                           "1000 draws agree with another seed %d times, another stream %d, "
                           "%d, %d times",
                           same_c, same_d, same_e, same_de);
    /* copying the state (what a checkpoint does) continues the same sequence */
    Rng saved = a, copy;
    copy = saved;
    for (int i = 0; ok && i < 100; i++)
        ok = expect_true(rng_u32(&a) == rng_u32(&copy), "a copied state diverges at draw %d", i);
    /* a known first value pins the generator (PCG32 of seed 42, stream 54: the reference
     * implementation's demo prints 0xa15c02b7 first) */
    Rng pcg;
    rng_seed(&pcg, 42, 54);
    uint32_t first = rng_u32(&pcg);
    ok = ok && expect_true(first == 0xa15c02b7u,
                           "PCG32(42, 54) first value 0x%08x, the reference gives 0xa15c02b7",
                           first);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_rng_below(void) {
    Rng rng;
    rng_seed(&rng, 7, 3);
    bool ok = true;
    const uint32_t ns[] = {1, 2, 3, 7, 10, 1000, 3000000000u, 4294967295u};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
        for (int i = 0; ok && i < 10000; i++) {
            uint32_t r = rng_below(&rng, ns[t]);
            ok = expect_true(r < ns[t], "rng_below(%u) gave %u", ns[t], r);
        }
    /* chi-square over 10 bins, 100000 draws: 9 degrees of freedom, mean 9, standard
     * deviation 4.2; 40 is beyond any honest draw (p < 1e-5) and a biased or broken
     * generator lands far above */
    enum { BINS = 10, DRAWS = 100000 };
    for (int pass = 0; ok && pass < 2; pass++) {
        int n = pass ? 7 : BINS;
        long count[BINS] = {0};
        for (int i = 0; i < DRAWS; i++) count[rng_below(&rng, (uint32_t)n)]++;
        double expected = (double)DRAWS / n, chi2 = 0;
        for (int k = 0; k < n; k++) chi2 += (count[k] - expected) * (count[k] - expected) / expected;
        ok = expect_true(chi2 < 40.0, "rng_below(%d): chi-square %.1f over %d bins (expected about %d)",
                         n, chi2, n, n - 1);
    }
    /* the top of a huge range is reached too (no 16-bit or 31-bit generator behind it) */
    uint32_t big = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t r = rng_below(&rng, 4000000000u);
        big = r > big ? r : big;
    }
    ok = ok && expect_true(big > 3900000000u, "the largest of 1000 draws below 4e9 is %u", big);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_rng_uniform(void) {
    Rng rng;
    rng_seed(&rng, 1, 1);
    double sum = 0;
    float lo = 1, hi = 0;
    bool ok = true;
    for (int i = 0; i < 100000; i++) {
        float u = rng_uniform(&rng);
        if (!(u >= 0.0f && u < 1.0f)) {
            ok = expect_true(false, "rng_uniform gave %.9g, outside [0, 1)", u);
            break;
        }
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    ok = ok && expect_true(fabs(sum / 100000 - 0.5) < 0.005 && lo < 1e-3f && hi > 0.999f,
                           "mean %.4f, min %g, max %g", sum / 100000, lo, hi);
    for (int i = 0; ok && i < 10000; i++) {
        float u = rng_uniform_range(&rng, -3.0f, 5.0f);
        ok = expect_true(u >= -3.0f && u < 5.0f, "uniform_range(-3, 5) gave %g", u);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool expect_permutation(const int *p, int n) {
    char *seen = calloc((size_t)n + 1, 1);
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        ok = expect_true(p[i] >= 0 && p[i] < n && !seen[p[i]], "entry %d is %d: not a permutation of 0..%d",
                         i, p[i], n - 1);
        if (ok) seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

static int check_rng_permutation(void) {
    Rng rng;
    rng_seed(&rng, 5, 0);
    bool ok = true;
    const int ns[] = {1, 2, 3, 10, 1000, 60000};
    int *p = malloc(60000 * sizeof(int)), *q = malloc(60000 * sizeof(int));
    for (size_t t = 0; ok && t < sizeof ns / sizeof ns[0]; t++) {
        rng_permutation(&rng, p, ns[t]);
        ok = expect_permutation(p, ns[t]);
    }
    /* same seed, same order; another seed, another order */
    Rng a, b, c;
    rng_seed(&a, 9, 0);
    rng_seed(&b, 9, 0);
    rng_seed(&c, 10, 0);
    rng_permutation(&a, p, 1000);
    rng_permutation(&b, q, 1000);
    ok = ok && expect_true(memcmp(p, q, 1000 * sizeof(int)) == 0, "same seed, different orders");
    rng_permutation(&c, q, 1000);
    ok = ok && expect_true(memcmp(p, q, 1000 * sizeof(int)) != 0, "seeds 9 and 10, same order");
    int fixed = 0;
    for (int i = 0; i < 1000; i++) fixed += p[i] == i;
    ok = ok && expect_true(fixed < 10, "%d of 1000 entries stay in place (expected about 1)", fixed);
    /* all 6 orders of 3 elements equally often: 60000 draws, 10000 each, +-100 standard
     * deviation; a 5% band is far outside chance */
    long count[6] = {0};
    for (int i = 0; i < 60000; i++) {
        rng_permutation(&rng, p, 3);
        count[p[0] * 2 + (p[1] > p[2] ? 1 : 0)]++;
    }
    for (int k = 0; ok && k < 6; k++)
        ok = expect_true(count[k] > 9500 && count[k] < 10500,
                         "order %d of 3 elements drawn %ld times in 60000 (expected 10000)", k,
                         count[k]);
    free(p);
    free(q);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_rng_normal(void) {
    Rng rng;
    rng_seed(&rng, 123, 4);
    enum { N = 100000 };
    double sum = 0, sq = 0, cube = 0, quad = 0;
    int within1 = 0;
    bool ok = true;
    for (int i = 0; i < N; i++) {
        float x = rng_normal(&rng);
        if (!isfinite(x)) {
            ok = expect_true(false, "rng_normal gave %g", x);
            break;
        }
        sum += x, sq += (double)x * x, cube += (double)x * x * x, quad += (double)x * x * x * x;
        within1 += fabsf(x) < 1.0f;
    }
    double mean = sum / N, std = sqrt(sq / N - mean * mean);
    /* standard errors over 1e5 samples: mean 0.003, std 0.0022, skew 0.008, kurtosis 0.015,
     * share within one sigma 0.0015: the bounds are about 5 of those */
    ok = ok && expect_true(fabs(mean) < 0.015, "mean %.4f, expected 0", mean);
    ok = ok && expect_true(fabs(std - 1) < 0.012, "standard deviation %.4f, expected 1", std);
    ok = ok && expect_true(fabs(cube / N) < 0.05, "third moment %.4f, expected 0", cube / N);
    ok = ok && expect_true(fabs(quad / N - 3) < 0.1, "fourth moment %.4f, expected 3", quad / N);
    ok = ok && expect_true(fabs(within1 / (double)N - 0.6827) < 0.008,
                           "%.4f within one standard deviation, expected 0.6827",
                           within1 / (double)N);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: rng");
    check_run(NULL, "rng: same seed same numbers, seeds and streams differ", check_rng_reproducible, 10);
    check_run(NULL, "rng_below: in range, uniform (chi-square)", check_rng_below, 10);
    check_run(NULL, "rng_uniform: in [0, 1), mean 1/2; uniform_range", check_rng_uniform, 10);
    check_run(NULL, "rng_permutation: a permutation, reproducible, uniform", check_rng_permutation, 10);
    check_run(NULL, "rng_normal: mean 0, std 1, normal moments (100k samples)", check_rng_normal, 10);
    return check_end();
}
