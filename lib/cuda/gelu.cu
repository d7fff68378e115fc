// GELU on the GPU, as lib/layers/gelu.c (exact form, erf): one thread per element.
// CUDA's erff and expf are within 2 ulp, glibc's within 1: not bit for bit.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/gelu.h"
}

#define GELU_SQRT1_2 0.70710678118654752f      // 1 / sqrt(2)
#define GELU_INV_SQRT_2PI 0.39894228040143268f // 1 / sqrt(2 pi)

static __global__ void gelu_forward_kernel(float *out, const float *in, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        const float x = in[i];
        out[i] = 0.5f * x * (1.0f + erff(x * GELU_SQRT1_2));
    }
}

static __global__ void gelu_backward_kernel(float *din, const float *dout, const float *in,
                                            int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        const float x = in[i];
        const float cdf = 0.5f * (1.0f + erff(x * GELU_SQRT1_2));
        const float pdf = GELU_INV_SQRT_2PI * expf(-0.5f * x * x);
        din[i] += dout[i] * (cdf + x * pdf);
    }
}

extern "C" void cuda_gelu_forward(Tensor *out, const Tensor *in) {
    CHECK_FLOAT32(out, in);
    gelu_check_forward(out, in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    const int64_t n = in->size;
    if (n == 0) return;
    gelu_forward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out->data, in->data, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_gelu_backward(Tensor *din, const Tensor *dout, const Tensor *in) {
    CHECK_FLOAT32(din, dout, in);
    gelu_check_backward(din, dout, in);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    const int64_t n = in->size;
    if (n == 0) return;
    gelu_backward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        din->data, dout->data, in->data, n);
    CUDA_CHECK_LAUNCH();
}
