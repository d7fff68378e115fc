// TODO 2.1 and the second half of TODO 2.4: calls into the CUDA runtime and cuBLAS.
#include "cuda/cuda_check.h"
#include "lesson_gpu.h"

// ---------------------------------------------------------------- TODO 2.1

extern "C" void lesson_device_batch_init(DeviceBatch *d, int size, int image_floats) {
    d->size = size;
    d->image_floats = image_floats;
    CUDA_CHECK(cudaMalloc(&d->images, (size_t)size * image_floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d->labels, (size_t)size * sizeof(int)));
}

extern "C" void lesson_device_batch_free(DeviceBatch *d) {
    CUDA_CHECK(cudaFree(d->images));
    CUDA_CHECK(cudaFree(d->labels));
    d->images = NULL;
    d->labels = NULL;
}

extern "C" void lesson_upload_batch(DeviceBatch *d, const float *images, const int *labels, int n) {
    CUDA_CHECK(cudaMemcpy(d->images, images, (size_t)n * d->image_floats * sizeof(float),
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d->labels, labels, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
}

// ---------------------------------------------------------------- TODO 2.4

extern "C" void lesson_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                            int ldc) {
    CublasGemm g = lesson_gemm_to_cublas(trans_a, trans_b, M, N, K, lda, ldb, ldc);
    const float *first = g.swap ? B : A, *second = g.swap ? A : B;
    CUBLAS_CHECK(cublasSgemm(cuda_cublas(), g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                             g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                             first, g.ld_first, second, g.ld_second, &beta, C, g.ldc));
}
