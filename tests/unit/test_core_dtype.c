/* Unit tests of lib/core/dtype: the conversions between float32, bfloat16 and float16
 * against their definition, and 16-bit tensors (constructors, views, copies, fill,
 * byte counts, conversions, and the refusals of code that takes float32 only).
 *
 * The definition, computed here without the library's code: every 16-bit pattern is
 * decoded with ldexp from IEEE 754's formula (sign, biased exponent, mantissa), and a
 * float32 x converts to the pattern of the representable value nearest to x, the one
 * with an even last mantissa bit on a tie; past the largest finite value the next
 * "value" is infinity, placed one step (one ulp of the largest) beyond it, so that
 * from halfway on (65520 for float16) x becomes infinity as IEEE 754 says. A NaN stays
 * a NaN of its sign, quiet, with the top bits of its payload (dtype.h). Each value is
 * checked against that, over every float32 bit class: zeros, float32's subnormals,
 * the smallest and largest normals, ties both ways, the values just beside them,
 * float16's overflow threshold and its underflow to subnormals and zero, infinities,
 * NaNs with payloads; then every tie between consecutive 16-bit values, a sweep over
 * the whole float32 range, and the exact way back from all 65,536 patterns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "layers/conv2d.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"

/* ------------------------------------------------------------ the definition */

typedef struct {
    const char *name;
    DType dtype;
    int mant_bits;     /* 7, 10 */
    int bias;          /* 127, 15 */
    uint16_t inf;      /* the pattern of +infinity: 0x7f80, 0x7c00 */
    uint16_t quiet;    /* the quiet bit: 0x0040, 0x0200 */
} Format;

static const Format BF16 = {"bfloat16", DTYPE_BF16, 7, 127, 0x7f80, 0x0040};
static const Format F16 = {"float16", DTYPE_F16, 10, 15, 0x7c00, 0x0200};

/* The value of a positive pattern p <= inf; inf itself stands for the step past the
 * largest finite value (see the top). */
static double decode(const Format *f, uint32_t p) {
    const uint32_t m = p & ((1u << f->mant_bits) - 1), e = p >> f->mant_bits;
    if (p == f->inf) return ldexp(1.0, (int)(e - (uint32_t)f->bias)); /* 2^(emax + 1) */
    if (e == 0) return ldexp((double)m, 1 - f->bias - f->mant_bits);
    return ldexp((double)(m | (1u << f->mant_bits)), (int)e - f->bias - f->mant_bits);
}

static float f32_of(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* The pattern a float32 (bits u) must become. */
static uint16_t reference(const Format *f, uint32_t u) {
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    const uint32_t exp = (u >> 23) & 0xff, mant = u & 0x7fffff;
    if (exp == 0xff && mant) /* NaN: quiet, top payload bits */
        return (uint16_t)(sign | f->inf | f->quiet | (mant >> (23 - f->mant_bits)));
    const double a = fabs((double)f32_of(u)); /* infinity too: past every candidate */
    uint32_t lo = 0, hi = f->inf; /* the largest p with decode(p) <= a, by bisection */
    if (a >= decode(f, hi)) return (uint16_t)(sign | f->inf);
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (decode(f, mid) <= a) lo = mid;
        else hi = mid;
    }
    /* a in [decode(lo), decode(lo + 1)): both differences are exact (Sterbenz) */
    const double below = a - decode(f, lo), above = decode(f, lo + 1) - a;
    const uint32_t p = below < above ? lo : above < below ? lo + 1 : (lo & 1) ? lo + 1 : lo;
    return (uint16_t)(sign | p);
}

static uint16_t convert(const Format *f, uint32_t u) {
    return f->dtype == DTYPE_BF16 ? dtype_bf16_from_f32(f32_of(u)) : dtype_f16_from_f32(f32_of(u));
}

static uint32_t widen(const Format *f, uint16_t h) {
    return bits_of(f->dtype == DTYPE_BF16 ? dtype_f32_from_bf16(h) : dtype_f32_from_f16(h));
}

static int g_shown; /* mismatches printed so far: the first few say enough */

