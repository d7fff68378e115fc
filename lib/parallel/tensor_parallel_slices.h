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

/* The encoder layer cut by heads and feed-forward columns (tensor_parallel_encoder.c). */
Block *tp_make_encoder(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                       const char *name);

#endif
