/* GELU, exact (PyTorch's default F.gelu, approximate='none'):
 *   y = x Phi(x) = x/2 (1 + erf(x / sqrt 2)),   dy/dx = Phi(x) + x phi(x)
 * with phi the standard normal density. Phi is computed as erfc(-x / sqrt 2) / 2: at
 * negative x, 1 + erf cancels and erff's last-bit error becomes a large share of a small
 * result (CUDA's and glibc's then disagree in the 16-bit bits); erfc keeps it relative. The backward needs the input, so in and
 * out must be different buffers. (ReLU, the tutorial's choice, is layers/relu.h.)
 * Float32, or 16-bit tensors of one dtype (layers/rounded.h: rounded once where stored). */
#ifndef LAYERS_GELU_H
#define LAYERS_GELU_H

#include "core/tensor.h"

void gelu_forward(Tensor *out, const Tensor *in);                     /* out [any] from in [same] */
void gelu_backward(Tensor *din, const Tensor *dout, const Tensor *in); /* din += dout * gelu'(in) */

/* The size checks of both devices. */
void gelu_check_forward(const Tensor *out, const Tensor *in);
void gelu_check_backward(const Tensor *din, const Tensor *dout, const Tensor *in);

/* CUDA twins (lib/cuda/gelu.cu), in builds with CUDA: tensors on the GPU. */
void cuda_gelu_forward(Tensor *out, const Tensor *in);
void cuda_gelu_backward(Tensor *din, const Tensor *dout, const Tensor *in);

#endif
