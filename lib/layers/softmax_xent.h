/* Softmax cross-entropy: the loss of a classifier, fused with its gradient.
 *
 * For logits z [N, classes] and labels y [N]:
 *   loss = mean over n of ( log sum_j exp z[n,j]  -  z[n, y[n]] )
 *   dL/dz[n,j] = (softmax(z[n])_j - [j == y[n]]) / N
 * Fusing the two avoids the softmax's own Jacobian and is what PyTorch's
 * CrossEntropyLoss computes (mean reduction). The maximum is subtracted first so
 * that exp never overflows. CUDA twin: lib/cuda/softmax_xent.cu. */
#ifndef LAYERS_SOFTMAX_XENT_H
#define LAYERS_SOFTMAX_XENT_H

#include "core/tensor.h"

/* Returns the mean loss; adds the gradient to dlogits when it is not NULL. */
float softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels);

/* The same loss and gradient for large numbers of classes (a language model's
 * vocabulary: 33,000 words, 700 rows per batch): rows split over OpenMP threads, the
 * exponentials in float (layers/softmax_exp.h, vectorised) instead of double. The
 * row losses are summed in row order, so the bits do not depend on the thread count.
 * Against softmax_cross_entropy (double): loss within 2e-6 relative, each gradient
 * entry within 1e-6 / N absolute (tests/unit/test_layers_attention.c checks both
 * bounds). The exact function above stays as it is: the CNN's digests rest on it.
 *
 * scale: the loss scale S (fp16's dynamic loss scaling, train/loss_scale.h; 1: the plain
 * gradient), finite and positive. The gradient added is S x dL/dz, with S inside the
 * float32 formula, before the one rounding of a 16-bit dlogits: the layer's 1/N becomes
 *   s_n = S * (1/N)                      (float32, rounded once; exact for S = 2^k)
 *   dz[n,j] += e_j * a,  a = (float)(s_n * exp(m_b - zmax) / sum)   (in double)
 *   dz[n,label] -= s_n                   (after the +=)
 * with e_j = exp(z_j - m_b) (float) relative to the maximum m_b of j's block of 2048
 * logits, sum = sum_j exp(z_j - zmax) (docs/mixed-precision.md). So a gradient that
 * float16 would flush to zero unscaled keeps its digits, and for S = 2^k each float32
 * value is S times the unscaled one exactly (where neither is a float32 subnormal). The
 * loss returned is never scaled. */
float softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels,
                                 float scale);
/* (Both _fast functions take 16-bit logits and dlogits too, of one dtype: the loss, a
 * float32, from the exact logits, each dlogits entry rounded once: the float32 layer on
 * the converted tensors, layers/rounded.h's rule, computed a row at a time in float32
 * scratch of the thread, without a float32 copy of [N, classes].
 * softmax_cross_entropy above is float32 only: it is the CNN's.) */

/* The same loss, its gradient stored in dlogits (=) instead of added: no zeroing pass
 * before it, and one write of [N, classes] instead of a read and a write. Each logit is
 * read from memory once, so dlogits may be logits itself (the logits are then gone).
 * The same bits as softmax_cross_entropy_fast into a zeroed dlogits. */
float softmax_cross_entropy_fast_store(Tensor *dlogits, const Tensor *logits, const int *labels,
                                       float scale);

/* Number of rows whose largest logit is at the label. */
int count_correct(const Tensor *logits, const int *labels);

/* CUDA twins (lib/cuda/softmax_xent.cu), in builds with CUDA: logits on the GPU and
 * labels in device memory; the loss and the count come back to the host. */
float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels);
int cuda_count_correct(const Tensor *logits, const int *labels);
/* ... and of softmax_cross_entropy_fast: one block per row (lib/cuda/softmax_xent.cu),
 * S in the same places (a = (float)(s_n / sum), the row's one maximum). */
float cuda_softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels,
                                      float scale);

#endif
