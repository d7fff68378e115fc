// TODO 2.2 and 2.3: two kernels of the CNN. Each thread computes one element;
// the grid has enough blocks for all of them (CUDA_THREADS, lib/cuda/launch.h).
#include "cuda/cuda_check.h"
#include "cuda/launch.h"
#include "lesson_gpu.h"

// ---------------------------------------------------------------- TODO 2.2

static __global__ void relu_forward_kernel(float *out, const float *in, int64_t n) {
#ifdef SOLUTION
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
#else
    // TODO 2.2: this thread's element i (64-bit: tensors can exceed 2^31 values);
    // if i < n: out[i] = the larger of in[i] and 0.
#endif
}

static __global__ void relu_backward_kernel(float *din, const float *dout, const float *out,
                                            int64_t n) {
#ifdef SOLUTION
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) din[i] += out[i] > 0.0f ? dout[i] : 0.0f;
#else
    // TODO 2.2: if i < n: din[i] += dout[i] where out[i] > 0 (add, never assign).
#endif
}

extern "C" void lesson_relu_forward(float *out, const float *in, int64_t n) {
#ifdef SOLUTION
    if (n == 0) return; // a grid of 0 blocks is a launch error
    // one thread per element: this grid never needs to stride (n < 2^31 * 256 here)
    int64_t blocks = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    relu_forward_kernel<<<(unsigned)blocks, CUDA_THREADS>>>(out, in, n);
    CUDA_CHECK_LAUNCH();
#else
    // TODO 2.2: launch relu_forward_kernel with CUDA_THREADS threads per block and
    // enough blocks for n elements (round up), then CUDA_CHECK_LAUNCH().
    TODO_STOP("2.2");
#endif
}

extern "C" void lesson_relu_backward(float *din, const float *dout, const float *out, int64_t n) {
#ifdef SOLUTION
    if (n == 0) return;
    int64_t blocks = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    relu_backward_kernel<<<(unsigned)blocks, CUDA_THREADS>>>(din, dout, out, n);
    CUDA_CHECK_LAUNCH();
#else
    // TODO 2.2: the same launch for relu_backward_kernel.
    TODO_STOP("2.2");
#endif
}

// ---------------------------------------------------------------- TODO 2.3

// One thread per entry of cols [C*KH*KW, nimg*OH*OW]. ConvGeometry is passed by
// value: the kernel gets its own copy of the sizes.
static __global__ void im2col_kernel(float *cols, const float *images, int nimg, ConvGeometry g) {
#ifdef SOLUTION
    const int64_t ncols = (int64_t)nimg * g.OH * g.OW;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)g.C * g.KH * g.KW * ncols) return;
    const int64_t row = i / ncols, col = i % ncols;            // (c, kh, kw), (n, oh, ow)
    const int kw = (int)(row % g.KW), kh = (int)(row / g.KW % g.KH), c = (int)(row / (g.KW * g.KH));
    const int n = (int)(col / (g.OH * g.OW)), oh = (int)(col / g.OW % g.OH), ow = (int)(col % g.OW);
    const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
    cols[i] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W
                  ? images[(((int64_t)n * g.C + c) * g.H + ih) * g.W + iw]
                  : 0.0f; // the zero padding
#else
    // TODO 2.3: i = this thread's entry; return if i is past the end. Split i into
    // its row (c, kh, kw) and column (n, oh, ow) (i = row * ncols + col), compute
    // the input pixel ih = oh*stride - pad + kh, iw = ow*stride - pad + kw, and
    // write it to cols[i], or 0 where it falls outside the image.
#endif
}

extern "C" void lesson_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g) {
#ifdef SOLUTION
    int64_t total = (int64_t)g->C * g->KH * g->KW * nimg * g->OH * g->OW;
    if (total == 0) return;
    im2col_kernel<<<(unsigned)((total + CUDA_THREADS - 1) / CUDA_THREADS), CUDA_THREADS>>>(
        cols, images, nimg, *g);
    CUDA_CHECK_LAUNCH();
#else
    // TODO 2.3: launch im2col_kernel with one thread per entry of cols
    // (C*KH*KW * nimg*OH*OW of them), passing *g by value; check the launch.
    TODO_STOP("2.3");
#endif
}
