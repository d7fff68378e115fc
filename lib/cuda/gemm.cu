// GEMM on the GPU: the row-major call of ops/gemm.h, through cuBLAS (gemm_map.h
// explains the argument mapping).
#include "cuda_check.h"
#include "gemm_map.h"
extern "C" {
#include "ops/gemm.h"
}

extern "C" void cuda_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc) {
    if (M == 0 || N == 0) return;
    CublasGemm g = gemm_to_cublas(trans_a, trans_b, M, N, K, lda, ldb, ldc);
    const float *first = g.swap ? B : A, *second = g.swap ? A : B;
    CUBLAS_CHECK(cublasSgemm(cuda_cublas(), g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                             g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                             first, g.ld_first, second, g.ld_second, &beta, C, g.ldc));
}

extern "C" void cuda_gemm_batched(const GemmBatch *b, const float *A, const float *B, float *C) {
    if (b->M == 0 || b->N == 0 || b->batch == 0) return;
    const CublasGemmBatch c = gemm_batch_to_cublas(b);
    const float *first = c.g.swap ? B : A, *second = c.g.swap ? A : B;
    CUBLAS_CHECK(cublasSgemmStridedBatched(
        cuda_cublas(), c.g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
        c.g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, c.g.m, c.g.n, c.g.k, &b->alpha, first,
        c.g.ld_first, c.stride_first, second, c.g.ld_second, c.stride_second, &b->beta, C,
        c.g.ldc, c.stride_c, c.batch));
}
