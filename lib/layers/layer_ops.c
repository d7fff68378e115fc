#include "layer_ops.h"

#include "conv2d.h"
#include "linear.h"
#include "maxpool2d.h"
#include "relu.h"
#include "softmax_xent.h"

static const LayerOps CPU_LAYERS = {
    .device = DEVICE_CPU,
    .conv2d_forward = conv2d_forward,
    .conv2d_backward = conv2d_backward,
    .maxpool2d_forward = maxpool2d_forward,
    .maxpool2d_backward = maxpool2d_backward,
    .relu_forward = relu_forward,
    .relu_backward = relu_backward,
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .softmax_cross_entropy = softmax_cross_entropy,
    .count_correct = count_correct,
};

const LayerOps *layer_ops(Device device) {
    return device == DEVICE_CUDA ? layer_ops_cuda() : &CPU_LAYERS;
}
