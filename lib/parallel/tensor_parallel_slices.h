/* Inside tensor parallelism (tensor_parallel*.c only): declaring a sliced parameter,
 * drawing its initial values as the unsplit model draws them, where a slice sits in
 * the whole parameter, and the vocabulary-parallel loss as a BlockLossFn. */
#ifndef PARALLEL_TENSOR_PARALLEL_SLICES_H
#define PARALLEL_TENSOR_PARALLEL_SLICES_H

#include "parallel/tensor_parallel.h"

/* params_add, noting how the parameter is cut (tp->split[its index]). */
Param *tp_declare(TensorParallel *tp, ParamList *params, const char *name, TpSplit split,
                  int ndim, const int *shape);

/* Draws the whole parameter (rows x cols, uniform in +-bound, in the unsplit model's
 * order from rng) and keeps this rank's slice of it (padding rows: 0). */
void tp_draw_slice(TensorParallel *tp, Param *p, TpSplit split, int rows, int cols, float bound,
                   Rng *rng);

/* Where rank r's slice local sits in whole ([rows, cols], or [rows]): its row i is row
 * rows_of[i] of whole (-1: padding past the vocabulary), its columns start at *col0. */
void tp_slice_layout(const TensorParallel *tp, TpSplit split, const Tensor *whole,
                     const Tensor *local, int r, int *rows_of, int *col0);

/* The zero bias of the row-parallel linears, to the model's device. */
void tp_zeros_to(TensorParallel *tp, Device device);

/* The list's loss (ctx: the TensorParallel): tp->ops.vocab_cross_entropy on host copies
 * where the logits live on a GPU. */
float tp_loss(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
              Tensor *dlogits);
/* The same with the gradient times fp16's loss scale, in float32, before a 16-bit
 * dlogits' one rounding (BlockList.loss_scaled). */
float tp_loss_scaled(void *ctx, const LayerOps *ops, const Tensor *logits, const int *targets,
                     Tensor *dlogits, float scale);

/* The float32 scratch of a sharded block's sums over the group (tensor_parallel_sums.c),
 * views of the block's scratch: part [N, D] the partial products and their sum (a
 * float32 model's too); in a 16-bit model the operands converted exactly: x (an input,
 * then the old input gradient), g (an output gradient), w (a weight), b (a bias). */
typedef struct {
    Tensor part, x, g, w, b;
} TpF32;

/* t itself when float32; else its exact float32 copy in buf, shaped as t. */
Tensor tp_as_f32(const Tensor *t, const Tensor *buf);
/* t itself when float32; else a float32 view of buf shaped as t, for tp_store. */
Tensor tp_f32_for(const Tensor *t, const Tensor *buf);
/* A 16-bit t = its float32 view v, rounded once; a float32 t is v already. */
void tp_store(Tensor *t, const Tensor *v);
/* The row-parallel linear through tp->ops.row_linear_forward on float32 operands: out =
 * the group's sum of in w^T + bias (once, on rank 0's partial as the unsplit layer adds
 * it: before the one rounding), rounded once when out is 16-bit. */
void tp_row_linear(TensorParallel *tp, const LayerOps *o, Tensor *out, const Tensor *in,
                   const Tensor *w, const Tensor *bias, const TpF32 *s);
/* A column-parallel linear's backward: dweight, dbias (float32) += as the unsplit layer's;
 * into += the group's sum (f, all-reduced in float32) of this rank's dout w, rounded once
 * when into is 16-bit. into NULL: the sum is still taken (every rank joins it). */
void tp_column_backward(TensorParallel *tp, const LayerOps *o, Tensor *into, Tensor *dweight,
                        Tensor *dbias, const Tensor *dout, const Tensor *in, const Tensor *w,
                        const TpF32 *s);

/* The encoder layer cut by heads and feed-forward columns (tensor_parallel_encoder.c). */
Block *tp_make_encoder(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                       const char *name);

#endif
