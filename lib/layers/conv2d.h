/* 2-D convolution (PyTorch's Conv2d, groups = 1, dilation = 1).
 *
 * Stride 1 without padding and output rows of 8 pixels or more (the CNN's layers)
 * go to the direct kernels of lib/ops/conv_direct.h (conv_direct_fits), which read
 * the input in place. Every other shape is
 * im2col + GEMM: the batch is cut into chunks of a few images; each OpenMP thread
 * lowers its chunk with im2col into a buffer that stays in cache and multiplies it
 * with the weights. Chunks depend on the shapes only, not on the thread count, and
 * partial weight gradients are summed in chunk order, so both paths give the same
 * bits on any number of threads. (A whole run may still differ in the last digits
 * between thread counts: OpenBLAS picks its kernels by size and thread count for
 * the GEMMs of the linear layers. With the built-in GEMM it does not.)
 *
 * The CUDA twin (lib/cuda/conv2d.cu): the whole batch as one im2col and one GEMM.
 * Float32 only (a 16-bit tensor stops with a message: the CNN runs in float32). */
#ifndef LAYERS_CONV2D_H
#define LAYERS_CONV2D_H

#include "core/tensor.h"
#include "ops/im2col.h"

/* out [N, Cout, OH, OW] = in [N, C, H, W] (*) weight [Cout, C, KH, KW] + bias [Cout] */
void conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                    int stride, int pad);

/* din += dL/din (skipped when din is NULL: the first layer needs no input gradient),
 * dweight += dL/dweight, dbias += dL/dbias, given dout = dL/dout [N, Cout, OH, OW]. */
void conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                     const Tensor *in, const Tensor *weight, int stride, int pad);

/* Frees the per-thread scratch buffers (they are reused across calls). */
void conv2d_release_workspace(void);

/* The shape checks of both devices: in [N, C, H, W], weight [Cout, C, KH, KW],
 * out [N, Cout, OH, OW] (out may be dout); returns the geometry. */
ConvGeometry conv2d_check_shapes(const Tensor *out, const Tensor *in, const Tensor *weight,
                                 int stride, int pad);
/* ... and those of the backward's gradients (din may be NULL). */
void conv2d_check_grad_shapes(const Tensor *din, const Tensor *dweight, const Tensor *dbias,
                              const Tensor *in, const Tensor *weight);

/* CUDA twins (lib/cuda/conv2d.cu), in builds with CUDA; tensors on the GPU. */
void cuda_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                         int stride, int pad);
void cuda_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight, int stride, int pad);
void cuda_conv2d_release_workspace(void);

#endif
