// ReLU on the GPU, as lib/layers/relu.c: one thread per element, in grid-stride
// loops (any size works with the bounded grid of cuda_blocks_for). bfloat16 / float16
// tensors too (elem.cuh: the output rounded once, which for max(0, x) is exact; din old
// value + dout, rounded once); a lesson's kernels (CudaKernels) take float32 only.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/relu.h"
}

template <class T> static __global__ void relu_forward_kernel(T *out, const T *in, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        const float x = elem_load(in, i);
        elem_store(out, i, x > 0.0f ? x : 0.0f);
    }
}

template <class T>
static __global__ void relu_backward_kernel(T *din, const T *dout, const T *out, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        elem_add(din, i, elem_load(out, i) > 0.0f ? elem_load(dout, i) : 0.0f);
    }
}

extern "C" void cuda_relu_forward_raw(float *out, const float *in, int64_t n) {
    if (n == 0) return;
    relu_forward_kernel<float><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(out, in, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_relu_backward_raw(float *din, const float *dout, const float *out,
                                       int64_t n) {
    if (n == 0) return;
    const int blocks = cuda_blocks_for(n, CUDA_THREADS);
    relu_backward_kernel<float><<<blocks, CUDA_THREADS, 0, cuda_stream()>>>(din, dout, out, n);
    CUDA_CHECK_LAUNCH();
}

// A lesson's kernels compute in float32.
static void check_kernels_dtype(const CudaKernels *k, DType dtype) {
    CHECK(!k, "ReLU with a lesson's CUDA kernels takes float32 tensors, not %s (the library's "
          "kernels take 16-bit ones)", dtype_name(dtype));
}

extern "C" void cuda_relu_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in) {
    const DType dt = ONE_DTYPE(out, in);
    relu_check_forward(out, in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    if (dt == DTYPE_F32) {
        (k ? k->relu_forward : cuda_relu_forward_raw)(out->data, in->data, in->size);
        return;
    }
    check_kernels_dtype(k, dt);
    const int64_t n = in->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        relu_forward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), elems<T>(in), n);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_relu_backward_with(const CudaKernels *k, Tensor *din, const Tensor *dout,
                                        const Tensor *out) {
    const DType dt = ONE_DTYPE(din, dout, out);
    relu_check_backward(din, dout, out);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(out);
    if (dt == DTYPE_F32) {
        (k ? k->relu_backward : cuda_relu_backward_raw)(din->data, dout->data, out->data,
                                                        dout->size);
        return;
    }
    check_kernels_dtype(k, dt);
    const int64_t n = dout->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        relu_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(din), elems<T>(dout), elems<T>(out), n);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_relu_forward(Tensor *out, const Tensor *in) {
    cuda_relu_forward_with(NULL, out, in);
}

extern "C" void cuda_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    cuda_relu_backward_with(NULL, din, dout, out);
}
