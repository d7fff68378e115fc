// ReLU on the GPU, as lib/layers/relu.c: one thread per element, in grid-stride
// loops (any size works with the bounded grid of cuda_blocks_for).
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/relu.h"
}

static __global__ void relu_forward_kernel(float *out, const float *in, int64_t n) {
    GRID_STRIDE_LOOP(i, n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

static __global__ void relu_backward_kernel(float *din, const float *dout, const float *out,
                                            int64_t n) {
    GRID_STRIDE_LOOP(i, n) din[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

extern "C" void cuda_relu_forward_raw(float *out, const float *in, int64_t n) {
    if (n == 0) return;
    relu_forward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out, in, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_relu_backward_raw(float *din, const float *dout, const float *out,
                                       int64_t n) {
    if (n == 0) return;
    relu_backward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(din, dout, out, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_relu_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in) {
    CHECK_FLOAT32(out, in);
    relu_check_forward(out, in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    (k ? k->relu_forward : cuda_relu_forward_raw)(out->data, in->data, in->size);
}

extern "C" void cuda_relu_backward_with(const CudaKernels *k, Tensor *din, const Tensor *dout,
                                        const Tensor *out) {
    CHECK_FLOAT32(din, dout, out);
    relu_check_backward(din, dout, out);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(out);
    (k ? k->relu_backward : cuda_relu_backward_raw)(din->data, dout->data, out->data, dout->size);
}

extern "C" void cuda_relu_forward(Tensor *out, const Tensor *in) {
    cuda_relu_forward_with(NULL, out, in);
}

extern "C" void cuda_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    cuda_relu_backward_with(NULL, din, dout, out);
}
