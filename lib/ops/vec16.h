/* Sixteen floats as one AVX-512 register (lib/ops/conv_direct16.c, conv_pairs16.c):
 * the 16-lane twin of ops/vec8.h, for builds with AVX-512 only. Loads and stores go
 * through memcpy, so any alignment will do. */
#ifndef OPS_VEC16_H
#define OPS_VEC16_H

#if defined(__AVX512F__)

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The helpers are static inline: passing vectors by value changes no ABI here. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));

static inline v16 load16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

static inline v16 splat16(float s) { return (v16)_mm512_set1_ps(s); }

/* Two 8-float segments as one vector, from wherever they lie: lo in lanes 0-7. */
static inline v16 load_pair(const float *lo, const float *hi) {
    __m512d v = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(lo)));
    return (v16)_mm512_castpd_ps(_mm512_insertf64x4(v, _mm256_castps_pd(_mm256_loadu_ps(hi)), 1));
}

/* Half h of v (0: lanes 0-7, 1: lanes 8-15). */
static inline __m256 half16(v16 v, int h) {
    return h ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((__m512)v), 1))
             : _mm512_castps512_ps256((__m512)v);
}

static inline void store_pair(float *lo, float *hi, v16 v) {
    _mm256_storeu_ps(lo, half16(v, 0));
    _mm256_storeu_ps(hi, half16(v, 1));
}

/* dst[0..7] += the lanes of half h of v that mask keeps (-1: keep, 0: drop) */
static inline void add_half(float *dst, v16 v, int h, const int32_t *mask) {
    __m256 keep = _mm256_and_ps(half16(v, h), _mm256_castsi256_ps(_mm256_loadu_si256((const void *)mask)));
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), keep));
}

/* The two 8-lane masks as one 16-lane mask applied to v */
static inline v16 select_pair(v16 v, const int32_t *lo_mask, const int32_t *hi_mask) {
    __m512i m = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)lo_mask)),
                                   _mm256_loadu_si256((const void *)hi_mask), 1);
    return (v16)_mm512_and_ps((__m512)v, _mm512_castsi512_ps(m));
}

#endif
#endif
