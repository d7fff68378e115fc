// The CUDA emulator's stand-in for <cublas_v2.h>: the two calls lib/cuda uses, computed
// by cublas_sgemm_model (lib/cuda/gemm_map.h), which also refuses what cuBLAS refuses.
#ifndef EMULATOR_CUBLAS_V2_H
#define EMULATOR_CUBLAS_V2_H

typedef void *cublasHandle_t;
typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb,
                                         long long stride_b, const float *beta, float *C,
                                         int ldc, long long stride_c, int batch);

#endif
