// Layer norm on the GPU, as lib/layers/layernorm.c: the same formulas, the row sums in
// double as there, in another order (a warp's lanes, then a fixed butterfly), so mean
// and rstd are the CPU's up to the last bit of a double before rounding to float.
//
// Forward: one warp per row (mean, then the sum of squared deviations: two passes,
// no cancellation), mean and rstd saved per row.
// Backward: din one warp per row; dgamma and dbeta without atomics, in two passes:
// a grid of (column, chunk of LN_CHUNK rows) threads sums its chunk's rows in order in
// double, then one thread per column adds the chunks' sums in order and adds the total
// to dgamma / dbeta. The same bits on every run.
#include "cuda_check.h"
#include "launch.h"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "kernels.h"
#include "layers/layernorm.h"
}

enum { LN_CHUNK = 64 }; // rows per partial sum of the parameter gradients

static __global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd,
                                                const float *in, const float *gamma,
                                                const float *beta, int N, int D, float eps) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(n, N) {
        const float *x = in + n * D;
        float *y = out + n * D;
        double sum = 0.0;
        for (int j = lane; j < D; j += 32) sum += x[j];
        const double mu = warp_sum(sum) / D;
        double sq = 0.0;
        for (int j = lane; j < D; j += 32) sq += (x[j] - mu) * (x[j] - mu);
        const float m = (float)mu, r = (float)(1.0 / sqrt(warp_sum(sq) / D + eps));
        if (lane == 0) {
            mean[n] = m;
            rstd[n] = r;
        }
        for (int j = lane; j < D; j += 32) y[j] = (x[j] - m) * r * gamma[j] + beta[j];
    }
}

// din = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * gamma, per row
static __global__ void layernorm_input_grad_kernel(float *din, const float *dout, const float *in,
                                                   const float *mean, const float *rstd,
                                                   const float *gamma, int N, int D) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(n, N) {
        const float *x = in + n * D, *dy = dout + n * D;
        float *dx = din + n * D;
        const float m = mean[n], r = rstd[n];
        double sum_g = 0.0, sum_gx = 0.0;
        for (int j = lane; j < D; j += 32) {
            const float g = dy[j] * gamma[j];
            sum_g += g;
            sum_gx += (double)(g * ((x[j] - m) * r));
        }
        const float mean_g = (float)(warp_sum(sum_g) / D), mean_gx = (float)(warp_sum(sum_gx) / D);
        for (int j = lane; j < D; j += 32) {
            const float xhat = (x[j] - m) * r;
            dx[j] += r * (dy[j] * gamma[j] - mean_g - xhat * mean_gx);
        }
    }
}

// partial_g[c][j], partial_b[c][j]: rows c*LN_CHUNK .. of column j, in order.
// Grid: x over columns (blocks of CUDA_THREADS), y over chunks.
static __global__ void layernorm_param_partials_kernel(double *partial_g, double *partial_b,
                                                       const float *dout, const float *in,
                                                       const float *mean, const float *rstd,
                                                       int N, int D) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= D) return;
    const int r0 = blockIdx.y * LN_CHUNK, r1 = min(r0 + LN_CHUNK, N);
    double sg = 0.0, sb = 0.0;
    for (int n = r0; n < r1; n++) {
        const float dy = dout[(int64_t)n * D + j], x = in[(int64_t)n * D + j];
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
    CHECK_FLOAT32(out, mean, rstd, in, gamma, beta);
    layernorm_check_forward(out, mean, rstd, in, gamma, beta, eps);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(mean);
    CHECK_ON_GPU(rstd);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(gamma);
    CHECK_ON_GPU(beta);
    const int N = in->shape[0], D = in->shape[1];
    if (N == 0) return;
    layernorm_forward_kernel<<<cuda_blocks_for_rows(N, CUDA_THREADS), CUDA_THREADS>>>(
        out->data, mean->data, rstd->data, in->data, gamma->data, beta->data, N, D, eps);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta,
                                        const Tensor *dout, const Tensor *in, const Tensor *mean,
                                        const Tensor *rstd, const Tensor *gamma) {
    CHECK_FLOAT32(din, dgamma, dbeta, dout, in, mean, rstd, gamma);
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
    layernorm_param_partials_kernel<<<grid, CUDA_THREADS>>>(pg, pb, dout->data, in->data,
                                                            mean->data, rstd->data, N, D);
    CUDA_CHECK_LAUNCH();
    layernorm_param_sum_kernel<<<cuda_blocks_for(D, CUDA_THREADS), CUDA_THREADS>>>(
        dgamma->data, dbeta->data, pg, pb, chunks, D);
    CUDA_CHECK_LAUNCH();
    if (din) {
        layernorm_input_grad_kernel<<<cuda_blocks_for_rows(N, CUDA_THREADS), CUDA_THREADS>>>(
            din->data, dout->data, in->data, mean->data, rstd->data, gamma->data, N, D);
        CUDA_CHECK_LAUNCH();
    }
}
