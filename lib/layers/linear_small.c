#include "linear_small.h"

#include <string.h>

/* Vectors as arguments of static inline functions: without AVX in the build (ARCH=x86-64)
 * GCC warns that their calling convention would differ; these calls are all inlined. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float v8 __attribute__((vector_size(32)));
enum { VL = 8 };

static inline v8 load8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v); /* unaligned: one vmovups */
    return v;
}
static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }
static inline v8 splat8(float x) { return (v8){x, x, x, x, x, x, x, x}; }
static inline float sum8(v8 v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------------- C = init + A M
 * C [rows, N] (row stride ldc) = init + A [rows, K] (lda) x M [K, N] (ldm), where init
 * is C itself (accumulate), the bias [N], or 0. A block of R rows (R <= 4) and V
 * vectors of 8 columns (V <= 2): R x V accumulators stay in registers for all of K. */
ALWAYS_INLINE void nn_block(float *c, const float *a, const float *m, const float *bias, int accumulate, int R,
                            int V, int K, int lda, int ldm, int ldc) {
    v8 acc[4][2];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++)
            acc[r][v] = accumulate ? load8(c + r * ldc + v * VL) : bias ? load8(bias + v * VL) : splat8(0.0f);
    for (int k = 0; k < K; k++) {
        v8 mv[2];
        for (int v = 0; v < V; v++) mv[v] = load8(m + (long)k * ldm + v * VL);
        for (int r = 0; r < R; r++) {
            const v8 ar = splat8(a[r * lda + k]);
            for (int v = 0; v < V; v++) acc[r][v] += ar * mv[v];
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) store8(c + r * ldc + v * VL, acc[r][v]);
}

/* The columns past the last whole vector, one at a time (the same order of sums). */
static void nn_tail(float *c, const float *a, const float *m, const float *bias, int accumulate, int rows, int n0,
                    int N, int K, int lda, int ldm, int ldc) {
    for (int r = 0; r < rows; r++)
        for (int n = n0; n < N; n++) {
            float s = accumulate ? c[r * ldc + n] : bias ? bias[n] : 0.0f;
            for (int k = 0; k < K; k++) s += a[r * lda + k] * m[(long)k * ldm + n];
            c[r * ldc + n] = s;
        }
}

ALWAYS_INLINE void nn_rows(float *c, const float *a, const float *m, const float *bias, int accumulate, int R,
                           int N, int K, int lda, int ldm, int ldc) {
    int n = 0;
    for (; n + 2 * VL <= N; n += 2 * VL)
        nn_block(c + n, a, m + n, bias ? bias + n : NULL, accumulate, R, 2, K, lda, ldm, ldc);
    for (; n + VL <= N; n += VL) nn_block(c + n, a, m + n, bias ? bias + n : NULL, accumulate, R, 1, K, lda, ldm, ldc);
    if (n < N) nn_tail(c, a, m, bias, accumulate, R, n, N, K, lda, ldm, ldc);
}

/* C [B, N] = init + A [B, K] M [K, N], all rows contiguous. */
static void gemm_nn(float *c, const float *a, const float *m, const float *bias, int accumulate, int B, int K,
                    int N) {
    int b = 0;
    for (; b + 4 <= B; b += 4) nn_rows(c + (long)b * N, a + (long)b * K, m, bias, accumulate, 4, N, K, K, N, N);
    for (; b < B; b++) nn_rows(c + (long)b * N, a + (long)b * K, m, bias, accumulate, 1, N, K, K, N, N);
}

/* ---------------------------------------------------------------- C = bias + A W^T
 * For small batches: C [B, N] = bias + A [B, K] W [N, K]^T as dot products along the
 * rows of A and W (both contiguous), four rows of A at a time. */
static void gemm_nt(float *c, const float *a, const float *w, const float *bias, int B, int K, int N) {
    const int kv = K / VL * VL;
    for (int b0 = 0; b0 < B; b0 += 4) {
        const int R = B - b0 < 4 ? B - b0 : 4;
        for (int n = 0; n < N; n++) {
            const float *wn = w + (long)n * K;
            v8 acc[4] = {0};
            for (int k = 0; k < kv; k += VL) {
                const v8 wv = load8(wn + k);
                for (int r = 0; r < R; r++) acc[r] += load8(a + (long)(b0 + r) * K + k) * wv;
            }
            for (int r = 0; r < R; r++) {
                const float *ar = a + (long)(b0 + r) * K;
                float s = sum8(acc[r]);
                for (int k = kv; k < K; k++) s += ar[k] * wn[k];
                c[(long)(b0 + r) * N + n] = (bias ? bias[n] : 0.0f) + s;
            }
        }
    }
}

/* ---------------------------------------------------------------- C += A^T M
 * C [K, N] += A [B, K]^T M [B, N]: the weight gradient dy^T x. A block of R rows of C
 * (R <= 4) and V vectors of columns; the sum runs over the batch in order. */
ALWAYS_INLINE void tn_block(float *c, const float *a, const float *m, int R, int V, int B, int K, int N) {
    v8 acc[4][2];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) acc[r][v] = load8(c + (long)r * N + v * VL);
    for (int b = 0; b < B; b++) {
        v8 mv[2];
        for (int v = 0; v < V; v++) mv[v] = load8(m + (long)b * N + v * VL);
        for (int r = 0; r < R; r++) {
            const v8 ar = splat8(a[(long)b * K + r]);
            for (int v = 0; v < V; v++) acc[r][v] += ar * mv[v];
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) store8(c + (long)r * N + v * VL, acc[r][v]);
}

ALWAYS_INLINE void tn_rows(float *c, const float *a, const float *m, int R, int B, int K, int N) {
    int n = 0;
    for (; n + 2 * VL <= N; n += 2 * VL) tn_block(c + n, a, m + n, R, 2, B, K, N);
    for (; n + VL <= N; n += VL) tn_block(c + n, a, m + n, R, 1, B, K, N);
    for (int r = 0; r < R; r++) /* the columns past the last whole vector */
        for (int j = n; j < N; j++) {
            float s = c[(long)r * N + j];
            for (int b = 0; b < B; b++) s += a[(long)b * K + r] * m[(long)b * N + j];
            c[(long)r * N + j] = s;
        }
}

/* For N < 8 (the first layer's few inputs): vectors run along K instead, 8 rows of C at
 * a time, each column of C one accumulator. */
static void gemm_tn_narrow(float *c, const float *a, const float *m, int B, int K, int N) {
    int k0 = 0;
    for (; k0 + VL <= K; k0 += VL) {
        v8 acc[VL] = {0};
        for (int b = 0; b < B; b++) {
            const v8 av = load8(a + (long)b * K + k0);
            for (int j = 0; j < N; j++) acc[j] += av * splat8(m[(long)b * N + j]);
        }
        for (int j = 0; j < N; j++)
            for (int l = 0; l < VL; l++) c[(long)(k0 + l) * N + j] += acc[j][l];
    }
    for (int k = k0; k < K; k++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int b = 0; b < B; b++) s += a[(long)b * K + k] * m[(long)b * N + j];
            c[(long)k * N + j] += s;
        }
}

