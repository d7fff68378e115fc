// 2-D convolution on the GPU, as lib/layers/conv2d.c computes it, for the whole batch
// at once: im2col into a workspace, one GEMM with the weights, then a regrouping
// kernel that adds the bias. The backward runs the same steps in reverse.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "kernels.h"
#include "layers/conv2d.h"
#include "ops/gemm.h"
}

// out [N, Cout, OHW] = prod [Cout, N * OHW] regrouped, + bias [Cout]
static __global__ void conv_output_kernel(float *out, const float *prod, const float *bias,
                                          int N, int Cout, int OHW) {
    GRID_STRIDE_LOOP(i, (int64_t)N * Cout * OHW) {
        int64_t p = i % OHW, co = i / OHW % Cout, n = i / ((int64_t)OHW * Cout);
        out[i] = prod[(co * N + n) * OHW + p] + bias[co];
    }
}

// dy [Cout, N * OHW] = dout [N, Cout, OHW] regrouped (the inverse of the above)
static __global__ void conv_gather_dout_kernel(float *dy, const float *dout, int N, int Cout,
                                               int OHW) {
    GRID_STRIDE_LOOP(i, (int64_t)N * Cout * OHW) {
        int64_t p = i % OHW, n = i / OHW % N, co = i / ((int64_t)OHW * N);
        dy[i] = dout[(n * Cout + co) * OHW + p];
    }
}

// dbias [rows] += sum of each row of dy [rows, cols]: one block per row, each
// thread sums a strided share, then a tree in shared memory (blockDim.x must be a
// power of two: CUDA_THREADS is).
static __global__ void rows_sum_add_kernel(float *dbias, const float *dy, int cols) {
    __shared__ float part[CUDA_THREADS];
    const float *row = dy + (int64_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) dbias[blockIdx.x] += part[0];
}

// One device buffer, grown as needed and reused (cudaMalloc is slow, and it
// synchronises the device).
static float *g_workspace;
static size_t g_workspace_floats;

static float *workspace(size_t floats) {
    if (g_workspace_floats < floats) {
        cuda_free(g_workspace);
        g_workspace = (float *)cuda_malloc(floats * sizeof(float));
        g_workspace_floats = floats;
    }
    return g_workspace;
}

extern "C" void cuda_conv2d_release_workspace(void) {
    cuda_free(g_workspace);
    g_workspace = NULL;
    g_workspace_floats = 0;
}

extern "C" void cuda_conv2d_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                                         const Tensor *weight, const Tensor *bias, int stride,
                                         int pad) {
    CHECK_FLOAT32(out, in, weight, bias);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(bias);
    ConvGeometry g = conv2d_check_shapes(out, in, weight, stride, pad);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(bias, Cout);
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW, ncols = N * OHW;
    float *cols = workspace((size_t)K * ncols + (size_t)Cout * ncols); // [K, N*OHW]
    float *prod = cols + (size_t)K * ncols;                            // [Cout, N*OHW]
    (k ? k->im2col : cuda_im2col)(cols, in->data, N, &g);
    (k ? k->gemm : cuda_gemm)(false, false, Cout, ncols, K, 1.0f, weight->data, K, cols, ncols,
                              0.0f, prod, ncols);
    const int64_t n = (int64_t)N * Cout * OHW;
    if (n == 0) return;
    conv_output_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        out->data, prod, bias->data, N, Cout, OHW);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_conv2d_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight,
                                          Tensor *dbias, const Tensor *dout, const Tensor *in,
                                          const Tensor *weight, int stride, int pad) {
    CHECK_FLOAT32(din, dweight, dbias, dout, in, weight);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(dweight);
    CHECK_ON_GPU(dbias);
    CHECK_ON_GPU(din);
    ConvGeometry g = conv2d_check_shapes(dout, in, weight, stride, pad);
    conv2d_check_grad_shapes(din, dweight, dbias, in, weight);
    const int N = in->shape[0], Cout = weight->shape[0];
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW, ncols = N * OHW;
    if (ncols == 0) return;
    float *cols = workspace((size_t)(2 * K + Cout) * ncols); // [K, N*OHW]
    float *dy = cols + (size_t)K * ncols;                    // [Cout, N*OHW]
    float *dcols = dy + (size_t)Cout * ncols;                // [K, N*OHW]
    const int64_t n = (int64_t)N * Cout * OHW;
    conv_gather_dout_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        dy, dout->data, N, Cout, OHW);
    CUDA_CHECK_LAUNCH();
    rows_sum_add_kernel<<<Cout, CUDA_THREADS, 0, cuda_stream()>>>(dbias->data, dy, ncols);
    CUDA_CHECK_LAUNCH();
    auto gemm = k ? k->gemm : cuda_gemm;
    (k ? k->im2col : cuda_im2col)(cols, in->data, N, &g);
    // dweight [Cout, K] += dy x cols^T: beta 1 adds, as every backward does
    gemm(false, true, Cout, K, ncols, 1.0f, dy, ncols, cols, ncols, 1.0f, dweight->data, K);
    if (din) {
        gemm(true, false, K, ncols, Cout, 1.0f, weight->data, K, dy, ncols, 0.0f, dcols, ncols);
        cuda_col2im(din->data, dcols, N, &g);
    }
}

extern "C" void cuda_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                                    const Tensor *bias, int stride, int pad) {
    cuda_conv2d_forward_with(NULL, out, in, weight, bias, stride, pad);
}

extern "C" void cuda_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias,
                                     const Tensor *dout, const Tensor *in, const Tensor *weight,
                                     int stride, int pad) {
    cuda_conv2d_backward_with(NULL, din, dweight, dbias, dout, in, weight, stride, pad);
}
