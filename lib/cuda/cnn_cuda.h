/* The simple CNN of models/cnn.h on the GPU: the same Cnn struct and the same
 * layer order, with every tensor in device memory and the CUDA twins of the layers.
 *
 *   cnn_init(&m, ...);            // on the host: same weights as on the CPU
 *   cnn_to_device(&m);            // parameters, gradients, activations -> GPU
 *   adam_init(&opt, &m.params, lr);   // its state lands on the GPU too
 *   cnn_forward_cuda(&m, &images_on_gpu, NULL); ... cuda_adam_step(&opt, &m.params);
 *   cnn_free_cuda(&m);            // not cnn_free: the argmax buffers are device memory
 *
 * Only in builds with CUDA (HAVE_CUDA). */
#ifndef CUDA_CNN_CUDA_H
#define CUDA_CNN_CUDA_H

#include "models/cnn.h"
#include "ops_cuda.h"

void cnn_to_device(Cnn *m);
void cnn_free_cuda(Cnn *m);

/* As cnn_forward / cnn_backward; images [N, C, H, W] on the GPU; k: the kernels
 * to use (NULL: the library's). */
Tensor cnn_forward_cuda(Cnn *m, const Tensor *images, const CudaKernels *k);
void cnn_backward_cuda(Cnn *m, const Tensor *images, const CudaKernels *k);

#endif
