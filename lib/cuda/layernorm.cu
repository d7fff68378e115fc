// Layer norm on the GPU, as lib/layers/layernorm.c: the same formulas, the row sums in
// double as there, in another order (a warp's lanes, then a fixed butterfly), so mean
// and rstd are the CPU's up to the last bit of a double before rounding to float.
//
// Forward: one warp per row (mean, then the sum of squared deviations: two passes,
// no cancellation; layernorm_row.cuh, shared with the fused add + layer norm), mean and
// rstd saved per row.
// Backward: din one warp per row; dgamma and dbeta without atomics, in two passes:
// a grid of (column, chunk of LN_CHUNK rows) threads sums its chunk's rows in order in
// double, then one thread per column adds the chunks' sums in order and adds the total
// to dgamma / dbeta. The same bits on every run.
//
// bfloat16 / float16: in, gamma, beta, out, dout and din of the run's dtype (elem.cuh:
// loaded as floats, each output rounded once where it is stored, din's old value plus
// the gradient); mean, rstd, dgamma and dbeta float32.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
#include "layernorm_row.cuh"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "kernels.h"
#include "layers/layernorm.h"
}

enum { LN_CHUNK = 64 }; // rows per partial sum of the parameter gradients

template <class T>
static __global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, const T *in,
                                                const T *gamma, const T *beta, int N, int D,
                                                float eps) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(n, N)
        layernorm_row(out + (int64_t)n * D, mean, rstd, in + (int64_t)n * D, gamma, beta, n, D,
                      eps, lane);
}

// din = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * gamma, per row
template <class T>
static __global__ void layernorm_input_grad_kernel(T *din, const T *dout, const T *in,
                                                   const float *mean, const float *rstd,
                                                   const T *gamma, int N, int D) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(n, N) {
        const T *x = in + n * D, *dy = dout + n * D;
        T *dx = din + n * D;
        const float m = mean[n], r = rstd[n];
        double sum_g = 0.0, sum_gx = 0.0;
        for (int j = lane; j < D; j += 32) {
            const float g = elem_load(dy, j) * elem_load(gamma, j);
            sum_g += g;
            sum_gx += (double)(g * ((elem_load(x, j) - m) * r));
        }
        const float mean_g = (float)(warp_sum(sum_g) / D), mean_gx = (float)(warp_sum(sum_gx) / D);
        for (int j = lane; j < D; j += 32) {
            const float xhat = (elem_load(x, j) - m) * r;
            elem_add(dx, j, r * (elem_load(dy, j) * elem_load(gamma, j) - mean_g - xhat * mean_gx));
        }
    }
}

// partial_g[c][j], partial_b[c][j]: rows c*LN_CHUNK .. of column j, in order.
// Grid: x over columns (blocks of CUDA_THREADS), y over chunks.
template <class T>
static __global__ void layernorm_param_partials_kernel(double *partial_g, double *partial_b,
                                                       const T *dout, const T *in,
                                                       const float *mean, const float *rstd,
                                                       int N, int D) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= D) return;
    const int r0 = blockIdx.y * LN_CHUNK, r1 = min(r0 + LN_CHUNK, N);
    double sg = 0.0, sb = 0.0;
    for (int n = r0; n < r1; n++) {
        const float dy = elem_load(dout, (int64_t)n * D + j), x = elem_load(in, (int64_t)n * D + j);
        sg += (double)(dy * ((x - mean[n]) * rstd[n]));
        sb += (double)dy;
    }
    partial_g[(int64_t)blockIdx.y * D + j] = sg;
    partial_b[(int64_t)blockIdx.y * D + j] = sb;
}

static __global__ void layernorm_param_sum_kernel(float *dgamma, float *dbeta,
                                                  const double *partial_g,
                                                  const double *partial_b, int chunks, int D) {
    GRID_STRIDE_LOOP(j, D) {
        double sg = 0.0, sb = 0.0;
        for (int c = 0; c < chunks; c++) {
            sg += partial_g[(int64_t)c * D + j];
            sb += partial_b[(int64_t)c * D + j];
        }
        dgamma[j] += (float)sg;
        dbeta[j] += (float)sb;
    }
}

// The partial sums, kept between calls (grown when needed).
static double *g_partials;
static int64_t g_partial_count;

static double *partials(int64_t count) {
    if (count > g_partial_count) {
        cuda_free(g_partials);
        g_partials = (double *)cuda_malloc((size_t)count * sizeof(double));
        g_partial_count = count;
    }
    return g_partials;
}

extern "C" void cuda_layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                                       const Tensor *gamma, const Tensor *beta, float eps) {
    const DType dt = ONE_DTYPE(out, in, gamma, beta);
    CHECK_FLOAT32(mean, rstd);
    layernorm_check_forward(out, mean, rstd, in, gamma, beta, eps);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(mean);
    CHECK_ON_GPU(rstd);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(gamma);
    CHECK_ON_GPU(beta);
    const int N = in->shape[0], D = in->shape[1];
    if (N == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        layernorm_forward_kernel<T><<<cuda_blocks_for_rows(N, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), mean->data, rstd->data, elems<T>(in), elems<T>(gamma),
            elems<T>(beta), N, D, eps);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta,
                                        const Tensor *dout, const Tensor *in, const Tensor *mean,
                                        const Tensor *rstd, const Tensor *gamma) {
    const DType dt = ONE_DTYPE(din, dout, in, gamma);
    CHECK_FLOAT32(dgamma, dbeta, mean, rstd);
    layernorm_check_backward(din, dgamma, dbeta, dout, in, mean, rstd, gamma);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dgamma);
    CHECK_ON_GPU(dbeta);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(mean);
    CHECK_ON_GPU(rstd);
    CHECK_ON_GPU(gamma);
    const int N = in->shape[0], D = in->shape[1];
    if (N == 0 || D == 0) return;
    const int chunks = (N + LN_CHUNK - 1) / LN_CHUNK;
    CHECK(chunks <= 65535, "layer norm backward: %d rows, more than %d", N, 65535 * LN_CHUNK);
    double *pg = partials(2 * (int64_t)chunks * D), *pb = pg + (int64_t)chunks * D;
    const dim3 grid((unsigned)((D + CUDA_THREADS - 1) / CUDA_THREADS), (unsigned)chunks);
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        layernorm_param_partials_kernel<T><<<grid, CUDA_THREADS, 0, cuda_stream()>>>(
            pg, pb, elems<T>(dout), elems<T>(in), mean->data, rstd->data, N, D);
        CUDA_CHECK_LAUNCH();
        layernorm_param_sum_kernel<<<cuda_blocks_for(D, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            dgamma->data, dbeta->data, pg, pb, chunks, D);
        CUDA_CHECK_LAUNCH();
        if (din) {
            layernorm_input_grad_kernel<T><<<cuda_blocks_for_rows(N, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
                elems<T>(din), elems<T>(dout), elems<T>(in), mean->data, rstd->data,
                elems<T>(gamma), N, D);
            CUDA_CHECK_LAUNCH();
        }
    });
}
