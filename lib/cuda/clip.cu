// The sum of squares behind gradient clipping, on the GPU (lib/train/clip.c takes the
// norm from it; its CPU loop is the twin): one GPU block per `block` elements of the flat
// gradient buffer sums their squares in double, one GPU block adds those sums in a fixed
// tree, and the total comes back to the host (the caller needs it). The same gradients
// give the same bits on every run.
#include "cuda/clip.h"
#include "cuda_check.h"
extern "C" {
#include "device.h"
#include "core/check.h"
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

// partial[b] = sum of g[k]^2 over block b's `block` elements
static __global__ void chunk_squares_kernel(const float *g, int64_t n, int64_t block,
                                            double *partial) {
    const int64_t start = (int64_t)blockIdx.x * block;
    const int64_t end = start + block < n ? start + block : n;
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

// Room for the partial sums, kept between calls (one model per process).
static double *scratch;
static int64_t scratch_count;

extern "C" double cuda_sum_squares(const float *x, int64_t n, int64_t block) {
    if (n == 0) return 0.0;
    const int64_t blocks = (n + block - 1) / block;
    CHECK(blocks < INT32_MAX, "%lld gradient values: too many for one grid", (long long)n);
    if (scratch_count < blocks + 1) {
        cuda_free(scratch);
        scratch = (double *)cuda_malloc((size_t)(blocks + 1) * sizeof *scratch);
        scratch_count = blocks + 1;
    }
    chunk_squares_kernel<<<(unsigned)blocks, SUM_THREADS, 0, cuda_stream()>>>(x, n, block, scratch);
    CUDA_CHECK_LAUNCH();
    sum_partials_kernel<<<1, SUM_THREADS, 0, cuda_stream()>>>(scratch, blocks, scratch + blocks);
    CUDA_CHECK_LAUNCH();
    double total = 0.0;
    cuda_copy_to_host(&total, scratch + blocks, sizeof total);
    return total;
}
