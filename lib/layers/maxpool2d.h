/* 2-D max pooling (PyTorch's MaxPool2d(kernel, stride), no padding, floor mode).
 * The forward remembers where each maximum came from (argmax, an index into the
 * input plane); the backward sends each output gradient back to that one pixel. */
#ifndef LAYERS_MAXPOOL2D_H
#define LAYERS_MAXPOOL2D_H

#include "core/tensor.h"

/* out [N, C, OH, OW], argmax [N*C*OH*OW] from in [N, C, H, W];
 * OH = (H - kernel) / stride + 1, likewise OW. Ties go to the first maximum. */
void maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);

/* din [N, C, H, W] += dout [N, C, OH, OW] routed through argmax */
void maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax);

#endif
