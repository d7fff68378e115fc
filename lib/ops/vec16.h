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
    return (v16)_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512((__m512)v), m));
}

/* r[i][j] -> r[j][i]: a 16 x 16 block transposed in registers, 64 shuffles (in-lane
 * 4 x 4 blocks, then the 128-bit lanes). */
static inline void transpose16x16(v16 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps((__m512)r[2 * i], (__m512)r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps((__m512)r[2 * i], (__m512)r[2 * i + 1]);
    }
    /* u[4i + j]: column 4L + j of rows 4i .. 4i + 3 in lane L */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            __m512d a = _mm512_castps_pd(t[4 * i + h]), b = _mm512_castps_pd(t[4 * i + h + 2]);
            u[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int j = 0; j < 4; j++) {
        __m512 lo01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44), hi01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xEE);
        __m512 lo23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44), hi23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xEE);
        r[j] = (v16)_mm512_shuffle_f32x4(lo01, lo23, 0x88);      /* column j */
        r[4 + j] = (v16)_mm512_shuffle_f32x4(lo01, lo23, 0xDD);  /* column 4 + j */
        r[8 + j] = (v16)_mm512_shuffle_f32x4(hi01, hi23, 0x88);  /* column 8 + j */
        r[12 + j] = (v16)_mm512_shuffle_f32x4(hi01, hi23, 0xDD); /* column 12 + j */
    }
}

/* dst[j][i] = src[i][j] for i < 16 and j < 16, src rows past src_rows read as zero,
 * dst rows past dst_rows not written; strides in floats. */
static inline void transpose16_block(float *dst, size_t dst_stride, int dst_rows, const float *src,
                                     size_t src_stride, int src_rows) {
    v16 r[16];
    for (int i = 0; i < 16; i++) r[i] = i < src_rows ? load16(src + i * src_stride) : splat16(0.0f);
    transpose16x16(r);
    for (int j = 0; j < dst_rows; j++) store16(dst + j * dst_stride, r[j]);
}

#endif
#endif
