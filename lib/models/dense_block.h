/* A fully connected block: flatten -> linear -> ReLU (or no activation: a classifier's
 * last block), x [N, sample...] -> [N, out]. Its parameters PREFIX.weight [out, in] and
 * PREFIX.bias [out] start as PyTorch's Linear does: uniform in +-1/sqrt(in).
 * `sample` is the shape of one row of its input (data NULL; [75, 4, 4] after the CNN's
 * convolutions, [50] after a dense block). */
#ifndef MODELS_DENSE_BLOCK_H
#define MODELS_DENSE_BLOCK_H

#include <stdbool.h>

#include "models/block.h"

Block *dense_block_add(BlockList *l, const char *prefix, Tensor sample, int out, bool relu);

#endif
