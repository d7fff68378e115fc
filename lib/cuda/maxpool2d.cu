// Max pooling on the GPU, as lib/layers/maxpool2d.c: no padding, floor mode, the
// first maximum wins a tie, argmax is the index within the H x W plane.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/maxpool2d.h"
}

// One thread per output value.
static __global__ void maxpool_forward_kernel(float *out, int *argmax, const float *in,
                                              int planes, int H, int W, int OH, int OW,
                                              int kernel, int stride) {
    const int64_t total = (int64_t)planes * OH * OW;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW), oh = (int)(i / OW % OH);
        const float *x = in + i / ((int64_t)OH * OW) * H * W; // this plane
        int best = oh * stride * W + ow * stride;              // the window's first pixel
        for (int kh = 0; kh < kernel; kh++)
            for (int kw = 0; kw < kernel; kw++) {
                const int j = (oh * stride + kh) * W + ow * stride + kw;
                if (x[j] > x[best]) best = j; // '>': ties keep the first
            }
        out[i] = x[best];
        argmax[i] = best;
    }
}

static void maxpool_forward(float *out, int *argmax, const float *in, int planes,
                                         int H, int W, int kernel, int stride) {
    const int OH = (H - kernel) / stride + 1, OW = (W - kernel) / stride + 1;
    const int64_t total = (int64_t)planes * OH * OW;
    if (total == 0) return;
    maxpool_forward_kernel<<<cuda_blocks_for(total, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        out, argmax, in, planes, H, W, OH, OW, kernel, stride);
    CUDA_CHECK_LAUNCH();
}

// One thread per output value, adding its gradient onto the winner. Windows that
// overlap (stride < kernel) can send two gradients to one pixel, hence atomicAdd;
// the CNN's 2x2/2 windows never overlap, and then every pixel gets at most one add
// and the result is exactly the CPU's.
static __global__ void maxpool_backward_kernel(float *din, const float *dout, const int *argmax,
                                               int planes, int HW, int OHW) {
    const int64_t total = (int64_t)planes * OHW;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&din[i / OHW * HW + argmax[i]], dout[i]);
}

static void maxpool_backward(float *din, const float *dout, const int *argmax,
                                          int planes, int HW, int OHW) {
    const int64_t total = (int64_t)planes * OHW;
    if (total == 0) return;
    maxpool_backward_kernel<<<cuda_blocks_for(total, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        din, dout, argmax, planes, HW, OHW);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel,
                                       int stride) {
    CHECK_FLOAT32(out, in);
    maxpool2d_check_forward(out, in, kernel, stride);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(out);
    CHECK_DEVICE_POINTER(argmax);
    maxpool_forward(out->data, argmax, in->data, in->shape[0] * in->shape[1], in->shape[2],
                    in->shape[3], kernel, stride);
}

extern "C" void cuda_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    CHECK_FLOAT32(din, dout);
    maxpool2d_check_backward(din, dout);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_DEVICE_POINTER(argmax);
    maxpool_backward(din->data, dout->data, argmax, din->shape[0] * din->shape[1],
                     din->shape[2] * din->shape[3], dout->shape[2] * dout->shape[3]);
}
