/* The simple CNN of the course (the seeds' CIFAR-10 / MNIST network):
 *
 *   conv(C -> 50, 5x5) -> max-pool 2 -> ReLU -> conv(50 -> 75, 5x5) -> max-pool 2 -> ReLU
 *   -> flatten -> linear(75*d*d -> 50) -> ReLU -> linear(50 -> classes)
 *
 * d = ((H - 4) / 2 - 4) / 2: 4 for 28x28 (155,685 parameters with one channel),
 * 5 for 32x32 (191,935 with three). Initialised like PyTorch: weights and biases
 * uniform in +-1/sqrt(fan_in).
 *
 * The layer functions are reached through CnnLayers, so a lesson can run the same
 * model with the participant's own convolution or pooling in place of the
 * library's. */
#ifndef MODELS_CNN_H
#define MODELS_CNN_H

#include "core/rng.h"
#include "core/tensor.h"
#include "train/params.h"

typedef struct {
    void (*conv_forward)(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                         int stride, int pad);
    void (*conv_backward)(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight, int stride, int pad);
    void (*pool_forward)(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);
    void (*pool_backward)(Tensor *din, const Tensor *dout, const int *argmax);
} CnnLayers;

/* The library's layers: im2col + GEMM convolution, library max-pool. */
CnnLayers cnn_library_layers(void);

typedef struct {
    int max_batch, channels, height, width, classes;
    ParamList params;  /* conv1.weight, conv1.bias, conv2.*, fc1.*, fc2.* */
    Param *conv1_w, *conv1_b, *conv2_w, *conv2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    CnnLayers layers;

    /* activations for max_batch images (B); the forward uses the first N rows */
    Tensor conv1, pool1, relu1;  /* [B, 50, H-4, W-4], [B, 50, h1, w1] twice */
    Tensor conv2, pool2, relu2;  /* [B, 75, h1-4, w1-4], [B, 75, d, d] twice */
    Tensor fc1, relu3;           /* [B, 50] */
    Tensor logits;               /* [B, classes] */
    int *pool1_arg, *pool2_arg;  /* argmax of each pooled value */
    /* gradients of the loss with respect to each activation, same shapes */
    Tensor d_conv1, d_pool1, d_relu1, d_conv2, d_pool2, d_relu2, d_fc1, d_relu3, d_logits;
} Cnn;

void cnn_init(Cnn *m, int channels, int height, int width, int classes, int max_batch, Rng *rng);
void cnn_free(Cnn *m);

/* Forward of N = images->shape[0] <= max_batch images [N, C, H, W]; the result is
 * in the first N rows of m->logits. Returns a view of those rows. */
Tensor cnn_forward(Cnn *m, const Tensor *images);

/* Backward from d_logits (the first N rows, N as in the last forward): adds the
 * parameter gradients into params' grad tensors. */
void cnn_backward(Cnn *m, const Tensor *images);

/* Floating-point operations of one forward and of one training step per image. */
double cnn_forward_flops(const Cnn *m);
double cnn_train_flops(const Cnn *m);

#endif
