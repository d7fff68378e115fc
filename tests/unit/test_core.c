/* Unit tests of lib/core: tensors (zeros, views, rows, shape strings, the shape
 * checks that stop a wrong program), the seeded RNG (reproducible, streams apart,
 * uniform, permutations, normal), argument parsing (both spellings, flags, choices,
 * and a clear message with exit status 1 for every kind of wrong input), metrics as
 * JSON lines, print0, and todo_stop. Everything that must stop the program runs in a
 * child process of its own, with its stdout and stderr captured. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/args.h"
#include "core/check.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "core/timer.h"
#include "core/todo.h"
#include "framework/check.h"

/* ------------------------------------------------------------ tensor */

static int check_tensor_zeros(void) {
    bool ok = true;
    Tensor a = tensor_zeros(1, 7);
    Tensor b = tensor_zeros(2, 3, 5);
    Tensor c = tensor_zeros(3, 2, 3, 4);
    Tensor d = tensor_zeros(4, 100, 1, 28, 28);
    Tensor *all[] = {&a, &b, &c, &d};
    const int64_t sizes[] = {7, 15, 24, 78400};
    for (int i = 0; i < 4; i++) {
        Tensor *t = all[i];
        ok = ok && expect_true(t->ndim == i + 1 && t->size == sizes[i] && t->device == DEVICE_CPU &&
                                   t->data != NULL,
                               "tensor %d: ndim %d, size %lld, device %d", i, t->ndim,
                               (long long)t->size, (int)t->device);
        for (int64_t k = 0; ok && k < t->size; k++)
            ok = expect_true(t->data[k] == 0.0f, "tensor %d: entry %lld is %g, not 0", i,
                             (long long)k, t->data[k]);
    }
    ok = ok && expect_true(d.shape[0] == 100 && d.shape[1] == 1 && d.shape[2] == 28 &&
                               d.shape[3] == 28 && b.shape[0] == 3 && b.shape[1] == 5,
                           "shapes not stored as given");
    /* 64-byte aligned, as the allocator promises */
    ok = ok && expect_true(((uintptr_t)d.data & 63) == 0, "data not 64-byte aligned");
    Tensor z = tensor_zeros_like(&c);
    ok = ok && expect_true(tensor_same_shape(&z, &c) && z.size == c.size && z.data != c.data,
                           "zeros_like: wrong shape or shared data");
    tensor_fill(&c, 2.5f);
    for (int64_t k = 0; ok && k < c.size; k++)
        ok = expect_true(c.data[k] == 2.5f, "fill: entry %lld is %g", (long long)k, c.data[k]);
    tensor_copy(&z, &c);
    ok = ok && expect_close("copy", z.data, c.data, z.size, 0, 0);
    ok = ok && expect_true(!tensor_same_shape(&b, &c) && tensor_same_shape(&c, &c),
                           "same_shape is wrong");
    Tensor e = tensor_zeros(2, 5, 3);
    ok = ok && expect_true(!tensor_same_shape(&b, &e), "[3, 5] and [5, 3] called the same shape");
    tensor_free(&e);
    tensor_free(&z);
    for (int i = 0; i < 4; i++) tensor_free(all[i]);
    ok = ok && expect_true(a.data == NULL && a.size == 0, "tensor_free left data behind");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_tensor_view_rows(void) {
    Tensor t = tensor_zeros(4, 6, 2, 3, 4);
    for (int64_t i = 0; i < t.size; i++) t.data[i] = (float)i;
    Tensor v = tensor_view(&t, 2, 6, 24);
    bool ok = expect_true(v.data == t.data && v.ndim == 2 && v.shape[0] == 6 && v.shape[1] == 24 &&
                              v.size == t.size,
                          "view [6, 24]: ndim %d, shape [%d, %d], size %lld, shares data: %d",
                          v.ndim, v.shape[0], v.shape[1], (long long)v.size, v.data == t.data);
    v.data[30] = -1.0f;
    ok = ok && expect_true(t.data[30] == -1.0f, "a write through the view is not seen");
    Tensor flat = tensor_view(&t, 1, 144);
    ok = ok && expect_true(flat.ndim == 1 && flat.size == 144 && flat.data == t.data, "flatten");
    Tensor r = tensor_rows(&t, 4);
    ok = ok && expect_true(r.data == t.data && r.ndim == 4 && r.shape[0] == 4 && r.shape[1] == 2 &&
                               r.shape[2] == 3 && r.shape[3] == 4 && r.size == 96,
                           "rows(4): shape [%d, %d, %d, %d], size %lld", r.shape[0], r.shape[1],
                           r.shape[2], r.shape[3], (long long)r.size);
    Tensor r6 = tensor_rows(&t, 6);
    ok = ok && expect_true(r6.size == t.size && tensor_same_shape(&r6, &t), "rows(all)");
    Tensor r1 = tensor_rows(&v, 1);
    ok = ok && expect_true(r1.size == 24 && r1.shape[0] == 1 && r1.shape[1] == 24, "rows(1) of 2-D");
    tensor_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_view_bad(void *arg) {
    (void)arg;
    Tensor t = tensor_zeros(2, 3, 4);
    tensor_view(&t, 2, 5, 3);
}
static void body_rows_bad(void *arg) {
    Tensor t = tensor_zeros(2, 3, 4);
    tensor_rows(&t, *(int *)arg);
}
static void body_zeros_bad(void *arg) {
    (void)arg;
    tensor_zeros(2, 3, 0);
}
static void body_copy_bad(void *arg) {
    (void)arg;
    Tensor a = tensor_zeros(1, 3), b = tensor_zeros(1, 4);
    tensor_copy(&a, &b);
}

static int check_tensor_misuse(void) {
    ChildResult o;
    run_child(body_view_bad, NULL, &o);
    bool ok = expect_exit("view of 12 elements as 15", &o, 2, "tensor.c", "[3, 4]", "12", "15",
                          (const char *)NULL);
    int n = 4;
    run_child(body_rows_bad, &n, &o);
    ok = ok && expect_exit("rows(4) of 3", &o, 2, "tensor.c", (const char *)NULL);
    n = 0;
    run_child(body_rows_bad, &n, &o);
    ok = ok && expect_exit("rows(0)", &o, 2, "tensor.c", (const char *)NULL);
    run_child(body_zeros_bad, NULL, &o);
    ok = ok && expect_exit("a zero dimension", &o, 2, "tensor.c", "positive", (const char *)NULL);
    run_child(body_copy_bad, NULL, &o);
    ok = ok && expect_exit("copy of 4 into 3", &o, 2, "tensor.c", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_shape_str(void) {
    char buf[64];
    Tensor a = tensor_zeros(4, 100, 1, 28, 28);
    Tensor b = tensor_zeros(1, 7);
    Tensor c = tensor_zeros(2, 3, 5);
    bool ok = expect_true(strcmp(tensor_shape_str(&a, buf, 64), "[100, 1, 28, 28]") == 0,
                          "got \"%s\", expected \"[100, 1, 28, 28]\"", buf);
    ok = ok && expect_true(strcmp(tensor_shape_str(&b, buf, 64), "[7]") == 0,
                           "got \"%s\", expected \"[7]\"", buf);
    ok = ok && expect_true(strcmp(tensor_shape_str(&c, buf, 64), "[3, 5]") == 0,
                           "got \"%s\", expected \"[3, 5]\"", buf);
    /* a buffer too small is cut short, never overrun: the bytes after it stay as they were */
    for (int len = 1; ok && len < 20; len++) {
        char small[32];
        memset(small, 'x', sizeof small);
        const char *r = tensor_shape_str(&a, small, len);
        ok = expect_true(r == small, "does not return its buffer");
        ok = ok && expect_true(memchr(small, '\0', (size_t)len) != NULL,
                               "buffer of %d bytes: no terminating NUL", len);
        for (int k = len; ok && k < 32; k++)
            ok = expect_true(small[k] == 'x', "buffer of %d bytes: byte %d overwritten", len, k);
        ok = ok && expect_true(strncmp(small, "[100, 1, 28, 28]", strlen(small)) == 0,
                               "buffer of %d bytes: \"%s\" is not a prefix", len, small);
    }
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_check_shape(void *arg) {
    (void)arg;
    Tensor images = tensor_zeros(2, 3, 5);
    CHECK_SHAPE(&images, 3, -1, 4);
}
static void body_check_shape_dim(void *arg) {
    (void)arg;
    Tensor images = tensor_zeros(2, 3, 5);
    CHECK_SHAPE(&images, 3, 5, -1);
}
static void body_check_same_shape(void *arg) {
    (void)arg;
    Tensor logits = tensor_zeros(2, 100, 10);
    Tensor dlogits = tensor_zeros(2, 100, 9);
    CHECK_SAME_SHAPE(&dlogits, &logits);
}
/* Right shapes pass silently; the child exits 0 after them. */
static void body_shapes_fine(void *arg) {
    (void)arg;
    Tensor t = tensor_zeros(4, 2, 3, 4, 5);
    Tensor u = tensor_zeros_like(&t);
    CHECK_SHAPE(&t, 2, 3, 4, 5);
    CHECK_SHAPE(&t, -1, 3, -1, 5);
    CHECK_SHAPE(&t, -1, -1, -1, -1);
    CHECK_SAME_SHAPE(&t, &u);
    printf("all fine\n");
    tensor_free(&t);
    tensor_free(&u);
}

static int check_shape_checks(void) {
    ChildResult o;
    run_child(body_shapes_fine, NULL, &o);
    bool ok = expect_exit("matching shapes", &o, 0, "all fine", (const char *)NULL);
    run_child(body_check_shape, NULL, &o);
    ok = ok && expect_exit("CHECK_SHAPE([3, 5], 3, *, 4)", &o, 2, "test_core.c:", "&images",
                           "[3, 5]", "[3, *, 4]", (const char *)NULL);
    run_child(body_check_shape_dim, NULL, &o);
    ok = ok && expect_exit("CHECK_SHAPE of 2-D against 3-D", &o, 2, "test_core.c:", "[3, 5]",
                           "[3, 5, *]", (const char *)NULL);
    run_child(body_check_same_shape, NULL, &o);
    ok = ok && expect_exit("CHECK_SAME_SHAPE", &o, 2, "test_core.c:", "&dlogits", "&logits",
                           "[100, 9]", "[100, 10]", (const char *)NULL);
    /* the line number is there too: "test_core.c:NNN:" */
    const char *at = strstr(o.out, "test_core.c:");
    ok = ok && expect_true(at && at[12] >= '1' && at[12] <= '9', "no line number after the file");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_fatal(void *arg) {
    (void)arg;
    fatal("cannot open '%s': try --data DIR", "x.bin");
}
static void body_check(void *arg) {
    (void)arg;
    int i = 7;
    CHECK(i < 5, "index %d outside 0..4", i);
}
static void body_overflow(void *arg) {
    (void)arg;
    xcalloc((size_t)1 << 62, 16);
}

static int check_errors(void) {
    ChildResult o;
    run_child(body_fatal, NULL, &o);
    bool ok = expect_exit("fatal", &o, 1, "error: cannot open 'x.bin': try --data DIR",
                          (const char *)NULL);
    run_child(body_check, NULL, &o);
    ok = ok && expect_exit("CHECK", &o, 2, "test_core.c:", "index 7 outside 0..4",
                           (const char *)NULL);
    run_child(body_overflow, NULL, &o);
    ok = ok && expect_exit("xcalloc overflow", &o, 2, "overflows", (const char *)NULL);
    char *s = xstrdup("conv1.weight");
    ok = ok && expect_true(strcmp(s, "conv1.weight") == 0, "xstrdup");
    xfree(s);
    float *p = xcalloc(1000, sizeof(float));
    for (int i = 0; ok && i < 1000; i++) ok = expect_true(p[i] == 0.0f, "xcalloc not zeroed");
    ok = ok && expect_true(((uintptr_t)p & 63) == 0, "xcalloc not 64-byte aligned");
    xfree(p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ rng */

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

/* ------------------------------------------------------------ args */

typedef struct {
    int epochs, verbose, quiet;
    float lr;
    const char *dataset, *out;
} Config;

static const char *const DATASETS = "fashion-mnist|mnist|cifar10|synthetic";

/* Parses the NULL-terminated argv into cfg (starting from the defaults). */
static void parse_into(Config *cfg, const char **argv) {
    *cfg = (Config){.epochs = 5, .lr = 0.001f, .dataset = "mnist", .out = NULL};
    ArgSpec specs[] = {
        {"epochs", ARG_INT, &cfg->epochs, "passes over the training set", NULL},
        {"lr", ARG_FLOAT, &cfg->lr, "learning rate", NULL},
        {"dataset", ARG_CHOICE, &cfg->dataset, "data set", DATASETS},
        {"out", ARG_STRING, &cfg->out, "output file", NULL},
        {"verbose", ARG_FLAG, &cfg->verbose, "say more", NULL},
        {"quiet", ARG_FLAG, &cfg->quiet, "say less", NULL},
    };
    int argc = 0;
    while (argv[argc]) argc++;
    args_parse(argc, (char **)argv, specs, ARRAY_LEN(specs), "a test program");
}

static int check_args_parse(void) {
    Config c;
    bool ok = true;
    const char *none[] = {"prog", NULL};
    parse_into(&c, none);
    ok = ok && expect_true(c.epochs == 5 && c.lr == 0.001f && strcmp(c.dataset, "mnist") == 0 &&
                               c.out == NULL && !c.verbose && !c.quiet,
                           "no options changed the defaults");
    const char *spaced[] = {"prog", "--epochs", "3", "--lr", "0.5", "--dataset", "cifar10",
                            "--out", "a b.txt", "--verbose", NULL};
    parse_into(&c, spaced);
    ok = ok && expect_true(c.epochs == 3 && c.lr == 0.5f && strcmp(c.dataset, "cifar10") == 0 &&
                               c.out && strcmp(c.out, "a b.txt") == 0 && c.verbose && !c.quiet,
                           "--x value: epochs %d, lr %g, dataset %s, out %s, verbose %d, quiet %d",
                           c.epochs, c.lr, c.dataset, c.out ? c.out : "(null)", c.verbose, c.quiet);
    const char *equals[] = {"prog", "--epochs=3", "--lr=-2e-3", "--dataset=synthetic",
                            "--out=x=y", "--quiet", NULL};
    parse_into(&c, equals);
    ok = ok && expect_true(c.epochs == 3 && c.lr == -2e-3f && strcmp(c.dataset, "synthetic") == 0 &&
                               c.out && strcmp(c.out, "x=y") == 0 && !c.verbose && c.quiet,
                           "--x=value: epochs %d, lr %g, dataset %s, out %s, verbose %d, quiet %d",
                           c.epochs, c.lr, c.dataset, c.out ? c.out : "(null)", c.verbose, c.quiet);
    /* the last occurrence wins; negative integers; a value that looks like an option */
    const char *twice[] = {"prog", "--epochs", "3", "--epochs=-7", "--out", "--verbose", NULL};
    parse_into(&c, twice);
    ok = ok && expect_true(c.epochs == -7 && c.out && strcmp(c.out, "--verbose") == 0 && !c.verbose,
                           "repeated option / option-like value: epochs %d, out %s, verbose %d",
                           c.epochs, c.out ? c.out : "(null)", c.verbose);
    /* a name that is a prefix of another is not that other */
    const char *prefix[] = {"prog", "--dataset", "fashion-mnist", NULL};
    parse_into(&c, prefix);
    ok = ok && expect_true(strcmp(c.dataset, "fashion-mnist") == 0, "dataset %s", c.dataset);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_parse(void *arg) {
    Config c;
    parse_into(&c, (const char **)arg);
}

/* Parses argv in a child: it must exit with `code` and a message that contains each of
 * the NULL-terminated strings that follow. */
static bool parse_exits(const char *what, const char **argv, int code, ...) {
    ChildResult o;
    run_child(body_parse, argv, &o);
    va_list ap;
    va_start(ap, code);
    bool ok = expect_exitv(what, &o, code, ap);
    va_end(ap);
    return ok;
}

static int check_args_errors(void) {
    bool ok = true;
    const char *unknown[] = {"prog", "--epochs", "3", "--bogus", "1", NULL};
    ok = ok && parse_exits("unknown option", unknown, 1, "error: ", "unknown option", "--bogus",
                           "--help", (const char *)NULL);
    const char *unknown_eq[] = {"prog", "--bogus=2", NULL};
    ok = ok && parse_exits("unknown option with =", unknown_eq, 1, "unknown option '--bogus'",
                           (const char *)NULL);
    const char *bad_int[] = {"prog", "--epochs", "abc", NULL};
    ok = ok && parse_exits("bad integer", bad_int, 1, "--epochs", "integer", "abc",
                           (const char *)NULL);
    const char *trailing[] = {"prog", "--epochs=3x", NULL};
    ok = ok && parse_exits("integer with trailing text", trailing, 1, "--epochs", "3x",
                           (const char *)NULL);
    const char *fraction[] = {"prog", "--epochs", "2.5", NULL};
    ok = ok && parse_exits("fraction for an integer", fraction, 1, "--epochs", "2.5",
                           (const char *)NULL);
    const char *huge[] = {"prog", "--epochs", "99999999999", NULL};
    ok = ok && parse_exits("integer out of range", huge, 1, "--epochs", "99999999999",
                           (const char *)NULL);
    const char *empty[] = {"prog", "--epochs=", NULL};
    ok = ok && parse_exits("empty integer", empty, 1, "--epochs", "integer", (const char *)NULL);
    const char *bad_float[] = {"prog", "--lr", "fast", NULL};
    ok = ok && parse_exits("bad number", bad_float, 1, "--lr", "number", "fast",
                           (const char *)NULL);
    const char *bad_choice[] = {"prog", "--dataset", "imagenet", NULL};
    ok = ok && parse_exits("bad choice", bad_choice, 1, "--dataset", DATASETS, "imagenet",
                           (const char *)NULL);
    const char *part_choice[] = {"prog", "--dataset=mnis", NULL};
    ok = ok && parse_exits("part of a choice", part_choice, 1, "--dataset", "mnis",
                           (const char *)NULL);
    const char *no_value[] = {"prog", "--lr", NULL};
    ok = ok && parse_exits("missing value", no_value, 1, "--lr", "needs a value",
                           (const char *)NULL);
    const char *flag_value[] = {"prog", "--verbose=1", NULL};
    ok = ok && parse_exits("value for a flag", flag_value, 1, "--verbose", "no value",
                           (const char *)NULL);
    const char *positional[] = {"prog", "data.bin", NULL};
    ok = ok && parse_exits("positional argument", positional, 1, "data.bin", "--",
                           (const char *)NULL);
    const char *help[] = {"prog", "--epochs", "9", "--help", NULL};
    ok = ok && parse_exits("--help", help, 0, "usage: prog", "a test program", "--epochs",
                           "passes over the training set", "[default: 9]", "--dataset",
                           DATASETS, "--verbose", "--lr", "[default: 0.001]", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ metrics */

/* A small JSON reader, just enough to check one line: an object of string keys and
 * values that are numbers, strings or null. Fills keys/values (raw text, strings
 * unescaped) and returns the number of fields, or -1 when the line is not valid. */
typedef struct {
    char key[64];
    char value[128];
    int is_string, is_null;
} Field;

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static const char *read_string(const char *p, char *out, size_t cap) {
    if (*p != '"') return NULL;
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        char ch = *p;
        if (ch == '\\') {
            p++;
            if (*p == '"' || *p == '\\' || *p == '/') ch = *p;
            else if (*p == 'n') ch = '\n';
            else if (*p == 't') ch = '\t';
            else return NULL;
        } else if ((unsigned char)ch < 0x20) {
            return NULL; /* raw control characters are not allowed in JSON strings */
        }
        if (n + 1 < cap) out[n++] = ch;
    }
    if (*p != '"') return NULL;
    out[n] = '\0';
    return p + 1;
}

static const char *read_number(const char *p, char *out, size_t cap) {
    /* JSON: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *s = p;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    size_t n = (size_t)(p - s) < cap - 1 ? (size_t)(p - s) : cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return p;
}

static int parse_json_line(const char *line, Field *fields, int cap) {
    const char *p = skip_ws(line);
    if (*p++ != '{') return -1;
    int n = 0;
    p = skip_ws(p);
    if (*p == '}') return *skip_ws(p + 1) == '\0' ? 0 : -1;
    for (;;) {
        if (n == cap) return -1;
        Field *f = &fields[n++];
        memset(f, 0, sizeof *f);
        p = read_string(skip_ws(p), f->key, sizeof f->key);
        if (!p) return -1;
        p = skip_ws(p);
        if (*p++ != ':') return -1;
        p = skip_ws(p);
        if (*p == '"') {
            f->is_string = 1;
            p = read_string(p, f->value, sizeof f->value);
        } else if (strncmp(p, "null", 4) == 0) {
            f->is_null = 1;
            p += 4;
        } else {
            p = read_number(p, f->value, sizeof f->value);
        }
        if (!p) return -1;
        p = skip_ws(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '}') return -1;
        return *skip_ws(p + 1) == '\0' ? n : -1;
    }
}

static int check_metrics(void) {
    char path[] = "/tmp/test_core_metrics_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return expect_true(false, "mkstemp: %s", strerror(errno)) ? CHECK_PASS : CHECK_FAIL;
    close(fd);
    MetricsFile *m = metrics_open(path);
    bool ok = expect_true(m != NULL, "metrics_open(%s) returned NULL", path);
    if (!ok) return CHECK_FAIL;
    metrics_begin(m);
    metrics_int(m, "epoch", 1);
    metrics_num(m, "train_loss", 0.53);
    metrics_str(m, "dataset", "fashion-mnist");
    metrics_end(m);
    metrics_begin(m);
    metrics_int(m, "epoch", -2);
    metrics_num(m, "loss", NAN);
    metrics_num(m, "ppl", INFINITY);
    metrics_num(m, "neg", -INFINITY);
    metrics_num(m, "tiny", 1.25e-30);
    metrics_num(m, "big", -6.02e23);
    metrics_int(m, "count", 9007199254740993LL);
    metrics_str(m, "note", "say \"hi\" \\ back\tslash\n");
    metrics_end(m);
    metrics_begin(m);
    metrics_end(m);
    metrics_close(m);

    FILE *f = fopen(path, "r");
    char line[1024];
    Field fl[16];
    int nlines = 0;
    while (ok && f && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        ok = expect_true(len > 0 && line[len - 1] == '\n', "line %d does not end in a newline",
                         nlines + 1);
        line[len - 1] = '\0';
        int n = parse_json_line(line, fl, 16);
        ok = ok && expect_true(n >= 0, "line %d is not a valid JSON object: %s", nlines + 1, line);
        if (ok && nlines == 0) {
            ok = expect_true(n == 3 && strcmp(fl[0].key, "epoch") == 0 && strcmp(fl[0].value, "1") == 0 &&
                                 strcmp(fl[1].key, "train_loss") == 0 &&
                                 strtod(fl[1].value, NULL) == 0.53 &&
                                 strcmp(fl[2].key, "dataset") == 0 && fl[2].is_string &&
                                 strcmp(fl[2].value, "fashion-mnist") == 0,
                             "line 1 read back wrong: %s", line);
        } else if (ok && nlines == 1) {
            ok = expect_true(n == 8, "line 2 has %d fields, expected 8: %s", n, line);
            ok = ok && expect_true(strcmp(fl[0].value, "-2") == 0, "epoch -2 read back as %s",
                                   fl[0].value);
            ok = ok && expect_true(fl[1].is_null && fl[2].is_null && fl[3].is_null,
                                   "NaN and infinities must be written as null: %s", line);
            ok = ok && expect_true(strtod(fl[4].value, NULL) == 1.25e-30 &&
                                       strtod(fl[5].value, NULL) == -6.02e23,
                                   "numbers read back as %s, %s", fl[4].value, fl[5].value);
            ok = ok && expect_true(strcmp(fl[6].value, "9007199254740993") == 0,
                                   "a 64-bit integer read back as %s", fl[6].value);
            /* control characters are dropped (or escaped); quotes and backslashes escaped */
            ok = ok && expect_true(fl[7].is_string &&
                                       (strcmp(fl[7].value, "say \"hi\" \\ backslash") == 0 ||
                                        strcmp(fl[7].value, "say \"hi\" \\ back\tslash\n") == 0),
                                   "string read back as \"%s\"", fl[7].value);
        } else if (ok && nlines == 2) {
            ok = expect_true(n == 0, "an empty record should be {}: %s", line);
        }
        nlines++;
    }
    ok = ok && expect_true(f && nlines == 3, "read %d lines back, expected 3", nlines);
    if (f) fclose(f);
    remove(path);

    /* no path: no file, and every call does nothing */
    MetricsFile *none = metrics_open(NULL);
    MetricsFile *empty = metrics_open("");
    ok = ok && expect_true(none == NULL && empty == NULL, "metrics_open(NULL or \"\") opened a file");
    metrics_begin(none);
    metrics_int(none, "a", 1);
    metrics_num(none, "b", 2);
    metrics_str(none, "c", "d");
    metrics_end(none);
    metrics_close(none);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_metrics_bad(void *arg) {
    (void)arg;
    metrics_open("/nonexistent-dir/metrics.jsonl");
}

static int check_metrics_unwritable(void) {
    ChildResult o;
    run_child(body_metrics_bad, NULL, &o);
    return expect_exit("metrics file in a missing directory", &o, 1, "/nonexistent-dir/metrics.jsonl",
                       (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* ------------------------------------------------------------ log, timer, todo */

static void body_print0(void *arg) {
    log_set_rank(*(int *)arg);
    print0("rank says %d\n", 42);
    progress("a progress line %d", 1); /* stdout is a pipe: prints nothing */
    progress_clear();
}

static int check_log(void) {
    ChildResult o;
    int rank = 0;
    run_child(body_print0, &rank, &o);
    bool ok = expect_exit("print0 on rank 0", &o, 0, "rank says 42", (const char *)NULL);
    ok = ok && expect_true(strstr(o.out, "progress") == NULL && strchr(o.out, '\r') == NULL,
                           "progress() printed into a pipe: \"%s\"", o.out);
    rank = 3;
    run_child(body_print0, &rank, &o);
    ok = ok && expect_exit("print0 on rank 3", &o, 0, (const char *)NULL);
    ok = ok && expect_true(o.out[0] == '\0', "rank 3 printed \"%s\"", o.out);
    log_set_rank(2);
    ok = ok && expect_true(log_rank() == 2, "log_rank() is %d after log_set_rank(2)", log_rank());
    log_set_rank(0);
    double t0 = now_seconds();
    usleep(20000);
    double t1 = now_seconds();
    ok = ok && expect_true(t1 - t0 >= 0.019 && t1 - t0 < 1.0, "20 ms measured as %.4f s", t1 - t0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_todo(void *arg) {
    (void)arg;
    printf("before\n");
    todo_stop("1.2", "lessons/01-cpu-cnn", "maxpool_forward");
}

static int check_todo_stop(void) {
    ChildResult o;
    run_child(body_todo, NULL, &o);
    bool ok = expect_exit("todo_stop", &o, EXIT_TODO, "TODO 1.2", "maxpool_forward",
                          "lessons/01-cpu-cnn/README.md", (const char *)NULL);
    ok = ok && expect_true(EXIT_TODO == 3, "EXIT_TODO is %d, the framework expects 3", EXIT_TODO);
    /* stdout is flushed before the message, so "before" comes first */
    const char *b = strstr(o.out, "before"), *t = strstr(o.out, "TODO");
    ok = ok && expect_true(b && t && b < t, "the program's earlier output was lost or reordered");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core");
    check_run(NULL, "tensor: zeros, zeros_like, fill, copy, same_shape, free", check_tensor_zeros, 10);
    check_run(NULL, "tensor: view and rows share data with the right sizes", check_tensor_view_rows, 10);
    check_run(NULL, "tensor: bad view, rows, dimension, copy stop with status 2", check_tensor_misuse, 10);
    check_run(NULL, "tensor: shape strings, cut short without overrun", check_shape_str, 10);
    check_run(NULL, "CHECK_SHAPE / CHECK_SAME_SHAPE: status 2, file, line, shapes", check_shape_checks, 10);
    check_run(NULL, "fatal (status 1), CHECK (status 2), x-allocation", check_errors, 10);
    check_run(NULL, "rng: same seed same numbers, seeds and streams differ", check_rng_reproducible, 10);
    check_run(NULL, "rng_below: in range, uniform (chi-square)", check_rng_below, 10);
    check_run(NULL, "rng_uniform: in [0, 1), mean 1/2; uniform_range", check_rng_uniform, 10);
    check_run(NULL, "rng_permutation: a permutation, reproducible, uniform", check_rng_permutation, 10);
    check_run(NULL, "rng_normal: mean 0, std 1, normal moments (100k samples)", check_rng_normal, 10);
    check_run(NULL, "args: --x v, --x=v, flags, choices, defaults", check_args_parse, 10);
    check_run(NULL, "args: every wrong input gives status 1 and a message; --help", check_args_errors, 10);
    check_run(NULL, "metrics: valid JSON lines, NaN as null, read back", check_metrics, 10);
    check_run(NULL, "metrics: unwritable file is a clear error", check_metrics_unwritable, 10);
    check_run(NULL, "log: print0 on rank 0 only, no progress in a pipe; timer", check_log, 10);
    check_run(NULL, "todo_stop: status 3, names the TODO and the README", check_todo_stop, 10);
    return check_end();
}
