/* TODO 2.4: row-major GEMM through column-major cuBLAS (host code). */
#include "lesson_gpu.h"

CublasGemm lesson_gemm_to_cublas(bool trans_a, bool trans_b, int M, int N, int K, int lda,
                                 int ldb, int ldc) {
    CublasGemm g = {0};
#ifdef SOLUTION
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
#else
    /* TODO 2.4: cuBLAS reads every matrix column-major. A row-major X [r, c] with
     * row stride ld is, read column-major, X^T [c, r] with leading dimension ld.
     * So ask cuBLAS for C^T = op(B)^T op(A)^T: fill g (lib/cuda/gemm_map.h) with
     * swap (B goes first), both transposes, m, n, k and the three leading dimensions. */
    TODO_STOP("2.4");
#endif
    return g;
}
