/* Element-wise addition, the residual connection of a transformer block:
 * out = a + b, and the gradient goes to both summands unchanged.
 * Float32, or 16-bit tensors of one dtype (layers/rounded.h: rounded once where stored). */
#ifndef LAYERS_ADD_H
#define LAYERS_ADD_H

#include "core/tensor.h"

/* out [any] = a [same size] + b [same size]; out may be a or b. */
void add_forward(Tensor *out, const Tensor *a, const Tensor *b);

/* da += dout, db += dout (either may be NULL: that summand needs no gradient). */
void add_backward(Tensor *da, Tensor *db, const Tensor *dout);

/* The size checks of both devices. */
void add_check_forward(const Tensor *out, const Tensor *a, const Tensor *b);
void add_check_backward(const Tensor *da, const Tensor *db, const Tensor *dout);

/* CUDA twins (lib/cuda/add.cu), in builds with CUDA: tensors on the GPU. */
void cuda_add_forward(Tensor *out, const Tensor *a, const Tensor *b);
void cuda_add_backward(Tensor *da, Tensor *db, const Tensor *dout);

#endif