static bool expect_conversion(const Format *f, uint32_t u, const char *what) {
    const uint16_t got = convert(f, u), want = reference(f, u);
    if (got == want) return true;
    if (g_shown++ < 8)
        printf("%s: float32 0x%08x (%.9g, %s) -> %s 0x%04x, expected 0x%04x\n", f->name, u,
               (double)f32_of(u), what, f->name, got, want);
    return false;
}

/* ------------------------------------------------------------ the bit classes */

typedef struct {
    uint32_t bits;
    const char *what;
    uint16_t bf16, f16; /* what the definition gives, worked out by hand */
} Case;

/* Each case's patterns, derived by hand from the definition: a check of the reference
 * too (both must agree with them), then the conversion against the reference. */
static const Case CASES[] = {
    {0x00000000, "+0", 0x0000, 0x0000},
    {0x80000000, "-0", 0x8000, 0x8000},
    {0x00000001, "smallest float32 subnormal", 0x0000, 0x0000},
    {0x80000001, "-smallest float32 subnormal", 0x8000, 0x8000},
    {0x007fffff, "largest float32 subnormal: rounds up to bfloat16's smallest normal", 0x0080, 0x0000},
    {0x00008000, "float32 subnormal at a bfloat16 tie, even below: 0", 0x0000, 0x0000},
    {0x00018000, "float32 subnormal at a bfloat16 tie, odd below: up", 0x0002, 0x0000},
    {0x00008001, "float32 subnormal just past a bfloat16 tie", 0x0001, 0x0000},
    {0x00007fff, "float32 subnormal just below a bfloat16 tie", 0x0000, 0x0000},
    {0x00800000, "smallest float32 normal", 0x0080, 0x0000},
    {0x7f7fffff, "largest float32 normal", 0x7f80, 0x7c00},
    {0xff7fffff, "-largest float32 normal", 0xff80, 0xfc00},
    {0x3f800000, "1", 0x3f80, 0x3c00},
    {0xbf800000, "-1", 0xbf80, 0xbc00},
    {0x3f808000, "1 + 2^-8: bfloat16 tie, even below", 0x3f80, 0x3c04},
    {0x3f818000, "1 + 3 2^-8: bfloat16 tie, odd below", 0x3f82, 0x3c0c},
    {0xbf818000, "-(1 + 3 2^-8): the same, negative", 0xbf82, 0xbc0c},
    {0x3f807fff, "just below a bfloat16 tie", 0x3f80, 0x3c04},
    {0x3f808001, "just above a bfloat16 tie", 0x3f81, 0x3c04},
    {0x3f801000, "1 + 2^-11: float16 tie, even below", 0x3f80, 0x3c00},
    {0x3f803000, "1 + 3 2^-11: float16 tie, odd below", 0x3f80, 0x3c02},
    {0x3f800fff, "just below a float16 tie", 0x3f80, 0x3c00},
    {0x3f801001, "just above a float16 tie", 0x3f80, 0x3c01},
    {0x477fe000, "65504: float16's largest", 0x4780, 0x7bff},
    {0x477fefff, "just below 65520", 0x4780, 0x7bff},
    {0x477ff000, "65520: float16's overflow threshold (a tie, to infinity)", 0x4780, 0x7c00},
    {0x477ff001, "just above 65520", 0x4780, 0x7c00},
    {0x47800000, "65536", 0x4780, 0x7c00},
    {0xc77ff000, "-65520", 0xc780, 0xfc00},
    {0x7f7f7fff, "just below bfloat16's overflow threshold", 0x7f7f, 0x7c00},
    {0x7f7f8000, "bfloat16's overflow threshold (a tie, to infinity)", 0x7f80, 0x7c00},
    {0x38800000, "2^-14: float16's smallest normal", 0x3880, 0x0400},
    {0x387fffff, "just below 2^-14: rounds up to float16's smallest normal", 0x3880, 0x0400},
    {0x387fc000, "float16's largest subnormal, 1023 2^-24", 0x3880, 0x03ff},
    {0x33800000, "2^-24: float16's smallest subnormal", 0x3380, 0x0001},
    {0x33000000, "2^-25: float16 tie between 0 and 2^-24, to 0", 0x3300, 0x0000},
    {0x33000001, "just above 2^-25: to 2^-24", 0x3300, 0x0001},
    {0xb3000001, "-(just above 2^-25)", 0xb300, 0x8001},
    {0x32ffffff, "just below 2^-25: to 0", 0x3300, 0x0000},
    {0xb2ffffff, "-(just below 2^-25): to -0", 0xb300, 0x8000},
    {0x33c00000, "1.5 2^-24: float16 subnormal tie, odd below: up", 0x33c0, 0x0002},
    {0x34200000, "2.5 2^-24: float16 subnormal tie, even below: down", 0x3420, 0x0002},
    {0x7f800000, "+infinity", 0x7f80, 0x7c00},
    {0xff800000, "-infinity", 0xff80, 0xfc00},
    {0x7fc00000, "quiet NaN", 0x7fc0, 0x7e00},
    {0xffc00000, "-quiet NaN", 0xffc0, 0xfe00},
    {0x7f800001, "signalling NaN, payload in the lowest bit only", 0x7fc0, 0x7e00},
    {0x7fa00000, "signalling NaN with a high payload", 0x7fe0, 0x7f00},
    {0xff812345, "-signalling NaN", 0xffc1, 0xfe09},
    {0x7fffffff, "NaN, all payload bits", 0x7fff, 0x7fff},
};

