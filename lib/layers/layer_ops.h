/* The library's layers of one device, as a table of functions.
 *
 * A model calls its layers through such a table, so one forward and one backward
 * serve the CPU and the GPU: the CPU table holds conv2d_forward, ..., the CUDA table
 * their twins cuda_conv2d_forward, ... (same signatures, tensors on the GPU). A
 * model keeps its own copy, so a lesson can swap in its own functions one by one:
 *
 *   model.layers = *layer_ops(DEVICE_CPU);                 // what cnn_init does
 *   model.layers.maxpool2d_forward = lesson_maxpool2d_forward;
 */
#ifndef LAYERS_LAYER_OPS_H
#define LAYERS_LAYER_OPS_H

#include "core/tensor.h"

typedef struct {
    Device device;
    /* layers/conv2d.h */
    void (*conv2d_forward)(Tensor *out, const Tensor *in, const Tensor *weight,
                           const Tensor *bias, int stride, int pad);
    void (*conv2d_backward)(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, int stride, int pad);
    /* layers/maxpool2d.h (argmax in the device's memory) */
    void (*maxpool2d_forward)(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);
    void (*maxpool2d_backward)(Tensor *din, const Tensor *dout, const int *argmax);
    /* layers/relu.h */
    void (*relu_forward)(Tensor *out, const Tensor *in);
    void (*relu_backward)(Tensor *din, const Tensor *dout, const Tensor *out);
    /* layers/linear.h */
    void (*linear_forward)(Tensor *out, const Tensor *in, const Tensor *weight,
                           const Tensor *bias);
    void (*linear_backward)(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight);
    /* layers/softmax_xent.h (labels in the device's memory) */
    float (*softmax_cross_entropy)(Tensor *dlogits, const Tensor *logits, const int *labels);
    int (*count_correct)(const Tensor *logits, const int *labels);
} LayerOps;

/* The library's layers on `device`. DEVICE_CUDA needs a build with CUDA (it stops
 * with a message otherwise); its functions need cuda_init() before they run. */
const LayerOps *layer_ops(Device device);

/* The CUDA table (lib/cuda/layer_ops.cu; lib/cuda/cuda_none.c in a build without). */
const LayerOps *layer_ops_cuda(void);

#endif
