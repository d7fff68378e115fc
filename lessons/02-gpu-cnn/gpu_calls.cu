// TODO 2.1 and the second half of TODO 2.4: calls into the CUDA runtime and cuBLAS.
#include "cuda/cuda_check.h"
#include "lesson_gpu.h"

// ---------------------------------------------------------------- TODO 2.1

extern "C" void lesson_device_batch_init(DeviceBatch *d, int size, int image_floats) {
    d->size = size;
    d->image_floats = image_floats;
    // TODO 2.1: cudaMalloc room for `size` images of image_floats floats each into
    // d->images, and for `size` ints into d->labels (sizes in bytes; CUDA_CHECK).
    TODO_STOP("2.1");
}

extern "C" void lesson_device_batch_free(DeviceBatch *d) {
    CUDA_CHECK(cudaFree(d->images));
    CUDA_CHECK(cudaFree(d->labels));
    d->images = NULL;
    d->labels = NULL;
}

extern "C" void lesson_upload_batch(DeviceBatch *d, const float *images, const int *labels, int n) {
    // TODO 2.1: copy n images (n * d->image_floats floats) and n labels from the
    // host into d (cudaMemcpy, cudaMemcpyHostToDevice; sizes in bytes; CUDA_CHECK).
    TODO_STOP("2.1");
}

// ---------------------------------------------------------------- TODO 2.4

extern "C" void lesson_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                            int ldc) {
    CublasGemm g = lesson_gemm_to_cublas(trans_a, trans_b, M, N, K, lda, ldb, ldc);
    // TODO 2.4: call cublasSgemm(cuda_cublas(), transa, transb, m, n, k, &alpha,
    // first, ld_first, second, ld_second, &beta, C, ldc) with the values of g:
    // CUBLAS_OP_T where g says transpose, else CUBLAS_OP_N; first = B and
    // second = A when g.swap. Wrap it in CUBLAS_CHECK(...).
    (void)g;
    TODO_STOP("2.4");
}
