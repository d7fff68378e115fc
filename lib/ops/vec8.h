/* Eight floats as one GCC vector: an AVX register on x86-64, two SSE or NEON
 * registers elsewhere (still correct, only slower). Loads and stores go through
 * memcpy, so any alignment will do. */
#ifndef OPS_VEC8_H
#define OPS_VEC8_H

#include <stdint.h>
#include <string.h>

/* The helpers are static inline: passing vectors by value changes no ABI here. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float f8 __attribute__((vector_size(8 * sizeof(float))));
/* 8 int32 lanes: comparison masks (0 or -1 per lane), lane indices, shuffle orders */
typedef int32_t i32x8 __attribute__((vector_size(8 * sizeof(int32_t))));

static inline f8 load8(const float *p) {
    f8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, f8 v) { memcpy(p, &v, sizeof v); }

static inline i32x8 load_mask8(const int32_t *p) {
    i32x8 m;
    memcpy(&m, p, sizeof m);
    return m;
}

static inline f8 splat8(float s) { return (f8){s, s, s, s, s, s, s, s}; }

/* Lanes of a and b (0-7 a's, 8-15 b's) in the order given: GCC and clang spell it
 * differently. */
#if defined(__clang__)
#define SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, (i32x8){__VA_ARGS__})
#endif

/* The even and the odd lanes of the 16 floats a, b (0, 2, ..., 14 and 1, 3, ..., 15). */
static inline f8 even_lanes8(f8 a, f8 b) { return SHUFFLE8(a, b, 0, 2, 4, 6, 8, 10, 12, 14); }
static inline f8 odd_lanes8(f8 a, f8 b) { return SHUFFLE8(a, b, 1, 3, 5, 7, 9, 11, 13, 15); }

/* Lanes 0-3 (lo) or 4-7 (hi) of a and b, interleaved: a0 b0 a1 b1 ... */
static inline f8 interleave_lo8(f8 a, f8 b) { return SHUFFLE8(a, b, 0, 8, 1, 9, 2, 10, 3, 11); }
static inline f8 interleave_hi8(f8 a, f8 b) { return SHUFFLE8(a, b, 4, 12, 5, 13, 6, 14, 7, 15); }

/* The lanes of v added one after another, lane 0 first. */
static inline float lane_sum8(f8 v) {
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += v[i];
    return s;
}

/* v where mask is -1, 0 where it is 0 */
static inline f8 select8(f8 v, i32x8 mask) { return (f8)((i32x8)v & mask); }

#endif