static void gemm_tn(float *c, const float *a, const float *m, int B, int K, int N) {
    if (N < VL) {
        gemm_tn_narrow(c, a, m, B, K, N);
        return;
    }
    int k = 0;
    for (; k + 4 <= K; k += 4) tn_rows(c + (long)k * N, a + k, m, 4, B, K, N);
    for (; k < K; k++) tn_rows(c + (long)k * N, a + k, m, 1, B, K, N);
}

/* ---------------------------------------------------------------- the layer */

void linear_small_transpose(float *wt, const float *w, int in, int out) {
    for (int i = 0; i < in; i++) /* contiguous writes: row i of wt is column i of w */
        for (int o = 0; o < out; o++) wt[(long)i * out + o] = w[(long)o * in + i];
}

void linear_small_forward_t(float *y, const float *x, const float *w, const float *wt, const float *b, int batch,
                            int in, int out) {
    if (out >= VL) gemm_nn(y, x, wt, b, 0, batch, in, out);
    else gemm_nt(y, x, w, b, batch, in, out);
}

void linear_small_forward(float *y, const float *x, const float *w, const float *b, float *wt, int batch,
                          int in, int out) {
    if (batch >= 16 && out >= VL) {
        linear_small_transpose(wt, w, in, out);
        gemm_nn(y, x, wt, b, 0, batch, in, out);
    } else {
        gemm_nt(y, x, w, b, batch, in, out);
    }
}

void linear_small_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                           int batch, int in, int out) {
    if (dx) gemm_nn(dx, dy, w, NULL, 1, batch, out, in); /* dx [B, in] += dy [B, out] W [out, in] */
    gemm_tn(dw, dy, x, batch, out, in);                   /* dw [out, in] += dy^T x */
    int o = 0;
    for (; o + VL <= out; o += VL) {
        v8 acc = load8(db + o);
        for (int r = 0; r < batch; r++) acc += load8(dy + (long)r * out + o);
        store8(db + o, acc);
    }
    for (; o < out; o++) {
        float s = db[o];
        for (int r = 0; r < batch; r++) s += dy[(long)r * out + o];
        db[o] = s;
    }
}
