/* TODO 2.4: row-major GEMM through column-major cuBLAS (host code). */
#include "lesson_gpu.h"

CublasGemm lesson_gemm_to_cublas(bool trans_a, bool trans_b, int M, int N, int K, int lda,
                                 int ldb, int ldc) {
    CublasGemm g = {0};
    /* Row-major C = op(A) op(B) is, read column-major, C^T = op(B)^T op(A)^T: the
     * same bytes, the operands swapped, the sizes M and N swapped. */
    g.swap = true;
    g.trans_first = trans_b;
    g.trans_second = trans_a;
    g.m = N;
    g.n = M;
    g.k = K;
    g.ld_first = ldb;
    g.ld_second = lda;
    g.ldc = ldc;
    return g;
}
