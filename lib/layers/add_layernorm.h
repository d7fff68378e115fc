/* The residual add and the layer norm after it, fused (a post-norm encoder layer's
 * r = x + a, y = norm(r)):
 *   r = a + b   (stored: the backward reads it; 16-bit: rounded once),
 *   y = layernorm(r) from the STORED r, mean and rstd float32,
 * so the result is exactly add_forward then layernorm_forward, bit for bit, on either
 * device. The CPU version is that definition (the two layers called in order: the
 * reference); the CUDA twin (lib/cuda/add_layernorm.cu) is one kernel, a warp per row,
 * that reads a and b once and writes r and y, instead of two kernels and a re-read of
 * r. Its backward is the two layers' backwards (layernorm_backward, add_backward). */
#ifndef LAYERS_ADD_LAYERNORM_H
#define LAYERS_ADD_LAYERNORM_H

#include "core/tensor.h"

/* r [N, D] = a + b, y [N, D] = layernorm(r; gamma [D], beta [D], eps), mean [N],
 * rstd [N] float32. r may be a or b; y must be none of r, a, b. */
void add_layernorm_forward(Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd, const Tensor *a,
                           const Tensor *b, const Tensor *gamma, const Tensor *beta, float eps);

/* The checks of both devices (the two layers' own, and y apart from a and b). */
void add_layernorm_check_forward(const Tensor *r, const Tensor *y, const Tensor *mean,
                                 const Tensor *rstd, const Tensor *a, const Tensor *b,
                                 const Tensor *gamma, const Tensor *beta, float eps);

/* CUDA twin (lib/cuda/add_layernorm.cu), in builds with CUDA: tensors on the GPU. */
void cuda_add_layernorm_forward(Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd,
                                const Tensor *a, const Tensor *b, const Tensor *gamma,
                                const Tensor *beta, float eps);

#endif
