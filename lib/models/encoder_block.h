/* One encoder layer of the tutorial's model (nn.TransformerEncoderLayer: post-norm,
 * ReLU, causal self-attention), x [N, D] -> out [N, D]:
 *
 *   y = norm1(x + dropout(out_proj(attention(in_proj(x)))))
 *   out = norm2(y + dropout(linear2(dropout(relu(linear1(y))))))
 *
 * Its parameters carry PyTorch's names under PREFIX (PREFIX.self_attn.in_proj_weight,
 * ..., PREFIX.norm2.bias) and its initialisation: in_proj Xavier-uniform with bias 0,
 * out_proj uniform +-1/sqrt(D) with bias 0, the feed-forward linears PyTorch's default
 * (weights and biases uniform +-1/sqrt(fan_in)), layer norms 1 and 0. */
#ifndef MODELS_ENCODER_BLOCK_H
#define MODELS_ENCODER_BLOCK_H

#include "models/block.h"

Block *encoder_block_add(BlockList *l, const char *prefix, const char *name, int d_model,
                         int heads, int d_ff, float dropout);

/* Which of its saved activations is which: out [N, D] (its output), qkv [N, 3D], the
 * attention's probabilities and their dropped-out copy [B, H, T, T], ... (a test reads
 * ENCODER_PROBS's shape). */
enum {
    ENCODER_OUT, ENCODER_QKV, ENCODER_PROBS, ENCODER_DROPPED, ENCODER_CTX, ENCODER_A_MASK,
    ENCODER_R1, ENCODER_Y1, ENCODER_MEAN1, ENCODER_RSTD1, ENCODER_H, ENCODER_H_MASK,
    ENCODER_F_MASK, ENCODER_R2, ENCODER_MEAN2, ENCODER_RSTD2, ENCODER_SAVED
};

#endif
