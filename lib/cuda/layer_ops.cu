// The CUDA table of the library's layers: the twin of lib/layers/layer_ops.c.
extern "C" {
#include "kernels.h"
#include "layers/add.h"
#include "layers/add_layernorm.h"
#include "layers/attention.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/flash_attention.h"
#include "layers/gelu.h"
#include "layers/layer_ops.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/positional.h"
#include "layers/relu.h"
#include "layers/relu_dropout.h"
#include "layers/softmax_xent.h"
#include "ops/gemm.h"
}

static LayerOps cuda_layers(void) {
    LayerOps ops = {};
    ops.device = DEVICE_CUDA;
    ops.conv2d_forward = cuda_conv2d_forward;
    ops.conv2d_backward = cuda_conv2d_backward;
    ops.maxpool2d_forward = cuda_maxpool2d_forward;
    ops.maxpool2d_backward = cuda_maxpool2d_backward;
    ops.relu_forward = cuda_relu_forward;
    ops.relu_backward = cuda_relu_backward;
    ops.linear_forward = cuda_linear_forward;
    ops.linear_backward = cuda_linear_backward;
    ops.softmax_cross_entropy = cuda_softmax_cross_entropy;
    ops.count_correct = cuda_count_correct;
    ops.embedding_forward = cuda_embedding_forward;
    ops.embedding_backward = cuda_embedding_backward;
    ops.embedding_forward_rows = cuda_embedding_forward_rows;
    ops.embedding_backward_rows = cuda_embedding_backward_rows;
    ops.positional_forward = cuda_positional_forward;
    ops.layernorm_forward = cuda_layernorm_forward;
    ops.layernorm_backward = cuda_layernorm_backward;
    ops.dropout_forward = cuda_dropout_forward;
    ops.dropout_forward_window = cuda_dropout_forward_window;
    ops.dropout_backward = cuda_dropout_backward;
    ops.attention_forward = cuda_attention_forward;
    ops.attention_forward_window = cuda_attention_forward_window;
    ops.attention_backward = cuda_attention_backward;
    ops.flash_attention_forward = cuda_flash_attention_forward;
    ops.flash_attention_backward = cuda_flash_attention_backward;
    ops.gelu_forward = cuda_gelu_forward;
    ops.gelu_backward = cuda_gelu_backward;
    ops.add_forward = cuda_add_forward;
    ops.add_backward = cuda_add_backward;
    ops.add_layernorm_forward = cuda_add_layernorm_forward;
    ops.relu_dropout_forward = cuda_relu_dropout_forward;
    ops.relu_dropout_backward = cuda_relu_dropout_backward;
    ops.softmax_cross_entropy_fast = cuda_softmax_cross_entropy_fast;
    return ops;
}

static const LayerOps CUDA_LAYERS = cuda_layers();

extern "C" const LayerOps *layer_ops_cuda(void) { return &CUDA_LAYERS; }
