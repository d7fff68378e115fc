#include "softmax_xent.h"

#include <math.h>
#include <omp.h>

#include "core/check.h"
#include "rounded.h"
#include "softmax_exp.h"

float softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    ROUNDED_REFUSE("a 16-bit run's loss is softmax_cross_entropy_fast (layers/softmax_xent.h)",
                   dlogits, logits);
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
    CHECK_FLOAT32(logits);
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

/* A row is read in blocks of this many logits (8 KB, in L1 once loaded): each block's
 * maximum, then its exponentials relative to that maximum (softmax_exp8), summed in float
 * (32 lanes of 64 terms); the blocks are combined in double relative to the row's maximum
 * so far. So each logit comes from memory once (the second look at a block hits L1),
 * and the sum's rounding stays near 1e-7 relative. */
enum { XENT_SUM_BLOCK = 2048 };

/* One block: its maximum in *bmax, and sum_j exp(z_j - max) returned; e (when not NULL)
 * receives the exponentials. A block of -inf only sums to 0 (not exp(-inf - -inf)). */
static float xent_block(float *e, const float *z, int len, float *bmax) {
    float m = z[0];
#pragma omp simd reduction(max : m)
    for (int j = 0; j < len; j++) m = z[j] > m ? z[j] : m;
    *bmax = m;
    float s = 0.0f;
    if (m == -INFINITY) {
        if (e)
            for (int j = 0; j < len; j++) e[j] = 0.0f;
        return 0.0f;
    }
    /* 8 lanes at a time in 4 accumulators (an add's latency covered), then the tail */
    const f8 mv = splat8(m);
    f8 acc[4] = {splat8(0.0f), splat8(0.0f), splat8(0.0f), splat8(0.0f)};
    int j = 0;
    for (; j + 32 <= len; j += 32)
        for (int u = 0; u < 4; u++) {
            const f8 v = softmax_exp8(load8(z + j + 8 * u) - mv);
            if (e) store8(e + j + 8 * u, v);
            acc[u] += v;
        }
    for (; j + 8 <= len; j += 8) {
        const f8 v = softmax_exp8(load8(z + j) - mv);
        if (e) store8(e + j, v);
        acc[0] += v;
    }
    const f8 a = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (int k = 0; k < 8; k++) s += a[k];
    for (; j < len; j++) {
        const float v = softmax_exp(z[j] - m);
        if (e) e[j] = v;
        s += v;
    }
    return s;
}

/* One row of the fast version: returns log sum_j exp(z_j) - z[label]. When dz is not
 * NULL, the row's gradient times the loss scale, (softmax - one-hot) * s_n with s_n =
 * S x (1/N) (softmax_xent.h), is added to dz (add) or stored in it, with e [K + blocks]
 * as scratch: the exponentials relative to their block's maximum (read back from cache),
 * then the blocks' maxima. z is read in the first pass only, so a stored gradient may
 * overwrite z itself. */
static double xent_row_fast(float *dz, bool add, float *e, const float *z, int K, int label,
                            float s_n) {
    const float zlabel = z[label];
    float *bmax = dz ? e + K : NULL;
    double zmax = -INFINITY, sum = 0.0; /* the row's maximum so far, sum relative to it */
    for (int b = 0, j0 = 0; j0 < K; b++, j0 += XENT_SUM_BLOCK) {
        const int len = K - j0 < XENT_SUM_BLOCK ? K - j0 : XENT_SUM_BLOCK;
        float m;
        const double s = xent_block(dz ? e + j0 : NULL, z + j0, len, &m);
        if (bmax) bmax[b] = m;
        if ((double)m > zmax) {
            sum = sum * exp(zmax - (double)m) + s;
            zmax = m;
        } else if (s != 0.0) { /* also a NaN block: the loss is NaN */
            sum += s * exp((double)m - zmax);
        }
    }
    if (dz) {
        for (int b = 0, j0 = 0; j0 < K; b++, j0 += XENT_SUM_BLOCK) {
            const int j1 = K - j0 < XENT_SUM_BLOCK ? K : j0 + XENT_SUM_BLOCK;
            const float a = (float)((double)s_n * exp((double)bmax[b] - zmax) / sum);
            if (add) {
#pragma omp simd
                for (int j = j0; j < j1; j++) dz[j] += e[j] * a;
            } else {
#pragma omp simd
                for (int j = j0; j < j1; j++) dz[j] = e[j] * a;
            }
        }
        dz[label] -= s_n;
    }
    return log(sum) + zmax - (double)zlabel;
}

