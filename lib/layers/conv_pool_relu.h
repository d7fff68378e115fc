/* A first block conv2d (stride 1, no padding) -> 2x2 max-pool -> ReLU, fused on the CPU.
 *
 * The convolution's output is four times the size of what the pool keeps: for the
 * CNN's first layer on 100 MNIST images it is 11.5 MB, written, read by the pool,
 * and in the backward cleared, scattered into and read again by the weight gradient.
 * On a 2-core VM those passes took as long as the layer's arithmetic. Here the
 * batch goes through in slices of a few images whose convolution output (or its
 * gradient) fits in L2: the same layer functions run on a slice held in a scratch
 * buffer that is reused, so the full-size tensor never goes to memory.
 *
 * The results are the layers' own: the forward gives the same bits as the three
 * layers one after another, the gradients sum per slice (in a fixed order, the same
 * bits on any number of threads; the same bits as the whole batch where the kernel
 * sums in slices of that size itself, as the AVX-512 pair kernels do).
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
