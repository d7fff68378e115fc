// The CUDA emulator's stand-in for <cublas_v2.h>: the three calls lib/cuda uses, computed
// by cublas_sgemm_model and cublas_gemm_ex_model (lib/cuda/gemm_map.h), which also
// refuse what cuBLAS refuses.
#ifndef EMULATOR_CUBLAS_V2_H
#define EMULATOR_CUBLAS_V2_H

typedef void *cublasHandle_t;
typedef int cublasStatus_t;
enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
};
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

// cublasGemmEx's types (CUDA's values)
typedef enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

// alpha and beta point to floats (CUBLAS_COMPUTE_32F, the only compute type emulated)
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t a_type,
                            int lda, const void *B, cudaDataType_t b_type, int ldb,
                            const void *beta, void *C, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);

#endif
