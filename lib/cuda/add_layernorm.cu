// The residual add and the layer norm after it in one kernel (layers/add_layernorm.h):
// a warp per row reads the row's a and b once, writes r = a + b (rounded once where
// stored), then runs layer norm's row (layernorm_row.cuh, the code of layernorm.cu's
// kernel) on the stored r: each lane reads back only the entries it wrote, so no
// barrier is needed, and r, y, mean and rstd are add + layer norm's bits. It saves a
// launch and a pass of r through memory between the two kernels (speed on a GPU: owed,
// docs/gpu.md).
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
#include "layernorm_row.cuh"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/add_layernorm.h"
}

template <class T>
static __global__ void add_layernorm_kernel(T *r, T *y, float *mean, float *rstd, const T *a,
                                            const T *b, const T *gamma, const T *beta, int N,
                                            int D, float eps) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(n, N) {
        const int64_t at = n * D;
        for (int j = lane; j < D; j += 32)
            elem_store(r + at, j, elem_load(a + at, j) + elem_load(b + at, j));
        layernorm_row(y + at, mean, rstd, (const T *)(r + at), gamma, beta, n, D, eps, lane);
    }
}

extern "C" void cuda_add_layernorm_forward(Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd,
                                           const Tensor *a, const Tensor *b, const Tensor *gamma,
                                           const Tensor *beta, float eps) {
    const DType dt = ONE_DTYPE(r, y, a, b, gamma, beta);
    CHECK_FLOAT32(mean, rstd);
    add_layernorm_check_forward(r, y, mean, rstd, a, b, gamma, beta, eps);
    CHECK_ON_GPU(r);
    CHECK_ON_GPU(y);
    CHECK_ON_GPU(mean);
    CHECK_ON_GPU(rstd);
    CHECK_ON_GPU(a);
    CHECK_ON_GPU(b);
    CHECK_ON_GPU(gamma);
    CHECK_ON_GPU(beta);
    const int N = r->shape[0], D = r->shape[1];
    if (N == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        add_layernorm_kernel<T><<<cuda_blocks_for_rows(N, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(r), elems<T>(y), mean->data, rstd->data, elems<T>(a), elems<T>(b),
            elems<T>(gamma), elems<T>(beta), N, D, eps);
        CUDA_CHECK_LAUNCH();
    });
}
