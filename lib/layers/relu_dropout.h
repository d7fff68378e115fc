/* ReLU then dropout, fused (an encoder layer's feed-forward: h = dropout(relu(x))):
 * exactly relu_forward then dropout_forward, the same key drawn from the Rng and the
 * same mask (layers/dropout.h), bit for bit, on either device. The CPU version is that
 * definition (the two layers called in order: the reference); the CUDA twin
 * (lib/cuda/relu_dropout.cu) is one kernel instead of two passes over the tensor. Its
 * backward is the two layers' backwards (dropout_backward, then relu_backward on the
 * output: where dropout keeps an entry it is the ReLU's output scaled, so out > 0
 * still marks the ReLU's positive side). */
#ifndef LAYERS_RELU_DROPOUT_H
#define LAYERS_RELU_DROPOUT_H

#include <stdbool.h>

#include "core/rng.h"
#include "core/tensor.h"

/* out = dropout(relu(in)), mask [same size] float32 as dropout_forward's; out may be in;
 * mask may be NULL only where dropout_active(p, training) is false. */
void relu_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                          Rng *rng);

/* CUDA twin (lib/cuda/relu_dropout.cu), in builds with CUDA: tensors on the GPU. */
void cuda_relu_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p,
                               bool training, Rng *rng);
/* The backward fused on the GPU: din += the gradient through relu then dropout, exactly
 * dropout_backward(m, dout, mask) into a cleared m, then relu_backward(din, m, out),
 * bit for bit, without m. mask NULL: dropout was inactive. din must not be dout. (The
 * CPU runs the two layers: a fused loop saves little there.) */
void cuda_relu_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask,
                                const Tensor *out);

#endif
