// The device side of core/tensor.c: filling and scaling GPU memory (tensor_fill and
// tensor_scale on a CUDA tensor), and 16-bit tensors' fill and conversions
// (tensor_convert), with core/dtype.h's conversions: the CPU's bits.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/tensor.h"
}

static __global__ void fill_kernel(float *x, int64_t n, float value) {
    GRID_STRIDE_LOOP(i, n) x[i] = value;
}

extern "C" void cuda_fill(float *x, int64_t n, float value) {
    if (n == 0) return;
    fill_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(x, n, value);
    CUDA_CHECK_LAUNCH();
}

static __global__ void scale_kernel(float *x, int64_t n, float factor) {
    GRID_STRIDE_LOOP(i, n) x[i] *= factor;
}

extern "C" void cuda_scale(float *x, int64_t n, float factor) {
    if (n == 0) return;
    scale_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(x, n, factor);
    CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- 16-bit tensors

static __global__ void fill16_kernel(uint16_t *x, int64_t n, uint16_t bits) {
    GRID_STRIDE_LOOP(i, n) x[i] = bits;
}

extern "C" void cuda_fill16(uint16_t *x, int64_t n, uint16_t bits) {
    if (n == 0) return;
    fill16_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(x, n, bits);
    CUDA_CHECK_LAUNCH();
}

// float32 -> 16 bits, 16 bits -> float32, and one 16-bit dtype to the other through
// float32 (exact): dtype_convert_cpu's three loops, element by element.
static __global__ void to16_kernel(uint16_t *y, int dst, const uint32_t *x, int64_t n) {
    GRID_STRIDE_LOOP(i, n) y[i] = dtype_bits16_from_f32_bits(dst, x[i]);
}

static __global__ void from16_kernel(uint32_t *y, const uint16_t *x, int src, int64_t n) {
    GRID_STRIDE_LOOP(i, n) y[i] = dtype_f32_bits_from_bits16(src, x[i]);
}

static __global__ void between16_kernel(uint16_t *y, int dst, const uint16_t *x, int src,
                                        int64_t n) {
    GRID_STRIDE_LOOP(i, n) y[i] = dtype_bits16_from_f32_bits(dst, dtype_f32_bits_from_bits16(src, x[i]));
}

extern "C" void cuda_convert(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n) {
    if (n == 0) return;
    const int blocks = cuda_blocks_for(n, CUDA_THREADS);
    if (src_dtype == DTYPE_F32)
        to16_kernel<<<blocks, CUDA_THREADS, 0, cuda_stream()>>>((uint16_t *)dst, dst_dtype, (const uint32_t *)src, n);
    else if (dst_dtype == DTYPE_F32)
        from16_kernel<<<blocks, CUDA_THREADS, 0, cuda_stream()>>>((uint32_t *)dst, (const uint16_t *)src, src_dtype, n);
    else
        between16_kernel<<<blocks, CUDA_THREADS, 0, cuda_stream()>>>((uint16_t *)dst, dst_dtype,
                                                   (const uint16_t *)src, src_dtype, n);
    CUDA_CHECK_LAUNCH();
}
