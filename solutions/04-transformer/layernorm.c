/* TODO 4.5 and 4.6: layer normalisation, forward and backward.
 *
 * Each row (one token's D activations) is shifted to mean 0 and scaled to variance 1,
 * then given a learned scale gamma and shift beta per column:
 *
 *   mean = (1/D) sum_j x_j,   var = (1/D) sum_j (x_j - mean)^2   (biased: 1/D, not 1/(D-1))
 *   rstd = 1 / sqrt(var + eps),   xhat_j = (x_j - mean) * rstd,   out_j = gamma_j xhat_j + beta_j
 *
 * After every residual addition the activations are put back on this common scale, so
 * that twenty layers deep they neither blow up nor fade away. */
#include <math.h>

#include "layers/layernorm.h"
#include "lesson.h"

void lesson_layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                              const Tensor *gamma, const Tensor *beta, float eps) {
    layernorm_check_forward(out, mean, rstd, in, gamma, beta, eps);
    const int N = in->shape[0], D = in->shape[1];
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = in->data + (size_t)n * D;
        float *y = out->data + (size_t)n * D;
        double sum = 0.0, sq = 0.0; /* double: a habit (float passes too; see the sheet) */
        for (int j = 0; j < D; j++) sum += x[j];
        const double mu = sum / D;
        for (int j = 0; j < D; j++) sq += (x[j] - mu) * (x[j] - mu);
        const float r = (float)(1.0 / sqrt(sq / D + eps));
        mean->data[n] = (float)mu;
        rstd->data[n] = r;
        for (int j = 0; j < D; j++)
            y[j] = (x[j] - (float)mu) * r * gamma->data[j] + beta->data[j];
    }
}

void lesson_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                               const Tensor *in, const Tensor *mean, const Tensor *rstd,
                               const Tensor *gamma) {
    layernorm_check_backward(din, dgamma, dbeta, dout, in, mean, rstd, gamma);
    const int N = in->shape[0], D = in->shape[1];
    /* gamma and beta: summed over the rows, each thread its own columns */
#pragma omp parallel for schedule(static)
    for (int j = 0; j < D; j++) {
        float dg = 0.0f, db = 0.0f;
        for (int n = 0; n < N; n++) {
            const float g = dout->data[(size_t)n * D + j];
            dg += g * (in->data[(size_t)n * D + j] - mean->data[n]) * rstd->data[n];
            db += g;
        }
        dgamma->data[j] += dg;
        dbeta->data[j] += db;
    }
    if (!din) return;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = in->data + (size_t)n * D, *g = dout->data + (size_t)n * D;
        const float mu = mean->data[n], r = rstd->data[n];
        /* with dxhat_j = dout_j gamma_j: din = r (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) */
        float m1 = 0.0f, m2 = 0.0f;
        for (int j = 0; j < D; j++) {
            const float dxhat = g[j] * gamma->data[j], xhat = (x[j] - mu) * r;
            m1 += dxhat;
            m2 += dxhat * xhat;
        }
        m1 /= (float)D, m2 /= (float)D;
        float *dx = din->data + (size_t)n * D;
        for (int j = 0; j < D; j++) {
            const float dxhat = g[j] * gamma->data[j], xhat = (x[j] - mu) * r;
            dx[j] += r * (dxhat - m1 - xhat * m2);
        }
    }
}
