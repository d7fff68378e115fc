// Softmax cross-entropy on the GPU, as lib/layers/softmax_xent.c: one thread per
// row (a row is one example's few class scores), the same float/double steps.
#include "cuda_check.h"
#include "kernels.h"

static __global__ void softmax_xent_kernel(double *row_loss, int *bad_row, float *dlogits,
                                           const float *logits, const int *labels, int N, int K) {
    for (int n = blockIdx.x * blockDim.x + threadIdx.x; n < N; n += gridDim.x * blockDim.x) {
        const float *z = logits + (int64_t)n * K;
        const int y = labels[n];
        if (y < 0 || y >= K) {
            row_loss[n] = __longlong_as_double(0x7ff8000000000000LL); // NaN
            atomicMin(bad_row, n);
            continue;
        }
        float zmax = z[0];
        for (int j = 1; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
        double sum = 0.0;
        for (int j = 0; j < K; j++) sum += exp((double)(z[j] - zmax));
        row_loss[n] = log(sum) + zmax - z[y];
        if (dlogits) {
            float *dz = dlogits + (int64_t)n * K;
            for (int j = 0; j < K; j++) {
                float p = (float)(exp((double)(z[j] - zmax)) / sum);
                dz[j] += (p - (j == y ? 1.0f : 0.0f)) / (float)N;
            }
        }
    }
}

extern "C" void cuda_softmax_xent_raw(double *row_loss, int *bad_row, float *dlogits,
                                      const float *logits, const int *labels, int N, int K) {
    if (N == 0) return;
    softmax_xent_kernel<<<cuda_blocks_for(N, CUDA_THREADS), CUDA_THREADS>>>(
        row_loss, bad_row, dlogits, logits, labels, N, K);
    CUDA_CHECK_LAUNCH();
}
