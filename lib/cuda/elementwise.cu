// Element-wise kernels: fill, ReLU, and the bias and regrouping passes of the
// linear and convolution layers. One thread per element, in grid-stride loops
// (i from the thread's global index, in steps of the whole grid), so any size
// works with the bounded grid of cuda_blocks_for.
#include "cuda_check.h"
#include "kernels.h"

#define GRID_STRIDE_LOOP(i, n)                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (int64_t)gridDim.x * blockDim.x)

static __global__ void fill_kernel(float *x, int64_t n, float value) {
    GRID_STRIDE_LOOP(i, n) x[i] = value;
}

extern "C" void cuda_fill_raw(float *x, int64_t n, float value) {
    if (n == 0) return;
    fill_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(x, n, value);
    CUDA_CHECK_LAUNCH();
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

// out [rows, cols]: every row = bias [cols]
static __global__ void bias_rows_kernel(float *out, const float *bias, int rows, int cols) {
    GRID_STRIDE_LOOP(i, (int64_t)rows * cols) out[i] = bias[i % cols];
}

extern "C" void cuda_bias_rows_raw(float *out, const float *bias, int rows, int cols) {
    int64_t n = (int64_t)rows * cols;
    if (n == 0) return;
    bias_rows_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out, bias, rows, cols);
    CUDA_CHECK_LAUNCH();
}

// dbias [cols] += column sums of dout [rows, cols]: one thread per column, rows in
// order (the CPU's order: the same sums, bit for bit).
static __global__ void bias_rows_backward_kernel(float *dbias, const float *dout, int rows,
                                                 int cols) {
    GRID_STRIDE_LOOP(c, cols) {
        float acc = dbias[c];
        for (int r = 0; r < rows; r++) acc += dout[(int64_t)r * cols + c];
        dbias[c] = acc;
    }
}

extern "C" void cuda_bias_rows_backward_raw(float *dbias, const float *dout, int rows, int cols) {
    if (cols == 0) return;
    bias_rows_backward_kernel<<<cuda_blocks_for(cols, CUDA_THREADS), CUDA_THREADS>>>(
        dbias, dout, rows, cols);
    CUDA_CHECK_LAUNCH();
}

// out [N, Cout, OHW] = prod [Cout, N * OHW] regrouped, + bias [Cout]
static __global__ void conv_output_kernel(float *out, const float *prod, const float *bias,
                                          int N, int Cout, int OHW) {
    GRID_STRIDE_LOOP(i, (int64_t)N * Cout * OHW) {
        int64_t p = i % OHW, co = i / OHW % Cout, n = i / ((int64_t)OHW * Cout);
        out[i] = prod[(co * N + n) * OHW + p] + bias[co];
    }
}

extern "C" void cuda_conv_output_raw(float *out, const float *prod, const float *bias, int N,
                                     int Cout, int OHW) {
    int64_t n = (int64_t)N * Cout * OHW;
    if (n == 0) return;
    conv_output_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out, prod, bias, N,
                                                                           Cout, OHW);
    CUDA_CHECK_LAUNCH();
}

// dy [Cout, N * OHW] = dout [N, Cout, OHW] regrouped (the inverse of the above)
static __global__ void conv_gather_dout_kernel(float *dy, const float *dout, int N, int Cout,
                                               int OHW) {
    GRID_STRIDE_LOOP(i, (int64_t)N * Cout * OHW) {
        int64_t p = i % OHW, n = i / OHW % N, co = i / ((int64_t)OHW * N);
        dy[i] = dout[(n * Cout + co) * OHW + p];
    }
}

extern "C" void cuda_conv_gather_dout_raw(float *dy, const float *dout, int N, int Cout, int OHW) {
    int64_t n = (int64_t)N * Cout * OHW;
    if (n == 0) return;
    conv_gather_dout_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(dy, dout, N,
                                                                                Cout, OHW);
    CUDA_CHECK_LAUNCH();
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

extern "C" void cuda_rows_sum_add_raw(float *dbias, const float *dy, int rows, int cols) {
    if (rows == 0) return;
    rows_sum_add_kernel<<<rows, CUDA_THREADS>>>(dbias, dy, cols);
    CUDA_CHECK_LAUNCH();
}
