// Gradient clipping by global norm on the GPU (lib/train/clip.c is the CPU twin): one
// block per CLIP_BLOCK elements of the flat gradient buffer sums its squares in double,
// one block adds those sums in a fixed tree, the norm comes back to the host (the caller
// needs it), and one launch scales the gradients when the norm is above max_norm. The
// same gradients give the same bits on every run.
#include <math.h>

#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "device.h"
#include "core/check.h"
#include "train/clip.h"
}

enum { SUM_THREADS = 256 };

// Adds the block's threads' values in a fixed tree; thread 0 gets the sum.
static __device__ double block_sum(double v) {
    __shared__ double s[SUM_THREADS];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int half = SUM_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    return s[0];
}

// partial[b] = sum of g[k]^2 over block b's CLIP_BLOCK elements
static __global__ void chunk_squares_kernel(const float *g, int64_t n, double *partial) {
    const int64_t start = (int64_t)blockIdx.x * CLIP_BLOCK;
    const int64_t end = start + CLIP_BLOCK < n ? start + CLIP_BLOCK : n;
    double v = 0.0;
    for (int64_t k = start + threadIdx.x; k < end; k += SUM_THREADS) v += (double)g[k] * (double)g[k];
    const double sum = block_sum(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// *total = sum of partial[0..blocks), one block
static __global__ void sum_partials_kernel(const double *partial, int64_t blocks, double *total) {
    double v = 0.0;
    for (int64_t b = threadIdx.x; b < blocks; b += SUM_THREADS) v += partial[b];
    const double sum = block_sum(v);
    if (threadIdx.x == 0) *total = sum;
}

static __global__ void scale_kernel(float *g, int64_t n, float coef) {
    GRID_STRIDE_LOOP(k, n) g[k] *= coef;
}

// Room for the partial sums, kept between calls (one model per process).
static double *scratch;
static int64_t scratch_count;

extern "C" float cuda_grad_norm(const ParamList *params) {
    CHECK_DEVICE(&params->grads, DEVICE_CUDA);
    const int64_t n = params->total;
    if (n == 0) return 0.0f;
    const int64_t blocks = (n + CLIP_BLOCK - 1) / CLIP_BLOCK;
    CHECK(blocks < INT32_MAX, "%lld gradient values: too many for one grid", (long long)n);
    if (scratch_count < blocks + 1) {
        cuda_free(scratch);
        scratch = (double *)cuda_malloc((size_t)(blocks + 1) * sizeof *scratch);
        scratch_count = blocks + 1;
    }
    chunk_squares_kernel<<<(unsigned)blocks, SUM_THREADS>>>(params->grads.data, n, scratch);
    CUDA_CHECK_LAUNCH();
    sum_partials_kernel<<<1, SUM_THREADS>>>(scratch, blocks, scratch + blocks);
    CUDA_CHECK_LAUNCH();
    double total = 0.0;
    cuda_copy_to_host(&total, scratch + blocks, sizeof total);
    return (float)sqrt(total);
}

extern "C" float cuda_clip_grad_norm(ParamList *params, float max_norm) {
    const float norm = cuda_grad_norm(params);
    const float coef = max_norm / (norm + 1e-6f); // as clip_grad_norm computes it
    if (!(coef < 1.0f) && !isnan(coef)) return norm;
    const int64_t n = params->total;
    scale_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(params->grads.data, n, coef);
    CUDA_CHECK_LAUNCH();
    return norm;
}
