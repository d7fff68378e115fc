/* Fully connected layer, PyTorch's Linear: y = x W^T + b with W stored [out, in]
 * (PyTorch's layout, so weights can be compared with or loaded from PyTorch).
 * The CUDA twin (lib/cuda/linear.cu) makes the same GEMM calls through cuBLAS.
 * 16-bit runs (layers/rounded.h): out, in, weight, bias, dout, din of one dtype (float32,
 * bfloat16 or float16), out = round(bias + sum in w) and din = round(din + dout W), each
 * rounded once; dweight and dbias float32 always. */
#ifndef LAYERS_LINEAR_H
#define LAYERS_LINEAR_H

#include "core/tensor.h"

/* out [N, out] = in [N, in] x weight[out, in]^T + bias [out] */
void linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias);

/* din [N, in] += dout W (skipped when din is NULL), dweight += dout^T in,
 * dbias += column sums of dout */
void linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                     const Tensor *in, const Tensor *weight);

/* The shape checks of both devices. */
void linear_check_forward(const Tensor *out, const Tensor *in, const Tensor *weight,
                          const Tensor *bias);
void linear_check_backward(const Tensor *din, const Tensor *dweight, const Tensor *dbias,
                           const Tensor *dout, const Tensor *in, const Tensor *weight);

/* CUDA twins (lib/cuda/linear.cu), in builds with CUDA; tensors on the GPU. */
void cuda_linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias);
void cuda_linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight);

#endif
