/* The transformer's first block: token embedding scaled by sqrt(D), plus sinusoidal
 * positions, then dropout (the tutorial's TransformerModel.forward up to its encoder):
 *
 *   ids [B*T] -> x [N, D] = dropout(table[ids] * sqrt(D) + pe[t])
 *
 * Its parameter is PREFIX.weight [V, D], initialised uniform in +-0.1 (the tutorial's
 * init_weights); the positions table pe [max_len, D] is its own (made by its init). */
#ifndef MODELS_EMBED_BLOCK_H
#define MODELS_EMBED_BLOCK_H

#include "models/block.h"

Block *embed_block_add(BlockList *l, const char *prefix, int vocab, int d_model, int max_len,
                       float dropout);
/* Its positions table [max_len, D] (host memory until the model moves): lesson 04 fills
 * it with its own. */
Tensor *embed_block_positions(Block *b);

#endif
