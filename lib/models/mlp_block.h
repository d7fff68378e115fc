/* A layer of PPO's policy and value networks: linear, then tanh (or no activation: a
 * network's last layer), x [N, in] -> [N, out], on the CPU with layers/linear_small.h
 * (narrow layers, small batches). Its parameters PREFIX.weight [out, in] and
 * PREFIX.bias [out] start as CleanRL's layer_init does: an orthogonal weight times
 * `gain`, bias 0. It keeps W^T for the forward, remade by mlp_block_transpose when the
 * weights have changed. */
#ifndef MODELS_MLP_BLOCK_H
#define MODELS_MLP_BLOCK_H

#include <stdbool.h>

#include "models/block.h"

Block *mlp_block_add(BlockList *l, const char *prefix, int in, int out, bool tanh, float gain);
/* W^T from the weights as they are now. */
void mlp_block_transpose(Block *b);

/* torch.nn.init.orthogonal_(w, gain) on w [rows, cols]: a matrix with orthonormal rows
 * (rows <= cols) or columns (rows >= cols), times gain, drawn uniformly (Haar) from a
 * Gaussian matrix by QR. The numbers differ from PyTorch's (another generator); the
 * distribution is the same. */
void orthogonal_init(float *w, int rows, int cols, float gain, Rng *rng);

#endif
