/* The language model's last block, the tutorial's decoder: a linear layer from the
 * model's width to the vocabulary, x [N, D] -> logits [N, V], with PREFIX.weight
 * uniform in +-0.1 and PREFIX.bias 0 (init_weights), and its loss: the mean
 * cross-entropy of the logits against the next tokens (lm_head_loss, a BlockLossFn, and
 * lm_head_loss_scaled). */
#ifndef MODELS_LM_HEAD_BLOCK_H
#define MODELS_LM_HEAD_BLOCK_H

#include "models/block.h"

Block *lm_head_block_add(BlockList *l, const char *prefix, int d_model, int vocab);
float lm_head_loss(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
                   Tensor *dlogits);
/* The same, its gradient times the loss scale inside the cross-entropy, before the one
 * rounding of a 16-bit dlogits (a BlockScaledLossFn: no float32 copy of the logits or
 * of their gradient). */
float lm_head_loss_scaled(void *ctx, const LayerOps *ops, const Tensor *logits,
                          const int *targets, Tensor *dlogits, float scale);

#endif
