#include "gemm_map.h"

#include <stdio.h>

CublasGemm gemm_to_cublas(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb,
                          int ldc) {
    CublasGemm g = {.swap = true, .trans_first = trans_b, .trans_second = trans_a,
                    .m = N, .n = M, .k = K, .ld_first = ldb, .ld_second = lda, .ldc = ldc};
    return g;
}

static int max1(int a) { return a > 1 ? a : 1; }

/* cuBLAS's own argument checks, of both models */
static bool arguments_ok(bool transa, bool transb, int m, int n, int k, int lda, int ldb, int ldc,
                         char *why, int why_cap) {
    if (m < 0 || n < 0 || k < 0) {
        snprintf(why, (size_t)why_cap, "negative size m=%d n=%d k=%d", m, n, k);
        return false;
    }
    int rows_a = transa ? k : m, rows_b = transb ? n : k;
    if (lda < max1(rows_a) || ldb < max1(rows_b) || ldc < max1(m)) {
        snprintf(why, (size_t)why_cap,
                 "cuBLAS would refuse this call (CUBLAS_STATUS_INVALID_VALUE): lda=%d must be "
                 ">= %d, ldb=%d >= %d, ldc=%d >= %d (a column-major matrix's leading "
                 "dimension is at least its number of rows)", lda, max1(rows_a), ldb,
                 max1(rows_b), ldc, max1(m));
        return false;
    }
    return true;
}

bool cublas_sgemm_model(bool transa, bool transb, int m, int n, int k, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc, char *why, int why_cap) {
    if (!arguments_ok(transa, transb, m, n, k, lda, ldb, ldc, why, why_cap)) return false;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0.0;
            for (int l = 0; l < k; l++) {
                float a = transa ? A[l + (long)i * lda] : A[i + (long)l * lda];
                float b = transb ? B[j + (long)l * ldb] : B[l + (long)j * ldb];
                acc += (double)a * b;
            }
            float *c = &C[i + (long)j * ldc];
            *c = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
    return true;
}

/* element i of p, of dtype d, as a float32 (exact) */
static float load_as(const void *p, DType d, long i) {
    if (d == DTYPE_F32) return ((const float *)p)[i];
    return d == DTYPE_BF16 ? dtype_f32_from_bf16(((const uint16_t *)p)[i])
                           : dtype_f32_from_f16(((const uint16_t *)p)[i]);
}

bool cublas_gemm_ex_model(bool transa, bool transb, int m, int n, int k, float alpha,
                          const void *A, int lda, const void *B, int ldb, DType ab_dtype,
                          float beta, void *C, int ldc, DType c_dtype, char *why, int why_cap) {
    if (!arguments_ok(transa, transb, m, n, k, lda, ldb, ldc, why, why_cap)) return false;
    if ((unsigned)ab_dtype >= DTYPE_COUNT || (c_dtype != ab_dtype && c_dtype != DTYPE_F32)) {
        snprintf(why, (size_t)why_cap, "cuBLAS would refuse this call "
                 "(CUBLAS_STATUS_NOT_SUPPORTED): A and B %s, C %s with CUBLAS_COMPUTE_32F "
                 "(C is of A's type or float32)", dtype_name(ab_dtype), dtype_name(c_dtype));
        return false;
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float acc = 0.0f; /* a product of two 16-bit values is exact in float32 */
            for (int l = 0; l < k; l++) {
                const long at_a = transa ? l + (long)i * lda : i + (long)l * lda;
                const long at_b = transb ? j + (long)l * ldb : l + (long)j * ldb;
                acc += load_as(A, ab_dtype, at_a) * load_as(B, ab_dtype, at_b);
            }
            const long at = i + (long)j * ldc;
            float c = alpha * acc;
            if (beta != 0.0f) c += beta * load_as(C, c_dtype, at); /* beta 0: C not read */
            if (c_dtype == DTYPE_F32) ((float *)C)[at] = c;
            else
                ((uint16_t *)C)[at] = c_dtype == DTYPE_BF16 ? dtype_bf16_from_f32(c)
                                                            : dtype_f16_from_f32(c);
        }
    return true;
}

bool gemm_through_model(const CublasGemm *g, float alpha, const float *A, const float *B,
                        float beta, float *C, char *why, int why_cap) {
    const float *first = g->swap ? B : A, *second = g->swap ? A : B;
    return cublas_sgemm_model(g->trans_first, g->trans_second, g->m, g->n, g->k, alpha, first,
                              g->ld_first, second, g->ld_second, beta, C, g->ldc, why, why_cap);
}

CublasGemmBatch gemm_batch_to_cublas(const GemmBatch *b) {
    CublasGemmBatch c = {.g = gemm_to_cublas(b->trans_a, b->trans_b, b->M, b->N, b->K, b->lda,
                                              b->ldb, b->ldc),
                         .stride_c = b->stride_c, .batch = b->batch};
    c.stride_first = c.g.swap ? b->stride_b : b->stride_a;
    c.stride_second = c.g.swap ? b->stride_a : b->stride_b;
    return c;
}

bool gemm_batch_through_model(const CublasGemmBatch *c, float alpha, const float *A,
                              const float *B, float beta, float *C, char *why, int why_cap) {
    if (c->batch < 0) {
        snprintf(why, (size_t)why_cap, "negative batch count %d", c->batch);
        return false;
    }
    const float *first = c->g.swap ? B : A, *second = c->g.swap ? A : B;
    for (int i = 0; i < c->batch; i++)
        if (!cublas_sgemm_model(c->g.trans_first, c->g.trans_second, c->g.m, c->g.n, c->g.k, alpha,
                                first + i * c->stride_first, c->g.ld_first,
                                second + i * c->stride_second, c->g.ld_second, beta,
                                C + i * c->stride_c, c->g.ldc, why, why_cap))
            return false;
    return true;
}
