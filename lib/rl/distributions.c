#include "rl/distributions.h"

#include <math.h>

#include "core/check.h"

static const double LOG_SQRT_2PI = 0.91893853320467274178; /* log(2 pi) / 2 */

/* log-sum-exp of a row of logits, in double, shifted by the largest for safety */
static double row_logsumexp(const float *z, int A) {
    float zmax = z[0];
    for (int j = 1; j < A; j++) zmax = z[j] > zmax ? z[j] : zmax;
    double sum = 0;
    for (int j = 0; j < A; j++) sum += exp((double)z[j] - zmax);
    return zmax + log(sum);
}

static int action_index(float a, int A, int row) {
    const int k = (int)a;
    CHECK(a == (float)k && k >= 0 && k < A, "categorical: action %g of row %d is not one of 0..%d", (double)a, row,
          A - 1);
    return k;
}

void categorical_sample(float *actions, float *logp, const float *logits, int batch, int A, Rng *rng) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        const double lse = row_logsumexp(z, A);
        const double u = rng_uniform(rng);
        double cum = 0;
        int k = A - 1; /* where rounding leaves the sum below u: the last action */
        for (int j = 0; j < A; j++) {
            cum += exp((double)z[j] - lse);
            if (u < cum) {
                k = j;
                break;
            }
        }
        actions[b] = (float)k;
        logp[b] = (float)((double)z[k] - lse);
    }
}

void categorical_mode(float *actions, const float *logits, int batch, int A) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        int k = 0;
        for (int j = 1; j < A; j++)
            if (z[j] > z[k]) k = j;
        actions[b] = (float)k;
    }
}

void categorical_log_prob(float *logp, const float *logits, const float *actions, int batch, int A) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        logp[b] = (float)((double)z[action_index(actions[b], A, b)] - row_logsumexp(z, A));
    }
}

void categorical_log_prob_backward(float *dlogits, const float *dlogp, const float *logits, const float *actions,
                                   int batch, int A) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        float *dz = dlogits + (size_t)b * A;
        const double lse = row_logsumexp(z, A);
        const int k = action_index(actions[b], A, b);
        for (int j = 0; j < A; j++) dz[j] += dlogp[b] * (float)((j == k) - exp((double)z[j] - lse));
    }
}

void categorical_entropy(float *entropy, const float *logits, int batch, int A) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        const double lse = row_logsumexp(z, A);
        double h = 0;
        for (int j = 0; j < A; j++) {
            const double lp = (double)z[j] - lse;
            h -= exp(lp) * lp;
        }
        entropy[b] = (float)h;
    }
}

void categorical_entropy_backward(float *dlogits, const float *dentropy, const float *logits, int batch, int A) {
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * A;
        float *dz = dlogits + (size_t)b * A;
        const double lse = row_logsumexp(z, A);
        double h = 0;
        for (int j = 0; j < A; j++) {
            const double lp = (double)z[j] - lse;
            h -= exp(lp) * lp;
        }
        for (int j = 0; j < A; j++) {
            const double lp = (double)z[j] - lse;
            dz[j] += dentropy[b] * (float)(-exp(lp) * (lp + h));
        }
    }
}

void gaussian_sample(float *actions, float *logp, const float *mean, const float *logstd, int batch, int D,
                     Rng *rng) {
    for (int b = 0; b < batch; b++)
        for (int d = 0; d < D; d++) {
            const float eps = rng_normal(rng);
            actions[(size_t)b * D + d] = mean[(size_t)b * D + d] + expf(logstd[d]) * eps;
        }
    gaussian_log_prob(logp, mean, logstd, actions, batch, D);
}

void gaussian_log_prob(float *logp, const float *mean, const float *logstd, const float *actions, int batch,
                       int D) {
    for (int b = 0; b < batch; b++) {
        double lp = 0;
        for (int d = 0; d < D; d++) {
            const double s = logstd[d], z = ((double)actions[(size_t)b * D + d] - mean[(size_t)b * D + d]) * exp(-s);
            lp += -0.5 * z * z - s - LOG_SQRT_2PI;
        }
        logp[b] = (float)lp;
    }
}

void gaussian_log_prob_backward(float *dmean, float *dlogstd, const float *dlogp, const float *mean,
                                const float *logstd, const float *actions, int batch, int D) {
    for (int d = 0; d < D; d++) {
        const double inv_var = exp(-2.0 * logstd[d]);
        double ds = 0;
        for (int b = 0; b < batch; b++) {
            const double diff = (double)actions[(size_t)b * D + d] - mean[(size_t)b * D + d];
            dmean[(size_t)b * D + d] += dlogp[b] * (float)(diff * inv_var);
            ds += dlogp[b] * (diff * diff * inv_var - 1.0);
        }
        dlogstd[d] += (float)ds;
    }
}

float gaussian_entropy(const float *logstd, int D) {
    double h = 0;
    for (int d = 0; d < D; d++) h += 0.5 + LOG_SQRT_2PI + logstd[d];
    return (float)h;
}
