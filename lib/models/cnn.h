/* The simple CNN of the course (the seeds' CIFAR-10 / MNIST network):
 *
 *   conv(C -> 50, 5x5) -> max-pool 2 -> ReLU -> conv(50 -> 75, 5x5) -> max-pool 2 -> ReLU
 *   -> flatten -> linear(75*d*d -> 50) -> ReLU -> linear(50 -> classes)
 *
 * d = ((H - 4) / 2 - 4) / 2: 4 for 28x28 (155,685 parameters with one channel),
 * 5 for 32x32 (191,935 with three). Initialised like PyTorch: weights and biases
 * uniform in +-1/sqrt(fan_in).
 *
 * Four blocks (models/block.h): two convolution blocks (models/conv_block.h: conv,
 * max-pool, ReLU), then two dense ones (models/dense_block.h). Written once for both
 * devices: the layers are called through m->layers, the table of the device the model
 * lives on (layers/layer_ops.h), and every tensor the model holds is on that device. A
 * lesson swaps in its own layers in that table.
 *
 * With the library's own CPU layers in the table, the first convolution, max-pool and
 * ReLU run fused (layers/conv_pool_relu.h: the same activations, conv1's gradients to
 * float rounding, and 11-14 % off a step of 100 MNIST images on an Ice Lake VM). Any
 * other function in one of those entries (a lesson's, a timing wrapper) makes the model
 * run them one by one.
 *
 *   cnn_init(&m, 1, 28, 28, 10, batch, &rng);  // on the CPU
 *   cnn_to_device(&m, DEVICE_CUDA);            // optional: weights, buffers, table move */
#ifndef MODELS_CNN_H
#define MODELS_CNN_H

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/layer_ops.h"
#include "models/block.h"
#include "models/params.h"

typedef struct {
    int max_batch, channels, height, width, classes;
    Device device;
    ParamList params;  /* conv1.weight, conv1.bias, conv2.*, fc1.*, fc2.* */
    LayerOps layers;   /* the device's layers, or a lesson's */
    BlockList blocks;  /* conv1-pool-relu, conv2-pool-relu, fc1-relu, fc2 (their activations
                        * for max_batch images: the forward uses the first N rows) */
    Tensor d_logits;   /* [max_batch, classes] the loss's gradient, where the backward starts */
} Cnn;                 /* stays where it was made: its blocks point to params and layers */

void cnn_init(Cnn *m, int channels, int height, int width, int classes, int max_batch, Rng *rng);
/* Moves parameters, gradients, activations and argmax buffers to `device` and takes
 * that device's layer table. */
void cnn_to_device(Cnn *m, Device device);
void cnn_free(Cnn *m);

/* Forward of N = images->shape[0] <= max_batch images [N, C, H, W] on the model's
 * device. Returns the logits [N, classes], a view of the last block's output (the
 * model's until the next forward). */
Tensor cnn_forward(Cnn *m, const Tensor *images);

/* Backward from d_logits (the first N rows, N as in the last forward): adds the
 * parameter gradients into params' grad tensors. */
void cnn_backward(Cnn *m, const Tensor *images);

/* Floating-point operations of one forward and of one training step per image. */
double cnn_forward_flops(const Cnn *m);
double cnn_train_flops(const Cnn *m);

#endif
