/* One encoder layer of the tutorial's model (nn.TransformerEncoderLayer: post-norm,
 * ReLU, causal self-attention), x [N, D] -> out [N, D]:
 *
 *   y = norm1(x + dropout(out_proj(attention(in_proj(x)))))
 *   out = norm2(y + dropout(linear2(dropout(relu(linear1(y))))))
 *
 * Its parameters carry PyTorch's names under PREFIX (PREFIX.self_attn.in_proj_weight,
 * ..., PREFIX.norm2.bias) and its initialisation: in_proj Xavier-uniform with bias 0,
 * out_proj uniform +-1/sqrt(D) with bias 0, the feed-forward linears PyTorch's default
 * (weights and biases uniform +-1/sqrt(fan_in)), layer norms 1 and 0.
 * Its forward runs each residual add with the layer norm after it, and the ReLU with
 * the dropout after it, fused (layers/add_layernorm.h, layers/relu_dropout.h: the same
 * bits) while the table's entries for them are the library's; a lesson's own layer
 * norm, ReLU, dropout or add swapped into the table is called as a separate layer. */
#ifndef MODELS_ENCODER_BLOCK_H
#define MODELS_ENCODER_BLOCK_H

#include <stdbool.h>

#include "models/block.h"

Block *encoder_block_add(BlockList *l, const char *prefix, const char *name, int d_model,
                         int heads, int d_ff, float dropout, bool fused_attention);

/* The attention. Unfused (layers/attention.h): the weights [B, H, T, T] are saved, and
 * their dropped-out copy. Fused (layers/flash_attention.h): the row's log-sum-exp
 * [B, H, T] only, float32, and the dropout's key in the block's host memory; always in a
 * 16-bit list (the unfused layer is float32 only), in float32 when fused_attention is
 * set (off by default, so a float32 run does what it did).
 *
 * Which of its saved activations is which: out [N, D] (its output), qkv [N, 3D], ...,
 * the means and reciprocal deviations [N] (float32), the dropout masks (float32), then
 * ENCODER_PROBS and ENCODER_DROPPED (unfused) or ENCODER_LSE (fused) last (a test reads
 * ENCODER_PROBS's shape). Every other one is in the list's dtype. */
enum {
    ENCODER_OUT, ENCODER_QKV, ENCODER_CTX, ENCODER_A_MASK, ENCODER_R1, ENCODER_Y1,
    ENCODER_MEAN1, ENCODER_RSTD1, ENCODER_H, ENCODER_H_MASK, ENCODER_F_MASK, ENCODER_R2,
    ENCODER_MEAN2, ENCODER_RSTD2,
    ENCODER_PROBS, ENCODER_DROPPED, ENCODER_SAVED,   /* unfused */
    ENCODER_LSE = ENCODER_PROBS, ENCODER_SAVED_FUSED /* fused */
};

/* Whether block b (an encoder layer) runs the fused attention. */
bool encoder_block_fused(const Block *b);

#endif
