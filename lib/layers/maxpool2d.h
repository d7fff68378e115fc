/* 2-D max pooling (PyTorch's MaxPool2d(kernel, stride), no padding, floor mode).
 * The forward remembers where each maximum came from (argmax, an index into the
 * input plane); the backward sends each output gradient back to that one pixel.
 * CUDA twin: lib/cuda/maxpool2d.cu (argmax in device memory there). Float32 only (a
 * 16-bit tensor stops with a message: the CNN runs in float32). */
#ifndef LAYERS_MAXPOOL2D_H
#define LAYERS_MAXPOOL2D_H

#include "core/tensor.h"

/* out [N, C, OH, OW], argmax [N*C*OH*OW] from in [N, C, H, W];
 * OH = (H - kernel) / stride + 1, likewise OW. Ties go to the first maximum. */
void maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);

/* din [N, C, H, W] += dout [N, C, OH, OW] routed through argmax */
void maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax);

/* The forward of one plane: y [OH*OW] and arg from x, rows W floats apart; the argmax
 * counts rows IW apart (IW = W, or the width of the plane x stands for when its rows
 * are padded: layers/conv_pool_relu.c). */
void maxpool2d_plane(float *y, int *arg, const float *x, int W, int IW, int OH, int OW, int kernel,
                     int stride);

/* The shape checks of both devices. */
void maxpool2d_check_forward(const Tensor *out, const Tensor *in, int kernel, int stride);
void maxpool2d_check_backward(const Tensor *din, const Tensor *dout);

/* CUDA twins (lib/cuda/maxpool2d.cu), in builds with CUDA; argmax is device memory. */
void cuda_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);
void cuda_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax);

#endif
