#include "softmax_xent.h"

#include <math.h>
#include <omp.h>

#include "core/check.h"
#include "softmax_exp.h"

float softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    CHECK_DEVICE(dlogits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        CHECK(labels[n] >= 0 && labels[n] < K, "label %d of row %d outside 0..%d", labels[n], n,
              K - 1);
        float zmax = z[0];
        for (int j = 1; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
        double sum = 0.0;
        for (int j = 0; j < K; j++) sum += exp((double)(z[j] - zmax));
        total += log(sum) + zmax - z[labels[n]];
        if (dlogits) {
            float *dz = dlogits->data + (size_t)n * K;
            for (int j = 0; j < K; j++) {
                float p = (float)(exp((double)(z[j] - zmax)) / sum);
                dz[j] += (p - (j == labels[n] ? 1.0f : 0.0f)) / (float)N;
            }
        }
    }
    return (float)(total / N);
}

int count_correct(const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    int correct = 0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        int best = 0;
        for (int j = 1; j < K; j++)
            if (z[j] > z[best]) best = j;
        correct += best == labels[n];
    }
    return correct;
}

/* Exponentials summed in float within blocks of this many (16 vector lanes of 128
 * terms), the blocks in double: the sum's rounding stays near 1e-7 relative. */
enum { XENT_SUM_BLOCK = 2048 };

/* sum_j exp(z_j - zmax) of one row; e (when not NULL) receives the exponentials. */
static double xent_row_exp_sum(float *e, const float *z, int K, float zmax) {
    double sum = 0.0;
    for (int j0 = 0; j0 < K; j0 += XENT_SUM_BLOCK) {
        const int j1 = j0 + XENT_SUM_BLOCK < K ? j0 + XENT_SUM_BLOCK : K;
        float s = 0.0f;
        if (e) {
#pragma omp simd reduction(+ : s)
            for (int j = j0; j < j1; j++) {
                e[j] = softmax_exp(z[j] - zmax);
                s += e[j];
            }
        } else {
#pragma omp simd reduction(+ : s)
            for (int j = j0; j < j1; j++) s += softmax_exp(z[j] - zmax);
        }
        sum += s;
    }
    return sum;
}

/* One row of the fast version: returns log sum_j exp(z_j) - z[label] and, when dz is
 * not NULL, adds the row's gradient (softmax - one-hot) * inv_n into it, with e [K]
 * as scratch for the exponentials (computed once, read back from cache). */
static double xent_row_fast(float *dz, float *e, const float *z, int K, int label, float inv_n) {
    float zmax = z[0];
#pragma omp simd reduction(max : zmax)
    for (int j = 0; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
    const double sum = xent_row_exp_sum(dz ? e : NULL, z, K, zmax);
    if (dz) {
        const float a = (float)(inv_n / sum);
#pragma omp simd
        for (int j = 0; j < K; j++) dz[j] += e[j] * a;
        dz[label] -= inv_n;
    }
    return log(sum) + (double)zmax - (double)z[label];
}

float softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    CHECK_DEVICE(dlogits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    if (N == 0) return 0.0f;
    CHECK(K > 0, "softmax cross-entropy over 0 classes");
    for (int n = 0; n < N; n++)
        CHECK(labels[n] >= 0 && labels[n] < K, "label %d of row %d outside 0..%d", labels[n], n,
              K - 1);
    double *row_loss = xmalloc(sizeof(double) * (size_t)N);
    const float inv_n = 1.0f / (float)N;
    const bool parallel = (int64_t)N * K > 65536;
    const int threads = parallel ? omp_get_max_threads() : 1;
    float *scratch = dlogits ? xmalloc(sizeof(float) * (size_t)K * threads) : NULL;
#pragma omp parallel if (parallel)
    {
        float *e = scratch ? scratch + (size_t)K * omp_get_thread_num() : NULL;
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++)
            row_loss[n] = xent_row_fast(dlogits ? dlogits->data + (size_t)n * K : NULL, e,
                                        logits->data + (size_t)n * K, K, labels[n], inv_n);
    }
    xfree(scratch);
    double total = 0.0;
    for (int n = 0; n < N; n++) total += row_loss[n];
    xfree(row_loss);
    return (float)(total / N);
}
