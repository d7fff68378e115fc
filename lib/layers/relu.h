/* ReLU: y = max(0, x). The backward needs only the output (y > 0 exactly where
 * x > 0), so it may run in place on the forward's buffer. CUDA twin: lib/cuda/relu.cu.
 * Float32, or 16-bit tensors of one dtype (layers/rounded.h: rounded once where stored). */
#ifndef LAYERS_RELU_H
#define LAYERS_RELU_H

#include "core/tensor.h"

void relu_forward(Tensor *out, const Tensor *in);                          /* out may be in */
void relu_backward(Tensor *din, const Tensor *dout, const Tensor *out);     /* din += dout * (out > 0) */

/* The size checks of both devices. */
void relu_check_forward(const Tensor *out, const Tensor *in);
void relu_check_backward(const Tensor *din, const Tensor *dout, const Tensor *out);

/* CUDA twins (lib/cuda/relu.cu), in builds with CUDA; tensors on the GPU. */
void cuda_relu_forward(Tensor *out, const Tensor *in);
void cuda_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out);

#endif
