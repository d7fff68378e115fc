/* Gradient clipping by global norm, torch.nn.utils.clip_grad_norm_ (PyTorch 1.13):
 *
 *   norm = sqrt(sum over every gradient element g^2)       (all parameters together)
 *   coef = max_norm / (norm + 1e-6);  if coef < 1: every g *= coef
 *   return norm                                             (before clipping)
 *
 * The sum runs in double over fixed blocks of the flat gradient buffer, added in a fixed
 * order, so the norm does not depend on the number of threads (or GPU blocks). A NaN or
 * infinite gradient gives a NaN or infinite norm, returned as it is (and, as in PyTorch
 * with error_if_nonfinite=False, the gradients are scaled by NaN or 0): the caller can
 * test isfinite() and stop. The gradients' device picks the CPU loops or the CUDA kernels
 * (lib/cuda/clip.h, and tensor_scale's). */
#ifndef TRAIN_CLIP_H
#define TRAIN_CLIP_H

#include "models/params.h"

float clip_grad_norm(ParamList *params, float max_norm);
/* The global L2 norm of the gradients alone (nothing scaled), e.g. for the log. */
float grad_norm(const ParamList *params);
/* The sum of g^2 over one tensor, in double, by the same fixed blocks (a shard's share
 * of the squared norm: the shards' sums add up to the whole's, to double rounding). */
double grad_sum_squares(const Tensor *g);

/* Elements per block of the sum: each block is added up in order, then the blocks. */
enum { CLIP_BLOCK = 1 << 14 };

#endif
