/* exp(x) for x <= 0 in float, written so that GCC vectorises it inside a
 * `#pragma omp simd` loop: the exponential of the softmaxes (attention weights, the
 * cross-entropy over a large vocabulary), where every argument is z - max(z) <= 0.
 *
 * Why not expf: libm's expf is a function call per element (no vector version
 * without -ffast-math), about ten times slower on 33,000-word rows.
 *
 * How: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in two
 * parts, so n ln2 is exact), e^r by its Taylor series to degree 7 (the first term left
 * out, r^8 / 8!, is below 5.4e-9), then times 2^n built in the exponent bits.
 * Error, measured over every float in [-87.33, 0] against exp in double: at most
 * 7.9e-8 relative (0.94 ulp) with FMA (-march with FMA and -ffp-contract=fast, the
 * Makefile's default), 1.02e-7 (1.21 ulp) without; bound stated and tested: 1.1e-7.
 * Below -87.33 (e^x < 1.2e-38, the smallest normal float) it returns 0; NaN stays
 * NaN, so a broken logit still shows in the loss. Same bits for the same x whatever
 * the thread count; with FMA contraction (the Makefile's -ffp-contract=fast) they
 * may differ from a build without it in the last bit. */
#ifndef LAYERS_SOFTMAX_EXP_H
#define LAYERS_SOFTMAX_EXP_H

#include <stdint.h>
#include <string.h>

static inline float softmax_exp(float x) {
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f;     /* 16 bits: n * ln2_hi is exact */
    const float ln2_lo = 1.428606765330187e-06f; /* ln 2 - ln2_hi */
    const float lowest = -87.33f;
    const float underflow = x < lowest ? 0.0f : 1.0f; /* NaN compares false: kept */
    x = x < lowest ? lowest : x;
    /* n = round(x log2e), kept in the low mantissa bits of t: no float-to-int
     * conversion, so a NaN is never converted */
    const float t = x * log2e + round_magic;
    const float n = t - round_magic;
    const float r = (x - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* 2^n: n + 127 in the exponent field (n >= -126, so a normal float) */
    uint32_t tbits, magic_bits;
    memcpy(&tbits, &t, sizeof tbits);
    memcpy(&magic_bits, &round_magic, sizeof magic_bits);
    const uint32_t bits = (tbits - magic_bits + 127u) << 23;
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n * underflow;
}

/* softmax_exp on 8 lanes at once, written with GCC vectors (ops/vec8.h): the same
 * operations in the same order, so each lane has the bits softmax_exp gives (checked
 * over every float of [-87.33, 0] in tests/unit/test_transformer_speed.c). Why a second
 * copy: GCC does not vectorise softmax_exp in the loops of the cross-entropy over a
 * vocabulary (the bit reinterpretations through memcpy stop it), and one float at a
 * time costs about 3 cycles an exponential, the cross-entropy's whole time. Not for
 * CUDA (nvcc has no such vectors). */
#ifndef __CUDACC__
#include "ops/vec8.h"

typedef uint32_t u32x8 __attribute__((vector_size(8 * sizeof(uint32_t))));

static inline f8 softmax_exp8(f8 x) {
    const f8 round_magic = splat8(12582912.0f), log2e = splat8(1.44269504088896341f);
    const f8 ln2_hi = splat8(0.693145751953125f), ln2_lo = splat8(1.428606765330187e-06f);
    const f8 lowest = splat8(-87.33f);
    const i32x8 under = x < lowest; /* -1 where below: the result is 0 there */
    x = (f8)(((i32x8)x & ~under) | ((i32x8)lowest & under));
    const f8 t = x * log2e + round_magic;
    const f8 n = t - round_magic;
    const f8 r = (x - n * ln2_hi) - n * ln2_lo;
    f8 p = splat8(1.0f / 5040.0f);
    p = p * r + splat8(1.0f / 720.0f);
    p = p * r + splat8(1.0f / 120.0f);
    p = p * r + splat8(1.0f / 24.0f);
    p = p * r + splat8(1.0f / 6.0f);
    p = p * r + splat8(0.5f);
    p = p * r + splat8(1.0f);
    p = p * r + splat8(1.0f);
    const u32x8 magic_bits = (u32x8)round_magic;
    const f8 two_n = (f8)(((u32x8)t - magic_bits + 127u) << 23);
    /* the scalar version multiplies by 1 or 0: p * two_n is positive, so the same bits */
    return select8(p * two_n, ~under);
}
#endif

#endif
