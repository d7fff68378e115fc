/* Matrix multiplication, the workhorse of every layer here.
 *
 *   C[M,N] = alpha * op(A) * op(B) + beta * C      (row-major; op = identity or transpose)
 *
 * A is [M,K] (or [K,M] with trans_a), B is [K,N] (or [N,K] with trans_b); lda, ldb, ldc
 * are row strides. With OpenBLAS present (HAVE_CBLAS) this calls cblas_sgemm; without,
 * the library's own cache-blocked code runs, OpenMP-parallel unless it is called from
 * inside a parallel region (the convolution already splits its batch across threads). */
#ifndef OPS_GEMM_H
#define OPS_GEMM_H

#include <stdbool.h>

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc);

/* The library's own implementation, whatever the build; the tests compare both. */
void gemm_blocked(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* The same product, cut into tiles that the OpenMP threads share, each tile one call of
 * the BLAS on one thread. Where the product is cut, and into how many tiles (1, 2, 4 or
 * 8), follows from M, N and K alone: the result has the same bits on any number of
 * threads (a multithreaded BLAS call does not promise that: OpenBLAS splits a product
 * by its thread count, and its bits move with the split). M or N is cut when packing
 * the other operand once a tile costs least; K when C [M, N] is small against both
 * (the decoder's input gradient: [700, 200] from a sum over 28,782 words): tile 0 goes
 * into C, the others into partial products added to C in tile order afterwards (a
 * workspace kept between calls: not for concurrent calls from threads of the
 * caller's own). Tiles on independent threads need no barrier inside the product,
 * which a threaded BLAS call has at every block of K. Inside a parallel region, or for
 * a small product, one call on the calling thread. Without a BLAS: gemm_blocked, whose
 * bits never depend on the thread count. */
void gemm_tiled(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* "OpenBLAS 0.3.21" or "built-in blocked GEMM", for logs and benchmarks. */
const char *gemm_backend_name(void);

/* The CUDA twin (lib/cuda/gemm.cu), in builds with CUDA: the same call on device
 * pointers, through cuBLAS in full FP32 (the default math mode, no TF32);
 * lib/cuda/gemm_map.h explains the row-major to column-major mapping. */
void cuda_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
