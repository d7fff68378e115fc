// GELU on the GPU, as lib/layers/gelu.c (exact form, erfc): one thread per element.
// CUDA's erfcf and expf are within a few ulp, glibc's within 1 or 2: not bit for bit. bfloat16 /
// float16 too (elem.cuh): the output rounded once, din old value + gradient rounded once.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/gelu.h"
}

#define GELU_SQRT1_2 0.70710678118654752f      // 1 / sqrt(2)
#define GELU_INV_SQRT_2PI 0.39894228040143268f // 1 / sqrt(2 pi)

template <class T> static __global__ void gelu_forward_kernel(T *out, const T *in, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        const float x = elem_load(in, i);
        elem_store(out, i, 0.5f * x * erfcf(-x * GELU_SQRT1_2));
    }
}

template <class T>
static __global__ void gelu_backward_kernel(T *din, const T *dout, const T *in, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        const float x = elem_load(in, i);
        const float cdf = 0.5f * erfcf(-x * GELU_SQRT1_2);
        const float pdf = GELU_INV_SQRT_2PI * expf(-0.5f * x * x);
        elem_add(din, i, elem_load(dout, i) * (cdf + x * pdf));
    }
}

extern "C" void cuda_gelu_forward(Tensor *out, const Tensor *in) {
    const DType dt = ONE_DTYPE(out, in);
    gelu_check_forward(out, in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    const int64_t n = in->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        gelu_forward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), elems<T>(in), n);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_gelu_backward(Tensor *din, const Tensor *dout, const Tensor *in) {
    const DType dt = ONE_DTYPE(din, dout, in);
    gelu_check_backward(din, dout, in);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    const int64_t n = in->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        gelu_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(din), elems<T>(dout), elems<T>(in), n);
        CUDA_CHECK_LAUNCH();
    });
}
