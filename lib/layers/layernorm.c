#include "layernorm.h"

#include <math.h>

#include "core/check.h"
#include "rounded.h"

/* Columns per task of the gamma/beta gradient: whole cache lines per thread. */
enum { LAYERNORM_COLUMN_BLOCK = 64 };

void layernorm_check_forward(const Tensor *out, const Tensor *mean, const Tensor *rstd,
                             const Tensor *in, const Tensor *gamma, const Tensor *beta,
                             float eps) {
    CHECK_SHAPE(in, -1, -1);
    const int N = in->shape[0], D = in->shape[1];
    CHECK_SAME_SHAPE(out, in);
    CHECK(out->data != in->data, "layer norm: out must not be in (the backward needs in)");
    CHECK_SHAPE(mean, N);
    CHECK_SHAPE(rstd, N);
    CHECK_SHAPE(gamma, D);
    CHECK_SHAPE(beta, D);
    CHECK(eps > 0.0f, "layer norm: eps %g must be positive", (double)eps);
}

void layernorm_check_backward(const Tensor *din, const Tensor *dgamma, const Tensor *dbeta,
                              const Tensor *dout, const Tensor *in, const Tensor *mean,
                              const Tensor *rstd, const Tensor *gamma) {
    CHECK_SHAPE(in, -1, -1);
    const int N = in->shape[0], D = in->shape[1];
    CHECK_SAME_SHAPE(dout, in);
    if (din) CHECK_SAME_SHAPE(din, in);
    CHECK_SHAPE(mean, N);
    CHECK_SHAPE(rstd, N);
    CHECK_SHAPE(gamma, D);
    CHECK_SHAPE(dgamma, D);
    CHECK_SHAPE(dbeta, D);
}

void layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                       const Tensor *gamma, const Tensor *beta, float eps) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_F32(mean), ROUNDED_F32(rstd),
                      ROUNDED_IN(in), ROUNDED_IN(gamma), ROUNDED_IN(beta))) {
        layernorm_forward(rounded(&rc, out), mean, rstd, rounded(&rc, in), rounded(&rc, gamma),
                          rounded(&rc, beta), eps);
        rounded_end(&rc);
        return;
    }
    layernorm_check_forward(out, mean, rstd, in, gamma, beta, eps);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(mean, DEVICE_CPU);
    CHECK_DEVICE(gamma, DEVICE_CPU);
    const int N = in->shape[0], D = in->shape[1];
    const float *g = gamma->data, *b = beta->data;
#pragma omp parallel for schedule(static) if ((int64_t)N * D > 32768)
    for (int n = 0; n < N; n++) {
        const float *x = in->data + (size_t)n * D;
        float *y = out->data + (size_t)n * D;
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < D; j++) sum += x[j];
        const double mu = sum / D;
        double sq = 0.0; /* two passes: no cancellation in E[x^2] - E[x]^2 */
#pragma omp simd reduction(+ : sq)
        for (int j = 0; j < D; j++) sq += (x[j] - mu) * (x[j] - mu);
        const float m = (float)mu, r = (float)(1.0 / sqrt(sq / D + eps));
        mean->data[n] = m;
        rstd->data[n] = r;
#pragma omp simd
        for (int j = 0; j < D; j++) y[j] = (x[j] - m) * r * g[j] + b[j];
    }
}

/* dgamma, dbeta: each task owns a block of columns and walks all rows in order. */
static void layernorm_param_grads(Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                                  const Tensor *in, const Tensor *mean, const Tensor *rstd) {
    const int N = in->shape[0], D = in->shape[1];
    const int blocks = (D + LAYERNORM_COLUMN_BLOCK - 1) / LAYERNORM_COLUMN_BLOCK;
#pragma omp parallel for schedule(static) if ((int64_t)N * D > 32768)
    for (int blk = 0; blk < blocks; blk++) {
        const int j0 = blk * LAYERNORM_COLUMN_BLOCK;
        const int w = D - j0 < LAYERNORM_COLUMN_BLOCK ? D - j0 : LAYERNORM_COLUMN_BLOCK;
        double sg[LAYERNORM_COLUMN_BLOCK] = {0}, sb[LAYERNORM_COLUMN_BLOCK] = {0};
        for (int n = 0; n < N; n++) {
            const float *x = in->data + (size_t)n * D + j0, *dy = dout->data + (size_t)n * D + j0;
            const float m = mean->data[n], r = rstd->data[n];
#pragma omp simd
            for (int j = 0; j < w; j++) {
                sg[j] += (double)(dy[j] * ((x[j] - m) * r));
                sb[j] += (double)dy[j];
            }
        }
        for (int j = 0; j < w; j++) {
            dgamma->data[j0 + j] += (float)sg[j];
            dbeta->data[j0 + j] += (float)sb[j];
        }
    }
}

/* din = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * gamma: the
 * normalisation's Jacobian applied to g, one row at a time. */
static void layernorm_input_grad(Tensor *din, const Tensor *dout, const Tensor *in,
                                 const Tensor *mean, const Tensor *rstd, const Tensor *gamma) {
    const int N = in->shape[0], D = in->shape[1];
    const float *gam = gamma->data;
#pragma omp parallel for schedule(static) if ((int64_t)N * D > 32768)
    for (int n = 0; n < N; n++) {
        const float *x = in->data + (size_t)n * D, *dy = dout->data + (size_t)n * D;
        float *dx = din->data + (size_t)n * D;
        const float m = mean->data[n], r = rstd->data[n];
        double sum_g = 0.0, sum_gx = 0.0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
        for (int j = 0; j < D; j++) {
            const float g = dy[j] * gam[j];
            sum_g += g;
            sum_gx += (double)(g * ((x[j] - m) * r));
        }
        const float mean_g = (float)(sum_g / D), mean_gx = (float)(sum_gx / D);
#pragma omp simd
        for (int j = 0; j < D; j++) {
            const float xhat = (x[j] - m) * r;
            dx[j] += r * (dy[j] * gam[j] - mean_g - xhat * mean_gx);
        }
    }
}

void layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                        const Tensor *in, const Tensor *mean, const Tensor *rstd,
                        const Tensor *gamma) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(din), ROUNDED_F32(dgamma), ROUNDED_F32(dbeta),
                      ROUNDED_IN(dout), ROUNDED_IN(in), ROUNDED_F32(mean), ROUNDED_F32(rstd),
                      ROUNDED_IN(gamma))) {
        layernorm_backward(rounded(&rc, din), dgamma, dbeta, rounded(&rc, dout),
                           rounded(&rc, in), mean, rstd, rounded(&rc, gamma));
        rounded_end(&rc);
        return;
    }
    layernorm_check_backward(din, dgamma, dbeta, dout, in, mean, rstd, gamma);
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dgamma, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    layernorm_param_grads(dgamma, dbeta, dout, in, mean, rstd);
    if (din) layernorm_input_grad(din, dout, in, mean, rstd, gamma);
}
