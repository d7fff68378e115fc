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

#include <stdbool.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/dropout.h"
#include "layers/flash_attention.h"

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

    /* The transformer's layers (tokens and targets in the device's memory; dropout
     * draws its key from the host Rng on both devices) */
    /* layers/embedding.h */
    void (*embedding_forward)(Tensor *out, const int *tokens, const Tensor *table, float scale);
    void (*embedding_backward)(Tensor *dtable, const Tensor *dout, const int *tokens, float scale);
    /* a vocabulary-parallel rank's rows [first, first + rows) of `vocab` */
    void (*embedding_forward_rows)(Tensor *out, const int *tokens, const Tensor *table,
                                   float scale, int first, int vocab);
    void (*embedding_backward_rows)(Tensor *dtable, const Tensor *dout, const int *tokens,
                                    float scale, int first, int vocab);
    /* layers/positional.h */
    void (*positional_forward)(Tensor *out, const Tensor *in, const Tensor *table, int T);
    /* layers/layernorm.h */
    void (*layernorm_forward)(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                              const Tensor *gamma, const Tensor *beta, float eps);
    void (*layernorm_backward)(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                               const Tensor *in, const Tensor *mean, const Tensor *rstd,
                               const Tensor *gamma);
    /* layers/dropout.h */
    void (*dropout_forward)(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                            Rng *rng);
    /* a tensor-parallel rank's slice of a wider tensor (DropoutWindow) */
    void (*dropout_forward_window)(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                   bool training, Rng *rng, DropoutWindow window);
    void (*dropout_backward)(Tensor *din, const Tensor *dout, const Tensor *mask);
    /* layers/attention.h */
    void (*attention_forward)(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                              float dropout_p, bool training, Rng *rng);
    void (*attention_forward_window)(Tensor *ctx, Tensor *probs, Tensor *dropped,
                                     const Tensor *qkv, float dropout_p, bool training, Rng *rng,
                                     DropoutWindow window);
    void (*attention_backward)(Tensor *dqkv, Tensor *dscores, const Tensor *dctx,
                               const Tensor *qkv, const Tensor *probs, const Tensor *dropped);
    /* layers/flash_attention.h: the fused attention (float32 or 16-bit qkv and ctx,
     * float32 lse), what a 16-bit model runs */
    void (*flash_attention_forward)(Tensor *ctx, Tensor *lse, FlashDropout *drop,
                                    const Tensor *qkv, float dropout_p, bool training, Rng *rng,
                                    DropoutWindow window);
    void (*flash_attention_backward)(Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                                     const Tensor *ctx, const Tensor *lse,
                                     const FlashDropout *drop);
    /* layers/gelu.h */
    void (*gelu_forward)(Tensor *out, const Tensor *in);
    void (*gelu_backward)(Tensor *din, const Tensor *dout, const Tensor *in);
    /* layers/add.h */
    void (*add_forward)(Tensor *out, const Tensor *a, const Tensor *b);
    void (*add_backward)(Tensor *da, Tensor *db, const Tensor *dout);
    /* Fused forwards (layers/add_layernorm.h, layers/relu_dropout.h): exactly add then
     * layernorm, relu then dropout, bit for bit, in one kernel on the GPU; their
     * backwards are the separate layers'. A model calls them only while the separate
     * entries are the library's (layer_ops_fuse_add_layernorm, _relu_dropout below),
     * so a lesson's own layer norm, ReLU, dropout or add, swapped in, is still called.
     * relu_dropout_backward (the GPU's only; NULL on the CPU): the two backwards in one
     * pass, layer_ops_fuse_relu_dropout_backward says when. */
    void (*relu_dropout_backward)(Tensor *din, const Tensor *dout, const Tensor *mask,
                                  const Tensor *out);
    void (*add_layernorm_forward)(Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd,
                                  const Tensor *a, const Tensor *b, const Tensor *gamma,
                                  const Tensor *beta, float eps);
    void (*relu_dropout_forward)(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                 bool training, Rng *rng);
    /* layers/softmax_xent.h: the loss over a large vocabulary (dlogits may be NULL), its
     * gradient times the loss scale (1: none) before its one rounding */
    float (*softmax_cross_entropy_fast)(Tensor *dlogits, const Tensor *logits, const int *labels,
                                        float scale);
} LayerOps;

/* The library's layers on `device`. DEVICE_CUDA needs a build with CUDA (it stops
 * with a message otherwise); its functions need cuda_init() before they run. */
const LayerOps *layer_ops(Device device);

/* Whether ops may run its fused add + layer norm (add_layernorm_forward instead of
 * add_forward then layernorm_forward): its add, layer norm and fused entries are all
 * the library's table's for ops->device. Likewise relu + dropout. */
bool layer_ops_fuse_add_layernorm(const LayerOps *ops);
bool layer_ops_fuse_relu_dropout(const LayerOps *ops);
bool layer_ops_fuse_relu_dropout_backward(const LayerOps *ops);

/* r = a + b, y = layernorm(r) (mean, rstd its statistics; eps LAYERNORM_EPS): the fused
 * entry (one kernel on the GPU, the same bits) while the table's add and layer norm are
 * the library's; a lesson's own are called one by one. The encoder blocks' residual. */
void layer_ops_add_norm(const LayerOps *o, Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd,
                        const Tensor *a, const Tensor *b, const Tensor *gamma, const Tensor *beta);

/* The CUDA table (lib/cuda/layer_ops.cu; lib/cuda/cuda_none.c in a build without). */
const LayerOps *layer_ops_cuda(void);

#endif
