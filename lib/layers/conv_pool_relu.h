/* A first block conv2d (stride 1, no padding) -> 2x2 max-pool -> ReLU, fused on the CPU.
 *
 * The convolution's output is four times the size of what the pool keeps: for the
 * CNN's first layer on 100 MNIST images it is 11.5 MB, and layer by layer it is
 * written, read by the pool, and in the backward its gradient is cleared, scattered
 * into and read again by the weight gradient. On a 2-core VM those passes took as
 * long as the layer's arithmetic. Here the convolution's output lives only in cache:
 *
 * - forward: each thread takes whole images; it convolves one into a scratch buffer
 *   of its own (141 KB for MNIST) and pools it from there;
 * - backward: groups of about 1 MB of output gradient (7 MNIST images) are built in a
 *   scratch buffer from the ReLU's gradient and the argmax, and the weight gradient
 *   sweeps them while they are in cache; the bias gradient is summed as they are built.
 *
 * The convolution runs on rows as wide as the input (ops/conv_wide.h), a layout that
 * only a caller that keeps the output to itself can use.
 *
 * What it gives: the pooled values, the ReLU and the argmax of maxpool2d_forward
 * (the same bits as conv2d_forward + maxpool2d_forward + relu_forward wherever conv2d
 * takes the direct kernels, ops/conv_direct.h: the same sums in the same order); the
 * weight and bias gradients of the three backward passes to float rounding (summed in
 * another order, fixed by the shapes: the same bits on any number of threads).
 *
 *   conv_pool_relu_forward(&pool, argmax, &relu, &images, &w, &b);
 *   conv_pool_relu_backward(&dw, &db, &drelu, &relu, argmax, &images, &w);  // += */
#ifndef LAYERS_CONV_POOL_RELU_H
#define LAYERS_CONV_POOL_RELU_H

#include "core/tensor.h"

/* pool [N, Cout, OH/2, OW/2] = maxpool2d(conv2d(in, weight, bias), 2, 2) with argmax
 * as maxpool2d_forward's, relu = max(pool, 0); OH, OW the convolution's output */
void conv_pool_relu_forward(Tensor *pool, int *argmax, Tensor *relu, const Tensor *in,
                            const Tensor *weight, const Tensor *bias);

/* dweight, dbias += the gradients, given drelu (the gradient of relu) and the
 * forward's relu and argmax; no input gradient (a first layer's input is data). */
void conv_pool_relu_backward(Tensor *dweight, Tensor *dbias, const Tensor *drelu,
                             const Tensor *relu, const int *argmax, const Tensor *in,
                             const Tensor *weight);

#endif
