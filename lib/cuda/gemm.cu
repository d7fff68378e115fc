// GEMM on the GPU: the row-major call of ops/gemm.h, through cuBLAS (gemm_map.h
// explains the argument mapping): float32 by cublasSgemm, 16-bit operands by cublasGemmEx
// (float32 compute, C rounded once where it is 16-bit).
#include "cuda_check.h"
#include "gemm_map.h"
extern "C" {
#include "core/check.h"
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

static cudaDataType_t cuda_type_of(DType dtype) {
    return dtype == DTYPE_BF16 ? CUDA_R_16BF : dtype == DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" void cuda_gemm_ex(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                             const void *A, int lda, const void *B, int ldb, DType ab_dtype,
                             float beta, void *C, int ldc, DType c_dtype) {
    CHECK(ab_dtype == DTYPE_BF16 || ab_dtype == DTYPE_F16,
          "cuda_gemm_ex: operands of %s (bfloat16 or float16; cuda_gemm takes float32)",
          dtype_name(ab_dtype));
    CHECK(c_dtype == ab_dtype || c_dtype == DTYPE_F32,
          "cuda_gemm_ex: C of %s with operands of %s (C is of their dtype or float32)",
          dtype_name(c_dtype), dtype_name(ab_dtype));
    if (M == 0 || N == 0) return;
    CublasGemm g = gemm_to_cublas(trans_a, trans_b, M, N, K, lda, ldb, ldc);
    const void *first = g.swap ? B : A, *second = g.swap ? A : B;
    const cudaDataType_t ab = cuda_type_of(ab_dtype);
    CUBLAS_CHECK(cublasGemmEx(cuda_cublas(), g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                              g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                              first, ab, g.ld_first, second, ab, g.ld_second, &beta, C,
                              cuda_type_of(c_dtype), g.ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}
