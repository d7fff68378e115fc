/* A convolution block of the simple CNN: conv2d (K x K, stride 1, no padding) -> 2x2
 * max-pool -> ReLU, x [N, Cin, H, W] -> [N, Cout, (H-K+1)/2, (W-K+1)/2].
 *
 * Its parameters PREFIX.weight [Cout, Cin, K, K] and PREFIX.bias [Cout] start as
 * PyTorch's Conv2d does: uniform in +-1/sqrt(Cin K K). A model's first block (`first`:
 * its input is data, no input gradient) runs fused on the CPU when the model's table
 * holds the library's own conv2d, max-pool and ReLU (layers/conv_pool_relu.h: the
 * convolution's output stays in cache); any other function in one of those entries (a
 * lesson's, a timing wrapper) makes it run them one by one. */
#ifndef MODELS_CONV_BLOCK_H
#define MODELS_CONV_BLOCK_H

#include <stdbool.h>

#include "models/block.h"

Block *conv_block_add(BlockList *l, const char *prefix, int in_channels, int height, int width,
                      int out_channels, int kernel, bool first);

/* Its saved activations: the ReLU's output (its own), and the max-pool's argmax, an int
 * per pooled value kept in a tensor's memory (read it as (int *)saved[CONV_ARGMAX].data). */
enum { CONV_OUT, CONV_ARGMAX, CONV_SAVED };

#endif
