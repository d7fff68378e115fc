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
 * bounds). The exact function above stays as it is: the CNN's digests rest on it. */
float softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels);
/* (Both _fast functions take 16-bit logits and dlogits too, of one dtype: the loss, a
 * float32, from the exact logits, each dlogits entry rounded once, layers/rounded.h.
 * softmax_cross_entropy above is float32 only: it is the CNN's.) */

/* The same loss, its gradient stored in dlogits (=) instead of added: no zeroing pass
 * before it, and one write of [N, classes] instead of a read and a write. Each logit is
 * read from memory once, so dlogits may be logits itself (the logits are then gone).
 * The same bits as softmax_cross_entropy_fast into a zeroed dlogits. */
float softmax_cross_entropy_fast_store(Tensor *dlogits, const Tensor *logits, const int *labels);

/* Number of rows whose largest logit is at the label. */
int count_correct(const Tensor *logits, const int *labels);

/* CUDA twins (lib/cuda/softmax_xent.cu), in builds with CUDA: logits on the GPU and
 * labels in device memory; the loss and the count come back to the host. */
float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels);
int cuda_count_correct(const Tensor *logits, const int *labels);
/* ... and of softmax_cross_entropy_fast: one block per row (lib/cuda/softmax_xent.cu). */
float cuda_softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits, const int *labels);

#endif
