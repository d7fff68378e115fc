// TODO 2.2 and 2.3: two kernels of the CNN. Each thread computes one element;
// the grid has enough blocks for all of them (CUDA_THREADS, lib/cuda/launch.h).
#include "cuda/cuda_check.h"
#include "cuda/launch.h"
#include "lesson_gpu.h"

// ---------------------------------------------------------------- TODO 2.2

static __global__ void relu_forward_kernel(float *out, const float *in, int64_t n) {
    // TODO 2.2: this thread's element i (64-bit: tensors can exceed 2^31 values);
    // if i < n: out[i] = the larger of in[i] and 0.
}

static __global__ void relu_backward_kernel(float *din, const float *dout, const float *out,
                                            int64_t n) {
    // TODO 2.2: if i < n: din[i] += dout[i] where out[i] > 0 (add, never assign).
}

extern "C" void lesson_relu_forward(float *out, const float *in, int64_t n) {
    // TODO 2.2: launch relu_forward_kernel with CUDA_THREADS threads per block and
    // enough blocks for n elements (round up), then CUDA_CHECK_LAUNCH().
    TODO_STOP("2.2");
}

extern "C" void lesson_relu_backward(float *din, const float *dout, const float *out, int64_t n) {
    // TODO 2.2: the same launch for relu_backward_kernel.
    TODO_STOP("2.2");
}

// ---------------------------------------------------------------- TODO 2.3

// One thread per entry of cols [C*KH*KW, nimg*OH*OW]. ConvGeometry is passed by
// value: the kernel gets its own copy of the sizes.
static __global__ void im2col_kernel(float *cols, const float *images, int nimg, ConvGeometry g) {
    // TODO 2.3: i = this thread's entry; return if i is past the end. Split i into
    // its row (c, kh, kw) and column (n, oh, ow) (i = row * ncols + col), compute
    // the input pixel ih = oh*stride - pad + kh, iw = ow*stride - pad + kw, and
    // write it to cols[i], or 0 where it falls outside the image.
}

extern "C" void lesson_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g) {
    // TODO 2.3: launch im2col_kernel with one thread per entry of cols
    // (C*KH*KW * nimg*OH*OW of them), passing *g by value; check the launch.
    TODO_STOP("2.3");
}
