#include "layer_ops.h"

#include "add.h"
#include "add_layernorm.h"
#include "attention.h"
#include "conv2d.h"
#include "cuda/device.h"
#include "dropout.h"
#include "embedding.h"
#include "flash_attention.h"
#include "gelu.h"
#include "layernorm.h"
#include "linear.h"
#include "maxpool2d.h"
#include "positional.h"
#include "relu.h"
#include "relu_dropout.h"
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
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .embedding_forward_rows = embedding_forward_rows,
    .embedding_backward_rows = embedding_backward_rows,
    .positional_forward = positional_forward,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .dropout_forward = dropout_forward,
    .dropout_forward_window = dropout_forward_window,
    .dropout_backward = dropout_backward,
    .attention_forward = attention_forward,
    .attention_forward_window = attention_forward_window,
    .attention_backward = attention_backward,
    .flash_attention_forward = flash_attention_forward,
    .flash_attention_backward = flash_attention_backward,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .add_forward = add_forward,
    .add_backward = add_backward,
    .add_layernorm_forward = add_layernorm_forward,
    .relu_dropout_forward = relu_dropout_forward,
    .softmax_cross_entropy_fast = softmax_cross_entropy_fast,
};

const LayerOps *layer_ops(Device device) {
    return device == DEVICE_CUDA ? layer_ops_cuda() : &CPU_LAYERS;
}

/* The library's table for ops's device: the CPU's, or the CUDA one where built (a
 * table of another device cannot be the CUDA one without it). */
static const LayerOps *library_of(const LayerOps *ops) {
    if (ops->device == DEVICE_CPU) return &CPU_LAYERS;
    return cuda_built() ? layer_ops_cuda() : NULL;
}

bool layer_ops_fuse_add_layernorm(const LayerOps *ops) {
    const LayerOps *lib = library_of(ops);
    return lib && ops->add_layernorm_forward &&
           ops->add_layernorm_forward == lib->add_layernorm_forward &&
           ops->add_forward == lib->add_forward && ops->layernorm_forward == lib->layernorm_forward;
}

void layer_ops_add_norm(const LayerOps *o, Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd,
                        const Tensor *a, const Tensor *b, const Tensor *gamma, const Tensor *beta) {
    if (layer_ops_fuse_add_layernorm(o)) {
        o->add_layernorm_forward(r, y, mean, rstd, a, b, gamma, beta, LAYERNORM_EPS);
        return;
    }
    o->add_forward(r, a, b);
    o->layernorm_forward(y, mean, rstd, r, gamma, beta, LAYERNORM_EPS);
}

bool layer_ops_fuse_relu_dropout_backward(const LayerOps *ops) {
    const LayerOps *lib = library_of(ops);
    return lib && ops->relu_dropout_backward &&
           ops->relu_dropout_backward == lib->relu_dropout_backward &&
           ops->relu_backward == lib->relu_backward && ops->dropout_backward == lib->dropout_backward;
}

bool layer_ops_fuse_relu_dropout(const LayerOps *ops) {
    const LayerOps *lib = library_of(ops);
    return lib && ops->relu_dropout_forward &&
           ops->relu_dropout_forward == lib->relu_dropout_forward &&
           ops->relu_forward == lib->relu_forward && ops->dropout_forward == lib->dropout_forward;
}
