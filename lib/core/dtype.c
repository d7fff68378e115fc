/* Element types: sizes, names, and the bulk conversion in host memory (the scalar
 * conversions are dtype.h's, shared with the GPU). */
#include "dtype.h"

#include <string.h>

#include "check.h"

size_t dtype_size(DType dtype) { return dtype == DTYPE_F32 ? 4 : 2; }

const char *dtype_name(DType dtype) {
    switch (dtype) {
    case DTYPE_F32: return "float32";
    case DTYPE_BF16: return "bfloat16";
    case DTYPE_F16: return "float16";
    }
    return "unknown dtype";
}

bool dtype_parse(const char *name, DType *out) {
    static const struct { const char *name; DType dtype; } NAMES[] = {
        {"float32", DTYPE_F32}, {"fp32", DTYPE_F32},  {"bfloat16", DTYPE_BF16},
        {"bf16", DTYPE_BF16},   {"float16", DTYPE_F16}, {"fp16", DTYPE_F16}};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(name, NAMES[i].name) == 0) {
            *out = NAMES[i].dtype;
            return true;
        }
    return false;
}

/* Large conversions (a model's weights) in threads; a few thousand elements not. */
enum { PARALLEL_FROM = 1 << 16 };

void dtype_convert_cpu(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n) {
    CHECK(dst_dtype < DTYPE_COUNT && src_dtype < DTYPE_COUNT, "conversion between dtypes %d and %d",
          (int)dst_dtype, (int)src_dtype);
    if (dst_dtype == src_dtype) {
        memcpy(dst, src, (size_t)n * dtype_size(src_dtype));
        return;
    }
    if (src_dtype == DTYPE_F32) { /* float32 -> 16 bits: one rounding */
        const uint32_t *x = src;
        uint16_t *y = dst;
        const int d = dst_dtype;
#pragma omp parallel for simd if (parallel : n > PARALLEL_FROM) schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = dtype_bits16_from_f32_bits(d, x[i]);
    } else if (dst_dtype == DTYPE_F32) { /* 16 bits -> float32: exact */
        const uint16_t *x = src;
        uint32_t *y = dst;
        const int s = src_dtype;
#pragma omp parallel for simd if (parallel : n > PARALLEL_FROM) schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = dtype_f32_bits_from_bits16(s, x[i]);
    } else { /* one 16-bit type to the other, through float32 (exact): one rounding */
        const uint16_t *x = src;
        uint16_t *y = dst;
        const int s = src_dtype, d = dst_dtype;
#pragma omp parallel for simd if (parallel : n > PARALLEL_FROM) schedule(static)
        for (int64_t i = 0; i < n; i++)
            y[i] = dtype_bits16_from_f32_bits(d, dtype_f32_bits_from_bits16(s, x[i]));
    }
}