/* Both _fast functions. A 16-bit call (bf16 or fp16 logits and dlogits) converts one row
 * at a time into the thread's float32 scratch (the logits, and dlogits when added to),
 * runs the float32 row and rounds the row's gradient once into dlogits: the bits of the
 * float32 layer on whole converted tensors (layers/rounded.h's definition), without a
 * float32 [N, V] copy of either. */
static float xent_fast(Tensor *dlogits, const Tensor *logits, const int *labels, bool add,
                       float scale) {
    const DType dt = add ? ROUNDED_DTYPE(ROUNDED_ADD(dlogits), ROUNDED_IN(logits))
                         : ROUNDED_DTYPE(ROUNDED_OUT(dlogits), ROUNDED_IN(logits));
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    CHECK_DEVICE(dlogits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    CHECK(isfinite(scale) && scale > 0.0f,
          "softmax cross-entropy with a loss scale of %g: it must be finite and positive (1: "
          "the plain gradient)", (double)scale);
    if (N == 0) return 0.0f;
    CHECK(K > 0, "softmax cross-entropy over 0 classes");
    for (int n = 0; n < N; n++)
        CHECK(labels[n] >= 0 && labels[n] < K, "label %d of row %d outside 0..%d", labels[n], n,
              K - 1);
    double *row_loss = xmalloc(sizeof(double) * (size_t)N);
    const float s_n = scale * (1.0f / (float)N); /* S x (1/N), rounded once: softmax_xent.h */
    const bool wide = dt != DTYPE_F32;
    /* a 16-bit dlogits in logits' memory shares the converted row (its old values: the
     * logits), as rounded.h's one view of shared memory */
    const bool shared = dlogits && dlogits->raw == logits->raw;
    const size_t es = dtype_size(dt);
    const bool parallel = (int64_t)N * K > 65536;
    const int threads = parallel ? omp_get_max_threads() : 1;
    const size_t blocks = (size_t)(K + XENT_SUM_BLOCK - 1) / XENT_SUM_BLOCK;
    const size_t row_e = dlogits ? (size_t)K + blocks : 0; /* xent_row_fast's scratch */
    const size_t row_z = wide ? (size_t)K : 0, row_d = wide && dlogits && !shared ? (size_t)K : 0;
    const size_t per_thread = row_e + row_z + row_d;
    float *scratch = per_thread ? xmalloc(sizeof(float) * per_thread * (size_t)threads) : NULL;
#pragma omp parallel if (parallel)
    {
        float *e = scratch ? scratch + per_thread * (size_t)omp_get_thread_num() : NULL;
        float *zr = wide ? e + row_e : NULL; /* the 16-bit call's rows */
        float *dr = shared ? zr : wide && dlogits ? zr + row_z : NULL;
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            const size_t at = (size_t)n * K;
            if (!wide) {
                row_loss[n] = xent_row_fast(dlogits ? dlogits->data + at : NULL, add, e,
                                            logits->data + at, K, labels[n], s_n);
                continue;
            }
            dtype_convert_cpu(zr, DTYPE_F32, (const char *)logits->raw + at * es, dt, K);
            if (dlogits && add && !shared)
                dtype_convert_cpu(dr, DTYPE_F32, (const char *)dlogits->raw + at * es, dt, K);
            row_loss[n] = xent_row_fast(dlogits ? dr : NULL, add, e, zr, K, labels[n], s_n);
            if (dlogits) /* rounded once */
                dtype_convert_cpu((char *)dlogits->raw + at * es, dt, dr, DTYPE_F32, K);
        }
    }
    xfree(scratch);
    double total = 0.0;
    for (int n = 0; n < N; n++) total += row_loss[n];
    xfree(row_loss);
    return (float)(total / N);
}

float softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels,
                                 float scale) {
    return xent_fast(dlogits, logits, labels, true, scale);
}

float softmax_cross_entropy_fast_store(Tensor *dlogits, const Tensor *logits, const int *labels,
                                       float scale) {
    CHECK(dlogits != NULL, "softmax_cross_entropy_fast_store: dlogits is its output, not NULL");
    return xent_fast(dlogits, logits, labels, false, scale);
}
