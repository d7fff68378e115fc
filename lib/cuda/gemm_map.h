/* Row-major GEMM through cuBLAS, which is column-major (Fortran's convention).
 *
 * The library stores matrices row-major: X [r, c] with row stride ld. The same
 * bytes read column-major are X^T [c, r] with leading dimension ld. So for the
 * row-major C = op(A) op(B), hand cuBLAS the transposed product
 *
 *     C^T [N, M] = op(B)^T op(A)^T        (column-major, ldc unchanged)
 *
 * that is: B first, A second, m = N, n = M, the transposes kept as they are and
 * every leading dimension as it is. No data moves. CublasGemm is that argument list;
 * gemm_to_cublas() builds it, and cublas_sgemm_model() is cublasSgemm's definition
 * on the host, so the mapping is tested on machines without a GPU. */
#ifndef CUDA_GEMM_MAP_H
#define CUDA_GEMM_MAP_H

#include <stdbool.h>

#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    bool swap;                   /* true: cuBLAS's first operand is our B, its second our A */
    bool trans_first, trans_second; /* cuBLAS's transa, transb (true: CUBLAS_OP_T) */
    int m, n, k;                 /* cuBLAS's sizes: its C is m x n column-major */
    int ld_first, ld_second, ldc; /* leading dimensions of its A, B and C */
} CublasGemm;

/* The cuBLAS call for the row-major gemm() of ops/gemm.h with these arguments. */
CublasGemm gemm_to_cublas(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb,
                          int ldc);

/* cublasSgemm's definition, column-major, on the host (slow, for tests):
 * C [m, n] = alpha op(A) op(B) + beta C, op(A) [m, k], op(B) [k, n]. Returns false,
 * and says why in why, where cuBLAS would refuse the arguments
 * (CUBLAS_STATUS_INVALID_VALUE: a leading dimension smaller than its rows). */
bool cublas_sgemm_model(bool transa, bool transb, int m, int n, int k, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc, char *why, int why_cap);

/* cublasGemmEx's definition with CUBLAS_COMPUTE_32F, column-major, on the host (the CUDA
 * emulator's cublasGemmEx): A and B of ab_dtype, C of c_dtype (ab_dtype's or float32);
 * every element of A and B converted exactly to float32, products summed in a float32
 * accumulator, c = alpha acc + beta c_old in float32 (C not read when beta is 0), stored
 * rounded once to c_dtype (core/dtype.h: the same rounding as the GPU's). Refuses, with
 * why, what cuBLAS refuses, and a C of another 16-bit type (CUBLAS_STATUS_NOT_SUPPORTED). */
bool cublas_gemm_ex_model(bool transa, bool transb, int m, int n, int k, float alpha,
                          const void *A, int lda, const void *B, int ldb, DType ab_dtype,
                          float beta, void *C, int ldc, DType c_dtype, char *why, int why_cap);

/* Runs a row-major gemm as the CublasGemm call g describes, through the model. */
bool gemm_through_model(const CublasGemm *g, float alpha, const float *A, const float *B,
                        float beta, float *C, char *why, int why_cap);

/* The same GEMM repeated over `batch` matrices laid out at fixed distances (in floats):
 * C + i stride_c = alpha op(A + i stride_a) op(B + i stride_b) + beta (C + i stride_c),
 * for i < batch (cublasSgemmStridedBatched; the attention's per-head products). */
typedef struct {
    bool trans_a, trans_b;
    int M, N, K, lda, ldb, ldc, batch;
    long long stride_a, stride_b, stride_c;
    float alpha, beta;
} GemmBatch;

/* cublasSgemmStridedBatched's arguments: one entry's call, and the strides in cuBLAS's
 * order (its first operand is our B, so it takes stride_b first). */
typedef struct {
    CublasGemm g;
    long long stride_first, stride_second, stride_c;
    int batch;
} CublasGemmBatch;

CublasGemmBatch gemm_batch_to_cublas(const GemmBatch *b);

/* cublasSgemmStridedBatched's definition through cublas_sgemm_model, entry by entry,
 * with the operands in cuBLAS's order as c describes them (tests). */
bool gemm_batch_through_model(const CublasGemmBatch *c, float alpha, const float *A,
                              const float *B, float beta, float *C, char *why, int why_cap);

/* The CUDA twin of a batch (lib/cuda/gemm.cu): A, B, C in device memory. */
void cuda_gemm_batched(const GemmBatch *b, const float *A, const float *B, float *C);

/* The row-major gemm of ops/gemm.h on 16-bit operands (lib/cuda/gemm.cu, cublasGemmEx):
 * C = alpha op(A) op(B) + beta C, A and B of ab_dtype (DTYPE_BF16 or DTYPE_F16), C of
 * c_dtype (ab_dtype: activations, rounded once; DTYPE_F32: a parameter gradient), summed
 * in float32 (CUBLAS_COMPUTE_32F), device memory. */
void cuda_gemm_ex(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void *A,
                  int lda, const void *B, int ldb, DType ab_dtype, float beta, void *C, int ldc,
                  DType c_dtype);

#ifdef __cplusplus
}
#endif

#endif
