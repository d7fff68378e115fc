/* Element types of tensors: float32, and the two 16-bit floats of mixed precision.
 *
 *   float32   1 sign, 8 exponent, 23 mantissa bits (IEEE 754 binary32)
 *   bfloat16  1 sign, 8 exponent,  7 mantissa bits: float32's top half, same range
 *   float16   1 sign, 5 exponent, 10 mantissa bits (binary16): largest 65504,
 *             subnormals down to 2^-24
 *
 * The scalar conversions are written once, here, as integer operations on the bits
 * (static inline; __host__ __device__ under nvcc), so the CPU (lib/core/dtype.c) and
 * the GPU (lib/cuda/tensor.cu) give the same bits by construction. To 16 bits they
 * round to nearest, ties to the even pattern, as IEEE 754 and every GPU do:
 *   - a value at least halfway past the largest finite one becomes infinity (float16:
 *     from 65520 on; bfloat16: from (2 - 2^-8) 2^127 on);
 *   - values below the smallest normal become subnormals (or a signed zero), rounded
 *     the same way; float32's own subnormals round like any other value;
 *   - a NaN stays a NaN of the same sign, made quiet (the top mantissa bit set), with
 *     the top bits of its payload kept.
 * To float32 the conversion is exact (every 16-bit value is a float32), NaN payloads
 * included. So 16 bits -> float32 -> the same 16 bits for all 65,536 patterns, except
 * signalling NaNs, which come back quiet (their payload otherwise kept). */
#ifndef CORE_DTYPE_H
#define CORE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DTYPE_F32 is 0: a zero-initialised tensor is a float32 one. */
typedef enum { DTYPE_F32 = 0, DTYPE_BF16, DTYPE_F16 } DType;
#define DTYPE_COUNT 3

/* Bytes of one element: 4, 2, 2. */
size_t dtype_size(DType dtype);
/* "float32", "bfloat16", "float16" ("unknown dtype" for anything else). */
const char *dtype_name(DType dtype);
/* Those names, or bf16 / fp16 / fp32, into *out; false for anything else. */
bool dtype_parse(const char *name, DType *out);

/* dst[0..n) of dst_dtype = src[0..n) of src_dtype, converted as above, host memory
 * (OpenMP threads for large n); the same dtype is a copy. dst and src must not overlap. */
void dtype_convert_cpu(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#define DTYPE_HD __host__ __device__
#else
#define DTYPE_HD
#endif

/* ------------------------------------------------------------ bits of a float32 */

DTYPE_HD static inline uint32_t dtype_bits_of_f32(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

DTYPE_HD static inline float dtype_f32_of_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* ------------------------------------------------------------ bfloat16 */

/* (Lesson 10's TODO 10.7 writes this rounding itself: read on once your check passes; a
 * lesson's bf16.c that calls these is refused by the grader.)
 *
 * float32 bits -> bfloat16 bits. Adding 0x7fff plus the lowest kept bit rounds to
 * nearest even: below half the carry does not reach bit 16, above it does, and at
 * exactly half only when the kept part is odd. A carry out of the mantissa steps the
 * exponent, up to infinity. */
DTYPE_HD static inline uint16_t dtype_bf16_from_f32_bits(uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

DTYPE_HD static inline uint32_t dtype_f32_bits_from_bf16(uint16_t h) { return (uint32_t)h << 16; }

/* ------------------------------------------------------------ float16 */

DTYPE_HD static inline uint16_t dtype_f16_from_f32_bits(uint32_t u) {
    const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: infinity */
    if (a >= 0x38800000u) { /* >= 2^-14: a normal float16 */
        const uint32_t r = a - 0x38000000u; /* exponent bias 127 -> 15 */
        return (uint16_t)(sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
    }
    /* below 2^-14: a subnormal m 2^-24, m = the value times 2^24 rounded; a carry to
     * m = 1024 is the smallest normal's pattern. Below 2^-25 (exponent < 102) and
     * float32's subnormals: zero. */
    const uint32_t e = a >> 23;
    if (e < 102u) return (uint16_t)sign;
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e; /* 14..24 */
    const uint32_t half = 1u << (shift - 1), rest = mant & ((1u << shift) - 1u);
    uint32_t m = mant >> shift;
    if (rest > half || (rest == half && (m & 1u))) m++;
    return (uint16_t)(sign | m);
}

DTYPE_HD static inline uint32_t dtype_f32_bits_from_f16(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x03ffu;
    if (e == 0x1fu) return sign | 0x7f800000u | (m << 13); /* infinity, NaN */
    if (e != 0) return sign | ((e + 112u) << 23) | (m << 13);
    if (m == 0) return sign;
    int exp = 113; /* a subnormal: shift the leading 1 up to the implicit bit */
    while (!(m & 0x0400u)) m <<= 1, exp--;
    return sign | ((uint32_t)exp << 23) | ((m & 0x03ffu) << 13);
}

/* ------------------------------------------------------------ on floats */

DTYPE_HD static inline uint16_t dtype_bf16_from_f32(float f) {
    return dtype_bf16_from_f32_bits(dtype_bits_of_f32(f));
}
DTYPE_HD static inline float dtype_f32_from_bf16(uint16_t h) {
    return dtype_f32_of_bits(dtype_f32_bits_from_bf16(h));
}
DTYPE_HD static inline uint16_t dtype_f16_from_f32(float f) {
    return dtype_f16_from_f32_bits(dtype_bits_of_f32(f));
}
DTYPE_HD static inline float dtype_f32_from_f16(uint16_t h) {
    return dtype_f32_of_bits(dtype_f32_bits_from_f16(h));
}

/* A 16-bit pattern of `dtype` (DTYPE_BF16 or DTYPE_F16) from float32 bits and back:
 * the bulk conversions' one element. */
DTYPE_HD static inline uint16_t dtype_bits16_from_f32_bits(int dtype, uint32_t u) {
    return dtype == DTYPE_BF16 ? dtype_bf16_from_f32_bits(u) : dtype_f16_from_f32_bits(u);
}
DTYPE_HD static inline uint32_t dtype_f32_bits_from_bits16(int dtype, uint16_t h) {
    return dtype == DTYPE_BF16 ? dtype_f32_bits_from_bf16(h) : dtype_f32_bits_from_f16(h);
}

#endif
