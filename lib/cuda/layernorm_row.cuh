// One row of layer norm's forward, for the warp that owns it: the code of
// layernorm.cu's kernel and of the fused add + layer norm (add_layernorm.cu), written
// once so that the two give the same bits (the same sums in the same order).
// Lane l reads x[j] for j = l, l + 32, ...: where x is a row the same lane has just
// written (the fused kernel's r), each lane reads back only its own stores.
#ifndef CUDA_LAYERNORM_ROW_CUH
#define CUDA_LAYERNORM_ROW_CUH

#include "elem.cuh"
#include "reduce.cuh"

// Row sums in double: the mean, then the sum of squared deviations (two passes, no
// cancellation); lane 0 writes mean[n] and rstd[n]; y rounded once where stored.
template <class T>
__device__ inline void layernorm_row(T *y, float *mean, float *rstd, const T *x, const T *gamma,
                                     const T *beta, int64_t n, int D, float eps, int lane) {
    double sum = 0.0;
    for (int j = lane; j < D; j += 32) sum += elem_load(x, j);
    const double mu = warp_sum(sum) / D;
    double sq = 0.0;
    for (int j = lane; j < D; j += 32) {
        const float xj = elem_load(x, j);
        sq += (xj - mu) * (xj - mu);
    }
    const float m = (float)mu, r = (float)(1.0 / sqrt(warp_sum(sq) / D + eps));
    if (lane == 0) {
        mean[n] = m;
        rstd[n] = r;
    }
    for (int j = lane; j < D; j += 32)
        elem_store(y, j, (elem_load(x, j) - m) * r * elem_load(gamma, j) + elem_load(beta, j));
}

#endif
