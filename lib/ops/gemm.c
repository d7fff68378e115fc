#include "gemm.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"

#ifdef HAVE_CBLAS
#include <cblas.h>
#endif

/* Blocking: a KC x NC panel of B is packed into contiguous memory and reused for
 * every row of A; a row block of MC rows of A stays in L2 while it sweeps the panel.
 * The inner kernel updates a 4 x NR tile of C kept in registers, which GCC
 * vectorises (NR = 32 floats: two AVX-512 or four AVX2 registers per row). */
enum { MC = 64, KC = 256, NC = 1024, MR = 4, NR = 32 };

static inline float get(const float *X, int ld, bool trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* Packs rows k0..k0+kc of op(B), columns n0..n0+nc, into NR-wide strips, zero-padded. */
static void pack_b(float *dst, const float *B, int ldb, bool trans_b, int k0, int kc, int n0,
                   int nc) {
    for (int j0 = 0; j0 < nc; j0 += NR) {
        int w = nc - j0 < NR ? nc - j0 : NR;
        for (int k = 0; k < kc; k++) {
            float *row = dst + (size_t)j0 * kc + (size_t)k * NR;
            for (int j = 0; j < w; j++) row[j] = get(B, ldb, trans_b, k0 + k, n0 + j0 + j);
            for (int j = w; j < NR; j++) row[j] = 0.0f;
        }
    }
}

/* Packs rows m0..m0+mc of op(A), columns k0..k0+kc, into MR-tall strips, zero-padded. */
static void pack_a(float *dst, const float *A, int lda, bool trans_a, int m0, int mc, int k0,
                   int kc) {
    for (int i0 = 0; i0 < mc; i0 += MR) {
        int h = mc - i0 < MR ? mc - i0 : MR;
        for (int k = 0; k < kc; k++) {
            float *col = dst + (size_t)i0 * kc + (size_t)k * MR;
            for (int i = 0; i < h; i++) col[i] = get(A, lda, trans_a, m0 + i0 + i, k0 + k);
            for (int i = h; i < MR; i++) col[i] = 0.0f;
        }
    }
}

/* acc[MR][NR] = sum_k a[k][0..MR) (outer) b[k][0..NR) */
static void micro_kernel(int kc, const float *restrict a, const float *restrict b,
                         float acc[MR][NR]) {
    float c[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        const float *bk = b + (size_t)k * NR;
        for (int i = 0; i < MR; i++) {
            float ai = a[(size_t)k * MR + i];
            for (int j = 0; j < NR; j++) c[i][j] += ai * bk[j];
        }
    }
    memcpy(acc, c, sizeof c);
}

static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        float *row = C + (size_t)i * ldc;
        if (beta == 0.0f) memset(row, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f)
            for (int j = 0; j < N; j++) row[j] *= beta;
    }
}

void gemm_blocked(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    scale_c(M, N, beta, C, ldc);
    if (K <= 0 || alpha == 0.0f) return;
    int parallel = !omp_in_parallel();
    float *bpack = xmalloc((size_t)KC * NC * sizeof(float));
    for (int n0 = 0; n0 < N; n0 += NC) {
        int nc = N - n0 < NC ? N - n0 : NC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            pack_b(bpack, B, ldb, trans_b, k0, kc, n0, nc);
            int mblocks = (M + MC - 1) / MC;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
            for (int mb = 0; mb < mblocks; mb++) {
                int m0 = mb * MC;
                int mc = M - m0 < MC ? M - m0 : MC;
                float apack[MC * KC];
                float acc[MR][NR];
                pack_a(apack, A, lda, trans_a, m0, mc, k0, kc);
                for (int j0 = 0; j0 < nc; j0 += NR) {
                    int w = nc - j0 < NR ? nc - j0 : NR;
                    for (int i0 = 0; i0 < mc; i0 += MR) {
                        int h = mc - i0 < MR ? mc - i0 : MR;
                        micro_kernel(kc, apack + (size_t)i0 * kc, bpack + (size_t)j0 * kc, acc);
                        for (int i = 0; i < h; i++) {
                            float *crow = C + (size_t)(m0 + i0 + i) * ldc + n0 + j0;
                            for (int j = 0; j < w; j++) crow[j] += alpha * acc[i][j];
                        }
                    }
                }
            }
        }
    }
    xfree(bpack);
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
#ifdef HAVE_CBLAS
    if (M <= 0 || N <= 0) return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
                ldc);
#else
    gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

const char *gemm_backend_name(void) {
#if defined(HAVE_CBLAS) && defined(OPENBLAS_VERSION)
    static char name[64];
    if (!name[0]) { /* OpenBLAS pads its version string with spaces */
        const char *v = OPENBLAS_VERSION;
        while (*v == ' ') v++;
        snprintf(name, sizeof name, "%s", v);
        for (size_t n = strlen(name); n > 0 && name[n - 1] == ' '; n--) name[n - 1] = '\0';
    }
    return name;
#elif defined(HAVE_CBLAS)
    return "cblas";
#else
    return "built-in blocked GEMM";
#endif
}
