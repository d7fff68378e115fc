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
    /* TODO 4.5: for each row n (x = in->data + n * D, y = out->data + n * D):
     *   mean = sum of x_j / D;  var = sum of (x_j - mean)^2 / D   (divide by D, not D - 1)
     *   rstd = 1 / sqrt(var + eps)                                (eps inside the root)
     *   y_j  = (x_j - mean) * rstd * gamma_j + beta_j
     * eps is the argument (the model passes 1e-5). Save mean->data[n] and rstd->data[n]:
     * the backward needs them. Float sums pass; double is the careful habit (the sheet
     * says when it matters). */
    TODO_STOP("4.5");
}

void lesson_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                               const Tensor *in, const Tensor *mean, const Tensor *rstd,
                               const Tensor *gamma) {
    layernorm_check_backward(din, dgamma, dbeta, dout, in, mean, rstd, gamma);
    const int N = in->shape[0], D = in->shape[1];
    /* TODO 4.6: with xhat = (x - mean[n]) * rstd[n] (recomputed from in, mean, rstd) and
     * g = dout:
     *   dbeta[j]  += sum over rows n of g[n][j]
     *   dgamma[j] += sum over rows n of g[n][j] * xhat[n][j]
     *   and, unless din is NULL, for each row with dxhat_j = g_j * gamma_j:
     *   din[n][j] += rstd * (dxhat_j - mean_j'(dxhat_j') - xhat_j * mean_j'(dxhat_j' xhat_j'))
     * (every x_j moves the row's mean and variance too: the two means are those paths).
     * Add (+=) into all three. */
    TODO_STOP("4.6");
}
