#include "gemm.h"

#include <math.h>
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

/* ---------------------------------------------------------------- gemm_tiled */

#ifdef HAVE_CBLAS
/* The product split into tiles (gemm.h). A plan: which side is cut and into how many. */
typedef enum { CUT_M, CUT_N, CUT_K } Cut;

enum {
    TILE_MIN_MACS = 1 << 21, /* 2 M multiply-adds (4 MFLOP, ~25 us on a core) a tile */
    TILE_MAX = 8,            /* tiles of a product at most (a power of two) */
    TILE_ALIGN = 16,         /* a cut M or N falls on a multiple of this */
    TILE_K_ALIGN = 256,      /* a cut K falls on a multiple of this */
};

/* How many tiles and where to cut, from the sizes alone (never the thread count, so the
 * bits do not depend on it): as many tiles as keep TILE_MIN_MACS each (1, 2, 4 or 8),
 * cut where the least is done twice. Cutting M packs op(B) [K, N] once a tile, cutting N
 * packs op(A) [M, K] once a tile; cutting K writes and reads a partial C [M, N] a tile,
 * counted twice over (a pass of its own after the products). */
static int plan_tiles(int M, int N, int K, Cut *cut) {
    const double macs = (double)M * N * K;
    int tiles = 1;
    while (tiles < TILE_MAX && macs / (2 * tiles) >= TILE_MIN_MACS) tiles *= 2;
    const double cost_m = M >= tiles * TILE_ALIGN ? (double)K * N : INFINITY;
    const double cost_n = N >= tiles * TILE_ALIGN ? (double)M * K : INFINITY;
    const double cost_k = K >= tiles * TILE_K_ALIGN ? 4.0 * M * N : INFINITY;
    *cut = CUT_M;
    if (cost_n < cost_m) *cut = CUT_N;
    if (cost_k < (cost_n < cost_m ? cost_n : cost_m)) *cut = CUT_K;
    if (isinf(cost_m) && isinf(cost_n) && isinf(cost_k)) tiles = 1;
    return tiles;
}

/* [start, end) of tile t of `tiles` over a side of n, cut on multiples of align. */
static void tile_range(int n, int tiles, int t, int align, int *start, int *end) {
    int step = (n + tiles - 1) / tiles;
    step = (step + align - 1) / align * align;
    *start = t * step < n ? t * step : n;
    *end = (t + 1) * step < n ? (t + 1) * step : n;
}

/* The partial products of a cut K (tiles 1 ..): grown as needed, kept for the next call. */
static float *k_partials;
static size_t k_partials_floats;

static void blas(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#endif

void gemm_tiled(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                int lda, const float *B, int ldb, float beta, float *C, int ldc) {
#ifdef HAVE_CBLAS
    if (M <= 0 || N <= 0) return;
    if (omp_in_parallel()) { /* OpenBLAS runs it on this thread */
        gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    Cut cut = CUT_M;
    const int tiles = K > 0 ? plan_tiles(M, N, K, &cut) : 1;
    float *partials = NULL;
    if (cut == CUT_K) {
        const size_t need = (size_t)(tiles - 1) * (size_t)M * (size_t)N;
        if (need > k_partials_floats) {
            xfree(k_partials);
            k_partials = xmalloc(need * sizeof(float));
            k_partials_floats = need;
        }
        partials = k_partials;
    }
    /* Inside the region each call runs on its own thread (OpenBLAS's OpenMP build runs
     * one thread in a parallel region; with one thread in all, OpenBLAS takes one), each
     * tile the same call whoever runs it. One tile too: a lone BLAS call outside a
     * region could use several threads and their bits. */
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < tiles; t++) {
        int s, e;
        if (cut == CUT_M) {
            tile_range(M, tiles, t, TILE_ALIGN, &s, &e);
            if (s < e)
                blas(trans_a, trans_b, e - s, N, K, alpha,
                     trans_a ? A + s : A + (size_t)s * lda, lda, B, ldb, beta, C + (size_t)s * ldc, ldc);
        } else if (cut == CUT_N) {
            tile_range(N, tiles, t, TILE_ALIGN, &s, &e);
            if (s < e)
                blas(trans_a, trans_b, M, e - s, K, alpha, A, lda,
                     trans_b ? B + (size_t)s * ldb : B + s, ldb, beta, C + s, ldc);
        } else { /* tile 0 into C (with beta), the others into partials of their own */
            tile_range(K, tiles, t, TILE_K_ALIGN, &s, &e);
            const float *a = trans_a ? A + (size_t)s * lda : A + s;
            const float *b = trans_b ? B + s : B + (size_t)s * ldb;
            if (t == 0)
                blas(trans_a, trans_b, M, N, e - s, alpha, a, lda, b, ldb, beta, C, ldc);
            else if (s < e)
                blas(trans_a, trans_b, M, N, e - s, alpha, a, lda, b, ldb, 0.0f,
                     partials + (size_t)(t - 1) * M * N, N);
        }
    }
    if (cut == CUT_K) { /* C += the partials, in tile order */
        int used = 1;
        for (int t = 1; t < tiles; t++) {
            int s, e;
            tile_range(K, tiles, t, TILE_K_ALIGN, &s, &e);
            used += s < e;
        }
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            for (int t = 1; t < used; t++) {
                const float *p = partials + (size_t)(t - 1) * M * N + (size_t)i * N;
#pragma omp simd
                for (int j = 0; j < N; j++) c[j] += p[j];
            }
        }
    }
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
