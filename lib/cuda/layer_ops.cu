// The CUDA table of the library's layers: the twin of lib/layers/layer_ops.c.
extern "C" {
#include "kernels.h"
#include "layers/conv2d.h"
#include "layers/layer_ops.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
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
    return ops;
}

static const LayerOps CUDA_LAYERS = cuda_layers();

extern "C" const LayerOps *layer_ops_cuda(void) { return &CUDA_LAYERS; }