static int check_bit_classes(void) {
    bool ok = true;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const Case *c = &CASES[i];
        const uint16_t rb = reference(&BF16, c->bits), rh = reference(&F16, c->bits);
        ok = expect_true(rb == c->bf16 && rh == c->f16, "the reference for 0x%08x (%s): bfloat16 "
                         "0x%04x, float16 0x%04x; by hand 0x%04x, 0x%04x", c->bits, c->what, rb,
                         rh, c->bf16, c->f16) && ok;
        ok = expect_conversion(&BF16, c->bits, c->what) && ok;
        ok = expect_conversion(&F16, c->bits, c->what) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Every tie between two consecutive finite 16-bit values (and between the largest and
 * infinity's place), the float32 values beside it, and the 16-bit values themselves,
 * both signs: every place where rounding decides. */
static int check_every_tie(void) {
    bool ok = true;
    const Format *formats[2] = {&BF16, &F16};
    for (int k = 0; k < 2; k++) {
        const Format *f = formats[k];
        for (uint32_t p = 0; p < f->inf; p++) {
            const double mid = (decode(f, p) + decode(f, p + 1)) / 2; /* exact */
            const uint32_t m = bits_of((float)mid), v = bits_of((float)decode(f, p));
            if (!expect_true((double)f32_of(m) == mid, "%s: the tie above 0x%04x is not a "
                             "float32", f->name, p))
                return CHECK_FAIL; /* a 16-bit format with more mantissa than float32? */
            const uint32_t probe[4] = {v, m, m - 1, m + 1};
            for (int j = 0; j < 4; j++) {
                ok = expect_conversion(f, probe[j], "a tie or beside one") && ok;
                ok = expect_conversion(f, probe[j] | 0x80000000u, "a negative tie or beside one") && ok;
            }
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* About two million float32 patterns spread over all 2^32 (every exponent, both
 * signs, NaNs), and the same again at random. */
static int check_sweep(void) {
    bool ok = true;
    Rng rng;
    rng_seed(&rng, 2024, 0);
    for (uint64_t i = 0; i < ((uint64_t)1 << 32) && ok; i += 4093) {
        const uint32_t u = (uint32_t)i, r = rng_u32(&rng);
        ok = expect_conversion(&BF16, u, "sweep") && expect_conversion(&F16, u, "sweep") &&
             expect_conversion(&BF16, r, "random") && expect_conversion(&F16, r, "random");
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 16 bits -> float32 is exact: the value by the formula, signed zeros and infinities
 * kept, a NaN's payload moved to the top of float32's (as dtype.h says); and back to
 * 16 bits gives the pattern again, signalling NaNs made quiet. */
static int check_widen_and_round_trip(void) {
    bool ok = true;
    const Format *formats[2] = {&BF16, &F16};
    for (int k = 0; k < 2; k++) {
        const Format *f = formats[k];
        for (uint32_t h = 0; h < 65536 && ok; h++) {
            const uint32_t mag = h & 0x7fff, sign = (h & 0x8000) << 16;
            const uint32_t got = widen(f, (uint16_t)h);
            const bool nan = mag > f->inf;
            const uint32_t payload = mag & ((1u << f->mant_bits) - 1);
            uint32_t want;
            if (nan) want = sign | 0x7f800000u | payload << (23 - f->mant_bits);
            else if (mag == f->inf) want = sign | 0x7f800000u;
            else want = sign | bits_of((float)decode(f, mag));
            ok = expect_true(got == want, "%s 0x%04x -> float32 0x%08x, expected 0x%08x", f->name, h,
                             got, want);
            const uint16_t back = convert(f, got);
            const uint16_t want_back = (uint16_t)(nan ? h | f->quiet : h);
            ok = ok && expect_true(back == want_back, "%s 0x%04x -> float32 -> 0x%04x, expected "
                                   "0x%04x", f->name, h, back, want_back);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ bulk and tensors */

/* The conversion of a value of `from` (bits) to `to`, by the scalar functions: what
 * every element of a bulk conversion must give (16 <-> 16 through float32; to the
 * same dtype a copy, signalling NaNs included). */
static uint32_t scalar(DType to, DType from, uint32_t x) {
    if (to == from) return x;
    const uint32_t f = from == DTYPE_F32 ? x : from == DTYPE_BF16 ? widen(&BF16, (uint16_t)x)
                                                                 : widen(&F16, (uint16_t)x);
    return to == DTYPE_F32 ? f : convert(to == DTYPE_BF16 ? &BF16 : &F16, f);
}

static uint32_t element(const Tensor *t, int64_t i) {
    return t->dtype == DTYPE_F32 ? bits_of(t->data[i]) : t->bits16[i];
}

/* tensor_convert on the CPU, every pair of dtypes, every 16-bit pattern and random
 * float32 ones, past the size where threads take over. */
static int check_tensor_convert(void) {
    enum { N = 200003 };
    bool ok = true;
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int from = 0; from < DTYPE_COUNT; from++) {
        Tensor src = tensor_zeros_typed(DEVICE_CPU, (DType)from, 1, N);
        for (int64_t i = 0; i < N; i++) {
            if (from == DTYPE_F32) src.data[i] = f32_of(rng_u32(&rng));
            else src.bits16[i] = (uint16_t)(i * 7919);
        }
        for (int to = 0; to < DTYPE_COUNT && ok; to++) {
            Tensor dst = tensor_zeros_typed(DEVICE_CPU, (DType)to, 2, 3, N / 3 + 1);
            Tensor d = tensor_range(&dst, 1, N); /* a view: start and size by element */
            tensor_convert(&d, &src);
            for (int64_t i = 0; i < N && ok; i++) {
                const uint32_t want = scalar((DType)to, (DType)from, element(&src, i));
                ok = expect_true(element(&d, i) == want, "%s -> %s: element %lld is 0x%x, the "
                                 "scalar conversion gives 0x%x", dtype_name((DType)from),
                                 dtype_name((DType)to), (long long)i, element(&d, i), want);
            }
            ok = ok && expect_true(element(&dst, 0) == 0, "tensor_convert wrote before its view");
            tensor_free(&dst);
        }
        tensor_free(&src);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_typed_tensors(void) {
    bool ok = true;
    const size_t sizes[DTYPE_COUNT] = {4, 2, 2};
    const char *names[DTYPE_COUNT] = {"float32", "bfloat16", "float16"};
    for (int k = 0; k < DTYPE_COUNT; k++) {
        const DType dt = (DType)k;
        DType parsed = DTYPE_F32;
        ok = expect_true(dtype_size(dt) == sizes[k] && strcmp(dtype_name(dt), names[k]) == 0 &&
                             dtype_parse(names[k], &parsed) && parsed == dt,
                         "dtype %d: size %zu, name %s", k, dtype_size(dt), dtype_name(dt)) && ok;
        Tensor t = tensor_zeros_typed(DEVICE_CPU, dt, 3, 4, 5, 6);
        ok = expect_true(t.dtype == dt && t.size == 120 && tensor_bytes(&t) == 120 * sizes[k] &&
                             t.ndim == 3 && t.shape[2] == 6 && ((uintptr_t)t.raw & 63) == 0,
                         "tensor_zeros_typed(%s): dtype %d, size %lld, %zu bytes", names[k],
                         (int)t.dtype, (long long)t.size, tensor_bytes(&t)) && ok;
        for (size_t b = 0; b < tensor_bytes(&t); b++)
            ok = ok && expect_true(((unsigned char *)t.raw)[b] == 0, "byte %zu not zero", b);
        /* views keep the dtype and address elements of it */
        Tensor v = tensor_view(&t, 2, 20, 6), r = tensor_rows(&t, 2), g = tensor_range(&t, 7, 11);
        ok = ok && expect_true(v.dtype == dt && r.dtype == dt && g.dtype == dt && v.raw == t.raw &&
                                   r.raw == t.raw && tensor_bytes(&r) == 60 * sizes[k] &&
                                   (char *)g.raw == (char *)t.raw + 7 * sizes[k] &&
                                   tensor_bytes(&g) == 11 * sizes[k],
                               "%s views: dtypes %d %d %d, range at +%td bytes", names[k],
                               (int)v.dtype, (int)r.dtype, (int)g.dtype,
                               (char *)g.raw - (char *)t.raw);
        /* fill: the value converted once, as a conversion would */
        tensor_fill(&g, 1.0f / 3.0f);
        const uint32_t third = scalar(dt, DTYPE_F32, bits_of(1.0f / 3.0f));
        for (int64_t i = 0; i < t.size; i++) {
            const uint32_t want = i >= 7 && i < 18 ? third : 0;
            ok = ok && expect_true(element(&t, i) == want, "%s fill: element %lld is 0x%x, not "
                                   "0x%x", names[k], (long long)i, element(&t, i), want);
        }
        /* copies and zeros_like keep it; tensor_to too */
        Tensor z = tensor_zeros_like(&t), c = tensor_to(&t, DEVICE_CPU);
        tensor_copy(&z, &t);
        ok = ok && expect_true(z.dtype == dt && c.dtype == dt && memcmp(z.raw, t.raw, tensor_bytes(&t)) == 0 &&
                                   memcmp(c.raw, t.raw, tensor_bytes(&t)) == 0,
                               "%s: zeros_like/copy/to lost the dtype or the bits", names[k]);
        tensor_fill(&z, 0.0f);
        for (int64_t i = 0; i < z.size; i++)
            ok = ok && expect_true(element(&z, i) == 0, "%s fill with 0: element %lld", names[k],
                                   (long long)i);
        tensor_free(&t), tensor_free(&z), tensor_free(&c);
    }
    DType parsed = DTYPE_F32;
    ok = expect_true(dtype_parse("bf16", &parsed) && parsed == DTYPE_BF16 &&
                         dtype_parse("fp16", &parsed) && parsed == DTYPE_F16 &&
                         !dtype_parse("float64", &parsed) && !dtype_parse("", &parsed),
                     "dtype_parse: short names, and names it must refuse") && ok;
    Tensor zero = {0}; /* a zero-initialised tensor is a float32 one */
    ok = expect_true(zero.dtype == DTYPE_F32, "a zero-initialised tensor is not float32") && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ refusals */

static Tensor bf16_tensor(int n) { return tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, n); }

static void body_scale(void *arg) {
    (void)arg;
    Tensor t = bf16_tensor(4);
    tensor_scale(&t, 2.0f);
}
static void body_copy(void *arg) {
    (void)arg;
    Tensor a = tensor_zeros(1, 4), b = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 4);
    tensor_copy(&a, &b);
}
static void body_convert_size(void *arg) {
    (void)arg;
    Tensor a = tensor_zeros(1, 4), b = bf16_tensor(5);
    tensor_convert(&a, &b);
}
static void body_convert_overlap(void *arg) {
    (void)arg;
    Tensor a = tensor_zeros(1, 8);
    Tensor b = tensor_range(&a, 0, 8);
    b.dtype = DTYPE_BF16; /* the same memory read as 16-bit */
    tensor_convert(&b, &a);
}
static void body_bad_dtype(void *arg) {
    (void)arg;
    tensor_zeros_typed(DEVICE_CPU, (DType)7, 1, 3);
}
static void body_relu(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros(1, 4), in = bf16_tensor(4);
    relu_forward(&out, &in);
}
static void body_linear(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros(2, 2, 3), in = tensor_zeros(2, 2, 4), bias = tensor_zeros(1, 3);
    Tensor weight = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 3, 4);
    linear_forward(&out, &in, &weight, &bias);
}
static void body_conv(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros(4, 1, 2, 3, 3), in = tensor_zeros(4, 1, 1, 5, 5);
    Tensor weight = tensor_zeros(4, 2, 1, 3, 3), bias = bf16_tensor(2);
    conv2d_forward(&out, &in, &weight, &bias, 1, 0);
}
static void body_layernorm(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros(2, 2, 4), in = tensor_zeros(2, 2, 4), mean = tensor_zeros(1, 2),
           rstd = tensor_zeros(1, 2), gamma = tensor_zeros(1, 4), beta = bf16_tensor(4);
    layernorm_forward(&out, &mean, &rstd, &in, &gamma, &beta, 1e-5f);
}
static void body_xent(void *arg) {
    (void)arg;
    Tensor logits = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 2, 3), dlogits = tensor_zeros(2, 2, 3);
    int labels[2] = {0, 1};
    softmax_cross_entropy(&dlogits, &logits, labels);
}

static int check_refusals(void) {
    ChildResult o;
    run_child(body_scale, NULL, &o);
    bool ok = expect_exit("tensor_scale of bfloat16", &o, 2, "tensor.c", "tensor_scale", "t is a "
                          "bfloat16 tensor", "float32", (const char *)NULL);
    run_child(body_copy, NULL, &o);
    ok = expect_exit("tensor_copy of float16 into float32", &o, 2, "tensor.c", "float16",
                     "float32", "tensor_convert", (const char *)NULL) && ok;
    run_child(body_convert_size, NULL, &o);
    ok = expect_exit("tensor_convert of 5 into 4", &o, 2, "tensor.c", "5", "4", (const char *)NULL) && ok;
    run_child(body_convert_overlap, NULL, &o);
    ok = expect_exit("tensor_convert in place", &o, 2, "tensor.c", "overlapping", (const char *)NULL) && ok;
    run_child(body_bad_dtype, NULL, &o);
    ok = expect_exit("a dtype that does not exist", &o, 2, "tensor.c", "dtype 7", (const char *)NULL) && ok;
    run_child(body_relu, NULL, &o);
    ok = expect_exit("relu_forward of bfloat16", &o, 2, "relu.c", "relu_forward", "in is a bfloat16",
                     "float32", (const char *)NULL) && ok;
    run_child(body_linear, NULL, &o);
    ok = expect_exit("linear_forward with a float16 weight", &o, 2, "linear.c", "linear_forward",
                     "weight is a float16", (const char *)NULL) && ok;
    run_child(body_conv, NULL, &o);
    ok = expect_exit("conv2d_forward with a bfloat16 bias", &o, 2, "conv2d.c", "conv2d_forward",
                     "bias is a bfloat16", (const char *)NULL) && ok;
    run_child(body_layernorm, NULL, &o);
    ok = expect_exit("layernorm_forward with a bfloat16 beta", &o, 2, "layernorm.c",
                     "layernorm_forward", "beta is a bfloat16", (const char *)NULL) && ok;
    run_child(body_xent, NULL, &o);
    ok = expect_exit("softmax_cross_entropy of float16 logits", &o, 2, "softmax_xent.c",
                     "softmax_cross_entropy", "logits is a float16", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: dtype");
    check_run(NULL, "float32 -> bfloat16, float16 on every bit class: zeros, subnormals, normals, ties, overflow, underflow, infinities, NaNs", check_bit_classes, 10);
    check_run(NULL, "float32 -> bfloat16, float16 at every tie between 16-bit values and beside it, both signs", check_every_tie, 20);
    check_run(NULL, "float32 -> bfloat16, float16: 2 million values over the whole float32 range", check_sweep, 20);
    check_run(NULL, "bfloat16, float16 -> float32 exact for all 65,536 patterns; and back again", check_widen_and_round_trip, 10);
    check_run(NULL, "tensor_convert on the CPU: every dtype pair = the scalar conversions", check_tensor_convert, 20);
    check_run(NULL, "16-bit tensors: constructors, byte counts, views, fill, copies", check_typed_tensors, 10);
    check_run(NULL, "refused by name: scale, copy and conversions that cannot be, layers given 16-bit tensors", check_refusals, 20);
    return check_end();
}
