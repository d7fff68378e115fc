// The device side of core/tensor.c: filling and scaling GPU memory (tensor_fill and
// tensor_scale on a CUDA tensor).
#include "cuda_check.h"
#include "launch.h"

static __global__ void fill_kernel(float *x, int64_t n, float value) {
    GRID_STRIDE_LOOP(i, n) x[i] = value;
}

extern "C" void cuda_fill(float *x, int64_t n, float value) {
    if (n == 0) return;
    fill_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(x, n, value);
    CUDA_CHECK_LAUNCH();
}

static __global__ void scale_kernel(float *x, int64_t n, float factor) {
    GRID_STRIDE_LOOP(i, n) x[i] *= factor;
}

extern "C" void cuda_scale(float *x, int64_t n, float factor) {
    if (n == 0) return;
    scale_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(x, n, factor);
    CUDA_CHECK_LAUNCH();
}
