/* Layer normalisation over the last dimension (PyTorch's nn.LayerNorm(D), affine):
 *   out[n, j] = (in[n, j] - mean_n) * rstd_n * gamma[j] + beta[j],
 *   rstd_n = 1 / sqrt(var_n + eps)   (var: the biased variance, divided by D)
 * The forward saves mean and rstd per row for the backward (the caller owns them,
 * allocated once); the backward recomputes the normalised input from in, mean, rstd.
 * Row statistics are summed in double; rows are split over threads and the gamma and
 * beta gradients over columns, so the bits do not depend on the thread count.
 * 16-bit runs (layers/rounded.h): out, in, gamma, beta, dout, din of one dtype, rounded
 * once where stored; mean, rstd, dgamma, dbeta float32 always. */
#ifndef LAYERS_LAYERNORM_H
#define LAYERS_LAYERNORM_H

#include "core/tensor.h"

/* PyTorch's default eps (also TransformerEncoderLayer's layer_norm_eps). */
#define LAYERNORM_EPS 1e-5f

/* out [N, D], mean [N], rstd [N] from in [N, D], gamma [D], beta [D]; out must not
 * be in (the backward reads in). */
void layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                       const Tensor *gamma, const Tensor *beta, float eps);

/* din [N, D] += dL/din (skipped when din is NULL), dgamma [D] += sum over rows of
 * dout * xhat, dbeta [D] += sum over rows of dout, given dout [N, D] and what the
 * forward saved (xhat = (in - mean) * rstd). */
void layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                        const Tensor *in, const Tensor *mean, const Tensor *rstd,
                        const Tensor *gamma);

/* The shape checks of both devices. */
void layernorm_check_forward(const Tensor *out, const Tensor *mean, const Tensor *rstd,
                             const Tensor *in, const Tensor *gamma, const Tensor *beta,
                             float eps);
void layernorm_check_backward(const Tensor *din, const Tensor *dgamma, const Tensor *dbeta,
                              const Tensor *dout, const Tensor *in, const Tensor *mean,
                              const Tensor *rstd, const Tensor *gamma);

/* CUDA twins (lib/cuda/layernorm.cu), in builds with CUDA: tensors on the GPU. */
void cuda_layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                            const Tensor *gamma, const Tensor *beta, float eps);
void cuda_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                             const Tensor *in, const Tensor *mean, const Tensor *rstd,
                             const Tensor *gamma);

#endif
